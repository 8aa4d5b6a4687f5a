// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// AllNamespaces in spec.access.namespaces grants every namespace.
const AllNamespaces = "*"

// BlobAccess says which namespaces besides the blob's own may mount it as a
// volume of its files (CSI driver csi.packetfs.io). The CSI node plugin
// checks it on every mount; a pod of a namespace it does not grant is refused
// with the reason in its events. Revoking a namespace refuses new mounts
// only: pods that mounted the blob already keep their mounts.
type BlobAccess struct {
	// namespaces are the namespaces, other than the blob's own (always
	// allowed), whose pods may mount the blob: namespace names, or "*" alone
	// for every namespace. Absent or empty means the blob's namespace only.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:XValidation:rule="self == '*' || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="access.namespaces holds namespace names (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters) or \"*\" for every namespace: fix the entry"
	// +kubebuilder:validation:XValidation:rule="!self.exists(n, n == '*') || size(self) == 1",message="access.namespaces: \"*\" already grants every namespace, so it must be the only entry: remove the other names or the \"*\""
	// +kubebuilder:validation:XValidation:rule="self.all(n, self.exists_one(m, m == n))",message="access.namespaces lists a namespace twice: remove the duplicate"
	Namespaces []string `json:"namespaces,omitempty"`
}

// Grants reports whether a pod of namespace ns may mount blob b: its own
// namespace always, any other one when spec.access.namespaces names it or "*".
func (b *PfsBlob) Grants(ns string) bool {
	if ns == b.Namespace {
		return true
	}
	if b.Spec.Access == nil {
		return false
	}
	for _, n := range b.Spec.Access.Namespaces {
		if n == AllNamespaces || n == ns {
			return true
		}
	}
	return false
}
