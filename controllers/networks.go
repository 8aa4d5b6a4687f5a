// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// nadKind is Multus's NetworkAttachmentDefinition. Only its metadata is
// read, so the operator needs no Go types of Multus and only "get" on it.
var nadKind = schema.GroupVersionKind{Group: "k8s.cni.cncf.io", Version: "v1", Kind: "NetworkAttachmentDefinition"}

// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=get

// missingNetworks names each endpoint network whose NetworkAttachmentDefinition
// does not exist. A pod naming one would stay in ContainerCreating for ever
// (Multus fails its sandbox), and its status would not say why: checked
// before the attempt's pods are created, read from the apiserver (NADs are
// not cached: a get per attempt, not a watch of every namespace).
func missingNetworks(ctx context.Context, d *Deps, x *pfsv1alpha1.PfsTransfer) ([]string, error) {
	var missing []string
	for _, ep := range []struct {
		field   string
		network string
	}{{"spec.sender.network", x.Spec.Sender.Network}, {"spec.receiver.network", x.Spec.Receiver.Network}} {
		if ep.network == "" {
			continue
		}
		key := nadKey(x.Namespace, ep.network)
		nad := &metav1.PartialObjectMetadata{}
		nad.SetGroupVersionKind(nadKind)
		err := d.APIReader.Get(ctx, key, nad)
		switch {
		case err == nil:
		case apierrors.IsNotFound(err):
			missing = append(missing, fmt.Sprintf("%s: NetworkAttachmentDefinition %s does not exist", ep.field, key))
		case meta.IsNoMatchError(err):
			missing = append(missing, fmt.Sprintf("%s: NetworkAttachmentDefinition %s cannot exist: Multus's CRD (network-attachment-definitions.k8s.cni.cncf.io) is not installed", ep.field, key))
		default:
			return nil, err
		}
	}
	return missing, nil
}

// nadKey is the object a network ("name" or "namespace/name") names; a bare
// name is in the transfer's namespace, as Multus resolves it.
func nadKey(namespace, network string) types.NamespacedName {
	if ns, name, ok := strings.Cut(network, "/"); ok {
		return types.NamespacedName{Namespace: ns, Name: name}
	}
	return types.NamespacedName{Namespace: namespace, Name: network}
}
