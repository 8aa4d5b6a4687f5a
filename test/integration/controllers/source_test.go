// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/podspec"
)

// Blobs with spec.source: no DaemonSet; the test plays the scheduler and
// the kubelet for the scan pod and the per-node holder pods.

var sourceSHA = strings.Repeat("5a", 32)

const scanResult = `{"ok":true,"cmd":"blob-create","dry_run":true,"source":{"kind":"file","path":"models/x.safetensors","root":"/source","files":1,"bytes":3000000,"needed":4194304,"blob_size":4194304},"error":null}`

func originResult() string {
	return fmt.Sprintf(`{"ok":true,"cmd":"blob-create","blob":{"size":4194304,"page":"2M","fingerprint":"0x00000000000000aa","map_s":0.001,"prefault_s":0.002,"fill_s":0},"source":{"kind":"file","path":"models/x.safetensors","files":1,"bytes":3000000,"sha256":%q,"read_seconds":0.4,"seconds":0.5,"t0_unix":1767225600,"t1_unix":1767225600.5},"manifest":{"kind":"file","files":1,"bytes":3000000,"sha256":%q,"offset":3000000,"length":120},"repl":{"listen":"0.0.0.0:7470","clients":1,"bytes_served":4194304,"refused":0},"bound":"cpu-quota","bound_why":"throttled 0.31 s during the fill's 0.50 s by a CPU limit of 0.05 cores","error":null}`, sourceSHA, sourceSHA)
}

func relayResult(from string, t1 string) string {
	return fmt.Sprintf(`{"ok":true,"cmd":"blob-create","blob":{"size":4194304,"page":"2M","fingerprint":"0x00000000000000aa"},"fetch":{"from":%q,"bytes":4194304,"seconds":0.25,"mbps":16.8,"attempts":1,"resumed_at":[],"t0_unix":1767225600.1,"t1_unix":%s,"verified":true,"verify_seconds":0.01},"manifest":{"kind":"file","files":1,"bytes":3000000,"sha256":%q,"offset":3000000,"length":120},"bound":"upstream","bound_why":"the bytes took 0.25 s to arrive, verifying after them 0.01 s","error":null}`, from, t1, sourceSHA)
}

// testNodes creates Ready nodes labelled for this test with the given
// allocatable hugepages-2Mi.
func testNodes(t *testing.T, ctx context.Context, ns, hugepages string, names ...string) {
	t.Helper()
	for _, name := range names {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pfs-test": ns}}}
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
		n.Status.Allocatable = corev1.ResourceList{"hugepages-2Mi": resource.MustParse(hugepages), "memory": resource.MustParse("8Gi"), "cpu": resource.MustParse("4")}
		n.Status.Capacity = n.Status.Allocatable
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: now(), LastTransitionTime: now()}}
		if err := env.Client.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		// The apiserver taints a new node not-ready (TaintNodesByCondition);
		// the node lifecycle controller, which envtest does not run, lifts
		// the taint once the node is Ready. The operator plans holders only
		// where the scheduler would bind them, so lift it as it would.
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		if err := env.Client.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
}

func testClaim(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{"storage": resource.MustParse("1Gi")}}}}
	if err := env.Client.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
}

func sourceBlob(ns, name string, src pfsv1alpha1.BlobSource) *pfsv1alpha1.PfsBlob {
	return &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: pfsv1alpha1.PfsBlobSpec{Source: &src, PageFallback: pfsv1alpha1.PageFallbackNever,
			NodeSelector: map[string]string{"pfs-test": ns}}}
}

func pvcSource(claim, p string) pfsv1alpha1.BlobSource {
	return pfsv1alpha1.BlobSource{PersistentVolumeClaim: &pfsv1alpha1.PVCBlobSource{ClaimName: claim, Path: p}}
}

// waitReady waits for the blob's Ready condition to have reason and a
// message containing msg.
func waitReady(t *testing.T, ctx context.Context, blob *pfsv1alpha1.PfsBlob, status metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	eventually(t, "blob Ready "+reason, func() error {
		if err := get(ctx, blob.Namespace, blob.Name, blob); err != nil {
			return err
		}
		if err := conditionIs(blob.Status.Conditions, pfsv1alpha1.ConditionReady, status, reason); err != nil {
			return err
		}
		for _, c := range blob.Status.Conditions {
			if c.Type == pfsv1alpha1.ConditionReady && !strings.Contains(c.Message, msg) {
				return fmt.Errorf("message %q lacks %q", c.Message, msg)
			}
		}
		return nil
	})
}

// finishScan plays the scheduler and kubelet for the scan pod.
func finishScan(t *testing.T, ctx context.Context, blob *pfsv1alpha1.PfsBlob, node string, code int32, msg string) {
	t.Helper()
	scan := waitPod(t, ctx, blob.Namespace, podspec.ScanPodName(blob.Name))
	bind(t, ctx, scan, node)
	setStatus(t, ctx, blob.Namespace, scan.Name, exited(code, msg))
}

// holderStarted binds a holder pod and gives it an IP, its init container running.
func holderStarted(t *testing.T, ctx context.Context, ns, name, node, ip string) {
	t.Helper()
	pod := waitPod(t, ctx, ns, name)
	bind(t, ctx, pod, node)
	setStatus(t, ctx, ns, name, func(p *corev1.Pod) {
		p.Status.Phase, p.Status.PodIP, p.Status.PodIPs = corev1.PodPending, ip, []corev1.PodIP{{IP: ip}}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: podspec.ContainerBlobCreate, Image: "i",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now()}}}}
	})
}

// holderDone ends the holder's init container with msg and makes its server ready.
func holderDone(t *testing.T, ctx context.Context, ns, name, ip, msg string) {
	t.Helper()
	setStatus(t, ctx, ns, name, func(p *corev1.Pod) {
		running(true, ip)(p)
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: podspec.ContainerBlobCreate, Image: "i",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed",
				Message: msg, StartedAt: now(), FinishedAt: now()}}}}
	})
}

func args(p *corev1.Pod, init bool) string {
	if init {
		return strings.Join(p.Spec.InitContainers[0].Args, " ")
	}
	return strings.Join(p.Spec.Containers[0].Args, " ")
}

// A source blob: scan, then every holder at once (relays fetch from their
// upstreams' DNS names), results into status (n/m, sha256, per-node rates,
// from by name), NodeReady events, and a deleted relay recreated from the
// remaining copies.
func TestSourceBlobFanout(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	w0, w1, w2 := ns+"-w0", ns+"-w1", ns+"-w2"
	testNodes(t, ctx, ns, "1Gi", w0, w1, w2)
	testClaim(t, ctx, ns, "data")
	blob := sourceBlob(ns, "model", pvcSource("data", "models/x.safetensors"))
	if err := env.Client.Create(ctx, blob); err != nil {
		t.Fatal(err)
	}
	scan := waitPod(t, ctx, ns, "model-holder-scan")
	assertControlledBy(t, scan.OwnerReferences, "PfsBlob", blob.Name)
	if got, want := args(scan, false), "blob create --source models/x.safetensors --source-root /source --dry-run --result-file /dev/termination-log"; got != want {
		t.Errorf("scan args = %q, want %q", got, want)
	}
	if v := scan.Spec.Volumes[0].PersistentVolumeClaim; v == nil || v.ClaimName != "data" || !v.ReadOnly || !scan.Spec.Containers[0].VolumeMounts[0].ReadOnly {
		t.Errorf("scan volume %+v mounts %+v", scan.Spec.Volumes, scan.Spec.Containers[0].VolumeMounts)
	}
	waitReady(t, ctx, blob, metav1.ConditionFalse, pfsv1alpha1.ReasonScanningSource, "model-holder-scan")
	finishScan(t, ctx, blob, w0, 0, scanResult)

	origin := podspec.SourceHolderPodName("model", w0, 1)
	p0 := waitPod(t, ctx, ns, origin)
	if got := args(p0, true); !strings.Contains(got, "--size 4194304 --page 2m --no-fallback --replace --result-file /dev/termination-log --chunks-dir /run/pfs-chunks --source models/x.safetensors --source-root /source --token-file /etc/packetfs/token/token --replicate-listen 0.0.0.0:7470") {
		t.Errorf("origin create args = %q", got)
	}
	if p0.Labels[podspec.LabelNodeHash] != podspec.NodeHash(w0) || p0.Annotations[podspec.AnnotationNode] != w0 {
		t.Errorf("origin labels %v annotations %v", p0.Labels, p0.Annotations)
	}
	r1, r2 := podspec.SourceHolderPodName("model", w1, 1), podspec.SourceHolderPodName("model", w2, 1)
	dns := func(node string) string { return podspec.HolderDNSName("model", ns, node) + ":7470" }
	p1 := waitPod(t, ctx, ns, r1)
	// relay 1 finishes from relay 2, the chain's last, if it steps aside.
	if got := args(p1, true); !strings.Contains(got, "--fetch-from "+dns(w0)+" --fetch-tail "+dns(w2)+" --token-file") || strings.Contains(got, "--source") {
		t.Errorf("relay 1 create args = %q", got)
	}
	p2 := waitPod(t, ctx, ns, r2)
	if got := args(p2, true); !strings.Contains(got, "--fetch-from "+dns(w1)+","+dns(w0)+" ") || strings.Contains(got, "--fetch-tail") {
		t.Errorf("relay 2 create args = %q", got)
	}
	holderStarted(t, ctx, ns, origin, w0, "10.1.0.1")
	holderStarted(t, ctx, ns, r1, w1, "10.1.0.2")
	holderStarted(t, ctx, ns, r2, w2, "10.1.0.3")

	holderDone(t, ctx, ns, origin, "10.1.0.1", originResult())
	holderDone(t, ctx, ns, r1, "10.1.0.2", relayResult(dns(w0), "1767225600.9"))
	holderDone(t, ctx, ns, r2, "10.1.0.3", relayResult(dns(w1), "1767225601"))
	waitReady(t, ctx, blob, metav1.ConditionTrue, pfsv1alpha1.ReasonMaterialized, "3 of 3 nodes hold the blob, sha256 5a5a5a5a5a5a")
	st := blob.Status
	got := []string{st.Ready, st.SHA256, st.Digest, st.Size.String(), st.Source, st.DistributionSeconds, st.DistributionMBps}
	want := []string{"3/3", sourceSHA, "5a5a5a5a5a5a", "4Mi", "pvc:data/models/x.safetensors", "1.010", "4.2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("status %v, want %v", got, want)
	}
	byNode := map[string]pfsv1alpha1.BlobNodeStatus{}
	for _, n := range st.Nodes {
		byNode[n.Node] = n
	}
	if n := byNode[w2]; n.Role != pfsv1alpha1.BlobNodeRelay || n.From != w1 || n.Bytes != 4194304 || n.Seconds != "0.250" || n.MBps != "16.8" || n.SHA256 != sourceSHA || n.Attempts != 1 ||
		n.Bound != pfsv1alpha1.FillBoundUpstream || n.BoundMessage != "the bytes took 0.25 s to arrive, verifying after them 0.01 s" {
		t.Errorf("relay 2 status %+v", n)
	}
	if n := byNode[w0]; n.Role != pfsv1alpha1.BlobNodeOrigin || n.Bytes != 3000000 || n.Seconds != "0.500" ||
		n.Bound != pfsv1alpha1.FillBoundCPUQuota || !strings.Contains(n.BoundMessage, "CPU limit of 0.05 cores") {
		t.Errorf("origin status %+v", n)
	}
	eventually(t, "NodeReady events", func() error {
		evs := &corev1.EventList{}
		if err := env.Client.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return err
		}
		var msgs []string
		for _, e := range evs.Items {
			if e.Reason == pfsv1alpha1.ReasonNodeReady {
				msgs = append(msgs, e.Message)
			}
		}
		want := w2 + " holds the blob: 4.0 MiB in 0.2 s (17 MB/s) from " + w1 + ", sha256 verified"
		for _, m := range msgs {
			if m == want {
				return nil
			}
		}
		return fmt.Errorf("no %q in %q", want, msgs)
	})

	// A relay's pod disappears: a second attempt fetches from the others.
	if err := env.Client.Delete(ctx, p2, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	retry := waitPod(t, ctx, ns, podspec.SourceHolderPodName("model", w2, 2))
	if got := args(retry, true); !strings.Contains(got, "--fetch-from "+dns(w1)+","+dns(w0)+" ") {
		t.Errorf("retry create args = %q", got)
	}
	if retry.Labels[podspec.LabelAttempt] != "2" {
		t.Errorf("retry labels %v", retry.Labels)
	}
	waitReady(t, ctx, blob, metav1.ConditionFalse, pfsv1alpha1.ReasonMaterializing, "2 of 3 nodes ready")
}

// The blob-level refusals: missing claim, a scan that refused the source,
// a source larger than spec.size, a host path the operator does not allow,
// an origin without the hugepages, and an origin that failed to load.
func TestSourceBlobRefusals(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	small, big := ns+"-small", ns+"-big"
	testNodes(t, ctx, ns, "2Mi", small)
	testNodes(t, ctx, ns, "1Gi", big)

	missing := sourceBlob(ns, "nopvc", pvcSource("nope", ""))
	if err := env.Client.Create(ctx, missing); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ctx, missing, metav1.ConditionFalse, pfsv1alpha1.ReasonSourceNotFound,
		"PersistentVolumeClaim nope not found in namespace "+ns+": create it or fix spec.source.persistentVolumeClaim.claimName")

	host := sourceBlob(ns, "host", pfsv1alpha1.BlobSource{HostPath: &pfsv1alpha1.HostPathBlobSource{Path: "/srv/x"}})
	if err := env.Client.Create(ctx, host); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ctx, host, metav1.ConditionFalse, pfsv1alpha1.ReasonSourceNotAllowed, "sources.hostPath.enabled")
	if err := absent(ctx, ns, podspec.ScanPodName("host")); err != nil {
		t.Error(err)
	}

	testClaim(t, ctx, ns, "data")
	bad := sourceBlob(ns, "bad", pvcSource("data", "link"))
	if err := env.Client.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	finishScan(t, ctx, bad, big, 1, `{"ok":false,"cmd":"blob-create","error":"symlink 'link' -> '/etc/shadow' points outside the source root /source"}`)
	waitReady(t, ctx, bad, metav1.ConditionFalse, pfsv1alpha1.ReasonSourceInvalid, "points outside the source root")
	// A path the volume does not have (moved here from the e2e's bad
	// sources; pfs's own refusal is test_blob_source's "a missing path").
	noPath := sourceBlob(ns, "nopath", pvcSource("data", "sudachi/missing.bin"))
	if err := env.Client.Create(ctx, noPath); err != nil {
		t.Fatal(err)
	}
	finishScan(t, ctx, noPath, big, 1, `{"ok":false,"cmd":"blob-create","error":"'sudachi/missing.bin': No such file or directory"}`)
	waitReady(t, ctx, noPath, metav1.ConditionFalse, pfsv1alpha1.ReasonSourceInvalid, "missing.bin")
	for _, b := range []*pfsv1alpha1.PfsBlob{missing, bad, noPath} {
		if err := get(ctx, ns, b.Name, b); err != nil || b.Status.ReadyNodes != 0 {
			t.Errorf("blob %s: readyNodes %d (%v), want 0", b.Name, b.Status.ReadyNodes, err)
		}
	}

	tooBig := sourceBlob(ns, "toobig", pvcSource("data", ""))
	tooBig.Spec.Size = resource.MustParse("2Mi")
	if err := env.Client.Create(ctx, tooBig); err != nil {
		t.Fatal(err)
	}
	finishScan(t, ctx, tooBig, big, 0, scanResult)
	waitReady(t, ctx, tooBig, metav1.ConditionFalse, pfsv1alpha1.ReasonSourceTooLarge, "the source needs 4194304 bytes (4Mi, its 1 files and manifest) but spec.size is 2097152 (2Mi)")

	noPages := sourceBlob(ns, "nopages", pvcSource("data", ""))
	if err := env.Client.Create(ctx, noPages); err != nil {
		t.Fatal(err)
	}
	finishScan(t, ctx, noPages, small, 0, scanResult)
	waitReady(t, ctx, noPages, metav1.ConditionFalse, pfsv1alpha1.ReasonHugePagesUnavailable,
		"the origin cannot hold the blob: node "+small+" has 2Mi of hugepages-2Mi free, blob needs 4Mi")

	broken := sourceBlob(ns, "broken", pvcSource("data", ""))
	if err := env.Client.Create(ctx, broken); err != nil {
		t.Fatal(err)
	}
	finishScan(t, ctx, broken, big, 0, scanResult)
	origin := podspec.SourceHolderPodName("broken", big, 1)
	holderStarted(t, ctx, ns, origin, big, "10.2.0.1")
	setStatus(t, ctx, ns, origin, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: podspec.ContainerBlobCreate, Image: "i",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
				Message: `{"ok":false,"cmd":"blob-create","error":"--source .: x.bin changed while it was read"}`}}}}
	})
	waitReady(t, ctx, broken, metav1.ConditionFalse, pfsv1alpha1.ReasonSourceFailed, "x.bin changed while it was read")
}

// annotateNetwork plays Multus: it writes the pod's network-status
// annotation with ip on the network ns/fabric (only the default network
// when ip is empty).
func annotateNetwork(t *testing.T, ctx context.Context, ns, name, podIP, ip string) {
	t.Helper()
	entries := fmt.Sprintf(`[{"name":"cbr0","interface":"eth0","ips":[%q],"default":true}`, podIP)
	if ip != "" {
		entries += fmt.Sprintf(`,{"name":"%s/fabric","interface":"net1","ips":[%q],"mac":"02:00:00:00:00:01"}`, ns, ip)
	}
	entries += "]"
	eventually(t, "annotating pod "+name, func() error {
		pod := &corev1.Pod{}
		if err := get(ctx, ns, name, pod); err != nil {
			return err
		}
		pod.Annotations[placement.NetworkStatusAnnotation] = entries
		return env.Client.Update(ctx, pod)
	})
}

// assertOnFabric checks that a holder pod requests the network and one
// unit of its device-plugin resource in both containers, and has no DNS
// name (it would resolve to the pod IP).
func assertOnFabric(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if got := p.Annotations[podspec.AnnotationNetworks]; got != "fabric" {
		t.Errorf("pod %s networks annotation %q, want fabric", p.Name, got)
	}
	if p.Spec.Hostname != "" || p.Spec.Subdomain != "" {
		t.Errorf("pod %s hostname %q subdomain %q, want none", p.Name, p.Spec.Hostname, p.Spec.Subdomain)
	}
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if q := c.Resources.Limits["example.com/fabric"]; q.Value() != 1 {
			t.Errorf("pod %s container %s limits %v lack example.com/fabric: 1", p.Name, c.Name, c.Resources.Limits)
		}
	}
}

// spec.replication.network: every holder requests the network, relays
// fetch from their upstreams' addresses on it (not the pod IPs nor DNS
// names, which resolve to the pod IPs), so holders start in topology
// order, and status.nodes[].from maps a network address back to its node.
func TestSourceBlobFanoutOnNetwork(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	w0, w1, w2 := ns+"-w0", ns+"-w1", ns+"-w2"
	testNodes(t, ctx, ns, "1Gi", w0, w1, w2)
	testClaim(t, ctx, ns, "data")
	blob := sourceBlob(ns, "model", pvcSource("data", "models/x.safetensors"))
	blob.Spec.Replication = &pfsv1alpha1.BlobReplication{Network: "fabric", ResourceName: "example.com/fabric"}
	if err := env.Client.Create(ctx, blob); err != nil {
		t.Fatal(err)
	}
	scan := waitPod(t, ctx, ns, "model-holder-scan")
	if _, ok := scan.Annotations[podspec.AnnotationNetworks]; ok {
		t.Errorf("the scan pod requests a network: %v", scan.Annotations)
	}
	finishScan(t, ctx, blob, w0, 0, scanResult)

	origin := podspec.SourceHolderPodName("model", w0, 1)
	r1, r2 := podspec.SourceHolderPodName("model", w1, 1), podspec.SourceHolderPodName("model", w2, 1)
	assertOnFabric(t, waitPod(t, ctx, ns, origin))
	holderStarted(t, ctx, ns, origin, w0, "10.1.0.1")
	consistently(t, "no relay before the origin has an address on the network", 500*time.Millisecond, func() error { return absent(ctx, ns, r1) })
	annotateNetwork(t, ctx, ns, origin, "10.1.0.1", "192.168.9.1")
	p1 := waitPod(t, ctx, ns, r1)
	assertOnFabric(t, p1)
	if got := args(p1, true); !strings.Contains(got, "--fetch-from 192.168.9.1:7470 --token-file") {
		t.Errorf("relay 1 create args = %q", got)
	}
	holderStarted(t, ctx, ns, r1, w1, "10.1.0.2")
	annotateNetwork(t, ctx, ns, r1, "10.1.0.2", "192.168.9.2")
	p2 := waitPod(t, ctx, ns, r2)
	assertOnFabric(t, p2)
	if got := args(p2, true); !strings.Contains(got, "--fetch-from 192.168.9.2:7470,192.168.9.1:7470 ") {
		t.Errorf("relay 2 create args = %q", got)
	}
	holderStarted(t, ctx, ns, r2, w2, "10.1.0.3")
	annotateNetwork(t, ctx, ns, r2, "10.1.0.3", "192.168.9.3")

	holderDone(t, ctx, ns, origin, "10.1.0.1", originResult())
	holderDone(t, ctx, ns, r1, "10.1.0.2", relayResult("192.168.9.1:7470", "1767225600.9"))
	holderDone(t, ctx, ns, r2, "10.1.0.3", relayResult("192.168.9.2:7470", "1767225601"))
	waitReady(t, ctx, blob, metav1.ConditionTrue, pfsv1alpha1.ReasonMaterialized, "3 of 3 nodes hold the blob")
	for _, n := range blob.Status.Nodes {
		want := map[string]string{w0: "", w1: w0, w2: w1}[n.Node]
		if n.From != want {
			t.Errorf("node %s from %q, want %q", n.Node, n.From, want)
		}
	}
	if err := get(ctx, ns, podspec.HolderServiceName("model"), &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("the holders' Service on a network: %v, want NotFound", err)
	}
}

// A holder that runs without an address on spec.replication.network (no
// Multus, a wrong NetworkAttachmentDefinition) fails its node, and an
// origin that does fails the blob.
func TestSourceBlobNoAddressOnNetwork(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	w0, w1 := ns+"-w0", ns+"-w1"
	testNodes(t, ctx, ns, "1Gi", w0, w1)
	testClaim(t, ctx, ns, "weights")
	blob := sourceBlob(ns, "model", pvcSource("weights", ""))
	blob.Spec.Replication = &pfsv1alpha1.BlobReplication{Network: "fabric"}
	if err := env.Client.Create(ctx, blob); err != nil {
		t.Fatal(err)
	}
	finishScan(t, ctx, blob, w0, 0, scanResult)
	origin := podspec.SourceHolderPodName("model", w0, 1)
	holderStarted(t, ctx, ns, origin, w0, "10.1.0.1")
	annotateNetwork(t, ctx, ns, origin, "10.1.0.1", "")
	// The kubelet started the init container a minute ago: past the grace.
	setStatus(t, ctx, ns, origin, func(p *corev1.Pod) {
		p.Status.InitContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	})
	waitReady(t, ctx, blob, metav1.ConditionFalse, pfsv1alpha1.ReasonNetworkUnavailable,
		"holder pod "+origin+" has no address on network fabric: is the NetworkAttachmentDefinition right?")
	byNode := map[string]pfsv1alpha1.BlobNodeStatus{}
	for _, n := range blob.Status.Nodes {
		byNode[n.Node] = n
	}
	if n := byNode[w0]; n.State != pfsv1alpha1.BlobNodeFailed || n.Reason != pfsv1alpha1.ReasonNetworkUnavailable ||
		!strings.Contains(n.Message, "network fabric is not in k8s.v1.cni.cncf.io/network-status") {
		t.Errorf("origin status %+v", n)
	}
	if n := byNode[w1]; n.State != pfsv1alpha1.BlobNodeFailed {
		t.Errorf("relay status %+v", n)
	}
	if err := absent(ctx, ns, podspec.SourceHolderPodName("model", w1, 1)); err != nil {
		t.Error(err)
	}
}
