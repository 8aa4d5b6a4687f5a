// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestHolderServiceName(t *testing.T) {
	long := strings.Repeat("m", 63)
	tests := map[string]struct {
		blob string
		want string
	}{
		"fits":                       {"model", "model-holders"},
		"a 63-character name: cut":   {long, strings.Repeat("m", 46) + "-" + shortHash(long+"-holders") + "-holders"},
		"dots become dashes + hash":  {"llama.v3", "llama-v3-" + shortHash("llama.v3") + "-holders"},
		"a leading digit: prefixed":  {"3b", "b-3b-" + shortHash("3b") + "-holders"},
		"no clash with the rewrite":  {"llama-v3", "llama-v3-holders"},
		"long, dots and a digit too": {"7" + strings.Repeat(".x", 31), ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := HolderServiceName(tc.blob)
			if tc.want != "" && got != tc.want {
				t.Errorf("HolderServiceName(%q) = %q, want %q", tc.blob, got, tc.want)
			}
			if errs := validation.IsDNS1035Label(got); len(errs) > 0 {
				t.Errorf("%q is no Service name: %v", got, errs)
			}
		})
	}
}

func TestHolderDNSName(t *testing.T) {
	got := HolderDNSName("model", "ml", "w1")
	if want := "h-" + NodeHash("w1") + ".model-holders.ml.svc"; got != want {
		t.Errorf("HolderDNSName = %q, want %q", got, want)
	}
	if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
		t.Errorf("%q: %v", got, errs)
	}
	if errs := validation.IsDNS1123Label(HolderHostname("a-very-long-node-name.example.com")); len(errs) > 0 {
		t.Errorf("hostname: %v", errs)
	}
	// The pod the builder makes answers to the name the planner gives it.
	b := sourceBlob(pvc(""), "")
	p := BlobSourceHolderPod(Config{}, b, SourceHolder{Node: "w1", Role: "Relay", Attempt: 3, Upstreams: []string{"x:1"}})
	if got, want := PodDNSName(p), HolderDNSName(b.Name, b.Namespace, "w1"); got != want {
		t.Errorf("PodDNSName = %q, HolderDNSName = %q", got, want)
	}
	if got := PodDNSName(&corev1.Pod{}); got != "" {
		t.Errorf("PodDNSName of a pod without a hostname = %q", got)
	}
}
