// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"packetfs.io/operator/internal/grpcsock"
)

// server is the DevicePlugin service of one link's resource on its own
// unix socket. The kubelet dials it after registration, keeps one
// ListAndWatch stream open and calls Allocate when a container starts.
type server struct {
	pluginapi.UnimplementedDevicePluginServer

	link *link // only the fields resolveLinks set, and devices, are read here
	sock *grpcsock.Server
	// done ends the ListAndWatch streams, which never end on their own.
	done chan struct{}
	log  logr.Logger
}

// startServer listens on <dir>/<link.socket> and serves in the background.
func startServer(dir string, l *link, log logr.Logger) (*server, error) {
	s := &server{link: l, done: make(chan struct{}), log: log.WithValues("resource", l.resource)}
	sock, err := grpcsock.Start(filepath.Join(dir, l.socket), func(g *grpc.Server) { pluginapi.RegisterDevicePluginServer(g, s) }, s.log)
	if err != nil {
		return nil, err
	}
	s.sock = sock
	return s, nil
}

// stop ends the streams and the server, and removes the socket.
func (s *server) stop() {
	close(s.done)
	s.sock.Stop()
}

// socketExists: the kubelet removes every plugin socket when it starts.
func (s *server) socketExists() bool { return s.sock.SocketExists() }

// GetDevicePluginOptions: no PreStartContainer, no preferred allocation.
func (s *server) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the device list at once, then again after each change,
// until the kubelet goes away or the server stops.
func (s *server) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	for {
		devs, changed := s.link.devices.get()
		if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: toProto(devs)}); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-s.done:
			return nil
		case <-stream.Context().Done():
			return nil
		}
	}
}

// Allocate answers each container's request with the environment of
// containerEnv; an ID this resource does not advertise fails the whole call.
func (s *server) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, cr := range req.GetContainerRequests() {
		ids := cr.GetDevicesIds()
		if _, unknown := s.link.devices.lookup(ids); len(unknown) > 0 {
			devs, _ := s.link.devices.get()
			known := make([]string, 0, len(devs))
			for _, d := range devs {
				known = append(known, d.ID)
			}
			return nil, status.Errorf(codes.InvalidArgument, "%s has no device %s (it advertises %s)",
				s.link.resource, strings.Join(unknown, ", "), strings.Join(known, ", "))
		}
		env, err := containerEnv(s.link.ifname, s.link.pool, s.link.spec.PerQueue, ids)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: %v", s.link.resource, err)
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{Envs: env})
		s.log.Info("Allocated", "devices", ids, "env", env)
	}
	return resp, nil
}

// GetPreferredAllocation is never called (GetPreferredAllocationAvailable is
// false); it answers with no preference.
func (s *server) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

// PreStartContainer is never called (PreStartRequired is false).
func (s *server) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
