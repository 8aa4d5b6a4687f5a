// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"context"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// identityServer is the CSI Identity service.
type identityServer struct {
	csi.UnimplementedIdentityServer

	socketRoot string
}

// GetPluginInfo: the driver's name and version.
func (s *identityServer) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: DriverName, VendorVersion: Version}, nil
}

// GetPluginCapabilities: none. There is no controller service (nothing to
// provision or attach) and no topology.
func (s *identityServer) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{}, nil
}

// Probe: ready when the socket root is there to publish from (the
// DaemonSet's hostPath creates it).
func (s *identityServer) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	if fi, err := os.Stat(s.socketRoot); err != nil || !fi.IsDir() {
		return nil, status.Errorf(codes.FailedPrecondition, "socket root %s is not a directory (%v)", s.socketRoot, err)
	}
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}
