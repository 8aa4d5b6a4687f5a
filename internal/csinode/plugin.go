// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"packetfs.io/operator/internal/grpcsock"
)

// socket is one of the two sockets the plugin keeps served.
type socket struct {
	path     string
	register func(*grpc.Server)
	srv      *grpcsock.Server // nil while not serving
	failing  bool             // the last listen failed; logged once
}

// Run serves the CSI socket and the registration socket until ctx ends,
// then removes both. The CSI socket comes first: the kubelet dials it as
// soon as it has read the registration. A socket that disappears (someone
// cleaned the directory) is served again at the next poll, and the kubelet
// registers the plugin again when the registration socket reappears.
//
// blobs reads PfsBlobs for consumer volumes. A plain GET per publish, not
// a cache: a publish happens once per pod start (and per kubelet retry),
// it must see the newest status and grant (a cache may lag a copy turning
// Ready or a grant revoked), and a watch of every PfsBlob from every node
// would cost memory on each node and load on the API server for nothing.
func Run(ctx context.Context, cfg Config, blobs client.Reader, log logr.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	for _, dir := range []string{filepath.Dir(cfg.Endpoint), cfg.RegistrationDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(cfg.SocketRoot, 0o755); err != nil {
		return fmt.Errorf("create the socket root %s: %w", cfg.SocketRoot, err)
	}
	if err := os.MkdirAll(cfg.StagingDir, 0o750); err != nil {
		return fmt.Errorf("create the staging directory %s: %w", cfg.StagingDir, err)
	}
	sweepOrphans(cfg.StagingDir, log)
	node := &nodeServer{cfg: cfg, log: log.WithName("node"), blobs: blobs}
	ident := &identityServer{socketRoot: cfg.SocketRoot}
	reg := &registration{endpoint: cfg.Endpoint, log: log.WithName("registration")}
	sockets := []*socket{
		{path: cfg.Endpoint, register: func(g *grpc.Server) {
			csi.RegisterIdentityServer(g, ident)
			csi.RegisterNodeServer(g, node)
		}},
		{path: cfg.RegistrationSocket(), register: func(g *grpc.Server) { registerapi.RegisterRegistrationServer(g, reg) }},
	}
	defer func() {
		for _, s := range sockets {
			if s.srv != nil {
				s.srv.Stop()
			}
		}
	}()
	serve(sockets, log)
	tick := time.NewTicker(cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("Stopping: closing the sockets")
			if f, err := os.Open("/proc/self/mountinfo"); err == nil {
				sweepSockets(cfg.SocketRoot, f, log.WithName("sweep"))
				_ = f.Close()
			}
			return nil
		case <-tick.C:
			serve(sockets, log)
		}
	}
}

// serve starts every socket that is not served, in order, and stops at
// the first that fails: the registration must not name an endpoint that
// is not there.
func serve(sockets []*socket, log logr.Logger) {
	for _, s := range sockets {
		if s.srv != nil && !s.srv.SocketExists() {
			log.Info("The socket was removed: serving it again", "socket", s.path)
			s.srv.Stop()
			s.srv = nil
		}
		if s.srv != nil {
			continue
		}
		srv, err := grpcsock.Start(s.path, s.register, log)
		if err != nil {
			if !s.failing {
				log.Error(err, "Could not serve the socket; trying again at each poll", "socket", s.path)
			}
			s.failing = true
			return
		}
		log.Info("Serving", "socket", s.path)
		s.srv, s.failing = srv, false
	}
}
