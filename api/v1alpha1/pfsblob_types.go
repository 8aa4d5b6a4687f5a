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

// BlobFill describes the initial content of a blob. It is a union on type so
// that more sources (e.g. a file or an object store) can be added later.
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

// PfsBlobSpec is the desired blob. Everything except nodeSelector is fixed at
// creation: the bytes a transfer or job computed over must not change under it.
type PfsBlobSpec struct {
	// size is the blob size in bytes, a quantity from 1Mi to 64Gi (e.g. 1Gi).
	// The data plane rounds the mapping up to whole pages; the content and its
	// fingerprint cover exactly size bytes. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).isInteger())",message="size must be a whole number of bytes: use a binary quantity such as 512Mi or 1Gi"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('1Mi')) >= 0)",message="size must be at least 1Mi: set spec.size to a quantity between 1Mi and 64Gi"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('64Gi')) <= 0)",message="size must be at most 64Gi: set spec.size to a quantity between 1Mi and 64Gi, or split the data over several blobs"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || quantity(string(self)).compareTo(quantity(string(oldSelf))) == 0",message="size is immutable: create a new PfsBlob with the new size and point transfers and jobs at it"
	Size resource.Quantity `json:"size"`

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

	// fill is the initial content of the blob; defaults to pseudo-random bytes
	// from seed 0. Immutable.
	// +optional
	// +kubebuilder:default={type: Seed}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="fill is immutable: create a new PfsBlob with the new fill"
	Fill BlobFill `json:"fill,omitempty"`

	// nodeSelector selects the nodes that hold a copy of the blob, by node
	// labels. When empty, every schedulable node holds a copy (the blob's
	// holder DaemonSet runs everywhere it may). It is the only field
	// that may change after creation: adding nodes materialises new copies,
	// removing nodes releases theirs.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
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

	// message is a human-readable detail, e.g. why the node failed.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
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

	// pageSize is the page kind used, when every Ready node used the same one;
	// absent when nodes differ (see nodes[].pageSize).
	// +optional
	PageSize PageSize `json:"pageSize,omitempty"`

	// fingerprint is the content fingerprint shared by every Ready node;
	// absent when nodes disagree (Degraded=True, reason FingerprintMismatch).
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{16}$`
	Fingerprint string `json:"fingerprint,omitempty"`

	// nodes lists each node's copy.
	// +optional
	// +listType=map
	// +listMapKey=node
	// +kubebuilder:validation:MaxItems=5000
	Nodes []BlobNodeStatus `json:"nodes,omitempty"`
}

// PfsBlob is a shared memory blob materialised on nodes: one large,
// prefaulted, deterministically filled region that grams point into. Both
// ends of an offset-only transfer hold byte-identical copies.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters: the operator puts it in a label value on the pods it creates; choose a shorter name"
// +kubebuilder:resource:shortName=pblob,categories=packetfs
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Page",type=string,JSONPath=`.status.pageSize`,description="page size actually used"
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredNodes`,description="nodes that should hold a copy"
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.readyNodes`,description="nodes holding a Ready copy"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Fingerprint",type=string,JSONPath=`.status.fingerprint`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PfsBlob struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired blob.
	// +required
	Spec PfsBlobSpec `json:"spec"`

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
