// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PcoreOp is the byte operation pcores run over the range.
// +kubebuilder:validation:Enum=xor;add;counteq;fnv;crc32c
type PcoreOp string

const (
	// OpXor XORs every byte with imm, in place.
	OpXor PcoreOp = "xor"
	// OpAdd adds imm to every byte (mod 256), in place.
	OpAdd PcoreOp = "add"
	// OpCountEq counts the bytes equal to imm.
	OpCountEq PcoreOp = "counteq"
	// OpFNV hashes the range with 64-bit FNV-1a.
	OpFNV PcoreOp = "fnv"
	// OpCRC32C computes the CRC-32C (Castagnoli) of the range.
	OpCRC32C PcoreOp = "crc32c"
)

// UsesImm reports whether the op takes the byte operand spec.imm.
func (o PcoreOp) UsesImm() bool { return o == OpXor || o == OpAdd || o == OpCountEq }

// WritesBlob reports whether the op modifies the blob in place (xor, add).
func (o PcoreOp) WritesBlob() bool { return o == OpXor || o == OpAdd }

// BaselinePolicy says whether a plain-threads CPU run is measured next to the pcores.
// +kubebuilder:validation:Enum=Threads;None
type BaselinePolicy string

const (
	// BaselineThreads also runs the best plain-threads CPU implementation of the
	// same op with as many threads as pcores, over the same range, so that
	// CPUpwn compares like with like.
	BaselineThreads BaselinePolicy = "Threads"
	// BaselineNone skips the baseline; status.cpupwn stays empty.
	BaselineNone BaselinePolicy = "None"
)

// PcoreJobSpec is a multi-core byte op over a blob range. It is immutable: a
// job measures one fixed configuration. Immutability compares values, not
// spellings (1Gi equals 1024Mi, 60s equals 1m), because clients re-spell
// quantities and durations when they write an object back.
// +kubebuilder:validation:XValidation:rule="!(self.op in ['xor', 'add', 'counteq']) || has(self.imm)",message="imm is required for op xor, add and counteq: set spec.imm to the byte operand (0-255)"
// +kubebuilder:validation:XValidation:rule="!(self.op in ['fnv', 'crc32c']) || !has(self.imm)",message="imm is not used by op fnv or crc32c: remove spec.imm"
// +kubebuilder:validation:XValidation:rule="!(has(self.duration) && has(self.passes))",message="set either duration or passes, not both: duration runs for a fixed time, passes runs over the range a fixed number of times"
// +kubebuilder:validation:XValidation:rule="has(self.imm) == has(oldSelf.imm) && has(self.range) == has(oldSelf.range) && has(self.duration) == has(oldSelf.duration) && has(self.passes) == has(oldSelf.passes) && has(self.nodeSelector) == has(oldSelf.nodeSelector) && has(self.activeDeadlineSeconds) == has(oldSelf.activeDeadlineSeconds) && has(self.scheduling) == has(oldSelf.scheduling)",message="imm, range, duration, passes, nodeSelector, activeDeadlineSeconds and scheduling cannot be added or removed after creation: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
type PcoreJobSpec struct {
	// blobRef names the PfsBlob the pcores operate on, in the same namespace.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="blobRef is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	BlobRef BlobReference `json:"blobRef"`

	// op is the byte operation: xor and add (in place, with imm), counteq
	// (count bytes equal to imm), fnv (64-bit FNV-1a hash) or crc32c.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="op is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	Op PcoreOp `json:"op"`

	// imm is the byte operand of xor, add and counteq, from 0 to 255. Required
	// for those ops and not allowed for fnv and crc32c.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=255
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="imm is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	Imm *int32 `json:"imm,omitempty"`

	// range is the part of the blob to operate on; defaults to the whole blob.
	// +optional
	// +kubebuilder:validation:XValidation:rule="(!isQuantity(string(self.offset)) || quantity(string(self.offset)).compareTo(quantity(string(oldSelf.offset))) == 0) && (!isQuantity(string(self.length)) || quantity(string(self.length)).compareTo(quantity(string(oldSelf.length))) == 0)",message="range is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	Range *Range `json:"range,omitempty"`

	// pcores is how many pcores (pinned worker threads, one descriptor ring
	// each) run the op, from 1 to 256. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="pcores is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	Pcores int32 `json:"pcores,omitempty"`

	// duration runs the op over the range repeatedly for this long, from 1s to
	// 1h (e.g. "10s"). Excludes passes. When neither is set, the range is
	// processed once.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="duration must be from 1s to 1h (e.g. 10s)"
	// +kubebuilder:validation:XValidation:rule="duration(self) == duration(oldSelf)",message="duration is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	Duration *metav1.Duration `json:"duration,omitempty"`

	// passes is how many times the range is processed, from 1 to 1000000.
	// Excludes duration.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="passes is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	Passes *int32 `json:"passes,omitempty"`

	// descriptorsPerFrame is how many descriptors the producer publishes to a
	// pcore ring in one batch, from 1 to 4096. Defaults to 64.
	// +optional
	// +kubebuilder:default=64
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="descriptorsPerFrame is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	DescriptorsPerFrame int32 `json:"descriptorsPerFrame,omitempty"`

	// align is the byte alignment of descriptor offsets and lengths, a power of
	// two from 1 to 4096. Defaults to 64 (one cache line).
	// +optional
	// +kubebuilder:default=64
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="align is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	Align Alignment `json:"align,omitempty"`

	// ringSlots is the number of slots in each pcore's descriptor ring, a power
	// of two from 64 to 1048576. Defaults to 65536.
	// +optional
	// +kubebuilder:default=65536
	// +kubebuilder:validation:XValidation:rule="self in [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576]",message="ringSlots must be a power of two from 64 to 1048576 (e.g. 65536)"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="ringSlots is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	RingSlots int32 `json:"ringSlots,omitempty"`

	// baseline is Threads (default: also run the best plain-threads CPU
	// implementation of the op with as many threads as pcores, so that status
	// reports CPUpwn) or None.
	// +optional
	// +kubebuilder:default=Threads
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="baseline is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	Baseline BaselinePolicy `json:"baseline,omitempty"`

	// numa is how strictly the pcores and the blob must share one NUMA zone:
	// None, Preferred (default) or Required.
	// +optional
	// +kubebuilder:default=Preferred
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="numa is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	NUMA NUMAPolicy `json:"numa,omitempty"`

	// nodeSelector restricts the job's pod to nodes with these labels; the pod
	// always runs on a node that holds the blob.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="nodeSelector is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// scheduling adds tolerations to, or sets the PriorityClass of, the
	// job's pod beyond the chart's operand defaults.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="scheduling is immutable: the job's pod exists already; create a new PcoreJob to run with other settings"
	Scheduling *PodScheduling `json:"scheduling,omitempty"`

	// activeDeadlineSeconds bounds the whole run, from 1 to 86400; when it
	// passes, the pod is stopped and the job fails with reason
	// DeadlineExceeded. Absent means no deadline.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="activeDeadlineSeconds is immutable: a job measures one fixed configuration; create a new PcoreJob to run with other settings"
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
}

// PcoreJobStatus is the observed state and the measured result of a job.
// Rates use decimal megabytes (1 MB = 1,000,000 bytes) and are written as
// decimal strings so that `kubectl get` shows them as measured.
type PcoreJobStatus struct {
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

	// label is the benchmark label of this run, e.g. "pCPU Offset-mode".
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Label string `json:"label,omitempty"`

	// processedBytes is how many bytes the pcores processed in the measured window.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ProcessedBytes int64 `json:"processedBytes,omitempty"`

	// elapsedSeconds is the measured window in decimal seconds (e.g. "10.002").
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	ElapsedSeconds string `json:"elapsedSeconds,omitempty"`

	// throughputMBps is the pcores' processedBytes / elapsedSeconds in decimal
	// MB/s with one digit after the point.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	ThroughputMBps string `json:"throughputMBps,omitempty"`

	// baselineMBps is the plain-threads CPU baseline in decimal MB/s, same op,
	// same range, same thread count; absent when spec.baseline is None.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	BaselineMBps string `json:"baselineMBps,omitempty"`

	// cpupwn is throughputMBps / baselineMBps with two digits after the point
	// (e.g. "1.07"); below 1 the plain threads were faster.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	CPUpwn string `json:"cpupwn,omitempty"`

	// result is the op's value over the range: the checksum in lower-case hex
	// for fnv and crc32c, the decimal count for counteq, and the CRC-32C of the
	// range after the op for xor and add (so a run can be checked).
	// +optional
	// +kubebuilder:validation:Pattern=`^(0x[0-9a-f]{1,16}|[0-9]{1,20})$`
	Result string `json:"result,omitempty"`

	// baselineResult is the same value computed by the baseline; it must equal
	// result, otherwise the job fails with reason ResultInvalid.
	// +optional
	// +kubebuilder:validation:Pattern=`^(0x[0-9a-f]{1,16}|[0-9]{1,20})$`
	BaselineResult string `json:"baselineResult,omitempty"`

	// cpu is the pcores' CPU time in the measured window.
	// +optional
	CPU *CPUTime `json:"cpu,omitempty"`

	// placement is where the job's pod ran (pod, node, NUMA zone, CPUs).
	// +optional
	Placement *Placement `json:"placement,omitempty"`

	// startTime is when the measured window started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the job reached Succeeded or Failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// PcoreJob runs a byte op (xor, add, counteq, fnv, crc32c) over a blob range
// on several pcores and, by default, the same op on plain CPU threads, and
// reports both throughputs and their ratio (CPUpwn).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters: the operator puts it in a label value on the pods it creates; choose a shorter name"
// +kubebuilder:resource:shortName=pcj,categories=packetfs
// +kubebuilder:printcolumn:name="Op",type=string,JSONPath=`.spec.op`
// +kubebuilder:printcolumn:name="Pcores",type=integer,JSONPath=`.spec.pcores`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="MB/s",type=string,JSONPath=`.status.throughputMBps`,description="pcore throughput, decimal MB/s"
// +kubebuilder:printcolumn:name="CPUpwn",type=string,JSONPath=`.status.cpupwn`,description="pcore MB/s over plain-threads MB/s"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Baseline",type=string,JSONPath=`.status.baselineMBps`,priority=1,description="plain-threads baseline, decimal MB/s"
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.status.result`,priority=1
type PcoreJob struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired job; immutable once created.
	// +required
	Spec PcoreJobSpec `json:"spec"`

	// status is the observed state and result, written by the operator.
	// +optional
	Status PcoreJobStatus `json:"status,omitempty"`
}

// PcoreJobList is a list of PcoreJob.
//
// +kubebuilder:object:root=true
type PcoreJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PcoreJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PcoreJob{}, &PcoreJobList{})
}
