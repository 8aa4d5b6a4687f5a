// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := map[string]struct {
		args []string
		err  string // substring; "" means valid
	}{
		"links, plugin and zap flags": {args: []string{"--link=pfsdata0", "--link=pfsdata1/queues", "--resource-prefix=packetfs.io",
			"--poll-interval=2s", "--health=presence", "--zap-log-level=debug", "--zap-encoder=console", "--zap-time-encoding=iso8601"}},
		"no link":           {args: []string{"--zap-log-level=info"}, err: "no --link"},
		"bad link":          {args: []string{"--link=pfsdata0/all"}, err: `unknown mode "/all"`},
		"positional link":   {args: []string{"--link=pfsdata0", "pfsdata1"}, err: `unexpected arguments ["pfsdata1"]: links are given with --link`},
		"unknown flag":      {args: []string{"--link=pfsdata0", "--queues"}, err: "flag provided but not defined: -queues"},
		"bad zap log level": {args: []string{"--link=pfsdata0", "--zap-log-level=loud"}, err: "zap-log-level"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, _, err := parse(tc.args)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("valid command line rejected: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			case tc.err == "" && (len(cfg.Links) != 2 || cfg.PollInterval != 2*time.Second || cfg.Health != "presence"):
				t.Errorf("config %+v does not hold the flags", cfg)
			}
		})
	}
}
