// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// gpuTaint is the taint GPU node pools carry, which the chart's default
// operands.tolerations tolerate.
const gpuTaint = "nvidia.com/gpu=present:NoSchedule"

// testTaintedNode: a node tainted as a GPU pool is still given its copy
// (the holders carry the chart's operand tolerations), while a pod without
// the toleration is refused there ("untolerated taint"), so the taint is in
// force.
func testTaintedNode(ctx context.Context, t *testing.T) {
	node := env.nodes[1]
	if out, err := kubectl("taint", "node", node, gpuTaint, "--overwrite"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	defer func() { _, _ = kubectl("taint", "node", node, "nvidia.com/gpu-") }()
	plain := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: no-toleration, namespace: %s}
spec:
  nodeSelector: {kubernetes.io/hostname: %s}
  securityContext: {runAsUser: 65532, runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: c
    image: packetfs.io/python-consumer:v0.1.0
    imagePullPolicy: Never
    command: ["python3", "-c", "import time; time.sleep(60)"]
    resources: {limits: {memory: 32Mi, cpu: 10m}}
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`, testNS, node)
	if out, err := kubectlIn(plain, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	defer func() {
		_, _ = kubectl("-n", testNS, "delete", "pod", "no-toleration", "--ignore-not-found", "--wait=false")
	}()
	b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "gpu-pool", Namespace: testNS},
		Spec: pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("4Mi"), PageSize: pfsv1alpha1.PageSize2Mi,
			Fill: pfsv1alpha1.BlobFill{Type: pfsv1alpha1.FillSeed, Seed: ptr.To(int64(7))}}}
	createReadyBlob(ctx, t, b)
	defer func() { _, _ = kubectl("-n", testNS, "delete", "pfsblob", b.Name, "--wait=true", "--timeout=120s") }()
	onTainted := false
	for _, n := range b.Status.Nodes {
		onTainted = onTainted || n.Node == node && n.State == pfsv1alpha1.BlobNodeReady
	}
	if int(b.Status.ReadyNodes) != len(env.nodes) || !onTainted {
		t.Errorf("blob Ready on %d of %d nodes, on the tainted %s: %v; nodes %+v", b.Status.ReadyNodes, len(env.nodes), node, onTainted, b.Status.Nodes)
	}
	err := poll(ctx, time.Minute, func() (bool, error) {
		p := &corev1.Pod{}
		if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: "no-toleration"}, p); err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			// The scheduler says "untolerated taint(s)" without naming it.
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "untolerated taint") {
				return true, nil
			}
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("the pod without the toleration was scheduled on %s: the taint is not in force", p.Spec.NodeName)
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("a pod without the toleration on %s: %v", node, err)
	}
	t.Logf("tainted %s %s: the blob's holder runs there, a pod without the toleration is refused", node, gpuTaint)
}

// testObjectScheduling: a node tainted for one team gets a copy of the blob
// whose spec.scheduling tolerates that taint (and its holder the blob's own
// PriorityClass), while a blob without the toleration is Ready on the other
// nodes without waiting for that one.
func testObjectScheduling(ctx context.Context, t *testing.T) {
	const (
		taintKey = "pfs-e2e/team"
		open     = "team-open"
		tolerant = "team-vision"
		priority = "pfs-e2e-models"
	)
	node := env.nodes[1] // not the origin, which is the PVC's node
	if out, err := kubectl("taint", "node", node, taintKey+"=vision:NoSchedule", "--overwrite"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	defer func() { _, _ = kubectl("taint", "node", node, taintKey+"-") }()
	if out, err := kubectlIn("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: "+priority+"}\nvalue: 100000\n",
		"apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	defer func() { _, _ = kubectl("delete", "priorityclass", priority, "--ignore-not-found") }()
	defer func() {
		_, _ = kubectl("-n", testNS, "delete", "pfsblob", open, tolerant, "--ignore-not-found", "--wait=true", "--timeout=120s")
	}()
	const model = "silero6/silero_vad.onnx"
	want := sha256File(t, filepath.Join(env.dataDir, model))
	applyBlob(t, open, model, "")
	applyBlob(t, tolerant, model, fmt.Sprintf("  scheduling:\n    priorityClassName: %s\n    tolerations:\n"+
		"    - {key: %s, operator: Equal, value: vision, effect: NoSchedule}\n", priority, taintKey))

	st := waitBlob(ctx, t, open, 4*time.Minute, blobReady)
	if st.ReadyNodes != len(env.nodes)-1 {
		t.Errorf("%s: Ready on %d nodes, want every node but the tainted %s: %+v", open, st.ReadyNodes, node, st.Nodes)
	}
	for _, n := range st.Nodes {
		if n.Node == node {
			t.Errorf("%s: the tainted %s is in its status (%s): it has no toleration", open, node, n.State)
		}
	}
	st = waitBlob(ctx, t, tolerant, 4*time.Minute, blobReady)
	checkEveryNode(t, st, want)
	var onNode string
	for _, n := range st.Nodes {
		if n.Node == node {
			onNode = n.Pod
		}
	}
	p := &corev1.Pod{}
	if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: onNode}, p); err != nil {
		t.Fatalf("%s's holder on %s (%q): %v", tolerant, node, onNode, err)
	}
	if p.Spec.PriorityClassName != priority || p.Spec.Priority == nil || *p.Spec.Priority != 100000 {
		t.Errorf("holder %s: priorityClassName %q priority %v, want %s at 100000", p.Name, p.Spec.PriorityClassName, p.Spec.Priority, priority)
	}
	t.Logf("%s tainted %s=vision: %s Ready on %d nodes without it, %s on all %d with %s's priority",
		node, taintKey, open, len(env.nodes)-1, tolerant, len(env.nodes), priority)
}
