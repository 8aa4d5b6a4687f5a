//go:build e2e

// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// testFaults breaks one thing at a time under running transfers and blobs
// and checks each ends in a state a user can act on: retried and Succeeded
// with integrity OK, or Failed with a reason that names the fault; never a
// duplicate or orphaned pod.
func testFaults(ctx context.Context, t *testing.T) {
	// Two transfers that can only fail wait out the unschedulable timeout
	// while the others run.
	nad := smallTransfer("fault-no-nad", "8Mi")
	nad.Spec.Sender.Network, nad.Spec.Receiver.Network = releaseNS+"/does-not-exist", releaseNS+"/does-not-exist"
	dev := smallTransfer("fault-no-device", "8Mi")
	dev.Spec.Sender.ResourceName, dev.Spec.Receiver.ResourceName = "packetfs.io/no-such-link", "packetfs.io/no-such-link"
	for _, x := range []*pfsv1alpha1.PfsTransfer{nad, dev} {
		if err := env.c.Create(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("operator killed mid-transfer: Succeeded, one attempt, no duplicate pod", func(t *testing.T) { testOperatorKilled(ctx, t) })
	t.Run("sender SIGKILLed mid-transfer: retried, then Succeeded", func(t *testing.T) { testSenderKilled(ctx, t) })
	t.Run("receiver's kubelet restarted mid-transfer: Succeeded, one attempt", func(t *testing.T) { testKubeletRestartMidTransfer(ctx, t) })
	t.Run("a transfer still streaming at its activeDeadlineSeconds: Failed, DeadlineExceeded, no pods", func(t *testing.T) { testDeadlineExceeded(ctx, t) })
	t.Run("a node's hugepages taken: its holder waits and says why, then Ready", func(t *testing.T) { testHugepagesTaken(ctx, t) })
	t.Run("a NetworkAttachmentDefinition that does not exist: Failed, NetworkNotFound", func(t *testing.T) {
		checkFailedWithoutPods(ctx, t, nad, pfsv1alpha1.ReasonNetworkNotFound, releaseNS+"/does-not-exist does not exist")
	})
	t.Run("a device resource no node has: Failed, Unschedulable naming it", func(t *testing.T) {
		checkFailedWithoutPods(ctx, t, dev, pfsv1alpha1.ReasonUnschedulable, "packetfs.io/no-such-link")
	})
}

// smallTransfer is a TCP Payload transfer of size bytes from a scratch
// buffer over the pod network.
func smallTransfer(name, size string) *pfsv1alpha1.PfsTransfer {
	return &pfsv1alpha1.PfsTransfer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModePayload, Transport: pfsv1alpha1.TransportTCP,
			Range: &pfsv1alpha1.Range{Length: resource.MustParse(size)}, BackoffLimit: ptr.To(int32(2))},
	}
}

// longTransfer is a transfer whose one attempt streams for about
// streamSeconds over the pod network, so a fault lands mid-stream.
func longTransfer(name string, backoffLimit int32) *pfsv1alpha1.PfsTransfer {
	x := transferSpec(name, pfsv1alpha1.TransportTCP, pfsv1alpha1.ModePayload, false)
	x.Spec.Passes = nil
	x.Spec.TotalBytes = streamBytes(false)
	x.Spec.BackoffLimit = ptr.To(backoffLimit)
	return x
}

// startStreaming creates x and waits until its sender runs (then 2 s more).
func startStreaming(ctx context.Context, t *testing.T, x *pfsv1alpha1.PfsTransfer) *corev1.Pod {
	t.Helper()
	if err := env.c.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	sender := &corev1.Pod{}
	key := client.ObjectKey{Namespace: testNS, Name: podspec.TransferPodName(x.Name, 0, podspec.ComponentSender)}
	err := poll(ctx, 5*time.Minute, func() (bool, error) {
		if err := env.c.Get(ctx, key, sender); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if sender.Status.Phase == corev1.PodSucceeded || sender.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("sender ended (%s) before the fault: raise streamSeconds", sender.Status.Phase)
		}
		return sender.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("waiting for the sender to stream: %v\n%s", err, describe("pfstransfer", x.Name))
	}
	time.Sleep(2 * time.Second)
	return sender
}

// transferPods are every pod of x, whatever their state.
func transferPods(ctx context.Context, t *testing.T, x *pfsv1alpha1.PfsTransfer) []string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := env.c.List(ctx, pods, client.InNamespace(x.Namespace), client.MatchingLabels{podspec.LabelTransferUID: string(x.UID)}); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(pods.Items))
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	return names
}

func requireSucceeded(t *testing.T, x *pfsv1alpha1.PfsTransfer) {
	t.Helper()
	if st := x.Status; st.Phase != pfsv1alpha1.PhaseSucceeded || st.Integrity == nil || st.Integrity.Result != pfsv1alpha1.IntegrityOK {
		t.Fatalf("phase %s integrity %+v, want Succeeded and OK: %s\n%s", st.Phase, st.Integrity, conditions(st.Conditions), transferLogs(x))
	}
}

func operatorPod(t *testing.T) string {
	t.Helper()
	out, err := kubectl("-n", releaseNS, "get", "pods", "-l", "app.kubernetes.io/component=manager",
		"--field-selector=status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}")
	if err != nil || out == "" {
		t.Fatalf("the operator pod: %v %q", err, out)
	}
	return out
}

// testOperatorKilled: the operator's pod is force-deleted while a transfer
// streams. Its successor adopts the transfer from status and the pods:
// same attempt, no second receiver or sender, Succeeded.
func testOperatorKilled(ctx context.Context, t *testing.T) {
	x := longTransfer("fault-operator", 0)
	startStreaming(ctx, t, x)
	old := operatorPod(t)
	if out, err := kubectl("-n", releaseNS, "delete", "pod", old, "--grace-period=0", "--force"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("force-deleted the operator pod %s mid-transfer", old)
	if out, err := kubectl("-n", releaseNS, "rollout", "status", "deployment", "-l", "app.kubernetes.io/instance="+releaseName, "--timeout=180s"); err != nil {
		t.Fatalf("no new operator: %v\n%s", err, out)
	}
	waitTransfer(ctx, t, x, 10*time.Minute)
	requireSucceeded(t, x)
	if x.Status.FailedAttempts != 0 {
		t.Errorf("failedAttempts %d: the operator's restart cost an attempt", x.Status.FailedAttempts)
	}
	pods := transferPods(ctx, t, x)
	want := []string{podspec.TransferPodName(x.Name, 0, podspec.ComponentReceiver), podspec.TransferPodName(x.Name, 0, podspec.ComponentSender)}
	if strings.Join(pods, ",") != strings.Join(want, ",") {
		t.Errorf("pods %v, want exactly %v", pods, want)
	}
	t.Logf("new operator %s finished the transfer: %s MB/s, pods %v", operatorPod(t), x.Status.EffectiveMBps, pods)
}

// killContainer SIGKILLs a pod's data-plane process from the host, where
// the kind nodes' processes run (found by the pod's UID in their cgroup:
// the node image has no crictl).
func killContainer(t *testing.T, pod *corev1.Pod, verb string) {
	t.Helper()
	uid := string(pod.UID)
	forms := []string{uid, strings.ReplaceAll(uid, "-", "_")} // cgroupfs, systemd driver
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cg, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		cmd, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err1 != nil || err2 != nil || !strings.Contains(string(cg), "pod"+forms[0]) && !strings.Contains(string(cg), "pod"+forms[1]) {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		if len(args) < 2 || !strings.HasSuffix(args[0], "pfs") || args[1] != verb {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", pid, err)
		}
		t.Logf("SIGKILLed %s (host pid %d: %s %s ...)", pod.Name, pid, args[0], args[1])
		return
	}
	t.Fatalf("no pfs %s process of pod %s (uid %s) on this host: it ended before the kill? (raise streamSeconds)", verb, pod.Name, uid)
}

// testSenderKilled: the sender process dies by SIGKILL mid-stream. The
// attempt fails on the sender's exit code and is retried; the retry
// Succeeds with integrity OK.
func testSenderKilled(ctx context.Context, t *testing.T) {
	x := longTransfer("fault-sender", 1)
	sender := startStreaming(ctx, t, x)
	killContainer(t, sender, "send")
	waitTransfer(ctx, t, x, 12*time.Minute)
	requireSucceeded(t, x)
	if x.Status.FailedAttempts != 1 {
		t.Errorf("failedAttempts %d, want the killed attempt counted once", x.Status.FailedAttempts)
	}
	events, _ := kubectl("-n", testNS, "get", "events", "--field-selector", "involvedObject.kind=PfsTransfer,involvedObject.name="+x.Name,
		"-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}")
	// Whichever side's end the operator sees first fails the attempt: the
	// killed sender (137, SIGKILL) or the receiver it left mid-gram.
	if !strings.Contains(events, "sender: pod "+sender.Name+" exited with code 137 (killed by signal 9, SIGKILL)") &&
		!strings.Contains(events, "peer closed the connection") {
		t.Errorf("no event names the killed sender or the connection it closed:\n%s", events)
	}
	t.Logf("events:\n%s", events)
}

// testKubeletRestartMidTransfer: the kubelet of the receiver's node
// restarts while bytes flow. Running containers do not depend on it: the
// transfer Succeeds in its first attempt.
func testKubeletRestartMidTransfer(ctx context.Context, t *testing.T) {
	x := longTransfer("fault-kubelet", 0)
	startStreaming(ctx, t, x)
	recv := &corev1.Pod{}
	if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: podspec.TransferPodName(x.Name, 0, podspec.ComponentReceiver)}, recv); err != nil {
		t.Fatal(err)
	}
	node := recv.Spec.NodeName
	pidBefore := kubeletPID(t, node)
	if out, err := run("podman", "exec", node, "systemctl", "restart", "kubelet"); err != nil {
		t.Fatalf("restarting the kubelet on %s: %v\n%s", node, err, out)
	}
	// The fault landed: another kubelet process runs, and it came back while
	// the receiver was still streaming (its pod not ended yet).
	if pidAfter := kubeletPID(t, node); pidAfter == pidBefore {
		t.Fatalf("the kubelet of %s still has pid %s: it did not restart", node, pidBefore)
	}
	if err := env.c.Get(ctx, client.ObjectKeyFromObject(recv), recv); err != nil {
		t.Fatal(err)
	}
	if recv.Status.Phase != corev1.PodRunning {
		t.Fatalf("receiver %s is %s after the kubelet restart: the fault did not land mid-stream (raise streamSeconds)", recv.Name, recv.Status.Phase)
	}
	t.Logf("restarted the kubelet of %s (pid %s, then another) under receiver %s, still Running", node, pidBefore, recv.Name)
	waitTransfer(ctx, t, x, 10*time.Minute)
	requireSucceeded(t, x)
	if x.Status.FailedAttempts != 0 {
		t.Errorf("failedAttempts %d: a kubelet restart cost an attempt", x.Status.FailedAttempts)
	}
}

// kubeletPID is the main pid of the kubelet unit on a kind node.
func kubeletPID(t *testing.T, node string) string {
	t.Helper()
	out, err := run("podman", "exec", node, "systemctl", "show", "-p", "MainPID", "--value", "kubelet")
	pid := strings.TrimSpace(out)
	if err != nil || pid == "" || pid == "0" {
		t.Fatalf("kubelet of %s: pid %q: %v", node, pid, err)
	}
	return pid
}

// podEnds is how x's pods' containers ended (pod/container: exit code),
// and gone closed once none of the pods is left.
type podEnds struct {
	mu    sync.Mutex
	codes map[string]int32
	gone  chan struct{}
}

func (e *podEnds) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprint(e.codes)
}

// watchPodEnds watches x's pods, which exist, until none is left. A watch
// sees every status the kubelet writes: a container's end is written before
// the pod is removed, but may stand for less than a poll's interval.
func watchPodEnds(ctx context.Context, x *pfsv1alpha1.PfsTransfer) (*podEnds, error) {
	w, err := env.c.Watch(ctx, &corev1.PodList{}, client.InNamespace(x.Namespace), client.MatchingLabels{podspec.LabelTransferUID: string(x.UID)})
	if err != nil {
		return nil, err
	}
	e := &podEnds{codes: map[string]int32{}, gone: make(chan struct{})}
	go func() {
		defer w.Stop()
		live := map[string]bool{}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			e.mu.Lock()
			for _, cs := range p.Status.ContainerStatuses {
				if term := cs.State.Terminated; term != nil {
					e.codes[p.Name+"/"+cs.Name] = term.ExitCode
				}
			}
			e.mu.Unlock()
			if ev.Type == apiwatch.Deleted {
				delete(live, p.Name)
				if len(live) == 0 {
					close(e.gone)
					return
				}
			} else {
				live[p.Name] = true
			}
		}
	}()
	return e, nil
}

// deadlineBytes is more than a transfer moves in its deadline at 50 GB/s.
const deadlineBytes = "1Ti"

// testDeadlineExceeded: a transfer still streaming when its
// activeDeadlineSeconds pass ends Failed, DeadlineExceeded, its pods gone,
// soon after the deadline and not before it.
func testDeadlineExceeded(ctx context.Context, t *testing.T) {
	const deadline = 20
	x := longTransfer("fault-deadline", 2)
	// streamBytes is sized for transfers that must also finish, in about
	// streamSeconds. This one must never finish first: it is sized far past
	// any rate a node reaches.
	x.Spec.TotalBytes = ptr.To(resource.MustParse(deadlineBytes))
	x.Spec.ActiveDeadlineSeconds = ptr.To(int64(deadline))
	startStreaming(ctx, t, x)
	ends, err := watchPodEnds(ctx, x)
	if err != nil {
		t.Fatalf("watching the pods: %v", err)
	}
	waitTransfer(ctx, t, x, 5*time.Minute)
	if x.Status.Phase == pfsv1alpha1.PhaseSucceeded {
		t.Fatalf("Succeeded at %s MB/s before its %d s deadline: raise deadlineBytes", x.Status.EffectiveMBps, deadline)
	}
	c := meta.FindStatusCondition(x.Status.Conditions, pfsv1alpha1.ConditionFailed)
	if x.Status.Phase != pfsv1alpha1.PhaseFailed || c == nil || c.Reason != pfsv1alpha1.ReasonDeadlineExceeded || !strings.Contains(c.Message, "activeDeadlineSeconds") {
		t.Fatalf("phase %s, Failed %+v; want Failed, DeadlineExceeded, naming activeDeadlineSeconds", x.Status.Phase, c)
	}
	// The pods were streaming: the operator deletes them with the verdict.
	// pfs, PID 1 in its container, must end on the kubelet's SIGTERM (143),
	// not wait out the grace period for the SIGKILL (137), as PID 1 without
	// a handler for it would.
	verdict := time.Now()
	select {
	case <-ends.gone:
	case <-time.After(time.Minute):
		t.Errorf("pods %v still there a minute after the deadline; their containers ended %v", transferPods(ctx, t, x), ends)
	}
	gone := time.Since(verdict)
	ends.mu.Lock()
	defer ends.mu.Unlock()
	var sigterm bool
	for c, code := range ends.codes {
		if code == 128+int32(syscall.SIGKILL) {
			t.Errorf("%s was SIGKILLed (exit %d) at the end of its grace period: pfs ignored SIGTERM", c, code)
		}
		sigterm = sigterm || code == 128+int32(syscall.SIGTERM)
	}
	if !sigterm {
		t.Errorf("no container ended on SIGTERM (exit 143); seen: %v", ends.codes)
	}
	t.Logf("pods gone %s after the verdict was seen; their containers ended %v", gone.Round(100*time.Millisecond), ends.codes)
	t.Logf("%s after %s: %s", c.Reason, c.LastTransitionTime.Sub(x.CreationTimestamp.Time), c.Message)
	if took := c.LastTransitionTime.Sub(x.CreationTimestamp.Time); took < deadline*time.Second || took > (deadline+30)*time.Second {
		t.Errorf("Failed %s after creation, want between the deadline (%ds) and 30 s after it", took, deadline)
	}
	if x.Status.FailedAttempts > 1 {
		t.Errorf("failedAttempts %d: a deadline is not retried", x.Status.FailedAttempts)
	}
}

// hugepagesFree is the node's allocatable 2 MiB hugepages minus what its
// running pods requested.
func hugepagesFree(ctx context.Context, t *testing.T, node string) resource.Quantity {
	t.Helper()
	n := &corev1.Node{}
	if err := env.c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	free := n.Status.Allocatable[corev1.ResourceHugePagesPrefix+"2Mi"]
	pods := &corev1.PodList{}
	// Pods on their way out still count for the scheduler until they are
	// gone, then their pages are free again: wait them out first.
	err := poll(ctx, 3*time.Minute, func() (bool, error) {
		if err := env.c.List(ctx, pods); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == node && !p.DeletionTimestamp.IsZero() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("pods still terminating on %s: %v", node, err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != node || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		// A pod asks for the larger of its containers' sum and its
		// largest init container (init containers run one at a time).
		var sum, initMax resource.Quantity
		for _, c := range p.Spec.Containers {
			sum.Add(c.Resources.Requests[corev1.ResourceHugePagesPrefix+"2Mi"])
		}
		for _, c := range p.Spec.InitContainers {
			if q := c.Resources.Requests[corev1.ResourceHugePagesPrefix+"2Mi"]; q.Cmp(initMax) > 0 {
				initMax = q
			}
		}
		if initMax.Cmp(sum) > 0 {
			sum = initMax
		}
		free.Sub(sum)
	}
	return free
}

// testHugepagesTaken: a pod takes every free hugepage of one node before a
// blob is created. That node's holder cannot be scheduled: the blob is not
// Ready, and its Ready message says why; once the pages are given back the
// DaemonSet's pod is scheduled and every node holds the blob.
func testHugepagesTaken(ctx context.Context, t *testing.T) {
	node := env.nodes[len(env.nodes)-1]
	free := hugepagesFree(ctx, t, node)
	if free.Sign() <= 0 {
		t.Fatalf("node %s has no free hugepages to take (%s)", node, free.String())
	}
	hog := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: hugepage-hog, namespace: %s}
spec:
  nodeName: %s
  securityContext: {runAsUser: 65532, runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: hog
    image: packetfs.io/python-consumer:v0.1.0
    imagePullPolicy: Never
    command: ["python3", "-c", "import time; time.sleep(3600)"]
    resources: {limits: {hugepages-2Mi: %s, memory: 64Mi, cpu: 100m}}
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`, testNS, node, free.String())
	if out, err := kubectlIn(hog, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	defer func() {
		_, _ = kubectl("-n", testNS, "delete", "pod", "hugepage-hog", "--ignore-not-found", "--wait=false")
	}()
	if out, err := kubectl("-n", testNS, "wait", "pod/hugepage-hog", "--for=condition=Ready", "--timeout=120s"); err != nil {
		t.Fatalf("the pod taking %s hugepages on %s: %v\n%s\n%s", free.String(), node, err, out, describe("pod", "hugepage-hog"))
	}
	if left := hugepagesFree(ctx, t, node); left.Sign() != 0 {
		t.Fatalf("%s of hugepages still free on %s with the hog running: the node's pods changed meanwhile", left.String(), node)
	}
	t.Logf("hugepage-hog holds the %s of 2Mi hugepages %s had free", free.String(), node)
	const name = "squeezed"
	b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec: pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("64Mi"), PageSize: pfsv1alpha1.PageSize2Mi,
			Fill: pfsv1alpha1.BlobFill{Type: pfsv1alpha1.FillSeed, Seed: ptr.To(int64(9))}}}
	if err := env.c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.c.Delete(ctx, b) }()
	var msg string
	err := poll(ctx, 3*time.Minute, func() (bool, error) {
		if err := env.c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(b.Status.Conditions, pfsv1alpha1.ConditionReady)
		if c == nil {
			return false, nil
		}
		msg = c.Message
		return c.Status == metav1.ConditionFalse && b.Status.ReadyNodes == int32(len(env.nodes)-1) && strings.Contains(msg, "Insufficient hugepages-2Mi"), nil
	})
	if err != nil {
		t.Fatalf("want %d of %d nodes Ready and the Ready message naming the hugepages: %v; Ready: %q\n%s", len(env.nodes)-1, len(env.nodes), err, msg, describe("pfsblob", name))
	}
	t.Logf("while the pages are taken: Ready=False: %s", msg)
	if out, err := kubectl("-n", testNS, "delete", "pod", "hugepage-hog", "--wait=true", "--timeout=120s"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	err = poll(ctx, 4*time.Minute, func() (bool, error) {
		if err := env.c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(b.Status.Conditions, pfsv1alpha1.ConditionReady) && b.Status.ReadyNodes == int32(len(env.nodes)), nil
	})
	if err != nil {
		t.Fatalf("not Ready on every node after the pages came back: %v\n%s", err, describe("pfsblob", name))
	}
	t.Logf("pages given back: Ready on %d nodes, fingerprint %s", b.Status.ReadyNodes, b.Status.Fingerprint)
}

// checkFailedWithoutPods waits for x to fail with reason and a message
// containing what, and checks that none of its pods is left.
func checkFailedWithoutPods(ctx context.Context, t *testing.T, x *pfsv1alpha1.PfsTransfer, reason, what string) {
	waitTransfer(ctx, t, x, 5*time.Minute)
	c := meta.FindStatusCondition(x.Status.Conditions, pfsv1alpha1.ConditionFailed)
	if x.Status.Phase != pfsv1alpha1.PhaseFailed || c == nil || c.Reason != reason || !strings.Contains(c.Message, what) {
		t.Fatalf("phase %s, Failed %+v; want Failed, %s, naming %q", x.Status.Phase, c, reason, what)
	}
	if pods := transferPods(ctx, t, x); len(pods) != 0 {
		t.Errorf("pods left behind: %v", pods)
	}
	t.Logf("%s after %s: %s", c.Reason, c.LastTransitionTime.Sub(x.CreationTimestamp.Time), c.Message)
}
