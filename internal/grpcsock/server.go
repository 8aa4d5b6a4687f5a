// SPDX-License-Identifier: Apache-2.0

// Package grpcsock serves gRPC on a unix socket the kubelet dials: the
// device plugin's per-link sockets, the CSI node plugin's endpoint and its
// registration socket. The kubelet (or an operator cleaning up) may remove
// such a socket under a running server, so the owner asks SocketExists and
// serves again.
package grpcsock

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
)

// Server is one gRPC server listening on one unix socket.
type Server struct {
	// Path is the socket's path.
	Path string
	grpc *grpc.Server
	log  logr.Logger
}

// Start listens on path and serves in the background; register adds the
// services. A file left at path (a crashed run) is removed first: a unix
// socket cannot be bound over an existing file.
func Start(path string, register func(*grpc.Server), log logr.Logger) (*Server, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove the old socket %s: %w", path, err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	s := &Server{Path: path, grpc: grpc.NewServer(), log: log}
	register(s.grpc)
	go func() {
		if err := s.grpc.Serve(lis); err != nil {
			s.log.Error(err, "gRPC server stopped", "socket", path)
		}
	}()
	return s, nil
}

// Stop ends the server and removes the socket (closing the listener
// usually unlinks it already).
func (s *Server) Stop() {
	s.grpc.Stop()
	if err := os.Remove(s.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Error(err, "Could not remove the socket", "socket", s.Path)
	}
}

// SocketExists says whether the socket is still there: a server whose
// socket was removed can no longer be reached.
func (s *Server) SocketExists() bool {
	_, err := os.Lstat(s.Path)
	return err == nil
}
