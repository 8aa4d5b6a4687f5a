// SPDX-License-Identifier: Apache-2.0

package main

import (
	"flag"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

func TestOptions(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string // substring of the validation error; "" means valid
	}{
		"defaults":                      {nil, ""},
		"all flags":                     {[]string{"--metrics-bind-address=0", "--health-probe-bind-address=:9000", "--leader-elect", "--dataplane-image=reg/pfs:v1", "--dataplane-image-pull-policy=Never", "--max-concurrent-reconciles=4"}, ""},
		"empty image":                   {[]string{"--dataplane-image="}, "--dataplane-image must not be empty"},
		"bad pull policy":               {[]string{"--dataplane-image-pull-policy=Sometimes"}, "want Always, IfNotPresent or Never"},
		"no reconciles":                 {[]string{"--max-concurrent-reconciles=0"}, "want at least 1"},
		"timing flags":                  {[]string{"--unschedulable-timeout=30s", "--retry-backoff=1s", "--retry-backoff-max=1m", "--dataplane-binary=/pfs"}, ""},
		"holder CPU fraction":           {[]string{"--holder-cpu=200m"}, ""},
		"holder CPU not a qty":          {[]string{"--holder-cpu=lots"}, "--holder-cpu \"lots\""},
		"holder CPU zero":               {[]string{"--holder-cpu=0"}, "at least 10m"},
		"fill CPU below holder CPU":     {[]string{"--holder-cpu=8", "--holder-fill-cpu=500m"}, ""},
		"data-plane logs as zap's":      {[]string{"--dataplane-log-format=json", "--dataplane-log-level=debug", "--dataplane-log-time-encoding=rfc3339"}, ""},
		"data-plane log format":         {[]string{"--dataplane-log-format=console"}, `--dataplane-log-format "console": want one of text, json`},
		"data-plane log level":          {[]string{"--dataplane-log-level=trace"}, `--dataplane-log-level "trace": want one of error, warn, info, debug`},
		"data-plane time encoding":      {[]string{"--dataplane-log-time-encoding=weeks"}, `want one of epoch, millis, nano, iso8601, rfc3339, rfc3339nano`},
		"fill CPU not a qty":            {[]string{"--holder-fill-cpu=fast"}, "--holder-fill-cpu \"fast\""},
		"fill CPU too small":            {[]string{"--holder-fill-cpu=1m"}, "at least 10m"},
		"metrics port on repl":          {[]string{"--holder-metrics-port=7470"}, "--holder-metrics-port 7470: want 0 (off) or a TCP port other than 7470"},
		"metrics port off":              {[]string{"--holder-metrics-port=0"}, ""},
		"progress too often":            {[]string{"--progress-interval=100ms"}, "--progress-interval 100ms: want at least 1s"},
		"GPU tolerations":               {[]string{`--operand-tolerations=[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]`, "--operand-priority-class=pfs-holders"}, ""},
		"tolerations not JSON":          {[]string{"--operand-tolerations=nvidia.com/gpu"}, "--operand-tolerations: invalid character"},
		"toleration unknown field":      {[]string{`--operand-tolerations=[{"key":"a","opertor":"Exists"}]`}, `unknown field "opertor"`},
		"toleration bad operator":       {[]string{`--operand-tolerations=[{"key":"a","operator":"In"}]`}, `--operand-tolerations[0]: operator "In": want Exists or Equal`},
		"toleration Exists value":       {[]string{`--operand-tolerations=[{"key":"a","operator":"Exists","value":"x"}]`}, "operator Exists takes no value"},
		"toleration bad effect":         {[]string{`--operand-tolerations=[{"key":"a","operator":"Exists","effect":"Never"}]`}, `effect "Never"`},
		"priority class bad name":       {[]string{"--operand-priority-class=Big_Class"}, `--operand-priority-class "Big_Class"`},
		"host paths enabled":            {[]string{"--host-path-sources=enabled", "--host-path-prefixes=/srv/models, /data"}, ""},
		"host paths bad mode":           {[]string{"--host-path-sources=yes"}, "want enabled or disabled"},
		"host path prefix relative":     {[]string{"--host-path-prefixes=srv"}, "not an absolute path"},
		"host path prefix dotdot":       {[]string{"--host-path-prefixes=/srv/../etc"}, "not an absolute path"},
		"socket volume csi":             {[]string{"--socket-volume=csi"}, ""},
		"socket volume hostPath":        {[]string{"--socket-volume=hostPath"}, ""},
		"socket volume unknown":         {[]string{"--socket-volume=emptyDir"}, `--socket-volume "emptyDir": want csi or hostPath`},
		"relative binary":               {[]string{"--dataplane-binary=pfs"}, "want an absolute path"},
		"backoff max below base":        {[]string{"--retry-backoff=1m", "--retry-backoff-max=10s"}, "--retry-backoff-max at least --retry-backoff"},
		"topology catch-up off":         {[]string{"--topology-catch-up=0s"}, ""},
		"topology catch-up negative":    {[]string{"--topology-catch-up=-1s"}, "--topology-catch-up -1s: want 0 or a positive duration"},
		"topology catch-up too long":    {[]string{"--unschedulable-timeout=30s", "--topology-catch-up=1m"}, "no longer than --unschedulable-timeout (30s)"},
		"max requeue after":             {[]string{"--max-requeue-after=10s"}, ""},
		"max requeue after negative":    {[]string{"--max-requeue-after=-1s"}, "--max-requeue-after -1s: want 0 (no cap)"},
		"metrics over HTTP":             {[]string{"--metrics-secure=false", "--metrics-bind-address=:8080"}, ""},
		"metrics certificate":           {[]string{"--metrics-cert-dir=/certs"}, ""},
		"metrics cert dir relative":     {[]string{"--metrics-cert-dir=certs"}, `--metrics-cert-dir "certs": want an absolute directory`},
		"metrics cert without TLS":      {[]string{"--metrics-secure=false", "--metrics-cert-dir=/certs"}, "it needs --metrics-secure"},
		"watch namespaces":              {[]string{"--watch-namespaces=team-a, team-b"}, ""},
		"watch namespace bad name":      {[]string{"--watch-namespaces=team-a,Team_B"}, `--watch-namespaces: "Team_B" is not a namespace name`},
		"operand node affinity":         {[]string{`--operand-node-affinity={"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["gpu"]}]}]},"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":10,"preference":{"matchExpressions":[{"key":"zone","operator":"Exists"}]}}]}`}, ""},
		"node affinity not JSON":        {[]string{"--operand-node-affinity=pool=gpu"}, "--operand-node-affinity: invalid character"},
		"node affinity unknown field":   {[]string{`--operand-node-affinity={"required":{}}`}, `unknown field "required"`},
		"node affinity no terms":        {[]string{`--operand-node-affinity={"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}`}, "has no nodeSelectorTerms: it would admit no node"},
		"node affinity bad operator":    {[]string{`--operand-node-affinity={"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"Is","values":["gpu"]}]}]}}`}, "--operand-node-affinity: required terms:"},
		"node affinity Gt not a number": {[]string{`--operand-node-affinity={"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"preference":{"matchExpressions":[{"key":"gen","operator":"Gt","values":["new"]}]}}]}`}, "--operand-node-affinity: preferred terms:"},
		"every error is written":        {[]string{"--dataplane-image=", "--max-concurrent-reconciles=0"}, "--max-concurrent-reconciles 0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var o options
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			o.bind(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("valid flags rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestSchemeKnowsOurKinds(t *testing.T) {
	s := newScheme()
	for _, kind := range []string{"PfsBlob", "PfsTransfer", "PcoreJob", "PfsBlobList", "PfsTransferList", "PcoreJobList"} {
		if !s.Recognizes(pfsGVK(kind)) {
			t.Errorf("scheme does not know %s", kind)
		}
	}
}

func pfsGVK(kind string) schema.GroupVersionKind { return pfsv1alpha1.GroupVersion.WithKind(kind) }
