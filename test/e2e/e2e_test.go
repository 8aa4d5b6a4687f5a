// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

const (
	blobName = "e2e-blob"
	blobSize = 128 << 20
	passes   = 8
	// The receiver's address on the data link (hack/demo/values.yaml).
	dataLinkReceiverIP = "192.168.77.2"
)

var modes = []pfsv1alpha1.TransferMode{pfsv1alpha1.ModePayload, pfsv1alpha1.ModeOffset, pfsv1alpha1.ModeArithmetic}

// TestE2E runs the steps in order on one installation: each step relies on
// the ones before (the chart, the blob), and uninstalling comes last.
func TestE2E(t *testing.T) {
	ctx := context.Background()
	defer func() { releaseRegistry.stop() }()
	if !t.Run("helm install", testHelmInstall) {
		t.Fatal("the chart did not install; nothing else can run")
	}
	t.Run("metrics endpoint: unauthenticated and unauthorized scrapes refused", testMetricsAccess)
	promServer = startPrometheus(t)
	defer promServer.stop()
	t.Run("device plugin: the kubelets advertise the data links", func(t *testing.T) { testDevicePlugin(ctx, t) })
	t.Run("NodeResourceTopology published by nfd-topology-updater for every node", func(t *testing.T) { testTopology(ctx, t) })
	if !t.Run("PfsBlob Ready with one fingerprint on every node", func(t *testing.T) { testBlob(ctx, t) }) {
		t.Fatal("no blob; the transfers and the pcore job need it")
	}
	t.Run("helm upgrade to a new chart version (new operator and data-plane images) keeps every blob: same holders, the consumer's bytes unchanged, CRDs upgraded", func(t *testing.T) {
		testUpgradeKeepsBlobs(ctx, t)
	})
	t.Run("eight more PfsBlobs Ready at once", func(t *testing.T) { testManyBlobs(ctx, t) })
	t.Run("a node tainted nvidia.com/gpu still gets its copy", func(t *testing.T) { testTaintedNode(ctx, t) })
	t.Run("PfsBlob from a PVC fanned out to every node", func(t *testing.T) { testFanout(ctx, t) })
	t.Run("PfsBlobs from an S3 store and a web server: TLS, Secret credentials, the store killed mid-read, bad sources", func(t *testing.T) {
		testStoreSources(ctx, t)
	})
	t.Run("PfsBlob from an OCI registry: a model pushed by oras, a pull Secret, bad references", func(t *testing.T) {
		testOCISource(ctx, t)
	})
	t.Run("model volumes: a blob's files mounted read-only, read by the real PyPI libraries, one copy per node", func(t *testing.T) {
		testModelVolumes(ctx, t)
	})
	transports := imageTransports(ctx, t)
	for _, tr := range []pfsv1alpha1.Transport{pfsv1alpha1.TransportTCP, pfsv1alpha1.TransportUDP, pfsv1alpha1.TransportAFXDP} {
		for _, m := range modes {
			t.Run(fmt.Sprintf("PfsTransfer %s %s over the veth data link", tr, m), func(t *testing.T) {
				// The image is this build's, which has every transport: a missing
				// one is a failure, not a reason to skip.
				if cli := cliTransport(tr); !transports[cli] {
					t.Fatalf("pfs in %s has no %s transport (it has: %s)", env.dataplaneImage, cli, keys(transports))
				}
				testTransfer(ctx, t, tr, m, true)
			})
		}
	}
	t.Run("PfsTransfer TCP Payload over the pod network", func(t *testing.T) {
		testTransfer(ctx, t, pfsv1alpha1.TransportTCP, pfsv1alpha1.ModePayload, false)
	})
	t.Run("PfsTransfer TCP Payload over a macvlan NAD with static IPAM, each endpoint's ips", func(t *testing.T) {
		testMacvlanIPs(ctx, t)
	})
	t.Run("PfsTransfer TCP Payload over a macvlan NAD with whereabouts IPAM", func(t *testing.T) {
		testWhereabouts(ctx, t)
	})
	t.Run("PcoreJob: every op on the blob, its result equal to the baseline's and to this build's pfs over the same seeded bytes", func(t *testing.T) { testPcoreOps(ctx, t) })
	t.Run("receiver deleted mid-transfer: retried, then Succeeded", func(t *testing.T) { testReceiverDeleted(ctx, t) })
	t.Run("faults", func(t *testing.T) { testFaults(ctx, t) })
	t.Run("blob, consumer and transfer in a Pod Security baseline namespace; restricted tried", func(t *testing.T) { testPodSecurity(ctx, t) })
	t.Run("load: many PfsTransfers created at once all Succeed through the queue", func(t *testing.T) { testLoad(ctx, t) })
	t.Run("soak: repeated transfers and consumers leave nothing behind", func(t *testing.T) { testSoak(ctx, t) })
	t.Run("Prometheus: the alerts fired on the faults above, every dashboard panel has data", testPrometheusAfter)
	t.Run("helm uninstall leaves no pods", func(t *testing.T) { testUninstall(ctx, t) })
}

func testHelmInstall(t *testing.T) {
	_, statusErr := run(env.helm, "status", releaseName, "-n", releaseNS)
	chart := []string{"charts/packetfs-operator"}
	if os.Getenv("E2E_INSTALL") != "local" {
		releaseRegistry = startReleaseRegistry(t)
		chart = releaseRegistry.installArgs()
	}
	args := append([]string{"upgrade", "--install", releaseName}, chart...)
	args = append(args, "-n", releaseNS,
		"--create-namespace", "-f", "hack/demo/values.yaml", "--set", "controller.maxRequeueAfter="+maxRequeueAfter.String(),
		"--set-json", metricsReaders(),
		"--wait", "--timeout", "5m")
	if out, err := run(env.helm, args...); err != nil {
		t.Fatalf("helm upgrade --install: %v\n%s", err, out)
	}
	if statusErr == nil {
		// Installed before (e.g. by make demo): the image tag is the same but
		// its bytes may be new, so restart onto the image just loaded.
		if out, err := kubectl("-n", releaseNS, "rollout", "restart", "deployment,daemonset", "-l", "app.kubernetes.io/instance="+releaseName); err != nil {
			t.Fatalf("rollout restart: %v\n%s", err, out)
		}
	}
	if out, err := kubectl("-n", releaseNS, "rollout", "status", "deployment", "-l", "app.kubernetes.io/instance="+releaseName, "--timeout=180s"); err != nil {
		t.Fatalf("the operator is not available: %v\n%s", err, out)
	}
	if releaseRegistry != nil {
		releaseRegistry.checkPulledFromRegistry(t)
	}
	// A fresh namespace. The chart's default CSI socket volume needs no
	// privileged level (docs/guides/consumers.md); labelling it baseline is issue 17's e2e step.
	if out, err := kubectl("delete", "namespace", testNS, "--ignore-not-found", "--wait=true", "--timeout=180s"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := kubectl("create", "namespace", testNS); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := kubectl("label", "namespace", testNS, "pod-security.kubernetes.io/enforce=privileged"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checkUserRoles(t)
	createScrapers(t)
}

// checkUserRoles: a user bound to the built-in edit role in the test
// namespace may create PfsBlobs, PfsTransfers and PcoreJobs there (the
// chart's aggregated ClusterRoles, merged by the controller-manager), and
// not elsewhere, and does create and delete a blob; one bound to view may
// list them and create none.
func checkUserRoles(t *testing.T) {
	t.Helper()
	for user, role := range map[string]string{"pfs-e2e-editor": "edit", "pfs-e2e-viewer": "view"} {
		if out, err := kubectl("-n", testNS, "create", "rolebinding", user, "--clusterrole="+role, "--user="+user); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	can := func(user, verb, res, ns string) bool {
		res, sub, _ := strings.Cut(res, "/")
		args := []string{"auth", "can-i", verb, res + ".pfs.packetfs.io", "-n", ns, "--as=" + user}
		if sub != "" {
			args = append(args, "--subresource="+sub)
		}
		out, _ := kubectl(args...)
		return strings.TrimSpace(out) == "yes"
	}
	err := poll(context.Background(), time.Minute, func() (bool, error) {
		for _, res := range []string{"pfsblobs", "pfstransfers", "pcorejobs"} {
			if !can("pfs-e2e-editor", "create", res, testNS) || !can("pfs-e2e-viewer", "list", res, testNS) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("edit and view in %s never granted the three Kinds (aggregated ClusterRoles): %v", testNS, err)
	}
	for _, c := range []struct {
		user, verb, res, ns string
	}{{"pfs-e2e-editor", "create", "pfsblobs", "default"}, {"pfs-e2e-viewer", "create", "pfsblobs", testNS},
		{"pfs-e2e-editor", "update", "pfsblobs/status", testNS}} {
		if can(c.user, c.verb, c.res, c.ns) {
			t.Errorf("%s may %s %s in %s", c.user, c.verb, c.res, c.ns)
		}
	}
	// And for real: the editor creates a PfsBlob and deletes it; the
	// viewer's create is refused.
	manifest := func(name string) string {
		return fmt.Sprintf("apiVersion: pfs.packetfs.io/v1alpha1\nkind: PfsBlob\nmetadata: {name: %s, namespace: %s}\nspec: {size: 4Mi}\n", name, testNS)
	}
	if out, err := kubectlIn(manifest("by-editor"), "create", "-f", "-", "--as=pfs-e2e-editor"); err != nil {
		t.Errorf("the editor could not create a PfsBlob in %s: %v\n%s", testNS, err, out)
	} else if out, err := kubectl("-n", testNS, "delete", "pfsblob", "by-editor", "--as=pfs-e2e-editor", "--wait=true", "--timeout=120s"); err != nil {
		t.Errorf("the editor could not delete its PfsBlob: %v\n%s", err, out)
	}
	if out, err := kubectlIn(manifest("by-viewer"), "create", "-f", "-", "--as=pfs-e2e-viewer"); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("the viewer's create of a PfsBlob: %v\n%s, want forbidden", err, out)
	}
}

func testBlob(ctx context.Context, t *testing.T) {
	b := &pfsv1alpha1.PfsBlob{
		ObjectMeta: metav1.ObjectMeta{Name: blobName, Namespace: testNS},
		Spec: pfsv1alpha1.PfsBlobSpec{Size: *resource.NewQuantity(blobSize, resource.BinarySI),
			PageSize: pfsv1alpha1.PageSize2Mi, Fill: pfsv1alpha1.BlobFill{Type: pfsv1alpha1.FillSeed, Seed: ptr.To(int64(42))}},
	}
	createReadyBlob(ctx, t, b)
	if n := len(env.nodes); int(b.Status.ReadyNodes) != n || len(b.Status.Nodes) != n {
		t.Fatalf("readyNodes %d, %d node entries; want %d (every node): %+v", b.Status.ReadyNodes, len(b.Status.Nodes), n, b.Status.Nodes)
	}
	nodes := map[string]bool{}
	for _, n := range b.Status.Nodes {
		nodes[n.Node] = true
		if n.Fingerprint == "" || n.Fingerprint != b.Status.Fingerprint {
			t.Errorf("node %s fingerprint %q, blob fingerprint %q: want one fingerprint", n.Node, n.Fingerprint, b.Status.Fingerprint)
		}
	}
	if !nodes[env.cpNode] || !nodes[env.worker] {
		t.Errorf("blob held on %v, want %s and %s", nodes, env.cpNode, env.worker)
	}
	row := getRow(t, "pfsblob", blobName, "-o", "wide")
	n := strconv.Itoa(len(env.nodes))
	if row["READY"] != n+"/"+n || row["STATUS"] != string(pfsv1alpha1.ReasonMaterialized) || row["FINGERPRINT"] != b.Status.Fingerprint {
		t.Errorf("kubectl get pfsblob -o wide: %v", row)
	}
	t.Logf("blob %s Ready on %d nodes, fingerprint %s", blobName, b.Status.ReadyNodes, b.Status.Fingerprint)
}

// testManyBlobs creates small blobs side by side: each gets its own token
// Secret and holders, and every one must become Ready. One blob in eight
// once hung (a random binary token with a NUL byte), so eight catch a
// regression most of the time. They are deleted again.
// createReadyBlob creates b and waits up to 5 minutes for it to be Ready.
func createReadyBlob(ctx context.Context, t *testing.T, b *pfsv1alpha1.PfsBlob) {
	t.Helper()
	if err := env.c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	err := poll(ctx, 5*time.Minute, func() (bool, error) {
		if err := env.c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(b.Status.Conditions, pfsv1alpha1.ConditionReady), nil
	})
	if err != nil {
		ev, _ := kubectl("-n", b.Namespace, "get", "events", "--sort-by=.lastTimestamp")
		t.Fatalf("blob %s/%s not Ready: %v; status %+v\n%s\n%s", b.Namespace, b.Name, err, b.Status, describe("pfsblob", b.Name), ev)
	}
}

func testManyBlobs(ctx context.Context, t *testing.T) {
	const n = 8
	blobs := make([]*pfsv1alpha1.PfsBlob, 0, n)
	for i := range n {
		b := &pfsv1alpha1.PfsBlob{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("small-%d", i), Namespace: testNS},
			Spec: pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("2Mi"), PageSize: pfsv1alpha1.PageSize2Mi,
				Fill: pfsv1alpha1.BlobFill{Type: pfsv1alpha1.FillSeed, Seed: ptr.To(int64(i))}},
		}
		if err := env.c.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		blobs = append(blobs, b)
	}
	defer func() {
		for _, b := range blobs {
			_ = env.c.Delete(ctx, b)
		}
	}()
	var notReady []string
	err := poll(ctx, 3*time.Minute, func() (bool, error) {
		notReady = notReady[:0]
		for _, b := range blobs {
			if err := env.c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				return false, err
			}
			if !meta.IsStatusConditionTrue(b.Status.Conditions, pfsv1alpha1.ConditionReady) {
				notReady = append(notReady, b.Name)
			}
		}
		return len(notReady) == 0, nil
	})
	if err != nil {
		pods, _ := kubectl("-n", testNS, "get", "pods", "-o", "wide", "-l", podspec.LabelBlobUID)
		first := ""
		if len(notReady) > 0 {
			first = describe("pfsblob", notReady[0])
		}
		t.Fatalf("blobs not Ready: %v (%v)\n%s\n%s", notReady, err, first, pods)
	}
}

// transferSpec is a transfer of passes x the blob from the control-plane node
// to the worker, on the data link pfsdata0 or on the pod network.
func transferSpec(name string, tr pfsv1alpha1.Transport, m pfsv1alpha1.TransferMode, dataLink bool) *pfsv1alpha1.PfsTransfer {
	x := &pfsv1alpha1.PfsTransfer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec: pfsv1alpha1.PfsTransferSpec{
			BlobRef: &pfsv1alpha1.BlobReference{Name: blobName}, Mode: m, Transport: tr, Passes: ptr.To(int32(passes)),
			Sender:                pfsv1alpha1.Endpoint{NodeSelector: map[string]string{"kubernetes.io/hostname": env.cpNode}},
			Receiver:              pfsv1alpha1.Endpoint{NodeSelector: map[string]string{"kubernetes.io/hostname": env.worker}},
			BackoffLimit:          ptr.To(int32(0)),
			ActiveDeadlineSeconds: ptr.To(int64(600)),
		},
	}
	if dataLink {
		x.Spec.Sender.Network, x.Spec.Receiver.Network = releaseNS+"/pfsdata0-tx", releaseNS+"/pfsdata0-rx"
		x.Spec.Sender.ResourceName, x.Spec.Receiver.ResourceName = "packetfs.io/pfsdata0", "packetfs.io/pfsdata0"
	}
	return x
}

// runTransfer creates x, waits for it to end, and requires it Succeeded
// (fatal) with integrity OK.
func runTransfer(ctx context.Context, t *testing.T, x *pfsv1alpha1.PfsTransfer) {
	t.Helper()
	if err := env.c.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	waitTransfer(ctx, t, x, 8*time.Minute)
	if st := x.Status; st.Phase != pfsv1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s, want Succeeded: %s\n%s", st.Phase, conditions(st.Conditions), transferLogs(x))
	}
	if st := x.Status; st.Integrity == nil || st.Integrity.Result != pfsv1alpha1.IntegrityOK {
		t.Errorf("integrity %+v, want OK", st.Integrity)
	}
}

func testTransfer(ctx context.Context, t *testing.T, tr pfsv1alpha1.Transport, m pfsv1alpha1.TransferMode, dataLink bool) {
	name := strings.ToLower(fmt.Sprintf("%s-%s", tr, m))
	if !dataLink {
		name += "-podnet"
	}
	x := transferSpec(name, tr, m, dataLink)
	runTransfer(ctx, t, x)
	checkNUMAPlacement(t, x)
	st := x.Status
	if want := int64(passes * blobSize); st.EffectiveBytes != want {
		t.Errorf("effectiveBytes %d, want %d", st.EffectiveBytes, want)
	}
	if mbps, err := strconv.ParseFloat(st.EffectiveMBps, 64); err != nil || mbps <= 0 {
		t.Errorf("effectiveMBps %q, want > 0", st.EffectiveMBps)
	} else if tr == pfsv1alpha1.TransportTCP && m == pfsv1alpha1.ModePayload {
		tcpPayloadMBps[dataLink] = mbps
	}
	if st.Sender == nil || st.Receiver == nil || st.Sender.Node == st.Receiver.Node {
		t.Errorf("sender %+v receiver %+v: want pods on two nodes", st.Sender, st.Receiver)
	}
	if tr == pfsv1alpha1.TransportAFXDP {
		// Asking for zero-copy can silently give copy mode (always on veth):
		// the mode obtained must be reported for both sides.
		if st.Sender.AFXDPBindMode == "" || st.Receiver.AFXDPBindMode == "" {
			t.Errorf("AF_XDP bind mode not reported: sender %q, receiver %q", st.Sender.AFXDPBindMode, st.Receiver.AFXDPBindMode)
		}
		t.Logf("AF_XDP bind mode: sender %s, receiver %s", st.Sender.AFXDPBindMode, st.Receiver.AFXDPBindMode)
	}
	if dataLink {
		// The sender connected to the receiver's address on the veth link,
		// which Multus reported in the receiver's network-status annotation.
		send := &corev1.Pod{}
		if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: st.Sender.Pod}, send); err != nil {
			t.Fatal(err)
		}
		if args := strings.Join(send.Spec.Containers[0].Args, " "); !strings.Contains(args, dataLinkReceiverIP+":") {
			t.Errorf("sender args %q do not connect to the data link address %s", args, dataLinkReceiverIP)
		}
	}
	row := getRow(t, "pfstransfer", name, "-o", "wide")
	mbps, _ := strconv.ParseFloat(row["MB/S"], 64)
	if row["PHASE"] != "Succeeded" || row["INTEGRITY"] != "OK" || mbps <= 0 {
		t.Errorf("kubectl get pfstransfer -o wide: %v; want Succeeded, OK, MB/S > 0", row)
	}
	t.Logf("%s: %s MB/s, %s MB/CPU-s, integrity %s (%s), %s -> %s", name, st.EffectiveMBps, st.MBPerCPUSecond,
		st.Integrity.Result, st.Integrity.Algorithm, st.Sender.Node, st.Receiver.Node)
}

// testReceiverDeleted deletes the first attempt's receiver pod while the
// sender streams to it: the attempt fails (PodFailed), the operator retries
// after the backoff, and the retry Succeeds with integrity OK.
func testReceiverDeleted(ctx context.Context, t *testing.T) {
	x := transferSpec("retry", pfsv1alpha1.TransportTCP, pfsv1alpha1.ModePayload, true)
	x.Spec.Passes = nil
	x.Spec.TotalBytes = streamBytes(true)
	x.Spec.BackoffLimit = ptr.To(int32(1))
	if err := env.c.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	sender := podspec.TransferPodName(x.Name, 0, podspec.ComponentSender)
	receiver := podspec.TransferPodName(x.Name, 0, podspec.ComponentReceiver)
	progress := watchTransferProgress(x.Name)
	err := poll(ctx, 5*time.Minute, func() (bool, error) {
		p := &corev1.Pod{}
		if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: sender}, p); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("sender %s ended (%s) before the receiver could be deleted: raise streamSeconds", sender, p.Status.Phase)
		}
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("waiting for the sender to stream: %v\n%s", err, describe("pfstransfer", x.Name))
	}
	time.Sleep(2 * time.Second) // well into the stream
	if out, err := kubectl("-n", testNS, "delete", "pod", receiver, "--wait=false"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("deleted receiver %s mid-transfer", receiver)
	waitTransfer(ctx, t, x, 10*time.Minute)
	if x.Status.Phase == pfsv1alpha1.PhaseSucceeded && x.Status.FailedAttempts == 0 {
		t.Fatalf("Succeeded in its first attempt: %s bytes ended before the receiver's deletion (raise streamSeconds)", x.Spec.TotalBytes)
	}
	progress.check(t) // the receiver's page, read into status.progress while it ran
	st := x.Status
	if st.Progress != "100%" {
		t.Errorf("status.progress %q once Succeeded, want 100%%", st.Progress)
	}
	events, _ := kubectl("-n", testNS, "get", "events", "--field-selector", "involvedObject.kind=PfsTransfer,involvedObject.name="+x.Name,
		"--sort-by=.lastTimestamp", "-o", "custom-columns=REASON:.reason,MESSAGE:.message")
	t.Logf("events of pfstransfer/%s:\n%s", x.Name, events)
	if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: podspec.TransferPodName(x.Name, 1, podspec.ComponentReceiver)}, &corev1.Pod{}); err != nil {
		t.Errorf("no receiver pod of attempt 1 (the retry): %v", err)
	}
	// backoffLimit 1 leaves one retry, and nothing breaks it: it must
	// succeed, as it did in every run measured.
	requireSucceeded(t, x)
	if st.FailedAttempts != 1 {
		t.Errorf("failedAttempts %d, want the deleted receiver's attempt counted once", st.FailedAttempts)
	}
	t.Logf("retried after %d failed attempt(s), then Succeeded at %s MB/s", st.FailedAttempts, st.EffectiveMBps)
}

// retryBytes is the least a transfer a fault must land in moves: about 12 s
// at the 2 GB/s of the pod network on the 2-CPU VM.
const retryBytes = "24Gi"

// streamSeconds is how long such a transfer should stream: the faults land
// 2-5 s after its sender runs, and status.progress is read every 5 s.
const streamSeconds = 15

// tcpPayloadMBps is what this run's plain TCP Payload transfers measured,
// keyed by whether they crossed the veth data link or the pod network.
var tcpPayloadMBps = map[bool]float64{}

// streamBytes sizes a transfer a fault must land in by the rate measured on
// its path in this run, so it streams about streamSeconds on a fast machine
// too (a CI machine moved 24Gi over the data link in 7 s), never less than
// retryBytes.
func streamBytes(dataLink bool) *resource.Quantity {
	least := resource.MustParse(retryBytes)
	n := int64(tcpPayloadMBps[dataLink] * 1e6 * streamSeconds)
	if n <= least.Value() {
		return &least
	}
	return resource.NewQuantity(n&^(1<<20-1), resource.BinarySI) // whole MiB: the API takes whole bytes from 1Mi
}

func testUninstall(ctx context.Context, t *testing.T) {
	// What the earlier steps left (blobs held by seeded DaemonSets and
	// source holders, in several namespaces) is the chart's pre-delete
	// hook's to delete: helm uninstall alone must leave nothing of PacketFS
	// but the CRDs (Helm never deletes crds/; uninstall.deleteCRDs would).
	before, _ := kubectl("get", "pfstransfers,pcorejobs,pfsblobs", "--all-namespaces", "--no-headers")
	t.Logf("objects before helm uninstall:\n%s", before)
	leakXDP(t) // checkNodesClean below then proves the hook's XDP sweep removed it
	if out, err := run(env.helm, "uninstall", releaseName, "-n", releaseNS, "--wait", "--timeout", "6m"); err != nil {
		hook, _ := kubectl("-n", releaseNS, "logs", "job/"+releaseName+"-packetfs-operator-uninstall", "--tail=40")
		t.Fatalf("helm uninstall: %v\n%s\nthe hook's log:\n%s", err, out, hook)
	}
	if out, err := kubectl("get", "pfstransfers,pcorejobs,pfsblobs", "--all-namespaces", "--no-headers"); err != nil || listed(out) != "" {
		t.Errorf("PacketFS objects left after helm uninstall (%v):\n%s", err, out)
	}
	if out, err := kubectl("get", "daemonsets,deployments,jobs,services", "--all-namespaces", "-l", podspec.LabelManagedBy+"="+podspec.ManagedBy, "--no-headers"); err != nil || listed(out) != "" {
		t.Errorf("workloads of the operator left after helm uninstall (%v):\n%s", err, out)
	}
	// The release's pods (the CSI node plugin's) may still be ending: the
	// objects of the release must all be gone within the pods' wait below.
	var release string
	if err := poll(ctx, 3*time.Minute, func() (bool, error) {
		out, err := kubectl("get", "all,serviceaccounts,clusterroles,clusterrolebindings", "--all-namespaces", "-l", "app.kubernetes.io/instance="+releaseName, "--no-headers")
		release = out
		return err == nil && listed(out) == "", nil
	}); err != nil {
		t.Errorf("objects of the release left after helm uninstall, the hook's included (%v):\n%s", err, release)
	}
	if out, err := kubectl("get", "crd", "pfsblobs.pfs.packetfs.io", "-o", "name"); err != nil || out == "" {
		t.Errorf("the CRDs should stay by default (uninstall.deleteCRDs false): %v %s", err, out)
	}
	// Every pod the operator made, in any namespace, and every pod of the
	// release and of the test namespace (consumers carry no label of ours).
	selectors := map[string][]client.ListOption{
		"any namespace (" + podspec.LabelManagedBy + "=" + podspec.ManagedBy + ")": {
			client.MatchingLabels{podspec.LabelManagedBy: podspec.ManagedBy}},
		"the release namespace " + releaseNS: {client.InNamespace(releaseNS)},
		"the test namespace " + testNS:       {client.InNamespace(testNS)},
	}
	for what, opts := range selectors {
		var left []string
		err := poll(ctx, 3*time.Minute, func() (bool, error) {
			pods := &corev1.PodList{}
			if err := env.c.List(ctx, pods, opts...); err != nil {
				return false, err
			}
			left = left[:0]
			for _, p := range pods.Items {
				left = append(left, p.Namespace+"/"+p.Name)
			}
			return len(left) == 0, nil
		})
		if err != nil {
			t.Errorf("pods left in %s: %v (%v)", what, left, err)
		}
	}
	if err := env.c.Get(ctx, client.ObjectKey{Name: "pfs-packetfs-operator", Namespace: releaseNS}, &corev1.ServiceAccount{}); !apierrors.IsNotFound(err) {
		t.Errorf("the operator's ServiceAccount is still there after uninstall (err %v)", err)
	}
	checkNodesClean(t)
}

// checkNodesClean: on every node, nothing is left under the socket root
// (the CSI plugin sweeps sockets nothing listens on and namespace
// directories no pod mounts as it stops; the root is its hostPath and
// stays, empty), and no link of the node carries an XDP program (AF_XDP
// transfers attach to their pod's links, which go with the pod; a host
// link given to a pod comes back without one).
// leakXDP leaves on a node what a crashed AF_XDP run on a host link leaves:
// pfs's XDP program attached to a link of the node's own network namespace
// (a veth here; an SR-IOV VF handed back to the host in production), its
// process SIGKILLed so nothing detached it.
func leakXDP(t *testing.T) {
	t.Helper()
	node := env.nodes[1]
	if out, err := run("podman", "cp", filepath.Join(env.root, "dataplane/build/pfs"), node+":/tmp/pfs-leak"); err != nil {
		t.Fatalf("copy pfs to %s: %v\n%s", node, err, out)
	}
	t.Cleanup(func() {
		_, _ = run("podman", "exec", node, "sh", "-c", "ip link del pfsleak0; rm -f /tmp/pfs-leak")
	})
	script := `set -e; ip link add pfsleak0 type veth peer name pfsleak1; ip link set pfsleak0 up; ip link set pfsleak1 up; set +e
/tmp/pfs-leak xsk sink --ifname pfsleak0 --timeout 60 --idle 0 >/dev/null 2>&1 & pid=$!
for i in $(seq 100); do ip link show pfsleak0 2>/dev/null | grep -q prog/xdp && break; sleep 0.1; done
kill -9 $pid; wait $pid; ip -d link show pfsleak0`
	out, err := run("podman", "exec", node, "sh", "-c", script)
	if err != nil || !strings.Contains(out, "pfs_xdp") {
		t.Fatalf("%s: no pfs XDP program left on pfsleak0 after a SIGKILLed sink (%v):\n%s", node, err, out)
	}
	t.Logf("%s: a SIGKILLed pfs left its XDP program on pfsleak0", node)
}

func checkNodesClean(t *testing.T) {
	t.Helper()
	for _, node := range env.nodes {
		out, err := run("podman", "exec", node, "sh", "-c", "find "+podspec.SocketRoot+" -mindepth 1 2>/dev/null; true")
		if err != nil || out != "" {
			t.Errorf("%s: left under %s after helm uninstall (%v):\n%s", node, podspec.SocketRoot, err, out)
		}
		out, err = run("podman", "exec", node, "ip", "-d", "-o", "link", "show")
		if err != nil || out == "" {
			t.Errorf("%s: ip link: %v %s", node, err, out)
			continue
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, " xdp") || strings.Contains(l, "prog/xdp") {
				t.Errorf("%s: an XDP program is left on a link after helm uninstall: %s", node, l)
			}
		}
	}
}

// listed is what kubectl get listed: its output without the "No resources
// found" lines it prints (on stderr) for an empty list.
func listed(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "No resources found") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// waitTransfer waits until x is Succeeded or Failed; x holds the last status read.
func waitTransfer(ctx context.Context, t *testing.T, x *pfsv1alpha1.PfsTransfer, timeout time.Duration) {
	t.Helper()
	err := poll(ctx, timeout, func() (bool, error) {
		if err := env.c.Get(ctx, client.ObjectKeyFromObject(x), x); err != nil {
			return false, err
		}
		return x.Status.Phase == pfsv1alpha1.PhaseSucceeded || x.Status.Phase == pfsv1alpha1.PhaseFailed, nil
	})
	if err != nil {
		t.Fatalf("transfer %s: %v; phase %s: %s\n%s", x.Name, err, x.Status.Phase, conditions(x.Status.Conditions), transferLogs(x))
	}
}

// imageTransports asks pfs in the data-plane image which transports it has:
// `pfs send --transport list` refuses the name and lists them ("this build
// has: tcp | udp"; earlier builds separated them with commas).
func imageTransports(ctx context.Context, t *testing.T) map[string]bool {
	t.Helper()
	const pod = "pfs-transports"
	_, _ = kubectl("-n", testNS, "delete", "pod", pod, "--ignore-not-found", "--wait=true")
	if out, err := kubectl("-n", testNS, "run", pod, "--image="+env.dataplaneImage, "--image-pull-policy=Never",
		"--restart=Never", "--command", "--", podspec.DefaultBinary, "send", "--transport", "list"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	defer func() { _, _ = kubectl("-n", testNS, "delete", "pod", pod, "--wait=false") }()
	_ = poll(ctx, 2*time.Minute, func() (bool, error) {
		p := &corev1.Pod{}
		if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: pod}, p); err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded, nil
	})
	out, _ := kubectl("-n", testNS, "logs", pod)
	m := regexp.MustCompile(`this build has: ([^)]*)\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("cannot tell the transports of %s; pfs send --transport list said: %q", env.dataplaneImage, out)
	}
	have := map[string]bool{}
	for _, f := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ',' || r == ' ' || r == '|' }) {
		have[f] = true
	}
	return have
}

func cliTransport(t pfsv1alpha1.Transport) string { return strings.ToLower(string(t)) }

func keys(m map[string]bool) string {
	s := make([]string, 0, len(m))
	for k := range m {
		s = append(s, k)
	}
	return strings.Join(s, ", ")
}

func conditions(cs []metav1.Condition) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s=%s %s: %s; ", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

func describe(kind, name string) string {
	out, _ := kubectl("-n", testNS, "describe", kind, name)
	return out
}

// transferLogs is what explains a failed transfer: its description and the
// logs of its pods.
func transferLogs(x *pfsv1alpha1.PfsTransfer) string {
	b := describe("pfstransfer", x.Name)
	pods, _ := kubectl("-n", testNS, "get", "pods", "-o", "wide", "-l", podspec.LabelTransferUID+"="+string(x.UID))
	b += "\n" + pods
	for _, name := range strings.Fields(func() string {
		out, _ := kubectl("-n", testNS, "get", "pods", "-o", "name", "-l", podspec.LabelTransferUID+"="+string(x.UID))
		return out
	}()) {
		logs, _ := kubectl("-n", testNS, "logs", name)
		b += fmt.Sprintf("\n--- %s\n%s", name, logs)
	}
	return b
}

// getRow is `kubectl get <kind> <name> [args]` as a map from column header
// to cell. Cells are cut at the header's column offsets: kubectl's printer
// left-aligns each cell under its header, and a cell (e.g. LABEL) may hold
// spaces.
func getRow(t *testing.T, kind, name string, args ...string) map[string]string {
	t.Helper()
	out, err := kubectl(append([]string{"-n", testNS, "get", kind, name}, args...)...)
	if err != nil {
		t.Fatalf("kubectl get %s %s: %v\n%s", kind, name, err, out)
	}
	t.Logf("$ kubectl get %s %s %s\n%s", kind, name, strings.Join(args, " "), out)
	lines := strings.Split(out, "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl get %s %s: want a header and one row:\n%s", kind, name, out)
	}
	return parseRow(lines[0], lines[1])
}

func parseRow(header, row string) map[string]string {
	var starts []int
	for i := range header {
		if header[i] != ' ' && (i == 0 || header[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	cells := map[string]string{}
	for k, s := range starts {
		end := len(header)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		col := strings.TrimSpace(header[s:end])
		if s >= len(row) {
			cells[col] = ""
			continue
		}
		if k+1 == len(starts) || end > len(row) {
			end = len(row)
		}
		cells[col] = strings.TrimSpace(row[s:end])
	}
	return cells
}
