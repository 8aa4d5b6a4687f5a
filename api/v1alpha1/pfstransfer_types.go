// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TransferMode is what a gram carries.
// +kubebuilder:validation:Enum=Payload;Offset;Arithmetic;Delta
type TransferMode string

const (
	// ModePayload sends descriptors and the bytes they point at (the
	// "PFS-With-Payload" benchmark): the receiver needs no copy of the blob.
	ModePayload TransferMode = "Payload"
	// ModeOffset sends only (offset, length) descriptors; both ends hold the
	// same blob and the receiver executes over its own copy
	// ("Native PFS Offset-only Mode").
	ModeOffset TransferMode = "Offset"
	// ModeArithmetic sends one absolute offset per gram followed by signed
	// deltas, a more compact descriptor stream ("Native PFS Arithmetic Mode").
	ModeArithmetic TransferMode = "Arithmetic"
	// ModeDelta sends a new version of a blob (spec.delta.sourceRef) to a
	// receiver that holds an old one, the base (spec.blobRef): identical
	// regions travel as (offset, length) copies from the base, near-identical
	// ones as XOR against it plus zstd, the rest as zstd or raw bytes; the
	// receiver rebuilds the source and verifies its sha256.
	ModeDelta TransferMode = "Delta"
)

// Transport is the wire the data travels on: a transfer's grams, or a source
// blob's bytes between holders (spec.replication.transport).
// +kubebuilder:validation:Enum=TCP;UDP;AFXDP
type Transport string

const (
	// TransportTCP sends grams over a TCP stream.
	TransportTCP Transport = "TCP"
	// TransportUDP sends grams as datagrams with a repair channel for losses.
	TransportUDP Transport = "UDP"
	// TransportAFXDP sends grams through AF_XDP sockets bound to a secondary
	// interface's queues.
	TransportAFXDP Transport = "AFXDP"
)

// IntegrityAlgorithm is the checksum both ends compute over the effective bytes.
// +kubebuilder:validation:Enum=CRC32C;FNV1a64;None
type IntegrityAlgorithm string

const (
	// IntegrityCRC32C is CRC-32C (Castagnoli), hardware accelerated where possible.
	IntegrityCRC32C IntegrityAlgorithm = "CRC32C"
	// IntegrityFNV1a64 is 64-bit FNV-1a, the checksum the original benchmarks used.
	IntegrityFNV1a64 IntegrityAlgorithm = "FNV1a64"
	// IntegrityNone skips the check; status.integrity.result is then NotChecked.
	IntegrityNone IntegrityAlgorithm = "None"
)

// IntegrityCheck is the checksum a finished transfer was verified with:
// spec.integrity, or SHA256 in mode Delta.
// +kubebuilder:validation:Enum=CRC32C;FNV1a64;None;SHA256
type IntegrityCheck string

// IntegritySHA256 is the check of mode Delta: the receiver computes the
// sha256 of the source it rebuilt and compares it with the sender's.
const IntegritySHA256 IntegrityCheck = "SHA256"

// DeltaSpec is the new version a Delta transfer sends; spec.blobRef is the
// base the receiver already holds.
type DeltaSpec struct {
	// sourceRef names the PfsBlob holding the new version (a new checkpoint, a
	// dataset release). It must be Ready on the sender's node, beside the base,
	// and differ from blobRef. Its content length is its manifest length (a
	// blob loaded from files), else its size.
	// +required
	SourceRef BlobReference `json:"sourceRef"`

	// zstdLevel is the zstd level of the compressed regions, from 1 (fastest)
	// to 19 (smallest). Defaults to 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=19
	ZstdLevel int32 `json:"zstdLevel,omitempty"`
}

// GramSpec shapes the grams: how many descriptors each carries and how large
// its slab is. Defaults follow the original benchmarks (1024 descriptors per
// 1 MiB gram, descriptors up to 256 KiB, 64-byte alignment).
//
// The quantities are omitzero: omitempty does not omit a struct, so a Go
// client leaving them unset would send "0", which skips the CRD defaults and
// fails validation (found by the e2e tests, which create transfers from Go).
type GramSpec struct {
	// descriptorsPerGram is how many (offset, length) descriptors one gram holds,
	// from 1 to 65536. Defaults to 1024.
	// +optional
	// +kubebuilder:default=1024
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	DescriptorsPerGram int32 `json:"descriptorsPerGram,omitempty"`

	// slabBytes is the size of one gram's slab (descriptor table plus payload in
	// Payload mode), a quantity from 4Ki to 64Mi. Defaults to 1Mi.
	// +optional
	// +kubebuilder:default="1Mi"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).isInteger() && quantity(string(self)).compareTo(quantity('4Ki')) >= 0 && quantity(string(self)).compareTo(quantity('64Mi')) <= 0)",message="gram.slabBytes must be a whole number of bytes from 4Ki to 64Mi (e.g. 1Mi)"
	SlabBytes resource.Quantity `json:"slabBytes,omitempty,omitzero"`

	// maxDescriptorLength is the largest length one descriptor may cover, a
	// quantity from 64 bytes to 64Mi; in Payload mode at most slabBytes, since
	// the bytes travel in the slab. Defaults to 256Ki.
	// +optional
	// +kubebuilder:default="256Ki"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).isInteger() && quantity(string(self)).compareTo(quantity('64')) >= 0 && quantity(string(self)).compareTo(quantity('64Mi')) <= 0)",message="gram.maxDescriptorLength must be a whole number of bytes from 64 to 64Mi (e.g. 256Ki)"
	MaxDescriptorLength resource.Quantity `json:"maxDescriptorLength,omitempty,omitzero"`

	// align is the byte alignment of descriptor offsets and lengths, a power
	// of two from 1 to 4096. Defaults to 64 (one cache line).
	// +optional
	// +kubebuilder:default=64
	Align Alignment `json:"align,omitempty"`
}

// Endpoint is one side of a transfer: where its pod runs and which network
// it uses.
// +kubebuilder:validation:XValidation:rule="!has(self.ips) || has(self.network)",message="ips are the addresses of the endpoint's interface on network: set network to the NetworkAttachmentDefinition, or remove ips"
type Endpoint struct {
	// nodeName pins the endpoint's pod to one node.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	NodeName string `json:"nodeName,omitempty"`

	// nodeSelector restricts the endpoint's pod to nodes with these labels.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// network is the NetworkAttachmentDefinition ("name" or "namespace/name")
	// that gives the pod the secondary interface grams travel on. Absent means
	// the pod network (TCP and UDP only: AFXDP requires a network).
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-.a-z0-9]*[a-z0-9])?$`
	Network string `json:"network,omitempty"`

	// resourceName is the device-plugin resource that hands the pod its NIC or
	// queues, e.g. "afxdp/pool" or "intel.com/sriov_netdevice". One unit is
	// requested per pod.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-.a-z0-9]*[a-z0-9])?/[A-Za-z0-9]([-_.A-Za-z0-9]*[A-Za-z0-9])?$`
	ResourceName string `json:"resourceName,omitempty"`

	// ips are the addresses, in CIDR form (e.g. 192.168.77.1/24), the pod's
	// interface on network gets: they go into the pod's network-selection
	// annotation, for a NetworkAttachmentDefinition whose IPAM takes them
	// (static IPAM with "capabilities": {"ips": true}, as in Multus's
	// examples), so one NAD serves both ends. Only with network.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.all(c, isCIDR(c))",message="ips must be addresses with a prefix length, e.g. 192.168.77.1/24 or fd00::1/64"
	IPs []string `json:"ips,omitempty"`

	// queues is how many NIC queues (AFXDP) or sockets (TCP, UDP) the endpoint
	// uses, one worker thread each, from 1 to 64. Defaults to 1. In mode
	// Delta it is the sender's encoder threads, and the CPUs each side gets.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Queues int32 `json:"queues,omitempty"`
}

// PfsTransferSpec is one transfer between a sender and a receiver. Every field
// but ttlSecondsAfterFinished is immutable: a transfer measures one fixed
// configuration, and numbers in status must describe the spec beside them.
// Immutability compares values, not spellings (1Gi equals 1024Mi), because
// clients re-spell quantities when they write an object back.
// +kubebuilder:validation:XValidation:rule="self.mode == 'Payload' || self.mode == 'Delta' || has(self.blobRef)",message="blobRef is required when mode is Offset or Arithmetic: both ends must hold the same blob; set spec.blobRef.name to a PfsBlob name, or use mode Payload"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Delta' || has(self.blobRef)",message="mode Delta needs blobRef, the base: the old version the receiver already holds; set spec.blobRef.name to that PfsBlob"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Delta' || has(self.delta)",message="mode Delta needs delta.sourceRef, the new version to send; set spec.delta.sourceRef.name to that PfsBlob"
// +kubebuilder:validation:XValidation:rule="self.mode == 'Delta' || !has(self.delta)",message="delta is only used with mode Delta: remove spec.delta, or set spec.mode to Delta"
// +kubebuilder:validation:XValidation:rule="!has(self.delta) || !has(self.blobRef) || self.delta.sourceRef.name != self.blobRef.name",message="delta.sourceRef must name another PfsBlob than blobRef: blobRef is the base the receiver holds, delta.sourceRef the new version; a blob sent against itself moves nothing"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Delta' || self.transport == 'TCP'",message="mode Delta runs over TCP only for now: remove spec.transport or set it to TCP"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Delta' || (!has(self.range) && !has(self.passes) && !has(self.totalBytes))",message="range, passes and totalBytes do not apply in mode Delta: the whole source blob is sent once; remove spec.range, spec.passes and spec.totalBytes"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Delta' || !has(self.gram) || ((!has(self.gram.descriptorsPerGram) || self.gram.descriptorsPerGram == 1024) && (!has(self.gram.align) || self.gram.align == 64) && (!has(self.gram.slabBytes) || !isQuantity(string(self.gram.slabBytes)) || quantity(string(self.gram.slabBytes)).compareTo(quantity('1Mi')) == 0) && (!has(self.gram.maxDescriptorLength) || !isQuantity(string(self.gram.maxDescriptorLength)) || quantity(string(self.gram.maxDescriptorLength)).compareTo(quantity('256Ki')) == 0))",message="gram does not apply in mode Delta: the delta encoder chooses its own regions; remove spec.gram (its defaults are accepted)"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Delta' || !has(self.integrity) || self.integrity == 'CRC32C'",message="integrity does not apply in mode Delta: the receiver verifies the rebuilt source by its sha256; remove spec.integrity"
// +kubebuilder:validation:XValidation:rule="has(self.blobRef) || has(self.range) || self.mode == 'Delta'",message="range is required without blobRef: the sender then fills a scratch buffer of range.length bytes; set spec.range or spec.blobRef"
// +kubebuilder:validation:XValidation:rule="has(self.blobRef) || !has(self.range) || !isQuantity(string(self.range.offset)) || quantity(string(self.range.offset)).compareTo(quantity('0')) == 0",message="range.offset must be 0 without blobRef: the sender's scratch buffer holds only range.length bytes; remove spec.range.offset or set spec.blobRef"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Payload' || !has(self.gram) || !has(self.gram.maxDescriptorLength) || !has(self.gram.slabBytes) || !isQuantity(string(self.gram.maxDescriptorLength)) || !isQuantity(string(self.gram.slabBytes)) || quantity(string(self.gram.maxDescriptorLength)).compareTo(quantity(string(self.gram.slabBytes))) <= 0",message="in Payload mode gram.maxDescriptorLength must not exceed gram.slabBytes, since a descriptor's bytes travel inside one gram slab: raise spec.gram.slabBytes or lower spec.gram.maxDescriptorLength"
// +kubebuilder:validation:XValidation:rule="!(has(self.passes) && has(self.totalBytes))",message="set either passes or totalBytes, not both: passes repeats the range, totalBytes moves that many bytes over it"
// +kubebuilder:validation:XValidation:rule="self.transport == 'TCP' || !has(self.integrity) || self.integrity == 'CRC32C'",message="integrity FNV1a64 and None are available over TCP only: the UDP and AFXDP receivers verify reassembled grams with CRC32C; remove spec.integrity or set it to CRC32C, or use transport TCP"
// +kubebuilder:validation:XValidation:rule="self.transport != 'AFXDP' || (has(self.sender.network) && has(self.receiver.network))",message="transport AFXDP needs a secondary interface on both ends, since AF_XDP takes over an interface's queues: set spec.sender.network and spec.receiver.network to a NetworkAttachmentDefinition name"
// +kubebuilder:validation:XValidation:rule="has(self.blobRef) == has(oldSelf.blobRef) && has(self.range) == has(oldSelf.range) && has(self.passes) == has(oldSelf.passes) && has(self.totalBytes) == has(oldSelf.totalBytes) && has(self.activeDeadlineSeconds) == has(oldSelf.activeDeadlineSeconds) && has(self.scheduling) == has(oldSelf.scheduling)",message="blobRef, range, passes, totalBytes, activeDeadlineSeconds and scheduling cannot be added or removed after creation: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
type PfsTransferSpec struct {
	// blobRef names the PfsBlob the descriptors point into. Required in Offset
	// and Arithmetic mode (both ends hold a copy); in Payload mode it is the
	// source of the bytes and may be omitted (a scratch buffer is used). In
	// Delta mode it is the base: the old version the receiver already holds
	// (when it is not Ready on the receiver's node, the source is sent as a
	// full compressed copy).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="blobRef is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	BlobRef *BlobReference `json:"blobRef,omitempty"`

	// mode is what a gram carries: Payload (descriptors and bytes), Offset
	// (descriptors only; both ends hold the same blob and the receiver
	// executes over its own copy), Arithmetic (one absolute offset per gram
	// then signed deltas) or Delta (the new version spec.delta.sourceRef,
	// encoded against the base spec.blobRef the receiver holds; TCP only).
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="mode is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	Mode TransferMode `json:"mode"`

	// delta is the new version a Delta transfer sends and how it is encoded;
	// required with mode Delta and refused with the others.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="delta is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	Delta *DeltaSpec `json:"delta,omitempty"`

	// transport is the wire: TCP (default), UDP (datagrams with a repair
	// channel) or AFXDP (AF_XDP sockets on a secondary interface; needs
	// sender.network and receiver.network).
	// +optional
	// +kubebuilder:default=TCP
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="transport is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	Transport Transport `json:"transport,omitempty"`

	// range is the part of the blob to move; defaults to the whole blob.
	// Required when blobRef is absent.
	// +optional
	// +kubebuilder:validation:XValidation:rule="(!isQuantity(string(self.offset)) || quantity(string(self.offset)).compareTo(quantity(string(oldSelf.offset))) == 0) && (!isQuantity(string(self.length)) || quantity(string(self.length)).compareTo(quantity(string(oldSelf.length))) == 0)",message="range is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	Range *Range `json:"range,omitempty"`

	// passes is how many times the range is moved, from 1 to 1000000. When
	// neither passes nor totalBytes is set, the range is moved once.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="passes is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	Passes *int32 `json:"passes,omitempty"`

	// totalBytes is how many effective bytes to move, cycling over the range,
	// a quantity from 1Mi to 1Pi (e.g. 100Gi). Excludes passes.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).isInteger() && quantity(string(self)).compareTo(quantity('1Mi')) >= 0 && quantity(string(self)).compareTo(quantity('1Pi')) <= 0)",message="totalBytes must be a whole number of bytes from 1Mi to 1Pi (e.g. 100Gi)"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || quantity(string(self)).compareTo(quantity(string(oldSelf))) == 0",message="totalBytes is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	TotalBytes *resource.Quantity `json:"totalBytes,omitempty"`

	// gram shapes the grams (descriptors per gram, slab size, alignment).
	// +optional
	// +kubebuilder:default={descriptorsPerGram: 1024, slabBytes: "1Mi", maxDescriptorLength: "256Ki", align: 64}
	// +kubebuilder:validation:XValidation:rule="self.descriptorsPerGram == oldSelf.descriptorsPerGram && self.align == oldSelf.align && (!isQuantity(string(self.slabBytes)) || quantity(string(self.slabBytes)).compareTo(quantity(string(oldSelf.slabBytes))) == 0) && (!isQuantity(string(self.maxDescriptorLength)) || quantity(string(self.maxDescriptorLength)).compareTo(quantity(string(oldSelf.maxDescriptorLength))) == 0)",message="gram is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	Gram GramSpec `json:"gram,omitempty"`

	// integrity is the checksum both ends compute over the effective bytes:
	// CRC32C (default), FNV1a64 or None.
	// +optional
	// +kubebuilder:default=CRC32C
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="integrity is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	Integrity IntegrityAlgorithm `json:"integrity,omitempty"`

	// sender is where the sending pod runs and which network it uses.
	// +optional
	// +kubebuilder:default={}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="sender is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	Sender Endpoint `json:"sender,omitempty"`

	// receiver is where the receiving pod runs and which network it uses.
	// +optional
	// +kubebuilder:default={}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="receiver is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	Receiver Endpoint `json:"receiver,omitempty"`

	// numa is how strictly each pod's CPUs must share a NUMA zone with its
	// NIC and blob: None, Preferred (default) or Required.
	// +optional
	// +kubebuilder:default=Preferred
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="numa is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	NUMA NUMAPolicy `json:"numa,omitempty"`

	// scheduling adds tolerations to, or sets the PriorityClass of, the
	// transfer's pods beyond the chart's operand defaults.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="scheduling is immutable: the transfer's pods exist already; create a new PfsTransfer to run with other settings"
	Scheduling *PodScheduling `json:"scheduling,omitempty"`

	// backoffLimit is how many failed attempts are retried before the transfer
	// fails with reason BackoffLimitExceeded, from 0 to 10. Defaults to 0: a
	// benchmark that failed is reported, not silently re-run.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="backoffLimit is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// activeDeadlineSeconds bounds the whole run, from 1 to 86400; when it
	// passes, the pods are stopped and the transfer fails with reason
	// DeadlineExceeded. Absent means no deadline. The pods carry it 30 s
	// later as their own, for the kubelet to stop them if the operator is
	// down.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="activeDeadlineSeconds is immutable: a transfer measures one fixed configuration; create a new PfsTransfer to run with other settings"
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished deletes the transfer's pods this many seconds
	// after it succeeded or failed, from 0 to 604800 (7 days); the transfer
	// object stays, with its results. Absent means the pods are kept until the
	// transfer is deleted. The only field that may change after creation.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=604800
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// IntegrityOutcome is the result of comparing both ends' checksums.
// +kubebuilder:validation:Enum=OK;Mismatch;NotChecked
type IntegrityOutcome string

const (
	// IntegrityOK means both ends computed the same checksum.
	IntegrityOK IntegrityOutcome = "OK"
	// IntegrityMismatch means the checksums differ; the transfer fails with
	// reason IntegrityMismatch.
	IntegrityMismatch IntegrityOutcome = "Mismatch"
	// IntegrityNotChecked means spec.integrity is None.
	IntegrityNotChecked IntegrityOutcome = "NotChecked"
)

// IntegrityStatus is the integrity check of a finished transfer.
type IntegrityStatus struct {
	// algorithm is the checksum used: spec.integrity, or SHA256 in mode Delta.
	// +optional
	Algorithm IntegrityCheck `json:"algorithm,omitempty"`

	// result is OK, Mismatch or NotChecked.
	// +optional
	Result IntegrityOutcome `json:"result,omitempty"`

	// senderChecksum is the sender's checksum in lower-case hex (64 digits
	// for SHA256).
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{1,16}|[0-9a-f]{64})$`
	SenderChecksum string `json:"senderChecksum,omitempty"`

	// receiverChecksum is the receiver's checksum in lower-case hex (64 digits
	// for SHA256).
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{1,16}|[0-9a-f]{64})$`
	ReceiverChecksum string `json:"receiverChecksum,omitempty"`
}

// GramCounters count grams at the receiver, the authoritative side.
type GramCounters struct {
	// sent is how many grams the sender submitted.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Sent int64 `json:"sent,omitempty"`

	// received is how many well-formed grams the receiver executed.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Received int64 `json:"received,omitempty"`

	// rejected is how many malformed grams the receiver dropped.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Rejected int64 `json:"rejected,omitempty"`

	// repaired is how many grams were sent again over the repair channel (UDP).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Repaired int64 `json:"repaired,omitempty"`
}

// DeltaEncoding says what a Delta transfer's source was encoded against.
// +kubebuilder:validation:Enum=Delta;FullCopy
type DeltaEncoding string

const (
	// DeltaEncodingDelta means the receiver held the base: the source went as
	// copies from it, XOR against it and compressed regions.
	DeltaEncodingDelta DeltaEncoding = "Delta"
	// DeltaEncodingFullCopy means the receiver held no base (it was not Ready
	// on the receiver's node): the source went as a compressed full copy.
	DeltaEncodingFullCopy DeltaEncoding = "FullCopy"
)

// DeltaBound is the stage of a Delta transfer that limited its rate.
// +kubebuilder:validation:Enum=Encode;Wire;Apply;Verify
type DeltaBound string

const (
	// DeltaBoundEncode means the sender's encoder was the slowest stage.
	DeltaBoundEncode DeltaBound = "Encode"
	// DeltaBoundWire means the network was the slowest stage.
	DeltaBoundWire DeltaBound = "Wire"
	// DeltaBoundApply means the receiver's rebuilding was the slowest stage.
	DeltaBoundApply DeltaBound = "Apply"
	// DeltaBoundVerify means the receiver's sha256 check was the slowest stage.
	DeltaBoundVerify DeltaBound = "Verify"
)

// DeltaRegionCount counts one kind of region of a Delta encoding.
type DeltaRegionCount struct {
	// count is how many regions of this kind the source was cut into.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Count int64 `json:"count,omitempty"`

	// bytes is how many bytes of the source these regions cover.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Bytes int64 `json:"bytes,omitempty"`

	// wireBytes is what these regions took on the wire once encoded (xor and
	// zstd regions only).
	// +optional
	// +kubebuilder:validation:Minimum=0
	WireBytes int64 `json:"wireBytes,omitempty"`
}

// DeltaRegions counts the regions of a Delta encoding by kind.
type DeltaRegions struct {
	// same are regions identical to the base at the same offset, sent as copies.
	// +optional
	Same *DeltaRegionCount `json:"same,omitempty"`

	// moved are regions found in the base at another offset, sent as copies.
	// +optional
	Moved *DeltaRegionCount `json:"moved,omitempty"`

	// xor are near-identical regions, sent as XOR against the base plus zstd.
	// +optional
	XOR *DeltaRegionCount `json:"xor,omitempty"`

	// zstd are new regions sent zstd-compressed.
	// +optional
	Zstd *DeltaRegionCount `json:"zstd,omitempty"`

	// zstdRef are regions sent zstd-compressed with a window of the base as
	// the reference, so bytes that moved a little are found at any offset
	// (a tarball's files after its headers changed).
	// +optional
	ZstdRef *DeltaRegionCount `json:"zstdRef,omitempty"`

	// raw are new regions that did not compress, sent as they are.
	// +optional
	Raw *DeltaRegionCount `json:"raw,omitempty"`
}

// DeltaStages are the times of a Delta transfer's stages in decimal seconds
// (e.g. "0.412"); the sender reports index and encode, the receiver apply
// and verify.
type DeltaStages struct {
	// indexSeconds is the sender's time indexing the base.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	IndexSeconds string `json:"indexSeconds,omitempty"`

	// encodeSeconds is the sender's time encoding the source.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	EncodeSeconds string `json:"encodeSeconds,omitempty"`

	// applySeconds is the receiver's time rebuilding the source.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	ApplySeconds string `json:"applySeconds,omitempty"`

	// verifySeconds is the receiver's time computing the rebuilt source's sha256.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	VerifySeconds string `json:"verifySeconds,omitempty"`
}

// DeltaStatus is what a Delta transfer encoded and what it saved.
type DeltaStatus struct {
	// encoding is Delta (the receiver held the base) or FullCopy (it did
	// not: a compressed full copy). Set when the receiver is created, and
	// from the results once the transfer finished.
	// +optional
	Encoding DeltaEncoding `json:"encoding,omitempty"`

	// message says why the source went as a full copy, e.g. "base old not
	// Ready on node n2: sent as a full compressed copy".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// baseBytes is the size of the base the sender encoded against.
	// +optional
	// +kubebuilder:validation:Minimum=0
	BaseBytes int64 `json:"baseBytes,omitempty"`

	// effectiveBytes is the size of the source the receiver rebuilt.
	// +optional
	// +kubebuilder:validation:Minimum=0
	EffectiveBytes int64 `json:"effectiveBytes,omitempty"`

	// wireBytes is the size of the encoded delta on the wire.
	// +optional
	// +kubebuilder:validation:Minimum=0
	WireBytes int64 `json:"wireBytes,omitempty"`

	// ratio is effectiveBytes / wireBytes with two digits after the point
	// (e.g. "7.31"): how many times less crossed the wire than a copy.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	Ratio string `json:"ratio,omitempty"`

	// bound is the stage that limited the rate: Encode, Wire, Apply or Verify.
	// +optional
	Bound DeltaBound `json:"bound,omitempty"`

	// threads is how many encoder threads the sender ran.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	Threads int32 `json:"threads,omitempty"`

	// stages are the times of the stages.
	// +optional
	Stages *DeltaStages `json:"stages,omitempty"`

	// regions count the regions of the encoding by kind.
	// +optional
	Regions *DeltaRegions `json:"regions,omitempty"`
}

// AFXDPBindMode is the AF_XDP mode a socket obtained.
// +kubebuilder:validation:Enum=ZeroCopy;Copy
type AFXDPBindMode string

const (
	// AFXDPZeroCopy means the NIC DMAs straight into the UMEM.
	AFXDPZeroCopy AFXDPBindMode = "ZeroCopy"
	// AFXDPCopy means the kernel copies frames into the UMEM (e.g. on veth).
	AFXDPCopy AFXDPBindMode = "Copy"
)

// NUMAFit is how the node the operator chose fits a pod's request.
// +kubebuilder:validation:Enum=SingleZone;CrossZone;Node;Scheduler
type NUMAFit string

const (
	// NUMAFitSingleZone means one NUMA zone of the node has every resource
	// the pod asks for free (cpu, memory, hugepages, the device).
	NUMAFitSingleZone NUMAFit = "SingleZone"
	// NUMAFitCrossZone means no single zone had them all, the node's zones
	// together did (numa Preferred only).
	NUMAFitCrossZone NUMAFit = "CrossZone"
	// NUMAFitNode means the node has no NodeResourceTopology: it fit as a
	// whole (allocatable minus its pods' requests) and the kubelet picks the zone.
	NUMAFitNode NUMAFit = "Node"
	// NUMAFitScheduler means the operator did not choose: numa None, or no
	// topology data on any candidate node; the scheduler places the pod.
	NUMAFitScheduler NUMAFit = "Scheduler"
)

// NUMAPlacement is where the operator placed one side's pod and why
// (docs/design/numa.md).
type NUMAPlacement struct {
	// node is the node the operator chose: the pod's required node
	// affinity. Absent when the scheduler chose (fit Scheduler).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`

	// zone is the NUMA zone (node id) chosen on that node, passed to pfs as
	// --numa. Absent when none was chosen (fit CrossZone, Node, Scheduler).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1023
	Zone *int32 `json:"zone,omitempty"`

	// fit is SingleZone, CrossZone, Node or Scheduler.
	// +optional
	Fit NUMAFit `json:"fit,omitempty"`

	// reason says in words why, e.g. "node w1 zone node-0: 2 cpu, 512Mi
	// hugepages-2Mi, 1 packetfs.io/pfsdata0 free; zone node-1 lacks
	// packetfs.io/pfsdata0 (0 free, 1 needed)"; it says when the
	// topology it relied on was stale.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// NUMAMisfit is a node whose kubelet rejected a pod of this transfer with
// TopologyAffinityError (its Topology Manager found no NUMA alignment).
type NUMAMisfit struct {
	// node is the node that rejected the pod.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`

	// zone is the NUMA zone the operator had chosen there; absent when none.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1023
	Zone *int32 `json:"zone,omitempty"`

	// pod is the rejected pod.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod,omitempty"`
}

// EndpointStatus is where one side of a transfer ran and what it cost.
type EndpointStatus struct {
	Placement `json:",inline"`

	// numaPlacement is the operator's placement decision for this side's
	// pod: the node, the NUMA zone and why (spec.numa Preferred or
	// Required). numaZone above is the zone the data plane reported once
	// it ran.
	// +optional
	NUMAPlacement *NUMAPlacement `json:"numaPlacement,omitempty"`

	// cpu is this side's data-plane CPU time in the measured window.
	// +optional
	CPU *CPUTime `json:"cpu,omitempty"`

	// afxdpBindMode is the AF_XDP mode obtained (transport AFXDP only); it is
	// reported because asking for zero-copy can silently give copy mode.
	// +optional
	AFXDPBindMode AFXDPBindMode `json:"afxdpBindMode,omitempty"`
}

// PfsTransferStatus is the observed state and the measured result of a
// transfer. Rates use decimal megabytes (1 MB = 1,000,000 bytes) and are
// written as decimal strings so that `kubectl get` shows them as measured.
type PfsTransferStatus struct {
	// conditions are Placed, Succeeded and Failed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the spec generation this status describes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is Pending, Placing, Running, Succeeded or Failed.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// progress is how much of the transfer the receiver has done while it
	// runs: the effective bytes it received and executed over those its
	// sender announced, as a percent rounded down ("45%"), read from the
	// receiver's /metrics page at most once per progress interval; "100%"
	// once Succeeded. Modes Payload, Offset and Arithmetic.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{1,3}%$`
	// +kubebuilder:validation:MaxLength=4
	Progress string `json:"progress,omitempty"`

	// progressTime is when progress was last read.
	// +optional
	ProgressTime *metav1.Time `json:"progressTime,omitempty"`

	// label is the benchmark label of this run in the PacketFS taxonomy, e.g.
	// "Native PFS Offset-only Mode - TCP" or "PFS-With-Payload-UDP".
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Label string `json:"label,omitempty"`

	// effectiveBytes is the payload-equivalent bytes delivered: for Offset and
	// Arithmetic mode, the bytes the receiver executed over in its own copy.
	// +optional
	// +kubebuilder:validation:Minimum=0
	EffectiveBytes int64 `json:"effectiveBytes,omitempty"`

	// wireBytes is the bytes that crossed the wire (headers, descriptors and
	// any payload), counted at the receiver.
	// +optional
	// +kubebuilder:validation:Minimum=0
	WireBytes int64 `json:"wireBytes,omitempty"`

	// elapsedSeconds is the measured window in decimal seconds (e.g. "3.690");
	// blob setup is excluded.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	ElapsedSeconds string `json:"elapsedSeconds,omitempty"`

	// effectiveMBps is effectiveBytes / elapsedSeconds in decimal MB/s with one
	// digit after the point (e.g. "1062.3").
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	EffectiveMBps string `json:"effectiveMBps,omitempty"`

	// cpu is the data-plane CPU time of both sides together in the measured
	// window (each side's share is in sender.cpu and receiver.cpu).
	// +optional
	CPU *CPUTime `json:"cpu,omitempty"`

	// mbPerCPUSecond is effective MB per CPU-second of both sides together,
	// with one digit after the point (e.g. "1075.0").
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	MBPerCPUSecond string `json:"mbPerCPUSecond,omitempty"`

	// integrity is the checksum comparison of both ends.
	// +optional
	Integrity *IntegrityStatus `json:"integrity,omitempty"`

	// grams counts grams sent, executed, rejected and repaired.
	// +optional
	Grams *GramCounters `json:"grams,omitempty"`

	// delta is what a Delta transfer encoded and saved (mode Delta only).
	// +optional
	Delta *DeltaStatus `json:"delta,omitempty"`

	// sender is where the sender ran (pod, node, NUMA zone) and its CPU time.
	// +optional
	Sender *EndpointStatus `json:"sender,omitempty"`

	// receiver is where the receiver ran (pod, node, NUMA zone) and its CPU time.
	// +optional
	Receiver *EndpointStatus `json:"receiver,omitempty"`

	// numaMisfits are the nodes where the kubelet rejected a pod of this
	// transfer with TopologyAffinityError. With numa Preferred the next
	// attempt is placed on another node and such an attempt does not count
	// against spec.backoffLimit (once per node); with Required the transfer
	// fails.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	NUMAMisfits []NUMAMisfit `json:"numaMisfits,omitempty"`

	// failedAttempts is how many attempts failed so far (see spec.backoffLimit).
	// +optional
	// +kubebuilder:validation:Minimum=0
	FailedAttempts int32 `json:"failedAttempts,omitempty"`

	// lastFailureTime is when the last failed attempt ended; the next attempt
	// starts after an exponential backoff from it.
	// +optional
	LastFailureTime *metav1.Time `json:"lastFailureTime,omitempty"`

	// startTime is when the measured window started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the transfer reached Succeeded or Failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// PfsTransfer is one gram transfer between a sender pod and a receiver pod.
// Its status answers "did it work and how fast": effective MB/s, MB per
// CPU-second and the integrity result.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters: the operator puts it in a label value on the pods it creates; choose a shorter name"
// +kubebuilder:resource:shortName=pxfer,categories=packetfs
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Transport",type=string,JSONPath=`.spec.transport`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`,description="receiver's effective bytes / announced (while Running)"
// +kubebuilder:printcolumn:name="MB/s",type=string,JSONPath=`.status.effectiveMBps`,description="effective decimal MB/s"
// +kubebuilder:printcolumn:name="MB/CPU-s",type=string,JSONPath=`.status.mbPerCPUSecond`,description="effective MB per CPU-second, both sides"
// +kubebuilder:printcolumn:name="Integrity",type=string,JSONPath=`.status.integrity.result`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Label",type=string,JSONPath=`.status.label`,priority=1
// +kubebuilder:printcolumn:name="Elapsed",type=string,JSONPath=`.status.elapsedSeconds`,priority=1,description="measured window, seconds"
// +kubebuilder:printcolumn:name="Ratio",type=string,JSONPath=`.status.delta.ratio`,priority=1,description="mode Delta: source bytes per wire byte"
type PfsTransfer struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired transfer; immutable once created.
	// +required
	Spec PfsTransferSpec `json:"spec"`

	// status is the observed state and result, written by the operator.
	// +optional
	Status PfsTransferStatus `json:"status,omitempty"`
}

// PfsTransferList is a list of PfsTransfer.
//
// +kubebuilder:object:root=true
type PfsTransferList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PfsTransfer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PfsTransfer{}, &PfsTransferList{})
}
