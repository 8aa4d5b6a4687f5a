// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// updateCase creates an object from spec, changes it with mutate and updates
// it (through the status subresource when status is set). want lists the
// substrings of the error; an empty want means the update must succeed.
type updateCase struct {
	kind   string
	spec   string
	mutate func(u *unstructured.Unstructured) error
	status bool
	want   []string
}

func set(value any, path ...string) func(u *unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		return unstructured.SetNestedField(u.Object, value, path...)
	}
}

func TestUpdateValidation(t *testing.T) {
	cases := map[string]updateCase{
		"blob size is immutable": {kind: blob, spec: `size: 1Gi`,
			mutate: set("2Gi", "spec", "size"),
			want:   []string{"spec.size", "size is immutable: create a new PfsBlob"}},
		"blob size spelled differently is no change": {kind: blob, spec: `size: 1Gi`,
			mutate: set("1024Mi", "spec", "size")},
		"blob size as an integer is no change": {kind: blob, spec: `size: 1Gi`,
			mutate: set(int64(1073741824), "spec", "size")},
		"blob pageSize is immutable": {kind: blob, spec: `size: 1Gi`,
			mutate: set("1Gi", "spec", "pageSize"),
			want:   []string{"spec.pageSize", "pageSize is immutable"}},
		"blob fill seed is immutable": {kind: blob, spec: "size: 1Gi\nfill: {seed: 1}",
			mutate: set(int64(2), "spec", "fill", "seed"),
			want:   []string{"spec.fill", "fill is immutable"}},
		"blob fill seed cannot be added": {kind: blob, spec: `size: 1Gi`,
			mutate: set(int64(2), "spec", "fill", "seed"),
			want:   []string{"fill is immutable"}},
		"blob pageFallback is immutable": {kind: blob, spec: `size: 1Gi`,
			mutate: set("Never", "spec", "pageFallback"),
			want:   []string{"spec.pageFallback", "pageFallback is immutable"}},
		"blob source is immutable": {kind: blob, spec: "source: {persistentVolumeClaim: {claimName: data}}",
			mutate: set("other", "spec", "source", "persistentVolumeClaim", "claimName"),
			want:   []string{"spec.source", "source is immutable: create a new PfsBlob"}},
		"blob source cannot be added": {kind: blob, spec: `size: 1Gi`,
			mutate: set(map[string]any{"hostPath": map[string]any{"path": "/srv/x"}}, "spec", "source"),
			want:   []string{"source is immutable"}},
		"blob size cannot be added to a source blob": {kind: blob, spec: "source: {persistentVolumeClaim: {claimName: data}}",
			mutate: set("1Gi", "spec", "size"),
			want:   []string{"size is immutable"}},
		"blob replication is immutable": {kind: blob, spec: "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {topology: Chain}",
			mutate: set("Tree", "spec", "replication", "topology"),
			want:   []string{"spec.replication", "replication is immutable"}},
		"blob replication transport is immutable": {kind: blob, spec: "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {transport: TCP}",
			mutate: set("UDP", "spec", "replication", "transport"),
			want:   []string{"spec.replication", "replication is immutable"}},
		"blob replication network is immutable": {kind: blob, spec: "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {network: fabric}",
			mutate: set("other", "spec", "replication", "network"),
			want:   []string{"spec.replication", "replication is immutable"}},
		"blob replication network cannot be added": {kind: blob, spec: "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {topology: Chain}",
			mutate: set("fabric", "spec", "replication", "network"),
			want:   []string{"spec.replication", "replication is immutable"}},
		"blob replication cannot be added": {kind: blob, spec: "source: {persistentVolumeClaim: {claimName: data}}",
			mutate: set(map[string]any{"topology": "Tree"}, "spec", "replication"),
			want:   []string{"replication is immutable"}},
		"blob base is immutable": {kind: blob, spec: "source: {persistentVolumeClaim: {claimName: data}}\nbase: {name: v1}",
			mutate: set("v0", "spec", "base", "name"),
			want:   []string{"spec.base", "base is immutable"}},
		"blob base cannot be added": {kind: blob, spec: "source: {persistentVolumeClaim: {claimName: data}}",
			mutate: set(map[string]any{"name": "v1"}, "spec", "base"),
			want:   []string{"base is immutable"}},
		"blob access may be added": {kind: blob, spec: `size: 1Gi`,
			mutate: set(map[string]any{"namespaces": []any{"serving"}}, "spec", "access")},
		"blob access may change": {kind: blob, spec: "size: 1Gi\naccess: {namespaces: [serving]}",
			mutate: set([]any{"*"}, "spec", "access", "namespaces")},
		"blob access change is validated": {kind: blob, spec: "size: 1Gi\naccess: {namespaces: [serving]}",
			mutate: set([]any{"serving", "serving"}, "spec", "access", "namespaces"),
			want:   []string{"spec.access.namespaces", "lists a namespace twice"}},
		"blob mountedBy is bounded": {kind: blob, spec: `size: 1Gi`, status: true,
			mutate: set(manyPods(33), "status", "mountedBy"),
			want:   []string{"status.mountedBy", "must have at most 32 items"}},
		"blob nodeSelector may be added": {kind: blob, spec: `size: 1Gi`,
			mutate: set(map[string]any{"packetfs.io/node": "true"}, "spec", "nodeSelector")},
		"blob nodeSelector may change": {kind: blob, spec: "size: 1Gi\nnodeSelector: {zone: a}",
			mutate: set(map[string]any{"zone": "b"}, "spec", "nodeSelector")},
		"blob labels may change": {kind: blob, spec: `size: 1Gi`,
			mutate: set(map[string]any{"team": "ml"}, "metadata", "labels")},
		"transfer passes cannot be added": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset",
			mutate: set(int64(5), "spec", "passes"),
			want:   []string{"blobRef, range, passes, totalBytes, activeDeadlineSeconds and scheduling cannot be added or removed after creation"}},
		"transfer passes cannot change": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset\npasses: 2",
			mutate: set(int64(5), "spec", "passes"),
			want:   []string{"spec.passes", "passes is immutable: a transfer measures one fixed configuration"}},
		"transfer mode is immutable": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset",
			mutate: set("Arithmetic", "spec", "mode"),
			want:   []string{"spec.mode", "mode is immutable"}},
		"transfer range is immutable": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset\nrange: {length: 1Gi}",
			mutate: set("2Gi", "spec", "range", "length"),
			want:   []string{"spec.range", "range is immutable"}},
		"transfer range respelled is no change": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset\nrange: {length: 1Gi}",
			mutate: set("1048576Ki", "spec", "range", "length")},
		"transfer gram is immutable": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset",
			mutate: set(int64(2048), "spec", "gram", "descriptorsPerGram"),
			want:   []string{"spec.gram", "gram is immutable"}},
		"transfer slab respelled is no change": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset",
			mutate: set(int64(1048576), "spec", "gram", "slabBytes")},
		"transfer receiver is immutable": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset",
			mutate: set("node-b", "spec", "receiver", "nodeName"),
			want:   []string{"spec.receiver", "receiver is immutable"}},
		"transfer blobRef cannot be removed": {kind: xfer, spec: "blobRef: {name: b}\nmode: Payload\nrange: {length: 1Mi}",
			mutate: func(u *unstructured.Unstructured) error {
				unstructured.RemoveNestedField(u.Object, "spec", "blobRef")
				return nil
			},
			want: []string{"cannot be added or removed after creation"}},
		"transfer delta is immutable": {kind: xfer, spec: "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}}",
			mutate: set("newer", "spec", "delta", "sourceRef", "name"),
			want:   []string{"spec.delta", "delta is immutable: a transfer measures one fixed configuration"}},
		"transfer delta zstdLevel is immutable": {kind: xfer, spec: "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}}",
			mutate: set(int64(9), "spec", "delta", "zstdLevel"),
			want:   []string{"spec.delta", "delta is immutable"}},
		"transfer delta cannot be removed": {kind: xfer, spec: "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}}",
			mutate: func(u *unstructured.Unstructured) error {
				unstructured.RemoveNestedField(u.Object, "spec", "delta")
				return nil
			},
			want: []string{"mode Delta needs delta.sourceRef"}},
		"transfer ttl may change": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset\nttlSecondsAfterFinished: 60",
			mutate: set(int64(86400), "spec", "ttlSecondsAfterFinished")},
		"transfer ttl may be added": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset",
			mutate: set(int64(600), "spec", "ttlSecondsAfterFinished")},
		"transfer labels may change": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset",
			mutate: set(map[string]any{"run": "2"}, "metadata", "labels")},
		"job imm is immutable": {kind: pcj, spec: "blobRef: {name: b}\nop: xor\nimm: 1",
			mutate: set(int64(2), "spec", "imm"),
			want:   []string{"spec.imm", "imm is immutable: a job measures one fixed configuration"}},
		"job pcores is immutable": {kind: pcj, spec: "blobRef: {name: b}\nop: fnv",
			mutate: set(int64(4), "spec", "pcores"),
			want:   []string{"spec.pcores", "pcores is immutable"}},
		"job duration is immutable": {kind: pcj, spec: "blobRef: {name: b}\nop: fnv\nduration: 10s",
			mutate: set("20s", "spec", "duration"),
			want:   []string{"spec.duration", "duration is immutable"}},
		"job duration respelled is no change": {kind: pcj, spec: "blobRef: {name: b}\nop: fnv\nduration: 60s",
			mutate: set("1m0s", "spec", "duration")},
		"job nodeSelector cannot be added": {kind: pcj, spec: "blobRef: {name: b}\nop: fnv",
			mutate: set(map[string]any{"zone": "a"}, "spec", "nodeSelector"),
			want:   []string{"cannot be added or removed after creation"}},
		"blob scheduling may be added": {kind: blob, spec: `size: 1Gi`,
			mutate: set(map[string]any{"priorityClassName": "models-critical"}, "spec", "scheduling")},
		"blob scheduling tolerations may change": {kind: blob, spec: "size: 1Gi\nscheduling: {tolerations: [{key: a, operator: Exists}]}",
			mutate: set([]any{map[string]any{"key": "b", "operator": "Exists"}}, "spec", "scheduling", "tolerations")},
		"transfer scheduling cannot be added": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset",
			mutate: set(map[string]any{"priorityClassName": "p"}, "spec", "scheduling"),
			want:   []string{"activeDeadlineSeconds and scheduling cannot be added or removed after creation"}},
		"transfer scheduling is immutable": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset\nscheduling: {priorityClassName: p}",
			mutate: set("q", "spec", "scheduling", "priorityClassName"),
			want:   []string{"spec.scheduling", "scheduling is immutable: the transfer's pods exist already"}},
		"job scheduling is immutable": {kind: pcj, spec: "blobRef: {name: b}\nop: fnv\nscheduling: {priorityClassName: p}",
			mutate: set("q", "spec", "scheduling", "priorityClassName"),
			want:   []string{"spec.scheduling", "scheduling is immutable: the job's pod exists already"}},
		"job op is immutable": {kind: pcj, spec: "blobRef: {name: b}\nop: fnv",
			mutate: set("crc32c", "spec", "op"),
			want:   []string{"spec.op", "op is immutable"}},

		// Status is written by the operator through the status subresource;
		// the schema keeps a buggy writer from storing numbers nobody can parse.
		"transfer status accepts measured numbers": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset", status: true,
			mutate: set(map[string]any{
				"phase": "Succeeded", "label": "Native PFS Offset-only Mode - TCP",
				"effectiveBytes": int64(1073741824), "wireBytes": int64(16777216),
				"elapsedSeconds": "1.011", "effectiveMBps": "1062.3", "mbPerCPUSecond": "1075.0",
				"cpu":       map[string]any{"userSeconds": "0.990", "sysSeconds": "0.010"},
				"integrity": map[string]any{"algorithm": "CRC32C", "result": "OK", "senderChecksum": "e3069283", "receiverChecksum": "e3069283"},
			}, "status")},
		"transfer status accepts a Delta result": {kind: xfer, spec: "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}}", status: true,
			mutate: set(map[string]any{
				"phase": "Succeeded", "label": "PFS-Delta-TCP", "effectiveBytes": int64(1073741824), "wireBytes": int64(146880000),
				"integrity": map[string]any{"algorithm": "SHA256", "result": "OK",
					"senderChecksum": strings.Repeat("ab", 32), "receiverChecksum": strings.Repeat("ab", 32)},
				"delta": map[string]any{"encoding": "FullCopy", "message": "base old not Ready on node n2: sent as a full compressed copy",
					"baseBytes": int64(0), "effectiveBytes": int64(1073741824), "wireBytes": int64(146880000), "ratio": "7.31",
					"bound": "Encode", "threads": int64(4),
					"stages":  map[string]any{"indexSeconds": "0.120", "encodeSeconds": "1.250", "applySeconds": "0.400", "verifySeconds": "0.300"},
					"regions": map[string]any{"same": map[string]any{"count": int64(10), "bytes": int64(1000)}, "xor": map[string]any{"count": int64(2), "bytes": int64(20), "wireBytes": int64(5)}}},
			}, "status")},
		"transfer status rejects an unknown delta bound": {kind: xfer, spec: "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}}", status: true,
			mutate: set("Disk", "status", "delta", "bound"),
			want:   []string{"status.delta.bound", `Unsupported value: "Disk"`}},
		"transfer status rejects a 20-digit checksum": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset", status: true,
			mutate: set(strings.Repeat("a", 20), "status", "integrity", "senderChecksum"),
			want:   []string{"status.integrity.senderChecksum", "should match"}},
		"transfer status rejects a rate that is not a decimal": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset", status: true,
			mutate: set("fast", "status", "effectiveMBps"),
			want:   []string{"status.effectiveMBps", "should match"}},
		"transfer status rejects an unknown phase": {kind: xfer, spec: "blobRef: {name: b}\nmode: Offset", status: true,
			mutate: set("Done", "status", "phase"),
			want:   []string{"status.phase", `Unsupported value: "Done"`}},
		"blob status rejects a bad fingerprint": {kind: blob, spec: `size: 1Gi`, status: true,
			mutate: set("XYZ", "status", "fingerprint"),
			want:   []string{"status.fingerprint", "should match"}},
		"job status rejects a negative cpupwn": {kind: pcj, spec: "blobRef: {name: b}\nop: fnv", status: true,
			mutate: set("-1.00", "status", "cpupwn"),
			want:   []string{"status.cpupwn", "should match"}},
		"job status ignores spec changes": {kind: pcj, spec: "blobRef: {name: b}\nop: fnv", status: true,
			mutate: func(u *unstructured.Unstructured) error {
				if err := unstructured.SetNestedField(u.Object, int64(8), "spec", "pcores"); err != nil {
					return err
				}
				return unstructured.SetNestedField(u.Object, "Running", "status", "phase")
			}},
	}

	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := object(t, tc.kind, ns, "", tc.spec)
			obj.SetGenerateName("u-")
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatalf("creating the starting object: %v", err)
			}
			if err := tc.mutate(obj); err != nil {
				t.Fatal(err)
			}
			var err error
			if tc.status {
				err = env.Client.Status().Update(ctx, obj)
			} else {
				err = env.Client.Update(ctx, obj)
			}
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("valid update rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("invalid update accepted; want an error containing %q", tc.want)
			}
			t.Logf("rejected as expected: %v", err)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestStatusUpdateKeepsSpec checks that a status write cannot change the spec:
// the operator's status updates must never rewrite what the user asked for.
func TestStatusUpdateKeepsSpec(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	obj := object(t, pcj, ns, "keep-spec", "blobRef: {name: b}\nop: fnv")
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if err := set(int64(8), "spec", "pcores")(obj); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Status().Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	if p, _, _ := unstructured.NestedInt64(got.Object, "spec", "pcores"); p != 1 {
		t.Errorf("spec.pcores = %d after a status update, want the defaulted 1", p)
	}
}

// manyPods is n distinct "namespace/name" entries for status.mountedBy.
func manyPods(n int) []any {
	pods := make([]any, n)
	for i := range pods {
		pods[i] = fmt.Sprintf("serving/reader-%d", i)
	}
	return pods
}
