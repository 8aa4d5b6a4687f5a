// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// BlobHolderService builds the headless Service that gives the holder pods
// of a blob with a source on the pod network their DNS names (their
// spec.subdomain, HolderDNSName), so a relay can name its upstreams before
// their pods have an IP and resolve them when it connects. It publishes
// holders that are not Ready: a holder serves what it holds while it is
// still loading, long before its readiness probe passes, and its DNS name
// must exist by then. The selector is BlobHolderLabels: this blob's
// holders, not its scan pod. The port is informational (headless: DNS
// answers with the pods' addresses, nothing proxies).
func BlobHolderService(b *pfsv1alpha1.PfsBlob) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: HolderServiceName(b.Name), Namespace: b.Namespace,
			Labels: BlobHolderLabels(b), Annotations: map[string]string{AnnotationBlob: b.Name}},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 BlobHolderLabels(b),
			Ports: []corev1.ServicePort{{Name: ReplicationPortName, Port: ReplicationPort,
				TargetPort: intstr.FromInt32(ReplicationPort), Protocol: corev1.ProtocolTCP}},
		},
	}
}
