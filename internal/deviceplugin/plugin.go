// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
)

// One goroutine (Run's loop) owns the links' state, the servers and the
// registrations; the gRPC handlers read only each link's deviceList. The
// loop wakes on three things: the poll ticker (read sysfs, publish changes,
// retry what failed, check the sockets), a change in the device-plugin
// directory (the kubelet restarted), and the end of ctx (SIGTERM).

// endpoint is one link's server and its registration with the kubelet.
type endpoint struct {
	link       *link
	srv        *server // nil while not serving (a listen that failed is retried at the next poll)
	registered bool
	// failing: the last registration failed; it is logged once, not every poll.
	failing bool
}

type plugin struct {
	cfg       Config
	log       logr.Logger
	endpoints []*endpoint
	ours      map[string]bool // socket base names
	kubelet   string          // <dir>/kubelet.sock
	// kubeletFile is kubelet.sock as it was at the last registration: a
	// different file (another inode) means the kubelet started again.
	kubeletFile os.FileInfo
	polled      bool
}

// Run advertises the configured links until ctx ends, then stops serving
// and removes its sockets. It fails at once on a bad configuration (a PCI
// address without an interface, two links with one name, a directory it
// cannot watch); later trouble (no kubelet yet, a link gone) is logged and
// retried, never fatal.
func Run(ctx context.Context, cfg Config, log logr.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	links, err := resolveLinks(cfg)
	if err != nil {
		return err
	}
	w, err := watchDir(cfg.DevicePluginDir)
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }()

	p := &plugin{cfg: cfg, log: log, ours: map[string]bool{}, kubelet: filepath.Join(cfg.DevicePluginDir, KubeletSocket)}
	for _, l := range links {
		l.state = initialState()
		p.endpoints = append(p.endpoints, &endpoint{link: l})
		p.ours[l.socket] = true
		log.Info("Advertising a data link", "link", l.spec.String(), "interface", l.ifname, "resource", l.resource,
			"perQueue", l.spec.PerQueue, "socket", l.socket)
	}
	defer p.stopAll()

	// The first list is known before the kubelet can ask for it.
	p.poll()
	p.reconcile(ctx, false)
	tick := time.NewTicker(cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("Stopping: closing the plugin sockets")
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("the device-plugin directory watch ended")
			}
			switch classify(ev, p.ours) {
			case eventKubeletStarted:
				log.Info("The kubelet's socket appeared: registering again", "socket", p.kubelet)
				p.reconcile(ctx, true)
			case eventKubeletStopped:
				log.Info("The kubelet's socket is gone: the kubelet is restarting or stopped", "socket", p.kubelet)
			case eventSocketGone:
				p.reconcile(ctx, false)
			case eventOther:
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("the device-plugin directory watch ended")
			}
			log.Error(err, "Watching the device-plugin directory; the poll still checks the sockets")
		case <-tick.C:
			p.poll()
			p.reconcile(ctx, p.kubeletRestarted())
		}
	}
}

// poll reads every link from sysfs and publishes its devices; the streams
// wake only when the list changed.
func (p *plugin) poll() {
	for _, e := range p.endpoints {
		l := e.link
		next := advance(l.state, observe(p.cfg.Sysfs, l.ifname), p.cfg.Health)
		p.logChange(l, l.state, next)
		l.state = next
		l.devices.set(devicesOf(l.ifname, l.spec.PerQueue, next))
	}
	p.polled = true
}

// logChange says what changed in a link, once per change.
func (p *plugin) logChange(l *link, prev, next linkState) {
	log := p.log.WithValues("link", l.ifname, "resource", l.resource)
	switch {
	case !p.polled && !next.Present && l.spec.PerQueue:
		log.Info("The link is not in the node's network namespace: no devices until it appears, its queue count is unknown " +
			"(a pod may hold it, or it does not exist yet)")
	case !p.polled && !next.Present:
		log.Info("The link is not in the node's network namespace: Unhealthy until it appears " +
			"(a pod may hold it, or it does not exist yet)")
	case prev.Present && !next.Present:
		log.Info("The link left the node's network namespace (the host-device CNI moved it into the pod it was allocated to?): " +
			"its health stays as it was")
	case prev.Seen && !prev.Present && next.Present:
		log.Info("The link is back in the node's network namespace")
	}
	if !next.Present {
		return
	}
	if !prev.Seen || prev.Healthy != next.Healthy {
		log.Info("Link health", "healthy", next.Healthy, "operstate", next.Operstate, "rule", p.cfg.Health)
	}
	if !prev.Seen || prev.NUMANode != next.NUMANode || prev.NoNUMAReason != next.NoNUMAReason {
		if next.NUMANode < 0 {
			log.Info(next.NoNUMAReason)
		} else {
			log.Info("Link topology", "numaNode", next.NUMANode)
		}
	}
	if l.spec.PerQueue && (!prev.Seen || prev.Queues != next.Queues) {
		log.Info("RX queues, one device each", "queues", next.Queues)
	}
}

// reconcile serves every link whose socket is missing and registers what
// is not registered; reregister forgets every registration first (the
// kubelet started again and knows none of them).
func (p *plugin) reconcile(ctx context.Context, reregister bool) {
	for _, e := range p.endpoints {
		if e.srv != nil && !e.srv.socketExists() {
			p.log.Info("The plugin socket was removed (the kubelet restarts?): serving it again", "socket", e.srv.sock.Path)
			e.srv.stop()
			e.srv = nil
		}
		if e.srv == nil {
			srv, err := startServer(p.cfg.DevicePluginDir, e.link, p.log)
			if err != nil {
				p.log.Error(err, "Could not serve the plugin socket; trying again at the next poll", "resource", e.link.resource)
				continue
			}
			e.srv, e.registered = srv, false
		}
		if reregister {
			e.registered = false
		}
		if e.registered {
			continue
		}
		if err := register(ctx, p.kubelet, e.link.socket, e.link.resource); err != nil {
			if !e.failing {
				p.log.Error(err, "Could not register with the kubelet; trying again at each poll and when kubelet.sock appears")
			}
			e.failing = true
			continue
		}
		p.log.Info("Registered with the kubelet", "resource", e.link.resource, "endpoint", e.link.socket)
		e.registered, e.failing = true, false
		if fi, err := os.Stat(p.kubelet); err == nil {
			p.kubeletFile = fi
		}
	}
}

// kubeletRestarted: kubelet.sock is another file than at the last
// registration (the poll's fallback for a missed directory event). The
// modification time is compared too: a socket created right after the
// old one was removed may get the same inode number.
func (p *plugin) kubeletRestarted() bool {
	if p.kubeletFile == nil {
		return false
	}
	fi, err := os.Stat(p.kubelet)
	return err == nil && (!os.SameFile(fi, p.kubeletFile) || !fi.ModTime().Equal(p.kubeletFile.ModTime()))
}

func (p *plugin) stopAll() {
	for _, e := range p.endpoints {
		if e.srv != nil {
			e.srv.stop()
			e.srv = nil
		}
	}
}
