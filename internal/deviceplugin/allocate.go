// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The environment a container gets with a link's devices. POOL is the
// resource's name part in upper case with '_' for every other byte
// (packetfs.io/pfsdata0 -> PFSDATA0):
//
//	AFXDP_DEVICES_<POOL>=<ifname>       the variable the AF_XDP device plugin
//	                                    sets, so workloads that read it find
//	                                    their link (it separates a pool's
//	                                    interfaces with spaces; a resource
//	                                    of ours is one link, one name)
//	PFS_DATA_LINK_<POOL>=<ifname>       the interface the data plane opens
//	PFS_DATA_QUEUES_<POOL>=<q>[,<q>...] per-queue mode only: the RX queues
//	                                    allocated, ascending
//
// The values are names and numbers only: the CNI moves the interface into
// the pod, the kubelet needs no device nodes or mounts from us.

// Environment variable prefixes; the pool name completes them.
const (
	EnvAFXDPDevices = "AFXDP_DEVICES_"
	EnvDataLink     = "PFS_DATA_LINK_"
	EnvDataQueues   = "PFS_DATA_QUEUES_"
)

// containerEnv is the environment for one container allocated the devices
// ids of a link. The IDs must be the link's (the caller checked them
// against the advertised list); an ID that does not parse is an error.
func containerEnv(ifname, pool string, perQueue bool, ids []string) (map[string]string, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("no device IDs for %s", ifname)
	}
	env := map[string]string{
		EnvAFXDPDevices + pool: ifname,
		EnvDataLink + pool:     ifname,
	}
	if !perQueue {
		for _, id := range ids {
			if id != ifname {
				return nil, fmt.Errorf("device %q is not link %s", id, ifname)
			}
		}
		return env, nil
	}
	queues := make([]int, 0, len(ids))
	for _, id := range ids {
		q, err := queueOf(ifname, id)
		if err != nil {
			return nil, err
		}
		queues = append(queues, q)
	}
	slices.Sort(queues)
	queues = slices.Compact(queues)
	s := make([]string, len(queues))
	for i, q := range queues {
		s[i] = strconv.Itoa(q)
	}
	env[EnvDataQueues+pool] = strings.Join(s, ",")
	return env, nil
}

// queueOf parses <ifname>-q<N>.
func queueOf(ifname, id string) (int, error) {
	rest, ok := strings.CutPrefix(id, ifname+"-q")
	q, err := strconv.Atoi(rest)
	if !ok || err != nil || q < 0 || strconv.Itoa(q) != rest {
		return 0, fmt.Errorf("device %q is not a queue of link %s (want %s-q<N>)", id, ifname, ifname)
	}
	return q, nil
}
