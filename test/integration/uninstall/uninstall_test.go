// SPDX-License-Identifier: Apache-2.0

// Package uninstall tests the chart's pre-delete cleanup
// (internal/uninstall) against a real apiserver: it deletes the three Kinds
// in every namespace and operand pods go with them; an object a finalizer
// keeps is named with what keeps it when the wait times out; the CRDs go
// only when asked.
package uninstall

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/controllers"
	"packetfs.io/operator/internal/podspec"
	"packetfs.io/operator/internal/uninstall"
	"packetfs.io/operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func blob(ns, name string, finalizers ...string) *pfsv1alpha1.PfsBlob {
	return &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers},
		Spec: pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("4Mi")}}
}

func operandPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{podspec.LabelManagedBy: podspec.ManagedBy}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
}

func TestCleanup(t *testing.T) {
	ctx := context.Background()
	s := testenv.Scheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	log := zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr))
	nss := make([]string, 0, 2)
	for _, p := range []string{"ml-a", "ml-b"} {
		ns, err := env.CreateNamespace(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		nss = append(nss, ns)
	}
	// Blobs in two namespaces, one a pod still mounts (its finalizer,
	// which the operator drops once the pod goes), and an operand pod.
	held := blob(nss[1], "held", controllers.MountedFinalizer)
	// And a consumer pod with our CSI driver's socket volume: the driver
	// must outlive it, or it would stay Terminating.
	reader := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: nss[0], Name: "reader"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}},
			Volumes: []corev1.Volume{{Name: "sockets", VolumeSource: corev1.VolumeSource{
				CSI: &corev1.CSIVolumeSource{Driver: podspec.CSIDriverName}}}}}}
	for _, o := range []client.Object{blob(nss[0], "model"), blob(nss[1], "other"), held, operandPod(nss[0], "model-holder-w1"), reader} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	held.Status.MountedBy = []string{nss[1] + "/vllm-0"}
	if err := c.Status().Update(ctx, held); err != nil {
		t.Fatal(err)
	}
	// envtest runs no kubelet: the operand pod goes when the "kubelet"
	// (this test) deletes it; no garbage collector either.
	if err := c.Delete(ctx, operandPod(nss[0], "model-holder-w1"), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	err = uninstall.Run(ctx, c, uninstall.Options{Timeout: 3 * time.Second, Poll: 200 * time.Millisecond}, log)
	if err == nil || !strings.Contains(err.Error(), "PfsBlob "+nss[1]+"/held (finalizers "+controllers.MountedFinalizer+"; mounted by "+nss[1]+"/vllm-0)") ||
		!strings.Contains(err.Error(), "pod "+nss[0]+"/reader (a csi.packetfs.io volume: the driver must outlive it)") ||
		!strings.Contains(err.Error(), "--no-hooks") {
		t.Fatalf("with a blob still mounted and a pod on the driver: %v", err)
	}
	if err := c.Delete(ctx, reader, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"model", "other"} {
		ns := nss[0]
		if name == "other" {
			ns = nss[1]
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pfsv1alpha1.PfsBlob{}); !apierrors.IsNotFound(err) {
			t.Errorf("blob %s/%s after the cleanup: %v", ns, name, err)
		}
	}
	// The pod that mounted it went: the operator drops the finalizer.
	if err := c.Get(ctx, client.ObjectKeyFromObject(held), held); err != nil {
		t.Fatal(err)
	}
	held.Finalizers = nil
	if err := c.Update(ctx, held); err != nil {
		t.Fatal(err)
	}
	if err := uninstall.Run(ctx, c, uninstall.Options{Timeout: 10 * time.Second, Poll: 200 * time.Millisecond}, log); err != nil {
		t.Fatalf("once nothing holds them: %v", err)
	}
	for _, name := range uninstall.CRDs {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
			t.Errorf("CRD %s without DeleteCRDs: %v", name, err)
		}
	}
	// uninstall.deleteCRDs: the CRDs go too (last: this envtest is done).
	if err := uninstall.Run(ctx, c, uninstall.Options{Timeout: 10 * time.Second, DeleteCRDs: true}, log); err != nil {
		t.Fatalf("with DeleteCRDs: %v", err)
	}
	for _, name := range uninstall.CRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, crd)
		if err == nil && crd.DeletionTimestamp == nil {
			t.Errorf("CRD %s still there, not being deleted, after DeleteCRDs", name)
		}
	}
	// A second run with the Kinds gone: nothing to do, no error.
	if err := uninstall.Run(ctx, c, uninstall.Options{Timeout: 10 * time.Second, Poll: 200 * time.Millisecond}, log); err != nil {
		t.Errorf("once the CRDs are gone: %v", err)
	}
}
