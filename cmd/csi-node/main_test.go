// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := map[string]struct {
		args     []string
		nodeName string // $NODE_NAME
		wantNode string
		err      string // substring; "" means valid
	}{
		"defaults, node from the environment": {nodeName: "node-1", wantNode: "node-1"},
		"every flag": {args: []string{"--node-name=node-2", "--socket-root=/run/pfs", "--csi-endpoint=/p/csi.sock",
			"--plugins-registry=/r", "--poll-interval=2s", "--zap-log-level=debug"}, nodeName: "node-1", wantNode: "node-2"},
		"blob volume flags": {args: []string{"--staging-dir=/var/lib/k/plugins/csi.packetfs.io/blobs", "--kubeconfig=/etc/kubeconfig"},
			nodeName: "node-1", wantNode: "node-1"},
		"relative staging": {args: []string{"--staging-dir=blobs"}, nodeName: "n", err: `--staging-dir "blobs": want an absolute path`},
		"no node name":     {err: "no node name: pass --node-name or set NODE_NAME"},
		"relative root":    {args: []string{"--socket-root=run"}, nodeName: "n", err: `--socket-root "run": want an absolute path`},
		"zero poll":        {args: []string{"--poll-interval=0s"}, nodeName: "n", err: "--poll-interval 0s"},
		"positional":       {args: []string{"extra"}, nodeName: "n", err: `unexpected arguments ["extra"]`},
		"unknown flag":     {args: []string{"--endpoint=x"}, nodeName: "n", err: "flag provided but not defined: -endpoint"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, _, err := parse(tc.args, tc.nodeName)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("valid command line rejected: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			case tc.err == "" && cfg.NodeName != tc.wantNode:
				t.Errorf("node name %q, want %q", cfg.NodeName, tc.wantNode)
			}
		})
	}
}
