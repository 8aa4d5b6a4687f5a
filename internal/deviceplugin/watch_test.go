// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"testing"

	"github.com/fsnotify/fsnotify"
)

func TestClassify(t *testing.T) {
	ours := map[string]bool{"pfs-pfsdata0.sock": true}
	tests := map[string]struct {
		ev   fsnotify.Event
		want dirEvent
	}{
		"kubelet socket created":   {fsnotify.Event{Name: "/dp/kubelet.sock", Op: fsnotify.Create}, eventKubeletStarted},
		"kubelet socket removed":   {fsnotify.Event{Name: "/dp/kubelet.sock", Op: fsnotify.Remove}, eventKubeletStopped},
		"kubelet socket renamed":   {fsnotify.Event{Name: "/dp/kubelet.sock", Op: fsnotify.Rename}, eventKubeletStopped},
		"kubelet socket chmod":     {fsnotify.Event{Name: "/dp/kubelet.sock", Op: fsnotify.Chmod}, eventOther},
		"our socket removed":       {fsnotify.Event{Name: "/dp/pfs-pfsdata0.sock", Op: fsnotify.Remove}, eventSocketGone},
		"our socket renamed":       {fsnotify.Event{Name: "/dp/pfs-pfsdata0.sock", Op: fsnotify.Rename}, eventSocketGone},
		"our socket created":       {fsnotify.Event{Name: "/dp/pfs-pfsdata0.sock", Op: fsnotify.Create}, eventOther},
		"another plugin removed":   {fsnotify.Event{Name: "/dp/sriov.sock", Op: fsnotify.Remove}, eventOther},
		"kubelet checkpoint write": {fsnotify.Event{Name: "/dp/kubelet_internal_checkpoint", Op: fsnotify.Write}, eventOther},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := classify(tc.ev, ours); got != tc.want {
				t.Errorf("classify(%v) = %d, want %d", tc.ev, got, tc.want)
			}
		})
	}
}
