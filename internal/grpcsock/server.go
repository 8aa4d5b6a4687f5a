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
	lis, err := listen(path)
	if err != nil {
		return nil, err
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

// listen binds a socket beside path, listens, and only then renames it to
// path. Binding creates the file before listen(2) makes it accept, so a
// client that sees the path appear (the kubelet watches the registration
// directory with inotify) could otherwise dial into that window and be
// refused; a rename makes the path appear already listening.
func listen(path string) (net.Listener, error) {
	tmp := path + ".new" // short: a socket path has at most 107 bytes
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove the old socket %s: %w", tmp, err)
	}
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", tmp, err)
	}
	// The listener would unlink tmp on close, which no longer exists once
	// renamed; Stop removes path itself.
	lis.SetUnlinkOnClose(false)
	if err := os.Rename(tmp, path); err != nil {
		_ = lis.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("move the socket into place at %s: %w", path, err)
	}
	return lis, nil
}

// Stop ends the server and removes the socket.
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
