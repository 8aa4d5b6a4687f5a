// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"fmt"
	"slices"
	"sync"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// device is one device as the kubelet sees it. Plain values, so that lists
// compare with slices.Equal and each stream builds its own messages.
type device struct {
	ID      string
	Healthy bool
	// NUMANode is -1 when the device has no topology.
	NUMANode int
}

// devicesOf is what a link advertises in a state: the whole link as one
// device named after the interface, or one device per RX queue,
// <ifname>-q<N>.
func devicesOf(ifname string, perQueue bool, st linkState) []device {
	if !perQueue {
		return []device{{ID: ifname, Healthy: st.Healthy, NUMANode: st.NUMANode}}
	}
	out := make([]device, 0, st.Queues)
	for q := 0; q < st.Queues; q++ {
		out = append(out, device{ID: queueDeviceID(ifname, q), Healthy: st.Healthy, NUMANode: st.NUMANode})
	}
	return out
}

func queueDeviceID(ifname string, q int) string { return fmt.Sprintf("%s-q%d", ifname, q) }

// toProto builds the kubelet's messages for a list.
func toProto(devs []device) []*pluginapi.Device {
	out := make([]*pluginapi.Device, 0, len(devs))
	for _, d := range devs {
		pd := &pluginapi.Device{ID: d.ID, Health: pluginapi.Unhealthy}
		if d.Healthy {
			pd.Health = pluginapi.Healthy
		}
		if d.NUMANode >= 0 {
			pd.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(d.NUMANode)}}}
		}
		out = append(out, pd)
	}
	return out
}

// deviceList is one resource's current devices, written by the plugin's
// loop and read by the gRPC handlers; it outlives the servers, so a server
// started again after a kubelet restart serves the last known health.
type deviceList struct {
	mu   sync.Mutex
	devs []device
	// changed is closed, and replaced, on every change: a ListAndWatch
	// stream waits on the channel it got with the list it sent.
	changed chan struct{}
}

func newDeviceList() *deviceList { return &deviceList{changed: make(chan struct{})} }

// get returns the devices and the channel that closes when they change.
func (l *deviceList) get() ([]device, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.devs), l.changed
}

// set replaces the devices; it wakes the streams only if they differ.
func (l *deviceList) set(devs []device) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.Equal(l.devs, devs) {
		return false
	}
	l.devs = slices.Clone(devs)
	close(l.changed)
	l.changed = make(chan struct{})
	return true
}

// lookup returns the devices with these IDs, and the IDs it does not know.
func (l *deviceList) lookup(ids []string) (found []device, unknown []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		i := slices.IndexFunc(l.devs, func(d device) bool { return d.ID == id })
		if i < 0 {
			unknown = append(unknown, id)
			continue
		}
		found = append(found, l.devs[i])
	}
	return found, unknown
}
