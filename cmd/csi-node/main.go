// SPDX-License-Identifier: Apache-2.0

// Command pfs-csi-node is the CSI node plugin csi.packetfs.io: it gives
// pods their namespace's blob socket directory (so blob holders and
// consumers need no hostPath volume), blob holders a tmpfs of their own,
// and consumers a read-only directory of a Ready blob's files. It runs on every node as a DaemonSet (the Helm
// chart's csi.enabled); docs/guides/csi.md describes it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"packetfs.io/operator/internal/csinode"
)

// newFlagSet binds the plugin's flags and zap's logging flags; nodeName is
// the default of --node-name.
func newFlagSet(cfg *csinode.Config, zapOpts *zap.Options, nodeName string) *flag.FlagSet {
	fs := flag.NewFlagSet("pfs-csi-node", flag.ContinueOnError)
	cfg.Bind(fs, nodeName)
	zapOpts.BindFlags(fs)
	return fs
}

// parse reads the command line into a validated configuration.
func parse(args []string, nodeName string) (csinode.Config, zap.Options, error) {
	var cfg csinode.Config
	var zapOpts zap.Options
	fs := newFlagSet(&cfg, &zapOpts, nodeName)
	if err := fs.Parse(args); err != nil {
		return cfg, zapOpts, err
	}
	if fs.NArg() > 0 {
		return cfg, zapOpts, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return cfg, zapOpts, cfg.Validate()
}

func main() {
	cfg, zapOpts, err := parse(os.Args[1:], os.Getenv("NODE_NAME"))
	log := zap.New(zap.UseFlagOptions(&zapOpts)).WithName("csi-node")
	if err != nil {
		if err != flag.ErrHelp {
			log.Error(err, "Invalid flags")
		}
		os.Exit(2)
	}
	// SIGTERM (the pod stopping) removes the sockets, so the kubelet
	// unregisters the driver. Mounts already published stay: they are the
	// pods', and unpublish needs only the next plugin to answer.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	blobs, err := csinode.NewBlobReader(cfg.Kubeconfig)
	if err != nil {
		log.Error(err, "Cannot reach the API server: consumer volumes need it to read PfsBlobs")
		os.Exit(1)
	}
	log.Info("Starting", "driver", csinode.DriverName, "version", csinode.Version, "node", cfg.NodeName,
		"socketRoot", cfg.SocketRoot, "stagingDir", cfg.StagingDir, "endpoint", cfg.Endpoint, "registration", cfg.RegistrationSocket())
	if err := csinode.Run(ctx, cfg, blobs, log); err != nil {
		log.Error(err, "CSI node plugin failed")
		stop()
		os.Exit(1)
	}
}
