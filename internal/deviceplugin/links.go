// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// link is one configured data link, resolved to its interface and resource.
// Only the plugin's loop touches state; the gRPC servers read devices.
type link struct {
	spec     LinkSpec
	ifname   string
	resource string // <prefix>/<ifname>
	pool     string // the resource's name part as an env suffix: PFSDATA0
	socket   string // base name of the plugin's socket in the device-plugin dir
	state    linkState
	devices  *deviceList
}

// resolveLinks turns the specs into links: a PCI address becomes its
// interface name, and every name must make a distinct resource and pool.
func resolveLinks(cfg Config) ([]*link, error) {
	var errs []error
	links := make([]*link, 0, len(cfg.Links))
	byName := map[string]LinkSpec{}
	byPool := map[string]string{}
	for _, spec := range cfg.Links {
		ifname := spec.IfName
		if spec.PCIAddress != "" {
			name, err := resolvePCI(cfg.Sysfs, spec.PCIAddress)
			if err != nil {
				errs = append(errs, fmt.Errorf("--link %s: %w", spec, err))
				continue
			}
			if err := checkIfName(name); err != nil {
				errs = append(errs, fmt.Errorf("--link %s: %w", spec, err))
				continue
			}
			ifname = name
		}
		if prev, dup := byName[ifname]; dup {
			errs = append(errs, fmt.Errorf("--link %s and --link %s are both %s", prev, spec, ifname))
			continue
		}
		byName[ifname] = spec
		resource := cfg.ResourcePrefix + "/" + ifname
		if msgs := validation.IsQualifiedName(resource); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--link %s: resource name %q: %s", spec, resource, strings.Join(msgs, "; ")))
			continue
		}
		p := poolName(ifname)
		if other, dup := byPool[p]; dup {
			// Both would set AFXDP_DEVICES_<POOL> in a container that asks for both.
			errs = append(errs, fmt.Errorf("--link %s: interfaces %s and %s give the same environment suffix %s", spec, other, ifname, p))
			continue
		}
		byPool[p] = ifname
		links = append(links, &link{
			spec:     spec,
			ifname:   ifname,
			resource: resource,
			pool:     p,
			socket:   "pfs-" + ifname + ".sock",
			devices:  newDeviceList(),
		})
	}
	return links, errors.Join(errs...)
}

// poolName is a resource name part as an environment variable suffix: upper
// case, every byte that is not a letter or digit replaced by '_'
// (pfsdata0 -> PFSDATA0, data.link-1 -> DATA_LINK_1).
func poolName(name string) string {
	b := []byte(strings.ToUpper(name))
	for i, c := range b {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			b[i] = '_'
		}
	}
	return string(b)
}
