// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"net"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
	"packetfs.io/operator/internal/result"
)

// sourceObservation is what the blob controller gathered for a blob with
// spec.source.
type sourceObservation struct {
	// ClaimFound says the PersistentVolumeClaim of the source exists.
	ClaimFound bool
	// RemoteMissing names what a store source refers to and is not there
	// (its Secret, a key of it, its CA bundle's ConfigMap); empty when all
	// is there.
	RemoteMissing string
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
	case src.S3 != nil:
		return "s3://" + podspec.S3Object(src.S3)
	case src.HTTP != nil:
		// Without a query: it may hold a presigned signature.
		u := src.HTTP.URL
		if i := strings.IndexAny(u, "?#"); i >= 0 {
			u = u[:i]
		}
		if n := len(src.HTTP.Files); n > 0 {
			u = fmt.Sprintf("%s (%d files)", u, n)
		}
		return u
	case src.OCI != nil:
		return "oci://" + src.OCI.Reference
	}
	return ""
}

// sourceDecision is one pass of decideSource: the shared helpers (cond,
// emit, wakeIn) write into st and plan.
type sourceDecision struct {
	decision
	b    *pfsv1alpha1.PfsBlob
	cfg  podspec.Config
	obs  sourceObservation
	st   pfsv1alpha1.PfsBlobStatus
	plan sourcePlan
}

// notReady sets Ready=False (the fan-out's summarise sets Ready=True).
func (d *sourceDecision) notReady(reason, msg string) {
	d.cond(pfsv1alpha1.ConditionReady, false, reason, msg)
}

// decideSource decides a source blob's status and its children: the
// policy, the claim, the scan, the size, then one holder per admitted node:
// on the pod network all at once (a relay names its upstreams by DNS), on
// spec.replication.network in topology order as upstreams get an address.
func decideSource(cfg podspec.Config, pol SourcePolicy, b *pfsv1alpha1.PfsBlob, obs sourceObservation) (pfsv1alpha1.PfsBlobStatus, sourcePlan) {
	d := &sourceDecision{b: b, cfg: cfg, obs: obs, st: *b.Status.DeepCopy()}
	d.decision = decision{gen: b.Generation, now: obs.Now, conds: &d.st.Conditions, events: &d.plan.Events, requeue: &d.plan.RequeueAfter}
	d.st.ObservedGeneration = b.Generation
	d.st.Source = describeSource(b.Spec.Source)
	d.decide(pol)
	d.st.Ready = fmt.Sprintf("%d/%d", d.st.ReadyNodes, d.st.DesiredNodes)
	var events []event
	events, d.plan.ReadinessChanged = readinessEvents(b.Status.Conditions, d.st.Conditions, warningReasons)
	d.plan.Events = append(d.plan.Events, events...)
	return d.st, d.plan
}

func (d *sourceDecision) decide(pol SourcePolicy) {
	b := d.b
	if v := checkSourcePolicy(b, pol); v != nil {
		d.notReady(v.Reason, v.Message)
		return
	}
	if pvc := b.Spec.Source.PersistentVolumeClaim; pvc != nil && !d.obs.ClaimFound {
		d.notReady(pfsv1alpha1.ReasonSourceNotFound, fmt.Sprintf(
			"PersistentVolumeClaim %s not found in namespace %s: create it or fix spec.source.persistentVolumeClaim.claimName", pvc.ClaimName, b.Namespace))
		d.plan.RequeueAfter = claimRecheck
		return
	}
	if d.obs.RemoteMissing != "" {
		d.notReady(pfsv1alpha1.ReasonSourceNotFound, d.obs.RemoteMissing)
		d.plan.RequeueAfter = claimRecheck
		return
	}
	scan, origin, ok := d.scan()
	if !ok {
		return
	}
	size := b.Spec.Size.Value()
	if size > 0 && size < scan.Needed {
		d.notReady(pfsv1alpha1.ReasonSourceTooLarge, fmt.Sprintf(
			"the source needs %d bytes (%s, its %d files and manifest) but spec.size is %d (%s): remove spec.size or create the blob with a size of at least %d",
			scan.Needed, qty(scan.Needed), scan.Files, size, b.Spec.Size.String(), scan.Needed))
		return
	}
	if size == 0 {
		size = scan.Needed
	}
	if size > pfsv1alpha1.MaxBlobSize {
		d.notReady(pfsv1alpha1.ReasonSourceTooLarge, fmt.Sprintf(
			"the source needs %d bytes (%s), more than the largest blob (%s): split the data over several blobs", size, qty(size), qty(pfsv1alpha1.MaxBlobSize)))
		return
	}
	d.st.Size = resource.NewQuantity(size, resource.BinarySI)
	d.fanOut(fanoutIn{cfg: d.cfg, b: b, obs: d.obs, origin: origin, size: size})
}

// fanOut plans one holder per node (fanout_nodes.go) and takes the
// result into status and plan.
func (d *sourceDecision) fanOut(in fanoutIn) {
	sel := selectNodes(in)
	rd := readHolders(in, sel)
	pn := planNodes(in, sel, rd)
	d.plan.Delete = append(append(d.plan.Delete, sel.stale...), pn.retried...)
	d.plan.Create = append(d.plan.Create, pn.create...)
	d.plan.Service = pn.service
	d.wakeIn(rd.recheck)
	var events []event
	d.st, events = summarise(in, sel, rd, pn, d.st)
	d.plan.Events = append(d.plan.Events, events...)
}

// scan creates or reads the scan pod; ok when it succeeded, with the node
// it ran on (the origin).
func (d *sourceDecision) scan() (*result.SourceScan, string, bool) {
	b, p := d.b, d.obs.Scan
	if p == nil {
		d.plan.Create = append(d.plan.Create, podspec.BlobScanPod(d.cfg, b))
		d.notReady(pfsv1alpha1.ReasonScanningSource, "scanning the source in pod "+podspec.ScanPodName(b.Name))
		return nil, "", false
	}
	cs := containerStatus(p, podspec.ContainerBlobScan)
	var term *corev1.ContainerStateTerminated
	if cs != nil {
		term = cs.State.Terminated
	}
	invalid := func(msg string) (*result.SourceScan, string, bool) {
		d.notReady(pfsv1alpha1.ReasonSourceInvalid, truncate("the scan refused the source: "+msg, 1024))
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
		d.notReady(pfsv1alpha1.ReasonScanningSource, truncate(msg, 1024))
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
		fillBound(&hi.status, hi.result)
		if s := hi.result.Source; s != nil {
			hi.status.Bytes, hi.status.Seconds = s.Bytes, pfsv1alpha1.FormatSeconds(s.Load)
			hi.status.MBps = pfsv1alpha1.FormatMBps(s.Bytes, s.Load)
			hi.status.SHA256 = s.SHA256
		}
	}
	return hi
}

// verifyRelay checks a relay's result against the origin's digest,
// fingerprint and chunk list: it is Ready only when they match and it
// verified the bytes.
func verifyRelay(hi *holderInfo, origin originRead, hostNode map[string]string) {
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
	ns.Verification = relayVerification(r)
	ns.SteppedAside = steppedAside(r, hostNode)
	// fetch.from is the --fetch-from entry: name:port, ip:port, or
	// [v6]:port for IPv6 (a secondary network may be v6).
	if host, _, err := net.SplitHostPort(ft.From); err == nil {
		ns.From = hostNode[host]
	}
	switch {
	case !ft.Verified:
		ns.State, ns.Reason, ns.Message = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonDigestMismatch, "the relay did not verify the fetched bytes (fetch.verified false)"
	case origin.digest == "":
		if ns.State == pfsv1alpha1.BlobNodeReady {
			ns.State, ns.Message = pfsv1alpha1.BlobNodeMaterializing, "waiting for the origin's digest"
		}
		return
	case r.Manifest.SHA256 != origin.digest:
		ns.State, ns.Reason = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonDigestMismatch
		ns.Message = fmt.Sprintf("the node holds sha256 %s, the origin's source is %s", r.Manifest.SHA256, origin.digest)
	case r.Fingerprint != origin.fingerprint:
		ns.State, ns.Reason = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonFingerprintMismatch
		ns.Message = fmt.Sprintf("the node's fingerprint %s differs from the origin's %s", r.Fingerprint, origin.fingerprint)
	case chunkRootDiffers(ns.Verification, origin.chunkRoot):
		// Verified against a list that is not the origin's: its bytes
		// match that list, not what the origin read.
		ns.State, ns.Reason = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonDigestMismatch
		ns.Message = fmt.Sprintf("the node verified its chunks against a list of root %s, the origin's is %q", ns.Verification.Root, origin.chunkRoot)
	default:
		ns.SHA256 = r.Manifest.SHA256
		return
	}
	// A copy with other bytes is not retried: the data plane verified what
	// it fetched, so a mismatch is a bug to look at, not a flaky network.
	hi.failed = false
}

// relayVerification is how a relay's data plane says it verified its copy.
func relayVerification(r *result.BlobCreate) *pfsv1alpha1.BlobNodeVerification {
	if !r.Fetch.Verified {
		return nil
	}
	v := &pfsv1alpha1.BlobNodeVerification{By: pfsv1alpha1.VerifiedByFiles}
	if c := r.Chunks; r.Fetch.VerifiedBy == result.VerifiedByChunks && c != nil {
		v.By, v.Chunks, v.FailedChunks, v.RefetchedBytes, v.Root = pfsv1alpha1.VerifiedByChunks, c.Verified, c.Failed, c.RefetchedBytes, c.Root
	}
	return v
}

// chunkRootDiffers: the relay verified by chunks against a list whose root
// is not the origin's, or the origin reported none to compare with.
func chunkRootDiffers(v *pfsv1alpha1.BlobNodeVerification, originRoot string) bool {
	return v != nil && v.By == pfsv1alpha1.VerifiedByChunks && v.Root != originRoot
}
