// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// SupportedVersions are the CSI versions the plugin tells the kubelet; the
// kubelet takes the highest it knows.
var SupportedVersions = []string{"1.0.0"}

// registration is the kubelet's plugin registration service. The kubelet
// watches its plugin registry, dials each socket that appears there, asks
// GetInfo, then dials the endpoint named and reports the outcome.
type registration struct {
	registerapi.UnimplementedRegistrationServer

	endpoint string
	log      logr.Logger
}

// GetInfo names the plugin, its type and its CSI socket.
func (r *registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              DriverName,
		Endpoint:          r.endpoint,
		SupportedVersions: append([]string(nil), SupportedVersions...),
	}, nil
}

// NotifyRegistrationStatus logs what the kubelet made of the registration;
// a refusal is the kubelet's to retry (when the socket appears again).
func (r *registration) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if st.GetPluginRegistered() {
		r.log.Info("Registered with the kubelet", "driver", DriverName, "endpoint", r.endpoint)
	} else {
		r.log.Error(errors.New(st.GetError()), "The kubelet refused the registration", "driver", DriverName)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
