// SPDX-License-Identifier: Apache-2.0

package main

// The manager's ClusterRole, generated into config/rbac/role.yaml. It grants
// what the operator needs and nothing more: its own Kinds, the pods it runs
// the data plane in, read access to nodes for placement, and events. These
// markers move next to the reconcilers that need them when those are written.

// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfsblobs;pfstransfers;pcorejobs,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfsblobs/status;pfstransfers/status;pcorejobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfsblobs/finalizers;pfstransfers/finalizers;pcorejobs/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
