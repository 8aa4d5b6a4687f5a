// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestBlobHolderService(t *testing.T) {
	b := sourceBlob(pvc(""), "")
	holders := map[string]string{LabelManagedBy: ManagedBy, LabelComponent: ComponentBlobHolder, LabelBlobUID: "uid-w"}
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "w-holders", Namespace: "ns", Labels: holders,
			Annotations: map[string]string{AnnotationBlob: "w"}},
		Spec: corev1.ServiceSpec{
			ClusterIP:                "None",
			PublishNotReadyAddresses: true,
			Selector:                 holders,
			Ports: []corev1.ServicePort{{Name: "repl", Port: 7470, TargetPort: intstr.FromInt32(7470),
				Protocol: corev1.ProtocolTCP}},
		},
	}
	got := BlobHolderService(b)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// It selects the holders (every attempt) and not the scan pod.
	pod := BlobSourceHolderPod(Config{}, b, SourceHolder{Node: "w0", Role: "Origin", Attempt: 2})
	if pod.Spec.Subdomain != got.Name {
		t.Errorf("holder subdomain %q, Service %q", pod.Spec.Subdomain, got.Name)
	}
	for k, v := range got.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("holder labels %v lack %s=%s", pod.Labels, k, v)
		}
		if BlobScanPod(Config{}, b).Labels[k] != v {
			return
		}
	}
	t.Error("the Service selects the scan pod")
}
