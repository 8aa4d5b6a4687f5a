// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"fmt"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// What happens in the device-plugin directory. When the kubelet starts it
// removes every socket there but its own, then creates kubelet.sock; a
// plugin must then serve again and register again. Watching the directory
// sees this at once; the plugin's poll also checks its sockets and
// kubelet.sock's identity, in case an event is missed (an overflowing
// inotify queue, a directory replaced under the watch).

// dirEvent is what a change in the directory means to the plugin.
type dirEvent int

const (
	// eventOther: nothing the plugin acts on (its own sockets appearing,
	// other plugins' sockets, the kubelet's checkpoint file).
	eventOther dirEvent = iota
	// eventKubeletStarted: kubelet.sock was created; register again.
	eventKubeletStarted
	// eventKubeletStopped: kubelet.sock was removed; registration waits for its return.
	eventKubeletStopped
	// eventSocketGone: one of the plugin's sockets was removed or renamed away.
	eventSocketGone
)

// classify tells what an event means; ours holds the base names of the
// plugin's sockets.
func classify(ev fsnotify.Event, ours map[string]bool) dirEvent {
	name := filepath.Base(ev.Name)
	switch {
	case name == KubeletSocket && ev.Has(fsnotify.Create):
		return eventKubeletStarted
	case name == KubeletSocket && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)):
		return eventKubeletStopped
	case ours[name] && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)):
		return eventSocketGone
	}
	return eventOther
}

// watchDir starts watching dir (not recursively).
func watchDir(dir string) (*fsnotify.Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	if err := w.Add(dir); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	return w, nil
}
