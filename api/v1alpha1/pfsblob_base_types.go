// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// BlobBase names an older version of a source blob that nodes may already
// hold: where it is Ready, the new blob travels as delta grams against it
// (docs/design/delta.md, "Fan-out as a delta").
type BlobBase struct {
	// name is a PfsBlob in the same namespace, the older version. On every
	// node where it is Ready when that node's holder starts, the holder
	// rebuilds the new blob over it from delta grams (what is unchanged
	// travels as offsets, near-identical bytes as a compressed XOR, the rest
	// compressed), and serves delta grams on to the next nodes. A node
	// without it, or whose upstream has none, fetches the bytes whole:
	// status.nodes[].delta says which and why.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// zstdLevel is the zstd level of the delta grams, 1..19; absent means 3.
	// Higher levels make fewer wire bytes for more encoding CPU on every
	// serving node.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=19
	ZstdLevel int32 `json:"zstdLevel,omitempty"`
}

// Reasons a node fetched a blob with spec.base whole (BlobNodeDelta.reason).
const (
	// ReasonBaseNotReady means the base was not Ready on the node when its
	// holder was created.
	ReasonBaseNotReady = "BaseNotReady"
	// ReasonBaseUnavailable means the holder could not map the node's copy of
	// the base (its holder gone, a token mismatch).
	ReasonBaseUnavailable = "BaseUnavailable"
	// ReasonUpstreamWithoutBase means the upstream the node fetched from
	// holds no base, or another one.
	ReasonUpstreamWithoutBase = "UpstreamWithoutBase"
)

// BlobNodeDelta is how a relay of a blob with spec.base got its bytes.
type BlobNodeDelta struct {
	// encoding is Delta (rebuilt over the node's base from delta grams) or
	// FullCopy (fetched whole).
	// +required
	Encoding DeltaEncoding `json:"encoding"`

	// wireBytes is what came over the connection for the blob: the delta
	// grams and any bytes that came whole.
	// +optional
	// +kubebuilder:validation:Minimum=0
	WireBytes int64 `json:"wireBytes,omitempty"`

	// deltaBytes is how many of the blob's bytes were rebuilt from delta
	// grams (the rest came whole).
	// +optional
	// +kubebuilder:validation:Minimum=0
	DeltaBytes int64 `json:"deltaBytes,omitempty"`

	// ratio is the blob's size over wireBytes (e.g. "18.2").
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	Ratio string `json:"ratio,omitempty"`

	// applySeconds is the time the relay spent applying delta grams, in
	// decimal seconds (e.g. "0.040").
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	ApplySeconds string `json:"applySeconds,omitempty"`

	// reason says why a FullCopy node fetched whole: BaseNotReady,
	// BaseUnavailable or UpstreamWithoutBase.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`

	// message is a human-readable detail.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// BlobDeltaStatus sums up a blob fanned out against spec.base.
type BlobDeltaStatus struct {
	// base is spec.base.name.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Base string `json:"base,omitempty"`

	// deltaNodes is how many relays rebuilt the blob from delta grams.
	// +optional
	// +kubebuilder:validation:Minimum=0
	DeltaNodes int32 `json:"deltaNodes,omitempty"`

	// fullCopyNodes is how many relays fetched it whole.
	// +optional
	// +kubebuilder:validation:Minimum=0
	FullCopyNodes int32 `json:"fullCopyNodes,omitempty"`

	// wireBytes is the sum of the relays' wireBytes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	WireBytes int64 `json:"wireBytes,omitempty"`

	// effectiveBytes is the blob bytes those relays hold (each one's
	// nodes[].bytes).
	// +optional
	// +kubebuilder:validation:Minimum=0
	EffectiveBytes int64 `json:"effectiveBytes,omitempty"`

	// ratio is effectiveBytes over wireBytes (e.g. "18.2").
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	Ratio string `json:"ratio,omitempty"`

	// originIndexSeconds is the origin's time to index its base, in decimal
	// seconds: once, when its first delta client came.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	OriginIndexSeconds string `json:"originIndexSeconds,omitempty"`

	// originEncodeSeconds is the origin's time encoding delta grams for its
	// clients while it loaded the blob, in decimal seconds; each relay
	// encodes for its own downstream the same way.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	OriginEncodeSeconds string `json:"originEncodeSeconds,omitempty"`

	// message names the nodes that fetched whole and why.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Message string `json:"message,omitempty"`
}
