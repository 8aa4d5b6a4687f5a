// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// KubeletSocket is the base name of the kubelet's Registration socket in
// the device-plugin directory.
const KubeletSocket = "kubelet.sock"

// registerTimeout bounds one Register call. The kubelet answers at once
// (it dials our socket afterwards); a kubelet that is starting has no
// socket yet, and the plugin tries again at the next poll.
const registerTimeout = 10 * time.Second

// register tells the kubelet listening on kubeletSocket that resource is
// served on endpoint, a socket name in the same directory.
func register(ctx context.Context, kubeletSocket, endpoint, resource string) error {
	conn, err := grpc.NewClient("unix://"+kubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial the kubelet at %s: %w", kubeletSocket, err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     endpoint,
		ResourceName: resource,
		Options:      &pluginapi.DevicePluginOptions{},
	})
	if err != nil {
		return fmt.Errorf("register %s with the kubelet at %s: %w", resource, kubeletSocket, err)
	}
	return nil
}
