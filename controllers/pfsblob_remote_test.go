// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// s3Blob is a blob of every object under models/llama/ with credentials.
func s3Blob() *pfsv1alpha1.PfsBlob {
	b := srcBlob("")
	b.Spec.Source = &pfsv1alpha1.BlobSource{S3: &pfsv1alpha1.S3BlobSource{Endpoint: "https://s3.example", Bucket: "models", Prefix: "llama/",
		CredentialsSecretRef: &pfsv1alpha1.SecretReference{Name: "s3-creds"}, CABundle: &pfsv1alpha1.CABundleReference{ConfigMapName: "ca"}}}
	return b
}

func TestRemoteMissing(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	secret := func(keys ...string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-creds", Namespace: "ns"}, Data: map[string][]byte{}}
		for _, k := range keys {
			s.Data[k] = []byte("s3cr3t-value")
		}
		return s
	}
	ca := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: "ns"}, Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----"}}
	both := []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
	ociSrc := &pfsv1alpha1.BlobSource{OCI: &pfsv1alpha1.OCIBlobSource{Reference: "registry.example/models/llama:v1",
		PullSecretRef: &pfsv1alpha1.SecretReference{Name: "s3-creds"}}}
	tests := map[string]struct {
		objs []client.Object
		src  *pfsv1alpha1.BlobSource // default: s3Blob's
		want string                  // substring; "" for nothing missing
	}{
		"oci pull Secret there": {objs: []client.Object{secret(corev1.DockerConfigJsonKey)}, src: ociSrc},
		"oci pull Secret not a dockerconfigjson": {objs: []client.Object{secret(both...)}, src: ociSrc,
			want: "Secret s3-creds has no key .dockerconfigjson: add it (spec.source.oci.pullSecretRef)"},
		"all there":       {objs: []client.Object{secret(both...), ca}},
		"no Secret":       {objs: []client.Object{ca}, want: "Secret s3-creds not found in namespace ns: create it with the keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or fix spec.source.s3.credentialsSecretRef"},
		"a key missing":   {objs: []client.Object{secret("AWS_ACCESS_KEY_ID"), ca}, want: "Secret s3-creds has no key AWS_SECRET_ACCESS_KEY"},
		"no CA ConfigMap": {objs: []client.Object{secret(both...)}, want: "ConfigMap ca not found in namespace ns"},
		"CA key missing": {objs: []client.Object{secret(both...), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: "ns"}}},
			want: "ConfigMap ca has no key ca.crt"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()
			src := tc.src
			if src == nil {
				src = s3Blob().Spec.Source
			}
			got, err := remoteMissing(context.Background(), c, "ns", src)
			if err != nil {
				t.Fatal(err)
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("remoteMissing = %q, want %q", got, tc.want)
			}
			if strings.Contains(got, "s3cr3t-value") || strings.Contains(got, "BEGIN CERTIFICATE") {
				t.Errorf("a value reached the message: %q", got)
			}
		})
	}
}
