// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// Byte quantities (sizes, offsets, lengths) are resource.Quantity so a user
// writes "256Mi" instead of 268435456. The schema accepts any quantity; CEL
// rules then insist on a whole number of bytes and on the bounds. A rule
// writes quantity(string(self)) because an int-or-string field may arrive as
// an integer (268435456) or as a string ("256Mi").

// BlobReference names a PfsBlob in the same namespace.
type BlobReference struct {
	// name is the name of a PfsBlob in the same namespace as the referring object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// Range is a byte range [offset, offset+length) of a blob.
// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self.offset)) || !isQuantity(string(self.length)) || quantity(string(self.offset)).add(quantity(string(self.length))).compareTo(quantity('64Ti')) <= 0",message="range ends past 64Ti (the largest blob): lower range.offset or range.length so that offset + length <= 64Ti"
type Range struct {
	// offset is the first byte of the range, counted from the start of the blob,
	// as a quantity of bytes (e.g. 0, 512Mi). Defaults to 0.
	// +optional
	// +kubebuilder:default="0"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).isInteger() && quantity(string(self)).compareTo(quantity('0')) >= 0)",message="range.offset must be a whole number of bytes, 0 or more (e.g. 0 or 512Mi)"
	Offset resource.Quantity `json:"offset,omitempty"`

	// length is the number of bytes in the range, as a quantity (e.g. 256Mi).
	// It must be at least 1 byte; the controller also checks that the range
	// fits inside the referenced blob (reason RangeOutOfBounds).
	// +required
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).isInteger() && quantity(string(self)).compareTo(quantity('1')) >= 0)",message="range.length must be a whole number of bytes, at least 1 (e.g. 256Mi)"
	Length resource.Quantity `json:"length"`
}

// NUMAPolicy says how strictly a workload's CPUs and memory must sit in one NUMA
// zone together with its NIC or blob.
// +kubebuilder:validation:Enum=None;Preferred;Required
type NUMAPolicy string

const (
	// NUMAPolicyNone places pods without regard to NUMA zones.
	NUMAPolicyNone NUMAPolicy = "None"
	// NUMAPolicyPreferred asks for one NUMA zone and runs elsewhere when none
	// fits; the zone obtained is reported in status.
	NUMAPolicyPreferred NUMAPolicy = "Preferred"
	// NUMAPolicyRequired refuses to run across zones: the pod fails with reason
	// TopologyAffinityError rather than run slower than asked.
	NUMAPolicyRequired NUMAPolicy = "Required"
)

// Alignment is a byte alignment: a power of two from 1 to 4096.
// +kubebuilder:validation:Enum=1;2;4;8;16;32;64;128;256;512;1024;2048;4096
type Alignment int32

// Phase is the lifecycle phase of a PfsTransfer or a PcoreJob.
// +kubebuilder:validation:Enum=Pending;Placing;Running;Succeeded;Failed
type Phase string

const (
	// PhasePending means the object was accepted and waits for its inputs
	// (the blob to be Ready, a node to fit).
	PhasePending Phase = "Pending"
	// PhasePlacing means pods are being created and scheduled.
	PhasePlacing Phase = "Placing"
	// PhaseRunning means the data plane is moving or processing bytes.
	PhaseRunning Phase = "Running"
	// PhaseSucceeded is terminal: the run finished and its results are in status.
	PhaseSucceeded Phase = "Succeeded"
	// PhaseFailed is terminal: the Failed condition says why.
	PhaseFailed Phase = "Failed"
)

// IsTerminal reports whether no further progress will happen in this phase.
func (p Phase) IsTerminal() bool { return p == PhaseSucceeded || p == PhaseFailed }

// Placement is where one pod of a run was placed and what it obtained there.
type Placement struct {
	// pod is the name of the pod, in the object's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod,omitempty"`

	// node is the node the pod ran on.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`

	// numaZone is the NUMA zone (node id) the pod's CPUs were pinned to; absent
	// when the zone is unknown or the pod spans zones.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1023
	NUMAZone *int32 `json:"numaZone,omitempty"`

	// cpus is the CPU list the pod ran on, in Linux cpuset syntax (e.g. "2-3,8").
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	CPUs string `json:"cpus,omitempty"`
}

// CPUTime is CPU time consumed by the data plane during the measured window
// (setup such as blob map, prefault and fill is excluded). Values are decimal
// seconds written with three digits after the point (e.g. "2.130").
type CPUTime struct {
	// userSeconds is CPU time spent in user space, in decimal seconds.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	UserSeconds string `json:"userSeconds,omitempty"`

	// sysSeconds is CPU time spent in the kernel, in decimal seconds.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	SysSeconds string `json:"sysSeconds,omitempty"`
}
