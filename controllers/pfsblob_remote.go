// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// remoteRefs is what a store source refers to: a Secret with the keys it
// must hold, and a CA bundle's ConfigMap and key.
type remoteRefs struct {
	secret, field string
	keys          []string
	caMap, caKey  string
	caField       string
}

func refsOf(src *pfsv1alpha1.BlobSource) remoteRefs {
	var r remoteRefs
	var ca *pfsv1alpha1.CABundleReference
	switch {
	case src.S3 != nil:
		if ref := src.S3.CredentialsSecretRef; ref != nil {
			r.secret, r.field, r.keys = ref.Name, "spec.source.s3.credentialsSecretRef", []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
		}
		ca, r.caField = src.S3.CABundle, "spec.source.s3.caBundle"
	case src.HTTP != nil:
		if ref := src.HTTP.HeadersSecretRef; ref != nil {
			r.secret, r.field, r.keys = ref.Name, "spec.source.http.headersSecretRef", []string{podspec.RemoteHeadersKey}
		}
		ca, r.caField = src.HTTP.CABundle, "spec.source.http.caBundle"
	case src.OCI != nil:
		if ref := src.OCI.PullSecretRef; ref != nil {
			r.secret, r.field, r.keys = ref.Name, "spec.source.oci.pullSecretRef", []string{podspec.RemotePullSecretKey}
		}
		ca, r.caField = src.OCI.CABundle, "spec.source.oci.caBundle"
	}
	if ca != nil {
		r.caMap, r.caKey = ca.ConfigMapName, ca.Key
		if r.caKey == "" {
			r.caKey = podspec.DefaultCABundleKey
		}
	}
	return r
}

// remoteMissing reads (uncached: no list or watch of Secrets) what a
// store source refers to and says what is not there, or "". Only key
// names are looked at; no value leaves this function.
func remoteMissing(ctx context.Context, rd client.Reader, ns string, src *pfsv1alpha1.BlobSource) (string, error) {
	r := refsOf(src)
	if r.secret != "" {
		sec := &corev1.Secret{}
		err := rd.Get(ctx, types.NamespacedName{Namespace: ns, Name: r.secret}, sec)
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("Secret %s not found in namespace %s: create it with the keys %s, or fix %s",
				r.secret, ns, strings.Join(r.keys, " and "), r.field), nil
		case err != nil:
			return "", err
		}
		if miss := missingKeys(r.keys, func(k string) bool { _, ok := sec.Data[k]; return ok }); miss != "" {
			return fmt.Sprintf("Secret %s has no key %s: add it (%s)", r.secret, miss, r.field), nil
		}
	}
	if r.caMap != "" {
		cm := &corev1.ConfigMap{}
		err := rd.Get(ctx, types.NamespacedName{Namespace: ns, Name: r.caMap}, cm)
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("ConfigMap %s not found in namespace %s: create it with the CA bundle under the key %s, or fix %s",
				r.caMap, ns, r.caKey, r.caField), nil
		case err != nil:
			return "", err
		}
		if _, ok := cm.Data[r.caKey]; !ok {
			return fmt.Sprintf("ConfigMap %s has no key %s: put the PEM CA bundle there, or set %s.key", r.caMap, r.caKey, r.caField), nil
		}
	}
	return "", nil
}

// missingKeys is the first of keys has says is absent, or "".
func missingKeys(keys []string, has func(string) bool) string {
	for _, k := range keys {
		if !has(k) {
			return k
		}
	}
	return ""
}
