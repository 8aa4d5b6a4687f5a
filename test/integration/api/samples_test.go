// SPDX-License-Identifier: Apache-2.0

package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"packetfs.io/operator/test/testenv"
)

// sampleDefaults lists, for every sample, fields the sample leaves out and
// the value the apiserver must default them to. Every sample must be listed
// here, so that adding one means thinking about what it relies on.
var sampleDefaults = map[string]map[string]any{
	"blob-1g":       {"spec.pageFallback": "Allow"},
	"blob-small":    {"spec.pageFallback": "Allow"},
	"blob-model":    {"spec.replication.transport": "TCP"},
	"blob-model-v2": {"spec.pageFallback": "Allow"},
	"delta-model": {"spec.integrity": "CRC32C", "spec.numa": "Preferred",
		"spec.gram.descriptorsPerGram": 1024, "spec.receiver.queues": 1},
	"tcp-payload": {
		"spec.gram.descriptorsPerGram": 1024, "spec.gram.slabBytes": "1Mi",
		"spec.gram.maxDescriptorLength": "256Ki", "spec.gram.align": 64,
		"spec.numa": "Preferred", "spec.backoffLimit": 0,
		"spec.sender.queues": 1, "spec.receiver.queues": 1,
	},
	"udp-offset":       {"spec.range.offset": "0", "spec.sender.queues": 1, "spec.receiver.queues": 1},
	"afxdp-arithmetic": {"spec.integrity": "CRC32C", "spec.gram.slabBytes": "1Mi", "spec.gram.align": 64},
	"xor-2p":           {}, // sets every field that has a default
	"crc32c-small": {
		"spec.pcores": 1, "spec.descriptorsPerFrame": 64, "spec.align": 64,
		"spec.ringSlots": 65536, "spec.baseline": "Threads", "spec.numa": "Preferred",
	},
	// A user's consumer pod (the Python client), not one of our Kinds: it
	// relies on no default of ours; Kubernetes' own are left unchecked.
	"tensor-reader": {},
	// A model directory as a blob, and the ways pods mount it as a volume:
	// inline, a static PV + PVC (ReadOnlyMany) and a pod on the claim, vLLM
	// (which cannot run here: it is only admitted). Ours default nothing in
	// the core objects.
	"llama-3-8b":          {"spec.pageSize": "2Mi", "spec.pageFallback": "Allow"},
	"model-reader-inline": {},
	"llama-3-8b-pv":       {},
	"llama-3-8b-claim":    {},
	"model-reader-claim":  {},
	"vllm-llama-3-8b":     {},
}

// readSamples decodes every YAML file in config/samples.
func readSamples(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(env.Root, "config", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in config/samples: %v", err)
	}
	samples := map[string]*unstructured.Unstructured{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, dup := samples[u.GetName()]; dup {
			t.Fatalf("%s: sample name %q used twice", f, u.GetName())
		}
		samples[u.GetName()] = u
	}
	return samples
}

func TestSamplesRoundTrip(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	samples := readSamples(t)

	kinds := map[string]int{}
	for name, sample := range samples {
		kinds[sample.GetKind()]++
		t.Run(name, func(t *testing.T) {
			defaults, ok := sampleDefaults[name]
			if !ok {
				t.Fatalf("sample %q has no entry in sampleDefaults", name)
			}
			obj := sample.DeepCopy()
			obj.SetNamespace(ns)
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatalf("sample rejected: %v", err)
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatal(err)
			}

			// Everything the sample says comes back unchanged (nothing pruned).
			for _, d := range subset(sample.Object["spec"], got.Object["spec"], "spec") {
				t.Errorf("read back differs from the sample: %s", d)
			}
			// Defaults the sample relies on were applied.
			for path, want := range defaults {
				if _, inSample, _ := unstructured.NestedFieldNoCopy(sample.Object, strings.Split(path, ".")...); inSample {
					t.Errorf("%s is set by the sample itself, so it says nothing about defaulting", path)
				}
				v, found, err := unstructured.NestedFieldNoCopy(got.Object, strings.Split(path, ".")...)
				if err != nil || !found {
					t.Errorf("%s: not defaulted", path)
					continue
				}
				if !sameValue(want, v) {
					t.Errorf("%s = %v, want default %v", path, v, want)
				}
			}
			// The Go types hold every field the apiserver returns, and give
			// them back: decode strictly, encode, compare.
			typed, err := testenv.Scheme().New(got.GroupVersionKind())
			if err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(got.Object)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(typed); err != nil {
				t.Fatalf("the Go type cannot hold what the apiserver returned: %v", err)
			}
			back, err := json.Marshal(typed)
			if err != nil {
				t.Fatal(err)
			}
			var backMap map[string]any
			if err := json.Unmarshal(back, &backMap); err != nil {
				t.Fatal(err)
			}
			for _, d := range subset(got.Object["spec"], backMap["spec"], "spec") {
				t.Errorf("Go round trip lost or changed a field: %s", d)
			}
			// The operator writes objects back through the Go types (labels,
			// finalizers); the apiserver must take that as no spec change.
			obj2, ok := typed.(client.Object)
			if !ok {
				t.Fatalf("%T is not a client.Object", typed)
			}
			obj2.SetLabels(map[string]string{"pfs.packetfs.io/touched": "true"})
			if err := env.Client.Update(ctx, obj2); err != nil {
				t.Errorf("writing the sample back through the Go types was rejected: %v", err)
			}
		})
	}
	for _, k := range []string{blob, xfer, pcj} {
		if kinds[k] == 0 {
			t.Errorf("no sample of kind %s in config/samples", k)
		}
	}
	for name := range sampleDefaults {
		if _, ok := samples[name]; !ok {
			t.Errorf("sampleDefaults lists %q, which is not a sample", name)
		}
	}
}

// subset reports every value in want that is missing from got or different.
func subset(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %v", path, got)}
		}
		var diffs []string
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			diffs = append(diffs, subset(w[k], gv, path+"."+k)...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, subset(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return diffs
	default:
		if !sameValue(want, got) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
		}
		return nil
	}
}

// sameValue compares leaves, treating numbers of any Go type alike and two
// spellings of the same quantity as equal only when both are quantities
// (0 and "0" are the same number of bytes; "1Gi" and "1024Mi" too).
func sameValue(a, b any) bool {
	as, bs := fmt.Sprint(a), fmt.Sprint(b)
	if as == bs {
		return true
	}
	qa, errA := resource.ParseQuantity(as)
	qb, errB := resource.ParseQuantity(bs)
	return errA == nil && errB == nil && qa.Cmp(qb) == 0
}
