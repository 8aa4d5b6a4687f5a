// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"
)

// DriverName is the CSI driver's name: the CSIDriver object's name and
// what a pod's csi volume names in driver.
const DriverName = "csi.packetfs.io"

// Version is the plugin's version in GetPluginInfo; the build may set it
// with -ldflags -X.
var Version = "v0.1.0"

// Defaults of the flags: the kubelet's own directories, and the socket root
// the operator's pods have always used (podspec.SocketRoot).
const (
	DefaultSocketRoot      = "/run/packetfs"
	DefaultEndpoint        = "/var/lib/kubelet/plugins/" + DriverName + "/csi.sock"
	DefaultRegistrationDir = "/var/lib/kubelet/plugins_registry"
	DefaultStagingDir      = "/var/lib/kubelet/plugins/" + DriverName + "/blobs"
	DefaultPollInterval    = 5 * time.Second
)

// Config is the plugin's configuration; it comes from flags only.
type Config struct {
	// NodeName is the node's name, the CSI node ID.
	NodeName string
	// SocketRoot holds one socket directory per namespace.
	SocketRoot string
	// Endpoint is the CSI socket. The kubelet dials the same path, so the
	// plugin's container must see it where the node does.
	Endpoint string
	// RegistrationDir is the kubelet's plugin registry, which it watches
	// for registration sockets.
	RegistrationDir string
	// StagingDir holds the holders' tmpfs mounts,
	// <StagingDir>/<namespace>/<blob>/<pod>. Its mounts must reach the
	// node's mount namespace (mountPropagation Bidirectional).
	StagingDir string
	// Kubeconfig is a kubeconfig file to reach the API server; empty means
	// the pod's service account (in-cluster).
	Kubeconfig string
	// PollInterval is how often the plugin checks that its sockets are still there.
	PollInterval time.Duration
}

// RegistrationSocket is the registration socket's path: the kubelet asks
// for the plugin's name and endpoint on any socket that appears there.
func (c *Config) RegistrationSocket() string {
	return filepath.Join(c.RegistrationDir, DriverName+"-reg.sock")
}

// Bind registers the flags on fs with their defaults; nodeName is the
// default of --node-name (the NODE_NAME the DaemonSet sets from the
// downward API).
func (c *Config) Bind(fs *flag.FlagSet, nodeName string) {
	fs.StringVar(&c.NodeName, "node-name", nodeName, "The node's name, the CSI node ID (default $NODE_NAME).")
	fs.StringVar(&c.SocketRoot, "socket-root", DefaultSocketRoot,
		"Host directory of the blob sockets, one subdirectory per namespace; a pod's volume is its namespace's.")
	fs.StringVar(&c.Endpoint, "csi-endpoint", DefaultEndpoint,
		"The CSI socket; the kubelet dials this path, so mount it at the same path as on the node.")
	fs.StringVar(&c.RegistrationDir, "plugins-registry", DefaultRegistrationDir,
		"The kubelet's plugin registry directory, where the registration socket "+DriverName+"-reg.sock goes.")
	fs.StringVar(&c.StagingDir, "staging-dir", DefaultStagingDir,
		"Host directory of the blob holders' tmpfs mounts (<dir>/<namespace>/<blob>/<pod>); mount it with mountPropagation Bidirectional.")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "",
		"A kubeconfig file to read PfsBlobs with; empty means the pod's service account (in-cluster).")
	fs.DurationVar(&c.PollInterval, "poll-interval", DefaultPollInterval,
		"How often the plugin checks that its sockets are still there (and serves them again if not).")
}

// Validate checks the flags together.
func (c *Config) Validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("no node name: pass --node-name or set NODE_NAME"))
	}
	for _, d := range []struct{ flag, path string }{
		{"--socket-root", c.SocketRoot}, {"--csi-endpoint", c.Endpoint}, {"--plugins-registry", c.RegistrationDir},
		{"--staging-dir", c.StagingDir}} {
		if !filepath.IsAbs(d.path) {
			errs = append(errs, fmt.Errorf("%s %q: want an absolute path", d.flag, d.path))
		}
	}
	if c.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("--poll-interval %s: want a positive duration", c.PollInterval))
	}
	return errors.Join(errs...)
}
