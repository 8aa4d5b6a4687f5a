// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"net"
	"path"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
	"packetfs.io/operator/internal/result"
)

// sourceObservation is what the blob controller gathered for a blob with
// spec.source.
type sourceObservation struct {
	// ClaimFound says the PersistentVolumeClaim of the source exists.
	ClaimFound bool
	// Scan is the scan pod; nil before it exists.
	Scan *corev1.Pod
	// Holders are the blob's holder pods (any node, any attempt).
	Holders []corev1.Pod
	// Nodes are the cluster's nodes.
	Nodes []corev1.Node
	// Requested is, per node, what the non-terminated pods other than this
	// blob's request there (only for nodes that need a new holder).
	Requested map[string]corev1.ResourceList
	// Base is the PfsBlob spec.base names; nil when it is not set or not
	// found.
	Base *pfsv1alpha1.PfsBlob
	Now  time.Time
}

// sourcePlan is what the controller must do after decideSource.
type sourcePlan struct {
	Create []*corev1.Pod
	Delete []*corev1.Pod
	// Service, when set, is the holders' headless Service, to create
	// before Create: set whenever a holder with a DNS name is planned.
	Service *corev1.Service
	Events  []event
	// RequeueAfter asks for another look (the claim is not watched).
	RequeueAfter time.Duration
	// ReadinessChanged is the new Ready condition when its reason changed.
	ReadinessChanged *metav1.Condition
}

// claimRecheck is how often a blob waiting for its claim looks again.
const claimRecheck = 10 * time.Second

// warningReasons are the Ready reasons recorded as Warning Events.
var warningReasons = map[string]bool{
	pfsv1alpha1.ReasonSourceNotAllowed: true, pfsv1alpha1.ReasonSourceNotFound: true,
	pfsv1alpha1.ReasonSourceInvalid: true, pfsv1alpha1.ReasonSourceTooLarge: true,
	pfsv1alpha1.ReasonSourceFailed: true, pfsv1alpha1.ReasonHugePagesUnavailable: true,
	pfsv1alpha1.ReasonFingerprintMismatch: true, pfsv1alpha1.ReasonDigestMismatch: true,
	pfsv1alpha1.ReasonNetworkUnavailable: true,
}

// describeSource is status.source: "pvc:<claim>[/<path>]" or "hostPath:<path>".
func describeSource(src *pfsv1alpha1.BlobSource) string {
	switch {
	case src == nil:
		return ""
	case src.PersistentVolumeClaim != nil:
		s := "pvc:" + src.PersistentVolumeClaim.ClaimName
		if p := strings.Trim(path.Clean("/"+src.PersistentVolumeClaim.Path), "/"); p != "" {
			s += "/" + p
		}
		return s
	case src.HostPath != nil:
		return "hostPath:" + path.Clean(src.HostPath.Path)
	}
	return ""
}

// fanout is the state decideSource builds up.
type fanout struct {
	b    *pfsv1alpha1.PfsBlob
	cfg  podspec.Config
	obs  sourceObservation
	st   pfsv1alpha1.PfsBlobStatus
	plan sourcePlan

	// Set by holders and the functions it calls, in this order.
	origin          string
	size            int64
	nodes           map[string]*corev1.Node
	newest          map[string]*corev1.Pod
	order           []string
	prev            map[string]pfsv1alpha1.BlobNodeStatus
	info            map[string]*holderInfo
	addr            map[string]string
	readyPeer       map[string]bool
	digest          string
	fingerprint     string
	originFailed    string
	originReason    string
	originAdmission string
}

func (f *fanout) ready(ok bool, reason, msg string) {
	setCondition(&f.st.Conditions, pfsv1alpha1.ConditionReady, boolStatus(ok), reason, msg, f.b.Generation, f.obs.Now)
}

// requeue asks for another look after d at the latest.
func (f *fanout) requeue(d time.Duration) {
	if d > 0 && (f.plan.RequeueAfter == 0 || d < f.plan.RequeueAfter) {
		f.plan.RequeueAfter = d
	}
}

func (f *fanout) degraded(ok bool, reason, msg string) {
	setCondition(&f.st.Conditions, pfsv1alpha1.ConditionDegraded, boolStatus(ok), reason, msg, f.b.Generation, f.obs.Now)
}

// decideSource decides a source blob's status and its children: the
// policy, the claim, the scan, the size, then one holder per admitted node:
// on the pod network all at once (a relay names its upstreams by DNS), on
// spec.replication.network in topology order as upstreams get an address.
func decideSource(cfg podspec.Config, pol SourcePolicy, b *pfsv1alpha1.PfsBlob, obs sourceObservation) (pfsv1alpha1.PfsBlobStatus, sourcePlan) {
	f := &fanout{b: b, cfg: cfg, obs: obs, st: *b.Status.DeepCopy()}
	f.st.ObservedGeneration = b.Generation
	f.st.Source = describeSource(b.Spec.Source)
	f.decide(pol)
	f.st.Ready = fmt.Sprintf("%d/%d", f.st.ReadyNodes, f.st.DesiredNodes)
	if c := reasonChanged(b.Status.Conditions, f.st.Conditions, pfsv1alpha1.ConditionReady); c != nil {
		typ := corev1.EventTypeNormal
		if warningReasons[c.Reason] {
			typ = corev1.EventTypeWarning
		}
		f.plan.Events = append(f.plan.Events, event{Type: typ, Reason: c.Reason, Message: c.Message})
		f.plan.ReadinessChanged = c
	}
	if c := reasonChanged(b.Status.Conditions, f.st.Conditions, pfsv1alpha1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
		f.plan.Events = append(f.plan.Events, event{Type: corev1.EventTypeWarning, Reason: c.Reason, Message: c.Message})
	}
	return f.st, f.plan
}

func (f *fanout) decide(pol SourcePolicy) {
	b := f.b
	if v := checkSourcePolicy(b, pol); v != nil {
		f.ready(false, v.Reason, v.Message)
		return
	}
	if pvc := b.Spec.Source.PersistentVolumeClaim; pvc != nil && !f.obs.ClaimFound {
		f.ready(false, pfsv1alpha1.ReasonSourceNotFound, fmt.Sprintf(
			"PersistentVolumeClaim %s not found in namespace %s: create it or fix spec.source.persistentVolumeClaim.claimName", pvc.ClaimName, b.Namespace))
		f.plan.RequeueAfter = claimRecheck
		return
	}
	scan, origin, ok := f.scan()
	if !ok {
		return
	}
	size := b.Spec.Size.Value()
	if size > 0 && size < scan.Needed {
		f.ready(false, pfsv1alpha1.ReasonSourceTooLarge, fmt.Sprintf(
			"the source needs %d bytes (%s, its %d files and manifest) but spec.size is %d (%s): remove spec.size or create the blob with a size of at least %d",
			scan.Needed, qty(scan.Needed), scan.Files, size, b.Spec.Size.String(), scan.Needed))
		return
	}
	if size == 0 {
		size = scan.Needed
	}
	if maxSize := int64(64) << 30; size > maxSize {
		f.ready(false, pfsv1alpha1.ReasonSourceTooLarge, fmt.Sprintf(
			"the source needs %d bytes (%s), more than the largest blob (64Gi): split the data over several blobs", size, qty(size)))
		return
	}
	f.st.Size = resource.NewQuantity(size, resource.BinarySI)
	f.holders(origin, size)
}

// scan creates or reads the scan pod; ok when it succeeded, with the node
// it ran on (the origin).
func (f *fanout) scan() (*result.SourceScan, string, bool) {
	b, p := f.b, f.obs.Scan
	if p == nil {
		f.plan.Create = append(f.plan.Create, podspec.BlobScanPod(f.cfg, b))
		f.ready(false, pfsv1alpha1.ReasonScanningSource, "scanning the source in pod "+podspec.ScanPodName(b.Name))
		return nil, "", false
	}
	cs := containerStatus(p, podspec.ContainerBlobScan)
	var term *corev1.ContainerStateTerminated
	if cs != nil {
		term = cs.State.Terminated
	}
	invalid := func(msg string) (*result.SourceScan, string, bool) {
		f.ready(false, pfsv1alpha1.ReasonSourceInvalid, truncate("the scan refused the source: "+msg, 1024))
		return nil, "", false
	}
	switch {
	case term != nil && term.ExitCode != 0, p.Status.Phase == corev1.PodFailed:
		msg := ""
		if term != nil {
			if r, err := result.ParseSourceScan(term.Message); err == nil && r.Error != "" {
				msg = r.Error
			} else {
				msg = cliError(term.Message)
			}
		}
		if msg == "" {
			msg = strings.TrimSpace(fmt.Sprintf("pod %s failed: %s %s", p.Name, p.Status.Reason, p.Status.Message))
		}
		return invalid(msg)
	case term == nil || p.Spec.NodeName == "":
		msg := "scanning the source in pod " + p.Name
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
				msg += ": not scheduled yet: " + c.Message
			}
		}
		f.ready(false, pfsv1alpha1.ReasonScanningSource, truncate(msg, 1024))
		return nil, "", false
	}
	r, err := result.ParseSourceScan(term.Message)
	if err != nil {
		return invalid(pfsv1alpha1.ReasonResultInvalid + ": " + err.Error())
	}
	if !r.OK {
		return invalid(r.Error)
	}
	return r, p.Spec.NodeName, true
}

// holderInfo is one node's holder as read from its pod.
type holderInfo struct {
	status pfsv1alpha1.BlobNodeStatus
	result *result.BlobCreate
	// failed: the pod ended without a usable copy (status.Message says why).
	failed bool
}

// holders reads and plans one holder per node, in topology order (a
// node's upstreams are decided before it).
func (f *fanout) holders(origin string, size int64) {
	f.origin, f.size = origin, size
	f.selectNodes()
	f.readHolders()
	st := make([]pfsv1alpha1.BlobNodeStatus, 0, len(f.order))
	for i, n := range f.order {
		st = append(st, f.planNode(i, n, st))
	}
	sort.Slice(st, func(i, j int) bool { return st[i].Node < st[j].Node })
	f.st.Nodes = st
	if len(st) == 0 {
		f.st.Nodes = nil
	}
	f.summarise()
}

// selectNodes finds the selected nodes, the newest holder per node (older
// attempts and holders on nodes no longer selected are deleted) and the
// topology order of the nodes that hold or may get a holder.
func (f *fanout) selectNodes() {
	selector := labels.SelectorFromSet(f.b.Spec.NodeSelector)
	f.nodes = map[string]*corev1.Node{}
	var names []string
	for i := range f.obs.Nodes {
		n := &f.obs.Nodes[i]
		if selector.Matches(labels.Set(n.Labels)) {
			f.nodes[n.Name] = n
			names = append(names, n.Name)
		}
	}
	var older []*corev1.Pod
	f.newest, older = newestHolders(f.obs.Holders)
	f.plan.Delete = append(f.plan.Delete, older...)
	var eligible []string
	for _, n := range names {
		if _, has := f.newest[n]; has || nodeUsable(f.nodes[n]) {
			eligible = append(eligible, n)
		}
	}
	for n, p := range f.newest {
		if _, selected := f.nodes[n]; !selected && n != f.origin {
			f.plan.Delete = append(f.plan.Delete, p) // the node left the selector, or is gone
		}
	}
	f.order = topologyOrder(f.origin, eligible)
	f.prev = map[string]pfsv1alpha1.BlobNodeStatus{}
	for _, n := range f.b.Status.Nodes {
		f.prev[n.Node] = n
	}
}

// readHolders reads every existing holder: the origin's digest first, then
// the relays against it, and the addresses new relays may fetch from (DNS
// names, or the holders' IPs on spec.replication.network).
func (f *fanout) readHolders() {
	f.info, f.addr, f.readyPeer = map[string]*holderInfo{}, map[string]string{}, map[string]bool{}
	network := f.b.Spec.Replication.NetworkOrDefault()
	hostNode := map[string]string{}
	for _, p := range f.obs.Holders {
		for _, h := range holderHosts(&p, network) {
			hostNode[h] = holderPodNode(&p)
		}
	}
	addr := map[string]string{}
	for _, n := range f.order {
		p := f.newest[n]
		if p == nil {
			continue
		}
		hi := readHolder(f.b, n, p)
		f.info[n] = hi
		if hi.failed {
			continue
		}
		a := holderAddress(p, network, f.obs.Now)
		addr[n] = a.Host
		f.requeue(a.RecheckAfter)
		if a.Missing != "" {
			hi.failed = true
			hi.status.State, hi.status.Reason, hi.status.Message = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonNetworkUnavailable, a.Missing
		}
	}
	if oi := f.info[f.origin]; oi != nil {
		f.readOrigin(oi)
	}
	for _, n := range f.order {
		hi := f.info[n]
		if hi == nil || hi.failed {
			continue
		}
		if addr[n] != "" {
			f.addr[n] = addr[n]
		}
		if n != f.origin {
			verifyRelay(hi, f.digest, f.fingerprint, hostNode)
			hi.status.Delta = relayDelta(f.b, f.newest[n], hi.result)
		}
		if hi.status.State == pfsv1alpha1.BlobNodeReady {
			f.readyPeer[n] = true
		}
	}
}

// readOrigin takes the digest and fingerprint from the origin's result, or
// records why the origin failed.
func (f *fanout) readOrigin(oi *holderInfo) {
	switch r := oi.result; {
	case oi.failed:
	case r == nil:
		return
	case r.Source == nil || r.Manifest == nil:
		oi.failed = true
		oi.status.Message = pfsv1alpha1.ReasonResultInvalid + ": the origin's result has no \"source\" and \"manifest\""
	case r.Source.SHA256 != r.Manifest.SHA256:
		oi.failed = true
		oi.status.Message = fmt.Sprintf("the manifest's sha256 %s differs from the source's %s", r.Manifest.SHA256, r.Source.SHA256)
	default:
		f.digest, f.fingerprint = r.Source.SHA256, r.Fingerprint
		return
	}
	f.originFailed, f.originReason = oi.status.Message, pfsv1alpha1.ReasonSourceFailed
	if oi.status.Reason == pfsv1alpha1.ReasonNetworkUnavailable {
		f.originReason = oi.status.Reason
	}
	oi.status.State, oi.status.Reason = pfsv1alpha1.BlobNodeFailed, f.originReason
}

// planNode decides node n (position i in the order): its holder as read,
// or a new pod (first attempt, or a retry of a failed relay) once the node
// is admitted and, for a relay, its nearest upstream has an address: on
// the pod network from the moment that upstream's pod is planned, so all
// holders are created in one pass.
func (f *fanout) planNode(i int, n string, decided []pfsv1alpha1.BlobNodeStatus) pfsv1alpha1.BlobNodeStatus {
	b := f.b
	role := pfsv1alpha1.BlobNodeRelay
	if n == f.origin {
		role = pfsv1alpha1.BlobNodeOrigin
	}
	attempts := f.prev[n].Attempts
	if p := f.newest[n]; p != nil && holderAttempt(p) > attempts {
		attempts = holderAttempt(p)
	}
	ns := pfsv1alpha1.BlobNodeStatus{Node: n, Role: role, Attempts: attempts, State: pfsv1alpha1.BlobNodePending}
	if hi := f.info[n]; hi != nil {
		ns = hi.status
		ns.Role, ns.Attempts = role, attempts
		if !hi.failed {
			return ns
		}
		if role == pfsv1alpha1.BlobNodeOrigin || f.originFailed != "" || attempts >= maxRelayAttempts || f.newest[n].DeletionTimestamp != nil {
			if f.originFailed != "" && role == pfsv1alpha1.BlobNodeRelay && ns.Reason == "" {
				ns.Reason = f.originReason
			}
			return ns
		}
		// A relay that failed gets a new pod, fetching from the others.
		f.plan.Delete = append(f.plan.Delete, f.newest[n])
		ns.Message = fmt.Sprintf("attempt %d failed (%s); retrying", attempts, ns.Message)
	} else if f.prev[n].State == pfsv1alpha1.BlobNodeFailed && attempts >= maxRelayAttempts {
		return f.prev[n]
	}
	if f.originFailed != "" {
		ns.State, ns.Reason, ns.Message = pfsv1alpha1.BlobNodeFailed, f.originReason, "the origin failed: "+f.originFailed
		return ns
	}
	ad := admission{Message: "node " + n + " does not match spec.nodeSelector or is gone"}
	if f.nodes[n] != nil {
		ad = admitNode(f.cfg, f.nodes[n], f.obs.Requested[n], f.size, b.Spec.PageSize, b.Spec.PageFallback,
			b.Spec.Replication.TransportOrDefault())
	}
	if !ad.OK {
		ns.State, ns.Reason, ns.Message = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonHugePagesUnavailable, ad.Message
		if role == pfsv1alpha1.BlobNodeOrigin {
			f.originAdmission = ad.Message
		}
		return ns
	}
	h := podspec.SourceHolder{Node: n, Role: role, Size: f.size, Page: ad.Page, PageFallback: ad.Fallback, Attempt: attempts + 1,
		Base: f.holderBase(n)}
	if role == pfsv1alpha1.BlobNodeRelay {
		if f.originAdmission != "" {
			return ns
		}
		topo := b.Spec.Replication.TopologyOrDefault()
		// A relay waits for its nearest upstream's address unless that node
		// failed for good. A DNS name exists as soon as the upstream's pod
		// is planned (it resolves once the pod has an IP, which the data
		// plane waits for); an IP on a network only once the pod has one,
		// so there holders start in topology order.
		nearest := f.order[upstreamIndexes(topo, i)[0]]
		h.Upstreams = upstreamAddrs(topo, f.order, i, f.addr, f.readyPeer)
		if len(h.Upstreams) == 0 || (f.addr[nearest] == "" && !failedIn(decided, nearest)) {
			ns.State, ns.Message = pfsv1alpha1.BlobNodePending, "waiting for the holder on "+nearest+" (upstream) to get an address"
			return ns
		}
	}
	pod := podspec.BlobSourceHolderPod(f.cfg, b, h)
	f.plan.Create = append(f.plan.Create, pod)
	if name := podspec.PodDNSName(pod); name != "" {
		f.addr[n] = name
		if f.plan.Service == nil {
			f.plan.Service = podspec.BlobHolderService(b)
		}
	}
	ns.Pod, ns.Attempts, ns.State, ns.Reason = pod.Name, h.Attempt, pfsv1alpha1.BlobNodePending, ""
	if !strings.HasPrefix(ns.Message, "attempt ") {
		ns.Message = ""
	}
	if ad.Fallback != "" {
		ns.PageSize, ns.FallbackReason, ns.Reason = pfsv1alpha1.PageSize4Ki, truncate(ad.Fallback, 1024), pfsv1alpha1.ReasonPageSizeFallback
	}
	return ns
}

// failedIn reports whether node is Failed in the statuses decided so far.
func failedIn(st []pfsv1alpha1.BlobNodeStatus, node string) bool {
	for _, n := range st {
		if n.Node == node {
			return n.State == pfsv1alpha1.BlobNodeFailed
		}
	}
	return false
}

// readHolder reads one holder pod as the DaemonSet path does (state, page,
// fingerprint, timings) plus its source, fetch and manifest.
func readHolder(b *pfsv1alpha1.PfsBlob, node string, p *corev1.Pod) *holderInfo {
	hi := &holderInfo{status: holderNodeStatus(b, node, p)}
	if r := p.Annotations[podspec.AnnotationPageFallback]; r != "" {
		hi.status.FallbackReason = truncate(r, 1024)
		if hi.status.PageSize == "" {
			hi.status.PageSize = pfsv1alpha1.PageSize4Ki
		}
	}
	if p.DeletionTimestamp != nil && hi.status.State != pfsv1alpha1.BlobNodeFailed {
		hi.status.State, hi.status.Message = pfsv1alpha1.BlobNodeFailed, "holder pod "+p.Name+" is being deleted"
	}
	if hi.status.State == pfsv1alpha1.BlobNodeFailed {
		hi.failed = true
		return hi
	}
	for _, c := range p.Status.InitContainerStatuses {
		if c.Name == podspec.ContainerBlobCreate && c.State.Terminated != nil && c.State.Terminated.ExitCode == 0 {
			if r, err := result.ParseBlobCreate(c.State.Terminated.Message); err == nil && r.OK {
				hi.result = r
			}
		}
	}
	if hi.result != nil {
		if s := hi.result.Source; s != nil {
			hi.status.Bytes, hi.status.Seconds = s.Bytes, pfsv1alpha1.FormatSeconds(s.Load)
			hi.status.MBps = pfsv1alpha1.FormatMBps(s.Bytes, s.Load)
			hi.status.SHA256 = s.SHA256
		}
	}
	return hi
}

// verifyRelay checks a relay's result against the origin's digest and
// fingerprint: it is Ready only when both match and it verified the bytes.
func verifyRelay(hi *holderInfo, digest, fingerprint string, hostNode map[string]string) {
	r := hi.result
	if r == nil {
		return
	}
	ns := &hi.status
	if r.Fetch == nil || r.Manifest == nil {
		ns.State, ns.Message = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonResultInvalid+": the relay's result has no \"fetch\" and \"manifest\""
		hi.failed = true
		return
	}
	ft := r.Fetch
	ns.Bytes, ns.Seconds, ns.MBps = ft.Bytes, pfsv1alpha1.FormatSeconds(ft.Elapsed), pfsv1alpha1.FormatMBps(ft.Bytes, ft.Elapsed)
	relayTransport(ns, ft)
	// fetch.from is the --fetch-from entry: name:port, ip:port, or
	// [v6]:port for IPv6 (a secondary network may be v6).
	if host, _, err := net.SplitHostPort(ft.From); err == nil {
		ns.From = hostNode[host]
	}
	switch {
	case !ft.Verified:
		ns.State, ns.Reason, ns.Message = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonDigestMismatch, "the relay did not verify the fetched bytes (fetch.verified false)"
	case digest == "":
		if ns.State == pfsv1alpha1.BlobNodeReady {
			ns.State, ns.Message = pfsv1alpha1.BlobNodeMaterializing, "waiting for the origin's digest"
		}
		return
	case r.Manifest.SHA256 != digest:
		ns.State, ns.Reason = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonDigestMismatch
		ns.Message = fmt.Sprintf("the node holds sha256 %s, the origin's source is %s", r.Manifest.SHA256, digest)
	case r.Fingerprint != fingerprint:
		ns.State, ns.Reason = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonFingerprintMismatch
		ns.Message = fmt.Sprintf("the node's fingerprint %s differs from the origin's %s", r.Fingerprint, fingerprint)
	default:
		ns.SHA256 = r.Manifest.SHA256
		return
	}
	// A copy with other bytes is not retried: the data plane verified what
	// it fetched, so a mismatch is a bug to look at, not a flaky network.
	hi.failed = false
}

// summarise sets the counts, digest, distribution time and conditions.
func (f *fanout) summarise() {
	st, digest, prev := &f.st, f.digest, f.prev
	origin, originFailed, originAdmission := f.origin, f.originFailed, f.originAdmission
	st.DesiredNodes, st.ReadyNodes = int32(len(f.order)), 0
	byFP, pages := map[string][]string{}, map[pfsv1alpha1.PageSize]bool{}
	var failed, fellBack, hugeMissing, mismatched []string
	sameDigest := digest != ""
	for _, n := range st.Nodes {
		switch n.State {
		case pfsv1alpha1.BlobNodeReady:
			st.ReadyNodes++
			byFP[n.Fingerprint] = append(byFP[n.Fingerprint], n.Node)
			pages[n.PageSize] = true
			sameDigest = sameDigest && n.SHA256 == digest
			if prev[n.Node].State != pfsv1alpha1.BlobNodeReady {
				f.plan.Events = append(f.plan.Events, event{Type: corev1.EventTypeNormal, Reason: pfsv1alpha1.ReasonNodeReady,
					Message: nodeReadyMessage(n, st.Source)})
			}
		case pfsv1alpha1.BlobNodeFailed:
			failed = append(failed, n.Node)
			switch n.Reason {
			case pfsv1alpha1.ReasonHugePagesUnavailable:
				hugeMissing = append(hugeMissing, n.Message)
			case pfsv1alpha1.ReasonDigestMismatch, pfsv1alpha1.ReasonFingerprintMismatch:
				mismatched = append(mismatched, n.Node+": "+n.Message)
			}
		}
		if n.PageSize != "" && n.PageSize != f.b.Spec.PageSize {
			fellBack = append(fellBack, n.Node)
		}
	}
	st.SHA256, st.Digest = "", ""
	if sameDigest && st.ReadyNodes > 0 {
		st.SHA256, st.Digest = digest, digest[:12]
	}
	st.Fingerprint, st.PageSize = soleKey(byFP), soleKey(pages)
	st.Delta = blobDeltaSummary(f.b, st.Nodes, f.originHasBase(), f.originResult())
	all := st.ReadyNodes == st.DesiredNodes && st.DesiredNodes > 0
	if all {
		f.distribution()
	}
	switch {
	case originFailed != "" && f.originReason == pfsv1alpha1.ReasonNetworkUnavailable:
		f.ready(false, pfsv1alpha1.ReasonNetworkUnavailable, truncate(fmt.Sprintf(
			"the origin node %s cannot serve the blob on spec.replication.network: %s; fix the NetworkAttachmentDefinition and recreate the blob", origin, originFailed), 2048))
	case originFailed != "":
		f.ready(false, pfsv1alpha1.ReasonSourceFailed, truncate(fmt.Sprintf(
			"the origin node %s could not load the source: %s; fix the source and recreate the blob", origin, originFailed), 2048))
	case originAdmission != "":
		f.ready(false, pfsv1alpha1.ReasonHugePagesUnavailable, "the origin cannot hold the blob: "+originAdmission)
	case len(mismatched) > 0:
		f.ready(false, pfsv1alpha1.ReasonDigestMismatch, truncate("nodes hold other bytes than the source: "+strings.Join(mismatched, "; "), 2048))
	case all:
		f.ready(true, pfsv1alpha1.ReasonMaterialized, fmt.Sprintf("%d of %d nodes hold the blob, sha256 %s", st.ReadyNodes, st.DesiredNodes, st.Digest))
	case len(hugeMissing) > 0:
		f.ready(false, pfsv1alpha1.ReasonHugePagesUnavailable, truncate(fmt.Sprintf("%d of %d nodes ready; %s", st.ReadyNodes, st.DesiredNodes, strings.Join(hugeMissing, "; ")), 2048))
	default:
		f.ready(false, pfsv1alpha1.ReasonMaterializing, fmt.Sprintf("%d of %d nodes ready", st.ReadyNodes, st.DesiredNodes))
	}
	switch {
	case len(mismatched) > 0:
		f.degraded(true, pfsv1alpha1.ReasonDigestMismatch, truncate(strings.Join(mismatched, "; "), 2048))
	case len(failed) > 0:
		f.degraded(true, pfsv1alpha1.ReasonNodeFailed, "the blob failed on node(s) "+strings.Join(failed, ", ")+": see status.nodes[].message")
	case len(fellBack) > 0:
		f.degraded(true, pfsv1alpha1.ReasonPageSizeFallback, fmt.Sprintf("node(s) %s mapped smaller pages than %s: see status.nodes[].fallbackReason",
			strings.Join(fellBack, ", "), f.b.Spec.PageSize))
	default:
		f.degraded(false, pfsv1alpha1.ReasonAsExpected, "every node holds the blob as asked")
	}
}

// distribution is the data plane's window: the origin's load start to the
// latest moment a holder had verified its copy (a relay's last byte
// received plus its sha256 verify: it is not Ready before).
func (f *fanout) distribution() {
	oi := f.info[f.origin]
	if oi == nil || oi.result == nil || oi.result.Source == nil || oi.result.Source.T0.IsZero() {
		return
	}
	t0, t1 := oi.result.Source.T0, oi.result.Source.T1
	for _, hi := range f.info {
		if hi.result == nil || hi.result.Fetch == nil {
			continue
		}
		if end := hi.result.Fetch.T1.Add(hi.result.Fetch.Verify); end.After(t1) {
			t1 = end
		}
	}
	if !t1.After(t0) {
		return
	}
	f.st.DistributionSeconds = pfsv1alpha1.FormatSeconds(t1.Sub(t0))
	f.st.DistributionMBps = pfsv1alpha1.FormatMBps(f.size, t1.Sub(t0))
}

// nodeReadyMessage: "w1 holds the blob: 300.0 MiB in 0.9 s (333 MB/s) from
// w0, sha256 verified".
func nodeReadyMessage(n pfsv1alpha1.BlobNodeStatus, source string) string {
	from := n.From
	if n.Role == pfsv1alpha1.BlobNodeOrigin {
		from = source
	}
	if from == "" {
		from = "an upstream node"
	}
	secs, _ := pfsv1alpha1.ParseDecimal(n.Seconds)
	mbps, _ := pfsv1alpha1.ParseDecimal(n.MBps)
	return fmt.Sprintf("%s holds the blob: %.1f MiB in %.1f s (%.0f MB/s) from %s, sha256 verified",
		n.Node, float64(n.Bytes)/(1<<20), secs, mbps, from)
}
