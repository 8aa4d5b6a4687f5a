// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PageSize is the kind of memory page a blob is mapped on.
// +kubebuilder:validation:Enum="2Mi";"1Gi";THP;"4Ki"
type PageSize string

const (
	// PageSize2Mi maps the blob on 2 MiB hugetlb pages (hugepages-2Mi).
	PageSize2Mi PageSize = "2Mi"
	// PageSize1Gi maps the blob on 1 GiB hugetlb pages (hugepages-1Gi).
	PageSize1Gi PageSize = "1Gi"
	// PageSizeTHP maps anonymous memory and asks for transparent huge pages.
	PageSizeTHP PageSize = "THP"
	// PageSize4Ki maps plain 4 KiB pages.
	PageSize4Ki PageSize = "4Ki"
)

// PageFallback says what happens when the asked page size cannot be had.
// +kubebuilder:validation:Enum=Allow;Never
type PageFallback string

const (
	// PageFallbackAllow maps the blob on the next smaller page kind and reports
	// it: the node's pageSize in status differs and Degraded is True with
	// reason PageSizeFallback.
	PageFallbackAllow PageFallback = "Allow"
	// PageFallbackNever fails the node instead (reason HugePagesUnavailable).
	PageFallbackNever PageFallback = "Never"
)

// FillType is how a blob's bytes are initialised.
// +kubebuilder:validation:Enum=Seed;Zero
type FillType string

const (
	// FillSeed fills the blob with deterministic pseudo-random bytes derived
	// from fill.seed: every node with the same size and seed holds the same bytes.
	FillSeed FillType = "Seed"
	// FillZero fills the blob with zero bytes.
	FillZero FillType = "Zero"
)

// BlobFill describes the generated content of a blob without a source.
// +kubebuilder:validation:XValidation:rule="self.type == 'Seed' || !has(self.seed)",message="fill.seed is only used when fill.type is Seed: remove fill.seed or set fill.type to Seed"
type BlobFill struct {
	// type is how the bytes are produced: Seed (deterministic pseudo-random
	// bytes from fill.seed, the default) or Zero.
	// +optional
	// +kubebuilder:default=Seed
	Type FillType `json:"type,omitempty"`

	// seed selects the pseudo-random sequence when type is Seed; absent means 0.
	// Two blobs with the same size and seed hold the same bytes on any node.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Seed *int64 `json:"seed,omitempty"`
}

// BlobSource is where a blob's bytes come from: exactly one of a
// PersistentVolumeClaim, a host path, an S3-compatible object store or a
// web server. The origin node reads it once; the other nodes fetch the
// bytes node to node (spec.replication), while the origin still reads.
// +kubebuilder:validation:XValidation:rule="(has(self.persistentVolumeClaim) ? 1 : 0) + (has(self.hostPath) ? 1 : 0) + (has(self.s3) ? 1 : 0) + (has(self.http) ? 1 : 0) + (has(self.oci) ? 1 : 0) == 1",message="source needs exactly one of persistentVolumeClaim, hostPath, s3, http and oci: set one and remove the others"
type BlobSource struct {
	// persistentVolumeClaim reads the blob from a PersistentVolumeClaim in the
	// blob's namespace, mounted read-only by the scan pod and the origin holder.
	// +optional
	PersistentVolumeClaim *PVCBlobSource `json:"persistentVolumeClaim,omitempty"`

	// hostPath reads the blob from a path on the origin node, mounted
	// read-only. It is a node privilege: the operator accepts it only when
	// started with --host-path-sources=enabled and the path is under one of
	// --host-path-prefixes (chart values sources.hostPath.enabled and
	// sources.hostPath.allowedPrefixes); otherwise the blob reports Ready=False
	// with reason SourceNotAllowed.
	// +optional
	HostPath *HostPathBlobSource `json:"hostPath,omitempty"`

	// s3 reads the blob from an S3-compatible object store: one object, or
	// every object beneath a prefix as a directory. Only the containers that
	// read the store get its credentials.
	// +optional
	S3 *S3BlobSource `json:"s3,omitempty"`

	// http reads the blob from a web server (a mirror of a model hub, an
	// artifact server): one URL, or files under a base URL.
	// +optional
	HTTP *HTTPBlobSource `json:"http,omitempty"`

	// oci reads the blob from an OCI registry: an artifact whose layers are
	// files (ORAS, ModelPack: each named by its title annotation) or an
	// image whose tar layers are unpacked, as a directory. Every layer's
	// digest is verified.
	// +optional
	OCI *OCIBlobSource `json:"oci,omitempty"`
}

// PVCBlobSource names a PersistentVolumeClaim and a path inside it.
type PVCBlobSource struct {
	// claimName is the name of a PersistentVolumeClaim in the blob's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClaimName string `json:"claimName"`

	// path is a file or directory inside the claim, relative to its root
	// (e.g. models/llama.safetensors); empty means the whole volume. A
	// directory is loaded with every file beneath it; symlinks that lead out
	// of the volume, devices and sockets are refused by the scan (reason
	// SourceInvalid).
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="source.persistentVolumeClaim.path is relative to the volume's root: remove the leading '/' (e.g. models/x.safetensors)"
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(p, p == '..')",message="source.persistentVolumeClaim.path must not contain a '..' part: name the file or directory inside the volume"
	Path string `json:"path,omitempty"`
}

// HostPathBlobSource is a file or directory on the origin node.
type HostPathBlobSource struct {
	// path is the absolute path of a file or directory on the node
	// (e.g. /srv/models/x.safetensors).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="source.hostPath.path must be absolute (start with '/')"
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(p, p == '..')",message="source.hostPath.path must not contain a '..' part: write the path without it"
	Path string `json:"path"`
}

// ReplicationTopology is the shape in which the nodes fetch a source blob
// from each other.
// +kubebuilder:validation:Enum=Chain;Tree
type ReplicationTopology string

const (
	// TopologyChain makes each node fetch from the node before it in the
	// topology order (the origin first, then the other nodes by name),
	// falling back to the nodes before that and the origin.
	TopologyChain ReplicationTopology = "Chain"
	// TopologyTree makes node i fetch from node (i-1)/2 in the topology order
	// (a binary tree rooted at the origin), falling back to its ancestors.
	TopologyTree ReplicationTopology = "Tree"
)

// BlobReplication says how a source blob travels from the origin node to
// the other nodes.
// +kubebuilder:validation:XValidation:rule="!has(self.resourceName) || has(self.network)",message="replication.resourceName is only used with replication.network: set replication.network to the NetworkAttachmentDefinition the device-plugin resource backs, or remove replication.resourceName"
type BlobReplication struct {
	// transport is how a relay receives the bytes from its upstreams: TCP
	// (the default, a stream), UDP (datagrams, losses repaired over the TCP
	// connection) or AFXDP (the same datagrams taken off the interface by an
	// XDP program into an AF_XDP socket). Every transport keeps its control
	// connection on TCP port 7470; UDP and AFXDP send the data to UDP port
	// 7470 of the relay. An AFXDP relay's fetching (init) container runs as
	// uid 0 with exactly the capabilities a PfsTransfer's AF_XDP pods get,
	// NET_ADMIN, NET_RAW, BPF and IPC_LOCK, and is never privileged; the
	// origin and the serving containers get none. It attaches its program to
	// the interface of network (net1), else to the pod network's interface
	// (eth0); on veth and pod networks the socket runs in copy mode (veth has
	// no zero-copy). A relay that cannot attach (a missing capability,
	// another XDP program on the interface) fails with the data plane's
	// message in status.nodes[].message and is retried like any failed relay.
	// +optional
	// +kubebuilder:default=TCP
	Transport Transport `json:"transport,omitempty"`

	// topology is Chain (default) or Tree.
	// +optional
	// +kubebuilder:default=Chain
	Topology ReplicationTopology `json:"topology,omitempty"`

	// bandwidthLimit caps each hop in bytes per second (e.g. 100Mi), at least
	// 1Mi; absent means no cap.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).isInteger() && quantity(string(self)).compareTo(quantity('1Mi')) >= 0)",message="replication.bandwidthLimit must be a whole number of bytes per second, at least 1Mi (e.g. 100Mi)"
	BandwidthLimit *resource.Quantity `json:"bandwidthLimit,omitempty"`

	// network is the NetworkAttachmentDefinition ("name" in the blob's
	// namespace, or "namespace/name") over which the holders replicate:
	// every holder pod requests it through Multus and relays fetch from
	// their upstreams' addresses on it, read from the pods'
	// k8s.v1.cni.cncf.io/network-status annotation. Absent means the pod
	// network. Immutable with replication.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-.a-z0-9]*[a-z0-9])?$`
	Network string `json:"network,omitempty"`

	// resourceName is the device-plugin resource that backs network, e.g.
	// "intel.com/sriov_netdevice"; each holder pod requests one unit. Only
	// with network.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-.a-z0-9]*[a-z0-9])?/[A-Za-z0-9]([-_.A-Za-z0-9]*[A-Za-z0-9])?$`
	ResourceName string `json:"resourceName,omitempty"`
}

// MaxBlobSize is the largest blob, 64Ti: the data plane's own bound on a
// mapping (2^46 bytes). The CEL rules on spec.size and on a range's end
// spell the same number as the quantity '64Ti'.
const MaxBlobSize int64 = 64 << 40

// EffectiveSize is the blob's size in bytes: status.size once the operator
// knows it (a blob with a source may leave spec.size out), else spec.size.
func (b *PfsBlob) EffectiveSize() int64 {
	if b.Status.Size != nil && b.Status.Size.Value() > 0 {
		return b.Status.Size.Value()
	}
	return b.Spec.Size.Value()
}

// NetworkOrDefault is r.Network, or "" (the pod network) when r is nil.
func (r *BlobReplication) NetworkOrDefault() string {
	if r == nil {
		return ""
	}
	return r.Network
}

// TransportOrDefault is r.Transport, or TCP when r or its transport is unset.
func (r *BlobReplication) TransportOrDefault() Transport {
	if r == nil || r.Transport == "" {
		return TransportTCP
	}
	return r.Transport
}

// TopologyOrDefault is r.Topology, or Chain when r or its topology is unset.
func (r *BlobReplication) TopologyOrDefault() ReplicationTopology {
	if r == nil || r.Topology == "" {
		return TopologyChain
	}
	return r.Topology
}

// PfsBlobSpec is the desired blob. Everything except nodeSelector, scheduling and access is
// fixed at creation: the bytes a transfer or job computed over must not change
// under it (replacing a blob is deleting it and creating another).
// +kubebuilder:validation:XValidation:rule="has(self.size) || has(self.source)",message="size is required unless spec.source is set: set spec.size (e.g. 1Gi), or spec.source to size the blob from its data"
// +kubebuilder:validation:XValidation:rule="!(has(self.fill) && has(self.source))",message="set either spec.fill or spec.source, not both: a blob with a source holds the source's bytes"
// +kubebuilder:validation:XValidation:rule="!has(self.replication) || has(self.source)",message="replication is only used with spec.source: remove spec.replication or set spec.source"
// +kubebuilder:validation:XValidation:rule="has(self.size) == has(oldSelf.size)",message="size is immutable: create a new PfsBlob with the new size and point transfers and jobs at it"
// +kubebuilder:validation:XValidation:rule="has(self.fill) == has(oldSelf.fill)",message="fill is immutable: create a new PfsBlob with the new fill"
// +kubebuilder:validation:XValidation:rule="has(self.source) == has(oldSelf.source)",message="source is immutable: create a new PfsBlob with the new source"
// +kubebuilder:validation:XValidation:rule="has(self.replication) == has(oldSelf.replication)",message="replication is immutable: create a new PfsBlob with the new replication"
// +kubebuilder:validation:XValidation:rule="!has(self.base) || has(self.source)",message="base is only used with spec.source: a blob fanned out as a delta holds a new version of files; set spec.source or remove spec.base"
// +kubebuilder:validation:XValidation:rule="!has(self.base) || !has(self.replication) || !has(self.replication.transport) || self.replication.transport == 'TCP'",message="base needs replication.transport TCP: delta grams travel on the TCP stream; remove spec.base or set replication.transport to TCP"
// +kubebuilder:validation:XValidation:rule="has(self.base) == has(oldSelf.base)",message="base is immutable: create a new PfsBlob with the new base"
type PfsBlobSpec struct {
	// size is the blob size in bytes, a quantity from 1Mi to 64Ti (e.g. 1Gi).
	// 64Ti is the data plane's bound; what a node can hold is checked when
	// the blob is placed (reason HugePagesUnavailable). The data plane rounds the mapping up to whole pages; the content and its
	// fingerprint cover exactly size bytes. Required unless source is set;
	// with a source it defaults to what the source needs (its files and
	// manifest), and a size smaller than that is reported as SourceTooLarge.
	// Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).isInteger())",message="size must be a whole number of bytes: use a binary quantity such as 512Mi or 1Gi"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('1Mi')) >= 0)",message="size must be at least 1Mi: set spec.size to a quantity between 1Mi and 64Ti"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('64Ti')) <= 0)",message="size must be at most 64Ti: set spec.size to a quantity between 1Mi and 64Ti, or split the data over several blobs"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || quantity(string(self)).compareTo(quantity(string(oldSelf))) == 0",message="size is immutable: create a new PfsBlob with the new size and point transfers and jobs at it"
	Size resource.Quantity `json:"size,omitempty,omitzero"`

	// pageSize is the page kind to map the blob on: 2Mi (default) or 1Gi hugetlb
	// pages, THP (transparent huge pages) or 4Ki. The page size actually used on
	// each node is reported in status. Immutable.
	// +optional
	// +kubebuilder:default="2Mi"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="pageSize is immutable: create a new PfsBlob with the new pageSize"
	PageSize PageSize `json:"pageSize,omitempty"`

	// pageFallback says what a node does when pageSize cannot be had (no free
	// hugepages): Allow (default) maps smaller pages and reports the fallback
	// (Degraded=True, reason PageSizeFallback); Never fails that node. Immutable.
	// +optional
	// +kubebuilder:default=Allow
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="pageFallback is immutable: create a new PfsBlob with the new pageFallback"
	PageFallback PageFallback `json:"pageFallback,omitempty"`

	// fill is the generated content of a blob without a source; absent means
	// pseudo-random bytes from seed 0. Not allowed together with source.
	// Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="fill is immutable: create a new PfsBlob with the new fill"
	Fill BlobFill `json:"fill,omitempty,omitzero"`

	// source loads the blob with a user's file or directory instead of a
	// fill: the origin node reads it, the other selected nodes fetch it node
	// to node and verify its sha256. Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="source is immutable: create a new PfsBlob with the new source"
	Source *BlobSource `json:"source,omitempty"`

	// replication says how a source blob travels between nodes; only with
	// source. Defaults to TCP in a Chain without a bandwidth limit. Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="replication is immutable: create a new PfsBlob with the new replication"
	Replication *BlobReplication `json:"replication,omitempty"`

	// base names an older version of this blob (another PfsBlob in the
	// namespace): nodes where it is Ready get the new blob as delta grams
	// against it, the others whole. Only with source, over TCP. Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="base is immutable: create a new PfsBlob with the new base"
	Base *BlobBase `json:"base,omitempty"`

	// nodeSelector selects the nodes that hold a copy of the blob, by node
	// labels. When empty, every schedulable node holds a copy (the blob's
	// holder DaemonSet runs everywhere it may). It may change after
	// creation (as may access): adding nodes materialises new copies,
	// removing nodes releases theirs.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// scheduling adds tolerations to, or sets the PriorityClass of, the
	// blob's pods (holders and the scan) beyond the chart's operand
	// defaults. It may change after creation: pods created later get the
	// change; running holders are never replaced for it, so no copy is lost
	// (a node whose taints the new tolerations admit gets a copy).
	// +optional
	Scheduling *PodScheduling `json:"scheduling,omitempty"`

	// access grants other namespaces than the blob's own the right to mount
	// it as a read-only volume of its files (CSI driver csi.packetfs.io).
	// Absent means the blob's namespace only. It may change after creation:
	// it decides new mounts, never the bytes.
	// +optional
	Access *BlobAccess `json:"access,omitempty"`
}

// BlobNodeState is the state of one node's copy of a blob.
// +kubebuilder:validation:Enum=Pending;Materializing;Ready;Failed
type BlobNodeState string

const (
	// BlobNodePending means the node's holder pod is not running yet.
	BlobNodePending BlobNodeState = "Pending"
	// BlobNodeMaterializing means the node maps, prefaults and fills the blob.
	BlobNodeMaterializing BlobNodeState = "Materializing"
	// BlobNodeReady means the node holds the bytes and reported a fingerprint.
	BlobNodeReady BlobNodeState = "Ready"
	// BlobNodeFailed means the node could not materialise the blob.
	BlobNodeFailed BlobNodeState = "Failed"
)

// BlobNodeRole is what a node does in the fan-out of a source blob.
// +kubebuilder:validation:Enum=Origin;Relay
type BlobNodeRole string

const (
	// BlobNodeOrigin reads the source and serves it to the other nodes.
	BlobNodeOrigin BlobNodeRole = "Origin"
	// BlobNodeRelay fetches the blob from upstream nodes and serves it on.
	BlobNodeRelay BlobNodeRole = "Relay"
)

// FillBound is what bound a node's fill of a source blob, as its data plane
// measured it.
// +kubebuilder:validation:Enum=Source;Upstream;Verification;CPUQuota
type FillBound string

const (
	// FillBoundSource means the origin's reads of the source set the pace.
	FillBoundSource FillBound = "Source"
	// FillBoundUpstream means a relay's bytes came at the pace of its
	// upstream and the link.
	FillBoundUpstream FillBound = "Upstream"
	// FillBoundVerification means hashing set the pace: sha256 took most of
	// the origin's load, or a relay's verify after its last byte a sizeable
	// share of its fill.
	FillBoundVerification FillBound = "Verification"
	// FillBoundCPUQuota means the holder's CPU limit throttled the fill
	// (dataplane.holderFillCPU raises it).
	FillBoundCPUQuota FillBound = "CPUQuota"
)

// BlobTimings are the setup phases of one node's copy. They are reported but
// never counted in transfer or job throughput.
type BlobTimings struct {
	// map is the time to map the memory (e.g. "35µs").
	// +optional
	Map *metav1.Duration `json:"map,omitempty"`

	// prefault is the time to fault every page in (e.g. "104ms").
	// +optional
	Prefault *metav1.Duration `json:"prefault,omitempty"`

	// fill is the time to write the initial content (e.g. "412ms").
	// +optional
	Fill *metav1.Duration `json:"fill,omitempty"`
}

// BlobNodeStatus is one node's copy of a blob.
type BlobNodeStatus struct {
	// node is the node name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`

	// pod is the holder pod that keeps the blob mapped on this node.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod,omitempty"`

	// state is Pending, Materializing, Ready or Failed.
	// +required
	State BlobNodeState `json:"state"`

	// pageSize is the page kind the node actually mapped, which differs from
	// spec.pageSize after a fallback.
	// +optional
	PageSize PageSize `json:"pageSize,omitempty"`

	// fallbackReason says why pageSize differs from spec.pageSize (e.g. "no free
	// 2Mi hugepages: 0 of 512 available").
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	FallbackReason string `json:"fallbackReason,omitempty"`

	// fingerprint is the node's content fingerprint, 16 lower-case hex digits.
	// Equal fingerprints prove two nodes hold the same bytes.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{16}$`
	Fingerprint string `json:"fingerprint,omitempty"`

	// numaZone is the NUMA zone the blob's memory was bound to, when known.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1023
	NUMAZone *int32 `json:"numaZone,omitempty"`

	// timings are the map, prefault and fill times on this node.
	// +optional
	Timings *BlobTimings `json:"timings,omitempty"`

	// role is Origin or Relay for a blob with a source.
	// +optional
	Role BlobNodeRole `json:"role,omitempty"`

	// from is the node a relay fetched the blob from.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	From string `json:"from,omitempty"`

	// transport is how a relay received the bytes, as its data plane
	// reported it: TCP, UDP or AFXDP.
	// +optional
	Transport Transport `json:"transport,omitempty"`

	// datapath is the relay's receive path as its data plane described it
	// (e.g. "udp 1472B datagrams, GRO"; for AFXDP the attach and copy or
	// zero-copy mode it obtained).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Datapath string `json:"datapath,omitempty"`

	// naks is how many loss reports (NAKs) a UDP or AFXDP relay sent its
	// upstreams, each asking for lost datagrams again: the repair its fetch
	// needed.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NAKs int64 `json:"naks,omitempty"`

	// bytes is how many bytes the node read from the source (origin) or
	// fetched from upstream (relay).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Bytes int64 `json:"bytes,omitempty"`

	// seconds is how long reading (origin) or fetching and verifying
	// (relay) took, in decimal seconds (e.g. "0.912").
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	Seconds string `json:"seconds,omitempty"`

	// mbps is bytes / seconds in decimal MB/s (e.g. "333.1").
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	MBps string `json:"mbps,omitempty"`

	// bound is what set the pace of this node's fill: the source's reads
	// (origin), the upstream and link (relay), verification, or the
	// holder's CPU limit.
	// +optional
	Bound FillBound `json:"bound,omitempty"`

	// boundMessage gives the measured numbers behind bound (e.g. "throttled
	// 3.10 s during the fill's 4.02 s by a CPU limit of 0.05 cores").
	// +optional
	// +kubebuilder:validation:MaxLength=256
	BoundMessage string `json:"boundMessage,omitempty"`

	// steppedAside says why this relay left the middle of the chain: it
	// forwarded slower than it received, so its downstreams fetched from
	// their next upstream and it finished from the chain's last node (from
	// then names that node). Absent when it did not.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	SteppedAside string `json:"steppedAside,omitempty"`

	// sha256 is the source digest (the manifest's sha256, 64 lower-case hex
	// digits) this node verified.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	SHA256 string `json:"sha256,omitempty"`

	// attempts is how many holder pods the operator created for this node
	// (at most 3 for a relay).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Attempts int32 `json:"attempts,omitempty"`

	// reason is a CamelCase word saying why the node failed or fell back
	// (e.g. HugePagesUnavailable, PageSizeFallback).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`

	// message is a human-readable detail, e.g. why the node failed.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`

	// delta is how a relay of a blob with spec.base got its bytes: as delta
	// grams over its own base, or whole and why.
	// +optional
	Delta *BlobNodeDelta `json:"delta,omitempty"`

	// progress is how far this node's fill got while it runs, as its
	// holder's /metrics page said when last read (at most once per blob
	// per progress interval); absent before the first read and once the
	// node is Ready or Failed.
	// +optional
	Progress *BlobNodeProgress `json:"progress,omitempty"`

	// verification is how this node checked the bytes it holds, as its data
	// plane reported it.
	// +optional
	Verification *BlobNodeVerification `json:"verification,omitempty"`
}

// VerificationMethod is how a node checked its copy.
// +kubebuilder:validation:Enum=Source;Chunks;Files
type VerificationMethod string

const (
	// VerifiedBySource is the origin's: it hashed what it read (every file's sha256
	// and the BLAKE3 chunk list the relays verify against).
	VerifiedBySource VerificationMethod = "Source"
	// VerifiedByChunks is a relay's that verified every 4 MiB chunk against the
	// origin's BLAKE3 list (the same root as the origin's), the manifest
	// with its per-file sha256 among them.
	VerifiedByChunks VerificationMethod = "Chunks"
	// VerifiedByFiles is a relay's that hashed every file with sha256 against the
	// manifest (no chunk list reached it: an upstream that kept none).
	VerifiedByFiles VerificationMethod = "Files"
)

// BlobNodeVerification is how a node checked its copy.
type BlobNodeVerification struct {
	// by is Source (origin), Chunks or Files (relays).
	// +required
	By VerificationMethod `json:"by"`

	// chunks is how many chunk digests the node computed (origin) or
	// verified (relay).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Chunks int64 `json:"chunks,omitempty"`

	// failedChunks counts the chunk comparisons that failed; each such
	// chunk was fetched again from another upstream and verified.
	// +optional
	// +kubebuilder:validation:Minimum=0
	FailedChunks int64 `json:"failedChunks,omitempty"`

	// refetchedBytes is what fetching those chunks again received.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RefetchedBytes int64 `json:"refetchedBytes,omitempty"`

	// root is the chunk list's root (BLAKE3 of the blob size and every
	// digest), 64 lower-case hex digits: a relay is Ready only when it
	// equals the origin's.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	Root string `json:"root,omitempty"`
}

// BlobNodeProgress is a running fill as its holder reported it.
type BlobNodeProgress struct {
	// bytes is how many bytes of the blob the node holds so far.
	// +required
	// +kubebuilder:validation:Minimum=0
	Bytes int64 `json:"bytes"`

	// percent is bytes over the blob's size, rounded down (0-100).
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Percent int32 `json:"percent"`

	// mbps is bytes over the seconds since the fill started, in decimal
	// MB/s (e.g. "212.4").
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	MBps string `json:"mbps,omitempty"`
}

// PfsBlobStatus is the observed state of a blob across nodes.
type PfsBlobStatus struct {
	// conditions are Ready (every selected node holds the bytes) and Degraded
	// (some node fell back to another page size, failed or disagrees).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the spec generation this status describes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// desiredNodes is how many nodes should hold a copy: the nodes that match
	// spec.nodeSelector, as counted by the blob's holder DaemonSet.
	// +optional
	// +kubebuilder:validation:Minimum=0
	DesiredNodes int32 `json:"desiredNodes,omitempty"`

	// readyNodes is how many nodes hold a Ready copy.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ReadyNodes int32 `json:"readyNodes,omitempty"`

	// progress is how much of the fan-out is done: the bytes every
	// selected node holds over the bytes they will hold, as a percent
	// rounded down ("63%"); "100%" once Ready. Blobs with spec.source only.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{1,3}%$`
	// +kubebuilder:validation:MaxLength=4
	Progress string `json:"progress,omitempty"`

	// progressTime is when the holders' progress was last read into status;
	// the operator reads it again only after its progress interval passed,
	// so status is written at most once per interval for progress alone.
	// +optional
	ProgressTime *metav1.Time `json:"progressTime,omitempty"`

	// pageSize is the page kind used, when every Ready node used the same one;
	// absent when nodes differ (see nodes[].pageSize).
	// +optional
	PageSize PageSize `json:"pageSize,omitempty"`

	// fingerprint is the content fingerprint shared by every Ready node;
	// absent when nodes disagree (Degraded=True, reason FingerprintMismatch).
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{16}$`
	Fingerprint string `json:"fingerprint,omitempty"`

	// source names the blob's source: "pvc:<claim>[/<path>]" or
	// "hostPath:<path>".
	// +optional
	// +kubebuilder:validation:MaxLength=4400
	Source string `json:"source,omitempty"`

	// size is the effective blob size: spec.size, or for a source without
	// spec.size the bytes the source needs (files and manifest).
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// ready is "readyNodes/desiredNodes" (e.g. "3/4"), for kubectl get.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+/[0-9]+$`
	Ready string `json:"ready,omitempty"`

	// sha256 is the source's digest (the manifest sha256, 64 lower-case hex
	// digits), set only when every Ready node verified the same digest.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	SHA256 string `json:"sha256,omitempty"`

	// digest is the first 12 hex digits of sha256, for kubectl get.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{12}$`
	Digest string `json:"digest,omitempty"`

	// distributionSeconds is how long the fan-out took, in decimal seconds:
	// from the origin's first byte read (source.t0_unix in its result) to
	// the last node's data-plane end time (the largest t1_unix reported by
	// the origin and the relays). Set once every desired node is Ready.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	DistributionSeconds string `json:"distributionSeconds,omitempty"`

	// distributionMBps is size / distributionSeconds in decimal MB/s.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	DistributionMBps string `json:"distributionMBps,omitempty"`

	// delta sums up a fan-out against spec.base: relays that rebuilt the
	// blob from delta grams, those that fetched it whole, the bytes on the
	// wire.
	// +optional
	Delta *BlobDeltaStatus `json:"delta,omitempty"`

	// nodes lists each node's copy.
	// +optional
	// +listType=map
	// +listMapKey=node
	// +kubebuilder:validation:MaxItems=5000
	Nodes []BlobNodeStatus `json:"nodes,omitempty"`
	// mountedBy lists pods ("namespace/name", sorted, at most 32) that mount
	// the blob as a volume: an inline csi.packetfs.io volume naming it, or a
	// PersistentVolumeClaim bound to a csi.packetfs.io PersistentVolume that
	// names it. A blob being deleted keeps its holders until the list is
	// empty (finalizer pfs.packetfs.io/mounted), so no running server loses
	// its pages.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=317
	MountedBy []string `json:"mountedBy,omitempty"`

	// mountedPods is how many pods mount the blob; it exceeds
	// len(mountedBy) when the list is capped.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MountedPods int32 `json:"mountedPods,omitempty"`
}

// PfsBlob is a shared memory blob materialised on nodes: one large,
// prefaulted region, deterministically filled or loaded from the user's data
// (spec.source) and fanned out node to node. Both ends of an offset-only
// transfer hold byte-identical copies.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters: the operator puts it in a label value on the pods it creates; choose a shorter name"
// +kubebuilder:validation:XValidation:rule="has(self.spec)",message="spec is required: set spec.size (e.g. 1Gi) or spec.source"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.base) || self.spec.base.name != self.metadata.name",message="spec.base names this blob itself: name the older version's PfsBlob"
// +kubebuilder:resource:shortName=pblob,categories=packetfs
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.status.source`,description="where the bytes come from"
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.size`,description="effective size"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`,description="nodes holding a Ready copy / desired nodes"
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`,description="bytes the selected nodes hold / bytes they will hold (source blobs)"
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="reason of the Ready condition"
// +kubebuilder:printcolumn:name="MB/s",type=string,JSONPath=`.status.distributionMBps`,description="size / distribution time"
// +kubebuilder:printcolumn:name="Digest",type=string,JSONPath=`.status.digest`,description="sha256 prefix verified on every Ready node"
// +kubebuilder:printcolumn:name="Page",type=string,JSONPath=`.status.pageSize`,priority=1,description="page size actually used"
// +kubebuilder:printcolumn:name="Seconds",type=string,JSONPath=`.status.distributionSeconds`,priority=1,description="distribution time"
// +kubebuilder:printcolumn:name="Fingerprint",type=string,JSONPath=`.status.fingerprint`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PfsBlob struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired blob: spec.size or spec.source at least.
	// +optional
	Spec PfsBlobSpec `json:"spec,omitempty,omitzero"`

	// status is the observed state, written by the operator.
	// +optional
	Status PfsBlobStatus `json:"status,omitempty"`
}

// PfsBlobList is a list of PfsBlob.
//
// +kubebuilder:object:root=true
type PfsBlobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PfsBlob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PfsBlob{}, &PfsBlobList{})
}
