// SPDX-License-Identifier: Apache-2.0

// Command pfs-device-plugin is the kubelet device plugin of PacketFS: it
// advertises each data link named with --link as the extended resource
// <resource-prefix>/<ifname>, with its NUMA node and its health, and gives
// the containers allocated a link the environment the data plane reads.
// It runs on every data node as a DaemonSet (the Helm chart's
// devicePlugin.enabled); docs/guides/device-plugin.md describes it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"packetfs.io/operator/internal/deviceplugin"
)

// newFlagSet binds the plugin's flags and zap's logging flags.
func newFlagSet(cfg *deviceplugin.Config, zapOpts *zap.Options) *flag.FlagSet {
	fs := flag.NewFlagSet("pfs-device-plugin", flag.ContinueOnError)
	cfg.Bind(fs)
	zapOpts.BindFlags(fs)
	return fs
}

// parse reads the command line into a validated configuration.
func parse(args []string) (deviceplugin.Config, zap.Options, error) {
	var cfg deviceplugin.Config
	var zapOpts zap.Options
	fs := newFlagSet(&cfg, &zapOpts)
	if err := fs.Parse(args); err != nil {
		return cfg, zapOpts, err
	}
	if fs.NArg() > 0 {
		return cfg, zapOpts, fmt.Errorf("unexpected arguments %q: links are given with --link", fs.Args())
	}
	return cfg, zapOpts, cfg.Validate()
}

func main() {
	cfg, zapOpts, err := parse(os.Args[1:])
	log := zap.New(zap.UseFlagOptions(&zapOpts)).WithName("device-plugin")
	if err != nil {
		if err != flag.ErrHelp {
			log.Error(err, "Invalid flags")
		}
		os.Exit(2)
	}
	// SIGTERM (the pod stopping) stops the servers and removes the sockets:
	// the kubelet's streams end, and it marks the devices Unhealthy instead
	// of handing out links nobody watches.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log.Info("Starting", "links", len(cfg.Links), "resourcePrefix", cfg.ResourcePrefix, "dir", cfg.DevicePluginDir,
		"sysfs", cfg.Sysfs, "pollInterval", cfg.PollInterval, "health", cfg.Health)
	if err := deviceplugin.Run(ctx, cfg, log); err != nil {
		log.Error(err, "Device plugin failed")
		stop()
		os.Exit(1)
	}
}
