// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"encoding/json"
	"strings"
)

// networkSelectionElement is one entry of Multus's network-selection
// annotation in its JSON form (the NPWG multi-network specification).
type networkSelectionElement struct {
	Name      string   `json:"name"`
	Namespace string   `json:"namespace,omitempty"`
	IPs       []string `json:"ips,omitempty"`
}

// networkSelection is the k8s.v1.cni.cncf.io/networks value for network
// ("name" or "namespace/name"): the short form without addresses, the JSON
// form with ips, which Multus hands to the NAD's IPAM (static IPAM with the
// "ips" capability takes them).
func networkSelection(network string, ips []string) string {
	if len(ips) == 0 {
		return network
	}
	e := networkSelectionElement{Name: network, IPs: ips}
	if ns, name, ok := strings.Cut(network, "/"); ok {
		e.Namespace, e.Name = ns, name
	}
	out, err := json.Marshal([]networkSelectionElement{e})
	if err != nil { // strings only: cannot fail
		return network
	}
	return string(out)
}
