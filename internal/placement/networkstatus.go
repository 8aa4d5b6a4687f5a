// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// NetworkStatusAnnotation is where Multus reports a pod's interfaces.
const NetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"

// networkStatus is one entry of the network-status annotation.
type networkStatus struct {
	Name      string   `json:"name"`
	Interface string   `json:"interface"`
	IPs       []string `json:"ips"`
	MAC       string   `json:"mac"`
	Default   bool     `json:"default"`
}

// Address is how the sender reaches the receiver.
type Address struct {
	// IP is the receiver's address on the data network.
	IP string
	// Interface is the receiver's interface name ("" for the pod network).
	Interface string
	// MAC is the receiver's MAC on a secondary network, when Multus reported it.
	MAC string
}

// HostPort joins IP and port, with brackets for IPv6.
func (a Address) HostPort(port int) string {
	return net.JoinHostPort(a.IP, fmt.Sprint(port))
}

// ReceiverAddress finds the address a sender must use to reach pod: the
// first IP of the secondary network named network (a "name" or
// "namespace/name" of a NetworkAttachmentDefinition, as in spec.*.network)
// from the Multus network-status annotation, or the pod IP when network is
// empty. An error means "not known yet" (the annotation is written after the
// pod's sandbox starts) or the network is absent from the pod.
func ReceiverAddress(pod *corev1.Pod, network string) (Address, error) {
	if network == "" {
		if pod.Status.PodIP == "" {
			return Address{}, fmt.Errorf("pod %s has no IP yet", pod.Name)
		}
		return Address{IP: pod.Status.PodIP}, nil
	}
	raw, ok := pod.Annotations[NetworkStatusAnnotation]
	if !ok || raw == "" {
		return Address{}, fmt.Errorf("pod %s has no %s annotation yet (is Multus installed?)", pod.Name, NetworkStatusAnnotation)
	}
	var entries []networkStatus
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		return Address{}, fmt.Errorf("pod %s: cannot parse %s: %v", pod.Name, NetworkStatusAnnotation, err)
	}
	want := network
	if !strings.Contains(want, "/") {
		want = pod.Namespace + "/" + network
	}
	for _, e := range entries {
		name := e.Name
		if !strings.Contains(name, "/") {
			name = pod.Namespace + "/" + name
		}
		if name != want {
			continue
		}
		for _, ip := range e.IPs {
			if net.ParseIP(ip) != nil {
				return Address{IP: ip, Interface: e.Interface, MAC: e.MAC}, nil
			}
		}
		return Address{}, fmt.Errorf("pod %s: network %s has no IP address in %s", pod.Name, network, NetworkStatusAnnotation)
	}
	return Address{}, fmt.Errorf("pod %s: network %s is not in %s", pod.Name, network, NetworkStatusAnnotation)
}
