// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// Condition types. Every Kind uses metav1.Condition; these are the types the
// operator sets. Events reuse the condition's Reason.
const (
	// ConditionReady is True on a PfsBlob when every selected node holds a
	// copy with the same fingerprint.
	ConditionReady = "Ready"

	// ConditionDegraded is True on a PfsBlob when it is usable but not as
	// asked: a node fell back to another page size, failed, or disagrees on
	// the fingerprint.
	ConditionDegraded = "Degraded"

	// ConditionPlaced is True on a PfsTransfer or PcoreJob when its pods are
	// scheduled on nodes that hold the blob and satisfy the NUMA policy.
	ConditionPlaced = "Placed"

	// ConditionSucceeded is True on a PfsTransfer or PcoreJob that finished and
	// whose results are in status.
	ConditionSucceeded = "Succeeded"

	// ConditionFailed is True on a PfsTransfer or PcoreJob that will make no
	// further progress; its Reason says why.
	ConditionFailed = "Failed"

	// ConditionMounted is True on a PfsBlob that pods mount as a volume of
	// its files; its message names them (status.mountedBy lists them).
	ConditionMounted = "Mounted"
)

// Reasons for the PfsBlob Mounted condition.
const (
	// ReasonMountedByPods (Mounted=True): pods mount the blob; deleting it
	// would wait for them.
	ReasonMountedByPods = "MountedByPods"

	// ReasonDeletionWaitsForMounts (Mounted=True): the blob is being
	// deleted and keeps its holders until the pods that mount it are gone.
	ReasonDeletionWaitsForMounts = "DeletionWaitsForMounts"

	// ReasonNotMounted (Mounted=False): no pod mounts the blob.
	ReasonNotMounted = "NotMounted"
)

// Reasons for PfsBlob conditions.
const (
	// ReasonMaterialized (Ready=True): every selected node holds the bytes
	// and the fingerprints agree.
	ReasonMaterialized = "Materialized"

	// ReasonMaterializing (Ready=False): holder pods are mapping, prefaulting
	// or filling the blob.
	ReasonMaterializing = "Materializing"

	// ReasonNoMatchingNodes (Ready=False): no node matches spec.nodeSelector.
	ReasonNoMatchingNodes = "NoMatchingNodes"

	// ReasonHugePagesUnavailable (Ready=False): a node has too few free
	// hugepages of spec.pageSize and spec.pageFallback is Never.
	ReasonHugePagesUnavailable = "HugePagesUnavailable"

	// ReasonPageSizeFallback (Degraded=True): a node mapped smaller pages than
	// spec.pageSize; status.nodes[].fallbackReason says why.
	ReasonPageSizeFallback = "PageSizeFallback"

	// ReasonFingerprintMismatch (Degraded=True, Ready=False): nodes hold
	// different bytes for the same blob.
	ReasonFingerprintMismatch = "FingerprintMismatch"

	// ReasonNodeFailed (Degraded=True): at least one node could not
	// materialise the blob; status.nodes[].message says why.
	ReasonNodeFailed = "NodeFailed"

	// ReasonAsExpected (Degraded=False): every node has the blob as asked.
	ReasonAsExpected = "AsExpected"
)

// Reasons for a PfsBlob with spec.source (Ready=False unless said otherwise),
// and the Events of its fan-out.
const (
	// ReasonSourceNotAllowed (Ready=False): spec.source.hostPath is disabled in the operator
	// or the path is not under an allowed prefix (chart values
	// sources.hostPath.enabled and sources.hostPath.allowedPrefixes).
	ReasonSourceNotAllowed = "SourceNotAllowed"

	// ReasonSourceNotFound (Ready=False): the PersistentVolumeClaim of spec.source does not
	// exist in the blob's namespace. The blob waits for it.
	ReasonSourceNotFound = "SourceNotFound"

	// ReasonScanningSource (Ready=False): the scan pod lists the source to size the blob.
	ReasonScanningSource = "ScanningSource"

	// ReasonSourceInvalid (Ready=False): the scan refused the source (missing path, a '..'
	// or a symlink out of the volume, a device file ...); the message is the
	// data plane's.
	ReasonSourceInvalid = "SourceInvalid"

	// ReasonSourceTooLarge (Ready=False): the source needs more bytes than spec.size.
	ReasonSourceTooLarge = "SourceTooLarge"

	// ReasonSourceFailed (Ready=False): the origin node could not load the source (it
	// changed while read, an I/O error ...). Not retried: fix the source and
	// recreate the blob.
	ReasonSourceFailed = "SourceFailed"

	// ReasonDigestMismatch (Degraded=True): a node verified another sha256
	// than the origin's source digest.
	ReasonDigestMismatch = "DigestMismatch"

	// ReasonVerificationFailed (a node Failed, retried from another
	// upstream): the relay's received bytes did not match the manifest's
	// digests (exit code 3 of pfs blob create): its upstream's copy or the
	// link is damaged.
	ReasonVerificationFailed = "VerificationFailed"

	// ReasonNetworkUnavailable (a node Failed; Ready=False when it is the
	// origin): a holder pod runs but its network-status annotation gives it
	// no address on spec.replication.network (Multus missing, or a wrong
	// NetworkAttachmentDefinition).
	ReasonNetworkUnavailable = "NetworkUnavailable"

	// ReasonNodeReady is the Event of a node whose copy became Ready, with
	// its size, time, rate, upstream and digest.
	ReasonNodeReady = "NodeReady"
)

// Reasons for PfsTransfer and PcoreJob conditions while they make progress.
const (
	// ReasonBlobNotFound (Placed=False): spec.blobRef names no PfsBlob in the
	// namespace. The object waits; it is not failed, so the blob may be
	// created afterwards.
	ReasonBlobNotFound = "BlobNotFound"

	// ReasonBlobNotReady (Placed=False): the referenced PfsBlob exists but is
	// not Ready on the nodes the run needs.
	ReasonBlobNotReady = "BlobNotReady"

	// ReasonNetworkNotFound (Placed=False, then Failed=True): an endpoint's
	// network names a NetworkAttachmentDefinition that does not exist (or
	// Multus's CRD is not installed). The run waits for it as long as a pod
	// may stay unschedulable, then fails: the pod could not get its interface.
	ReasonNetworkNotFound = "NetworkNotFound"

	// ReasonQueued (Placed=False): the operator runs at most
	// --max-active-transfers transfers at once; this one waits its turn in
	// creation order. Waiting in the queue never fails a transfer.
	ReasonQueued = "Queued"

	// ReasonNoNUMAFit (Placed=False): no candidate node has room for the
	// pod under spec.numa (per node: what it lacks); the run waits and
	// decides again as resources free up.
	ReasonNoNUMAFit = "NoNUMAFit"

	// ReasonTopologyCatchUp (Placed=False): the only room is on a node whose
	// NodeResourceTopology predates a pod change there and shows none; the
	// run waits the operator's --topology-catch-up for its publisher to
	// write the change, then places by the scheduler's count. Seconds.
	ReasonTopologyCatchUp = "TopologyCatchUp"

	// ReasonNUMAPlaced is the Event of a placement decision: the node, the
	// NUMA zone and why (status.<side>.numaPlacement).
	ReasonNUMAPlaced = "NUMAPlaced"

	// ReasonPodsPending (Placed=False): pods are created and wait to be scheduled.
	ReasonPodsPending = "PodsPending"

	// ReasonPodsScheduled (Placed=True): every pod is bound to a node.
	ReasonPodsScheduled = "PodsScheduled"

	// ReasonReceiverNotReady (Succeeded=False): the sender waits for the
	// receiver to listen (PfsTransfer only).
	ReasonReceiverNotReady = "ReceiverNotReady"

	// ReasonRunning (Succeeded=False): the data plane is moving or processing bytes.
	ReasonRunning = "Running"

	// ReasonCompleted (Succeeded=True): the run finished; results are in status.
	ReasonCompleted = "Completed"
)

// Reasons for Failed=True on a PfsTransfer or PcoreJob. A failed run never
// reports throughput numbers other than those it measured before failing.
const (
	// ReasonUnschedulable (Failed=True): no node can take a pod (resources, selectors,
	// hugepages, device-plugin resource).
	ReasonUnschedulable = "Unschedulable"

	// ReasonStartTimeout (Failed=True, retried): a pod was scheduled but its
	// containers did not start within the unschedulable timeout: the sandbox
	// or its network could not be set up (a CNI error, a missing
	// NetworkAttachmentDefinition), or the image could not be pulled. The
	// message gives the container's waiting reason; the pod's Events the rest.
	ReasonStartTimeout = "StartTimeout"

	// ReasonTopologyAffinityError (Failed=True): numa is Required and the kubelet's Topology
	// Manager could not align CPUs, memory and devices in one NUMA zone.
	ReasonTopologyAffinityError = "TopologyAffinityError"

	// ReasonPodFailed (Failed=True): a data-plane container exited non-zero; the message
	// holds its last log line.
	ReasonPodFailed = "PodFailed"

	// ReasonOOMKilled (Failed=True): a data-plane container was killed for exceeding its
	// memory limit.
	ReasonOOMKilled = "OOMKilled"

	// ReasonEvicted (Failed=True): the kubelet evicted a pod (node pressure, preemption).
	ReasonEvicted = "Evicted"

	// ReasonBackoffLimitExceeded (Failed=True): more attempts failed than spec.backoffLimit
	// allows; the message names the last attempt's reason.
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"

	// ReasonDeadlineExceeded (Failed=True): spec.activeDeadlineSeconds passed before the run
	// finished.
	ReasonDeadlineExceeded = "DeadlineExceeded"

	// ReasonRangeOutOfBounds (Failed=True): spec.range ends past the referenced blob's size,
	// which only the controller can check.
	ReasonRangeOutOfBounds = "RangeOutOfBounds"

	// ReasonTransportUnavailable (Failed=True): the node cannot run the transport asked for
	// (exit code 6 of the pfs CLI: an AF_XDP socket or the XDP program refused by the
	// interface or for a missing capability, or no interface for it). Not retried.
	ReasonTransportUnavailable = "TransportUnavailable"

	// ReasonIntegrityMismatch (Failed=True): sender and receiver checksums differ
	// (PfsTransfer only).
	ReasonIntegrityMismatch = "IntegrityMismatch"

	// ReasonRefused (Failed=True): one end refused the other (exit code 4 of
	// the pfs CLI): protocol version, mode or blob fingerprint differ.
	ReasonRefused = "Refused"

	// ReasonTimeout (Failed=True, or a retried attempt): the data plane gave
	// up waiting for its peer (exit code 5 of the pfs CLI: accept, connect or
	// per-I/O timeout).
	ReasonTimeout = "Timeout"

	// ReasonResultInvalid (Failed=True): the data plane's report could not be parsed or is
	// inconsistent (e.g. pcore and baseline results differ).
	ReasonResultInvalid = "ResultInvalid"

	// ReasonBlobDeleted (Failed=True): the referenced PfsBlob was deleted while the run used it.
	ReasonBlobDeleted = "BlobDeleted"
)
