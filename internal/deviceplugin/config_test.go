// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConfigFlags(t *testing.T) {
	defaults := func(links ...LinkSpec) Config {
		return Config{Links: links, ResourcePrefix: "packetfs.io", DevicePluginDir: "/var/lib/kubelet/device-plugins",
			Sysfs: "/sys", PollInterval: 5 * time.Second, Health: HealthOperstate}
	}
	tests := map[string]struct {
		args []string
		want Config
		err  string // substring of the parse or validation error; "" means valid
	}{
		"one interface": {
			args: []string{"--link=pfsdata0"},
			want: defaults(LinkSpec{IfName: "pfsdata0"}),
		},
		"interface per queue, PCI address, PCI per queue": {
			args: []string{"--link", "pfsdata1/queues", "--link", "0000:3B:00.1", "--link=0000:af:00.0/queues"},
			want: defaults(LinkSpec{IfName: "pfsdata1", PerQueue: true}, LinkSpec{PCIAddress: "0000:3b:00.1"},
				LinkSpec{PCIAddress: "0000:af:00.0", PerQueue: true}),
		},
		"every flag": {
			args: []string{"--link=ens1f0", "--resource-prefix=net.example.com", "--device-plugin-dir=/run/dp",
				"--sysfs=/host/sys", "--poll-interval=250ms", "--health=presence"},
			want: Config{Links: []LinkSpec{{IfName: "ens1f0"}}, ResourcePrefix: "net.example.com", DevicePluginDir: "/run/dp",
				Sysfs: "/host/sys", PollInterval: 250 * time.Millisecond, Health: HealthPresence},
		},
		"names with dots, dashes and underscores": {
			args: []string{"--link=data.link-1", "--link=a_b"},
			want: defaults(LinkSpec{IfName: "data.link-1"}, LinkSpec{IfName: "a_b"}),
		},
		"no link":                   {args: nil, err: "no --link"},
		"empty link":                {args: []string{"--link="}, err: `link "": no interface name or PCI address`},
		"unknown mode":              {args: []string{"--link=pfsdata0/rx"}, err: `unknown mode "/rx" after the name: want /queues`},
		"mode without a name":       {args: []string{"--link=/queues"}, err: "no interface name or PCI address"},
		"name too long":             {args: []string{"--link=abcdefghijklmnop"}, err: `interface name "abcdefghijklmnop" cannot name a resource`},
		"name with a bad byte":      {args: []string{"--link=eth0@1"}, err: "want at most 15 letters, digits"},
		"name ending in a dash":     {args: []string{"--link=eth-"}, err: "beginning and ending with a letter or digit"},
		"short PCI address":         {args: []string{"--link=3b:00.1"}, err: `"3b:00.1" is not a PCI address of the form DDDD:BB:DD.F`},
		"PCI function out of range": {args: []string{"--link=0000:3b:00.8"}, err: "not a PCI address"},
		"same link twice":           {args: []string{"--link=pfsdata0", "--link=pfsdata0/queues"}, err: "--link pfsdata0 is given twice"},
		"bad prefix":                {args: []string{"--link=x", "--resource-prefix=Packet_FS"}, err: `--resource-prefix "Packet_FS"`},
		"reserved prefix":           {args: []string{"--link=x", "--resource-prefix=nic.kubernetes.io"}, err: "kubernetes.io domain is reserved"},
		"relative directory":        {args: []string{"--link=x", "--device-plugin-dir=dp"}, err: `--device-plugin-dir "dp": want an absolute path`},
		"relative sysfs":            {args: []string{"--link=x", "--sysfs=sys"}, err: `--sysfs "sys": want an absolute path`},
		"zero poll interval":        {args: []string{"--link=x", "--poll-interval=0s"}, err: "--poll-interval 0s: want a positive duration"},
		"unknown health source":     {args: []string{"--link=x", "--health=carrier"}, err: "want operstate or presence"},
		"every error is written":    {args: []string{"--sysfs=sys", "--poll-interval=-1s"}, err: "--poll-interval -1s"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var c Config
			fs := flag.NewFlagSet("pfs-device-plugin", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c.Bind(fs)
			err := fs.Parse(tc.args)
			if err == nil {
				err = c.Validate()
			}
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("valid flags rejected: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			case tc.err == "":
				if diff := cmp.Diff(tc.want, c); diff != "" {
					t.Errorf("config (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestLinkSpecString(t *testing.T) {
	for _, s := range []string{"pfsdata0", "pfsdata1/queues", "0000:3b:00.1", "0000:3b:00.1/queues"} {
		spec, err := ParseLinkSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := spec.String(); got != s {
			t.Errorf("ParseLinkSpec(%q).String() = %q", s, got)
		}
	}
}
