// SPDX-License-Identifier: Apache-2.0

// Package v1alpha1 holds the PacketFS API: PfsBlob (a shared memory blob
// materialised on nodes), PfsTransfer (one gram transfer between a sender and
// a receiver) and PcoreJob (a multi-core byte op over a blob range).
//
// Validation lives in the schema (bounds, enums) and in CEL rules, so the
// apiserver rejects a bad object before any controller sees it.
//
// +kubebuilder:object:generate=true
// +groupName=pfs.packetfs.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every Kind in this package.
	GroupVersion = schema.GroupVersion{Group: "pfs.packetfs.io", Version: "v1alpha1"}

	// SchemeBuilder registers the Kinds of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
