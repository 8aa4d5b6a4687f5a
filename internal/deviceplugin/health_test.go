// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAdvance(t *testing.T) {
	up := observation{Present: true, Operstate: "up", Queues: 4, NUMANode: 1}
	gone := observation{NUMANode: -1}
	healthyState := linkState{Seen: true, Present: true, Healthy: true, Operstate: "up", Queues: 4, NUMANode: 1}
	downState := linkState{Seen: true, Present: true, Operstate: "down", Queues: 4, NUMANode: 1}
	with := func(o observation, operstate string) observation { o.Operstate = operstate; return o }

	tests := map[string]struct {
		prev   linkState
		obs    observation
		health HealthSource
		want   linkState
	}{
		"first seen up": {initialState(), up, HealthOperstate, healthyState},
		"unknown is healthy": {initialState(), with(up, "unknown"), HealthOperstate,
			linkState{Seen: true, Present: true, Healthy: true, Operstate: "unknown", Queues: 4, NUMANode: 1}},
		"down":            {healthyState, with(up, "down"), HealthOperstate, downState},
		"lowerlayerdown":  {healthyState, with(up, "lowerlayerdown"), HealthOperstate, linkState{Seen: true, Present: true, Operstate: "lowerlayerdown", Queues: 4, NUMANode: 1}},
		"unreadable":      {healthyState, with(up, ""), HealthOperstate, linkState{Seen: true, Present: true, Queues: 4, NUMANode: 1}},
		"back up":         {downState, up, HealthOperstate, healthyState},
		"never seen":      {initialState(), gone, HealthOperstate, linkState{NUMANode: -1}},
		"gone while up":   {healthyState, gone, HealthOperstate, linkState{Seen: true, Healthy: true, Operstate: "up", Queues: 4, NUMANode: 1}},
		"gone while down": {downState, gone, HealthOperstate, linkState{Seen: true, Operstate: "down", Queues: 4, NUMANode: 1}},
		"presence: down is healthy": {healthyState, with(up, "down"), HealthPresence,
			linkState{Seen: true, Present: true, Healthy: true, Operstate: "down", Queues: 4, NUMANode: 1}},
		"presence: never seen is unhealthy": {initialState(), gone, HealthPresence, linkState{NUMANode: -1}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, advance(tc.prev, tc.obs, tc.health)); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDevicesOf(t *testing.T) {
	st := linkState{Seen: true, Present: true, Healthy: true, Queues: 3, NUMANode: 1}
	tests := map[string]struct {
		perQueue bool
		st       linkState
		want     []device
	}{
		"whole link":           {false, st, []device{{ID: "eth0", Healthy: true, NUMANode: 1}}},
		"whole link, unseen":   {false, initialState(), []device{{ID: "eth0", NUMANode: -1}}},
		"per queue":            {true, st, []device{{"eth0-q0", true, 1}, {"eth0-q1", true, 1}, {"eth0-q2", true, 1}}},
		"per queue, unseen":    {true, initialState(), []device{}},
		"per queue, unhealthy": {true, linkState{Seen: true, Queues: 1, NUMANode: -1}, []device{{"eth0-q0", false, -1}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, devicesOf("eth0", tc.perQueue, tc.st)); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeviceListWakesOnChangeOnly(t *testing.T) {
	l := newDeviceList()
	devs := []device{{ID: "eth0", Healthy: true, NUMANode: -1}}
	_, changed := l.get()
	if !l.set(devs) {
		t.Fatal("first list not a change")
	}
	select {
	case <-changed:
	default:
		t.Fatal("a change did not wake the watchers")
	}
	_, changed = l.get()
	if l.set([]device{{ID: "eth0", Healthy: true, NUMANode: -1}}) {
		t.Error("the same list counted as a change")
	}
	select {
	case <-changed:
		t.Fatal("an unchanged list woke the watchers")
	default:
	}
	found, unknown := l.lookup([]string{"eth0", "eth1"})
	if diff := cmp.Diff(devs, found); diff != "" || len(unknown) != 1 || unknown[0] != "eth1" {
		t.Errorf("lookup: found %v unknown %v", found, unknown)
	}
}
