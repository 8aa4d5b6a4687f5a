// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Defaults of the flags.
const (
	DefaultResourcePrefix  = "packetfs.io"
	DefaultDevicePluginDir = "/var/lib/kubelet/device-plugins"
	DefaultSysfs           = "/sys"
	DefaultPollInterval    = 5 * time.Second
)

// HealthSource says what makes a present link Healthy.
type HealthSource string

const (
	// HealthOperstate makes a link Healthy when its operstate is "up" or "unknown".
	HealthOperstate HealthSource = "operstate"
	// HealthPresence makes a link Healthy when it is in the node's network
	// namespace, whatever its state. For links a CNI brings up inside the
	// pod and returns down (host-device on DEL), where operstate would mark
	// every returned link Unhealthy and nothing would bring it up again.
	HealthPresence HealthSource = "presence"
)

// String is the flag's value.
func (h *HealthSource) String() string { return string(*h) }

// Set parses the --health flag.
func (h *HealthSource) Set(v string) error {
	switch HealthSource(v) {
	case HealthOperstate, HealthPresence:
		*h = HealthSource(v)
		return nil
	}
	return fmt.Errorf("want %s or %s", HealthOperstate, HealthPresence)
}

// Config is the device plugin's configuration; it comes from flags only.
type Config struct {
	// Links are the data links to advertise, in flag order.
	Links []LinkSpec
	// ResourcePrefix is the domain of every resource name (<prefix>/<ifname>).
	ResourcePrefix string
	// DevicePluginDir holds the kubelet's registration socket and ours.
	DevicePluginDir string
	// Sysfs is where sysfs is mounted (a test points it at a fake tree).
	Sysfs string
	// PollInterval is how often link state is read.
	PollInterval time.Duration
	// Health says what makes a present link Healthy.
	Health HealthSource
}

// LinkSpec is one --link: an interface named directly or through its PCI
// address, handed out whole or per RX queue.
type LinkSpec struct {
	// IfName is the interface name; empty when the link is named by PCI address.
	IfName string
	// PCIAddress is DDDD:BB:DD.F in lower case; empty when named by IfName.
	PCIAddress string
	// PerQueue hands out one device per RX queue instead of the whole link.
	PerQueue bool
}

// String gives the spec back as it is written on the command line.
func (s LinkSpec) String() string {
	name := s.IfName
	if name == "" {
		name = s.PCIAddress
	}
	if s.PerQueue {
		return name + queuesSuffix
	}
	return name
}

const queuesSuffix = "/queues"

var (
	// An interface name that is also a valid resource name part: Linux
	// allows up to 15 bytes of almost anything, a resource name only
	// alphanumerics inside '-', '_' and '.'.
	ifNameRE = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,13}[A-Za-z0-9])?$`)
	pciRE    = regexp.MustCompile(`^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)
)

// ParseLinkSpec parses IFNAME or DDDD:BB:DD.F, optionally followed by /queues.
func ParseLinkSpec(s string) (LinkSpec, error) {
	name, mode, hasMode := strings.Cut(s, "/")
	spec := LinkSpec{}
	if hasMode {
		if "/"+mode != queuesSuffix {
			return spec, fmt.Errorf("link %q: unknown mode %q after the name: want %s (one device per RX queue) or nothing (the whole link)",
				s, "/"+mode, queuesSuffix)
		}
		spec.PerQueue = true
	}
	switch {
	case name == "":
		return spec, fmt.Errorf("link %q: no interface name or PCI address", s)
	case strings.Contains(name, ":"):
		// An interface name cannot hold ':', so this is meant as a PCI address.
		if !pciRE.MatchString(name) {
			return spec, fmt.Errorf("link %q: %q is not a PCI address of the form DDDD:BB:DD.F (e.g. 0000:3b:00.1)", s, name)
		}
		spec.PCIAddress = strings.ToLower(name)
	default:
		if err := checkIfName(name); err != nil {
			return spec, fmt.Errorf("link %q: %w", s, err)
		}
		spec.IfName = name
	}
	return spec, nil
}

// checkIfName accepts the interface names that can end a resource name.
func checkIfName(name string) error {
	if !ifNameRE.MatchString(name) {
		return fmt.Errorf("interface name %q cannot name a resource: want at most 15 letters, digits, '-', '_' or '.', "+
			"beginning and ending with a letter or digit", name)
	}
	return nil
}

// linkList is the repeatable --link flag.
type linkList struct{ specs *[]LinkSpec }

func (l linkList) String() string {
	if l.specs == nil {
		return ""
	}
	out := make([]string, 0, len(*l.specs))
	for _, s := range *l.specs {
		out = append(out, s.String())
	}
	return strings.Join(out, ",")
}

func (l linkList) Set(v string) error {
	spec, err := ParseLinkSpec(v)
	if err != nil {
		return err
	}
	*l.specs = append(*l.specs, spec)
	return nil
}

// Bind registers the flags on fs with their defaults.
func (c *Config) Bind(fs *flag.FlagSet) {
	fs.Var(linkList{&c.Links}, "link",
		"A data link to advertise, repeatable: IFNAME or a PCI address DDDD:BB:DD.F, optionally followed by /queues "+
			"(one device per RX queue instead of one for the whole link). The resource is <resource-prefix>/<ifname>.")
	fs.StringVar(&c.ResourcePrefix, "resource-prefix", DefaultResourcePrefix,
		"Domain of the resource names (<prefix>/<ifname>).")
	fs.StringVar(&c.DevicePluginDir, "device-plugin-dir", DefaultDevicePluginDir,
		"Directory of the kubelet's registration socket (kubelet.sock); the plugin's sockets go there too.")
	fs.StringVar(&c.Sysfs, "sysfs", DefaultSysfs,
		"Where sysfs is mounted; it must show the node's network namespace (a hostNetwork pod).")
	fs.DurationVar(&c.PollInterval, "poll-interval", DefaultPollInterval,
		"How often the links' state is read from sysfs.")
	c.Health = HealthOperstate
	fs.Var(&c.Health, "health", "What makes a link Healthy: operstate (its operstate is up or unknown) or presence "+
		"(it is in the node's network namespace, up or down).")
}

// Validate checks what the flags cannot check one by one. Interface names
// found through PCI addresses are checked when they are resolved.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Links) == 0 {
		errs = append(errs, errors.New("no --link: name at least one data link (IFNAME or DDDD:BB:DD.F, optionally with /queues)"))
	}
	if msgs := validation.IsDNS1123Subdomain(c.ResourcePrefix); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--resource-prefix %q: %s", c.ResourcePrefix, strings.Join(msgs, "; ")))
	} else if strings.Contains(c.ResourcePrefix+"/", "kubernetes.io/") {
		// The kubelet takes names in kubernetes.io for its own resources and refuses them from plugins.
		errs = append(errs, fmt.Errorf("--resource-prefix %q: the kubernetes.io domain is reserved for Kubernetes' own resources", c.ResourcePrefix))
	}
	for _, d := range []struct{ flag, path string }{{"--device-plugin-dir", c.DevicePluginDir}, {"--sysfs", c.Sysfs}} {
		if !filepath.IsAbs(d.path) {
			errs = append(errs, fmt.Errorf("%s %q: want an absolute path", d.flag, d.path))
		}
	}
	if c.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("--poll-interval %s: want a positive duration", c.PollInterval))
	}
	seen := map[string]bool{}
	for _, l := range c.Links {
		if k := l.IfName + l.PCIAddress; seen[k] {
			errs = append(errs, fmt.Errorf("--link %s is given twice", k))
		} else {
			seen[k] = true
		}
	}
	return errors.Join(errs...)
}
