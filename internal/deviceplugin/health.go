// SPDX-License-Identifier: Apache-2.0

package deviceplugin

// Health and topology of one link, from one sysfs observation to the next.
//
// The rules:
//   - Present, --health=operstate: "up" or "unknown" (drivers that do not
//     report a state, e.g. tun) is Healthy; anything else ("down",
//     "lowerlayerdown", "dormant", "notpresent", an unreadable file) is
//     Unhealthy.
//   - Present, --health=presence: Healthy.
//   - Absent from the node's namespace after it was seen: the state stays
//     what it was. The host-device CNI moves the interface into the pod it
//     was allocated to, so while a pod holds the link the node does not see
//     it; that is the link in use, not a fault, and the pod must not look
//     as if it held a broken device.
//   - Absent since the plugin started: Unhealthy until it is seen. The
//     plugin cannot tell a pod holding it (after a plugin restart) from a
//     typo or a link not yet created, and it must not let the kubelet hand
//     out what it has never seen. In per-queue mode the queue count is
//     unknown until then, so the link has no devices at all.

// linkState is what the plugin knows of one link.
type linkState struct {
	// Seen: the interface was present at least once.
	Seen bool
	// Present: the interface was present at the last observation.
	Present bool
	// Healthy is the link's health (last known while absent).
	Healthy bool
	// Operstate is the last operstate read.
	Operstate string
	// Queues is the last RX queue count read.
	Queues int
	// NUMANode is the last NUMA node read; -1 for none.
	NUMANode int
	// NoNUMAReason says why NUMANode is -1.
	NoNUMAReason string
}

// initialState is a link before its first observation.
func initialState() linkState { return linkState{NUMANode: -1} }

// advance is the link's state after one observation.
func advance(prev linkState, obs observation, health HealthSource) linkState {
	if !obs.Present {
		prev.Present = false
		return prev
	}
	return linkState{
		Seen:         true,
		Present:      true,
		Healthy:      health == HealthPresence || operstateHealthy(obs.Operstate),
		Operstate:    obs.Operstate,
		Queues:       obs.Queues,
		NUMANode:     obs.NUMANode,
		NoNUMAReason: obs.NoNUMAReason,
	}
}

// operstateHealthy: the kernel's operstate says the link can carry traffic
// ("unknown" is what drivers without carrier reporting say when up).
func operstateHealthy(s string) bool { return s == "up" || s == "unknown" }
