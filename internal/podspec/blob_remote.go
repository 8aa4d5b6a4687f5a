// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// A source in a store (spec.source.s3, spec.source.http) needs no volume of
// data: pfs reads it over the network. Its secrets and CA bundle are
// mounted read-only into the containers that read the store, the scan pod
// and the origin's init container, and no other: the serving container,
// the relays and the consumers never see them.
const (
	// RemoteCredentialsDir holds an S3 credentials Secret's keys
	// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN).
	RemoteCredentialsDir = "/etc/packetfs/source-credentials"
	// RemoteHeadersFile is an HTTP source's headers Secret key "headers".
	RemoteHeadersDir  = "/etc/packetfs/source-headers"
	RemoteHeadersKey  = "headers"
	RemoteHeadersFile = RemoteHeadersDir + "/" + RemoteHeadersKey
	// RemotePullSecretFile is an OCI source's pull Secret key
	// .dockerconfigjson.
	RemotePullSecretDir  = "/etc/packetfs/source-pull"
	RemotePullSecretKey  = corev1.DockerConfigJsonKey
	RemotePullSecretFile = RemotePullSecretDir + "/" + RemotePullSecretKey
	// RemoteCAFile is the CA bundle of spec.source.*.caBundle.
	RemoteCADir  = "/etc/packetfs/source-ca"
	RemoteCAFile = RemoteCADir + "/ca.crt"
	// DefaultCABundleKey is caBundle.key when it is absent.
	DefaultCABundleKey = "ca.crt"

	volRemoteSecret = "source-secret"
	volRemoteCA     = "source-ca"
)

// S3Object is the --source-s3 argument: BUCKET/KEY, or BUCKET/PREFIX/ (a
// trailing '/' makes it a directory).
func S3Object(s *pfsv1alpha1.S3BlobSource) string {
	if s.Key != "" {
		return s.Bucket + "/" + s.Key
	}
	return s.Bucket + "/" + strings.TrimSuffix(s.Prefix, "/") + "/"
}

// remoteArgs are the pfs options that read an S3 or HTTP source.
func remoteArgs(src *pfsv1alpha1.BlobSource) []string {
	var args []string
	var ca *pfsv1alpha1.CABundleReference
	var reads *pfsv1alpha1.RangedReads
	switch {
	case src.S3 != nil:
		s := src.S3
		reads = s.Reads
		args = []string{"--source-s3", S3Object(s), "--source-s3-endpoint", strings.TrimSuffix(s.Endpoint, "/")}
		if s.Region != "" {
			args = append(args, "--source-s3-region", s.Region)
		}
		if s.CredentialsSecretRef != nil {
			args = append(args, "--source-credentials", RemoteCredentialsDir)
		}
		ca = s.CABundle
	case src.HTTP != nil:
		h := src.HTTP
		reads = h.Reads
		args = []string{"--source-url", h.URL}
		if len(h.Files) > 0 {
			names := make([]string, len(h.Files))
			for i, f := range h.Files {
				names[i] = string(f)
			}
			args = append(args, "--source-files", strings.Join(names, ","))
		}
		if h.HeadersSecretRef != nil {
			args = append(args, "--source-header-file", RemoteHeadersFile)
		}
		ca = h.CABundle
	case src.OCI != nil:
		o := src.OCI
		reads = o.Reads
		args = []string{"--source-oci", o.Reference}
		if o.PullSecretRef != nil {
			args = append(args, "--source-oci-auth", RemotePullSecretFile)
		}
		if o.Protocol == pfsv1alpha1.RegistryHTTP {
			args = append(args, "--source-oci-plain-http")
		}
		if o.Path != "" {
			args = append(args, "--source-oci-path", o.Path)
		}
		ca = o.CABundle
	default:
		return nil
	}
	if ca != nil {
		args = append(args, "--source-ca-file", RemoteCAFile)
	}
	if reads != nil && reads.Concurrency != nil {
		args = append(args, "--source-threads", strconv.Itoa(int(*reads.Concurrency)))
	}
	if reads != nil && reads.RangeSize != nil {
		args = append(args, "--source-chunk", strconv.FormatInt(reads.RangeSize.Value(), 10))
	}
	return args
}

// remoteVolumes are the Secret and the CA bundle of a store source, with
// their mounts; none for an anonymous source with public certificates.
func remoteVolumes(src *pfsv1alpha1.BlobSource) ([]corev1.Volume, []corev1.VolumeMount) {
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	secret := func(name, dir string, items []corev1.KeyToPath) {
		vols = append(vols, corev1.Volume{Name: volRemoteSecret, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: name, Items: items, DefaultMode: ptr.To(int32(0o400))}}})
		mounts = append(mounts, corev1.VolumeMount{Name: volRemoteSecret, MountPath: dir, ReadOnly: true})
	}
	var ca *pfsv1alpha1.CABundleReference
	switch {
	case src.S3 != nil:
		// Every key: pfs reads the two it needs and the session token when
		// there is one (an item for a missing key would fail the mount).
		if r := src.S3.CredentialsSecretRef; r != nil {
			secret(r.Name, RemoteCredentialsDir, nil)
		}
		ca = src.S3.CABundle
	case src.HTTP != nil:
		if r := src.HTTP.HeadersSecretRef; r != nil {
			secret(r.Name, RemoteHeadersDir, []corev1.KeyToPath{{Key: RemoteHeadersKey, Path: RemoteHeadersKey}})
		}
		ca = src.HTTP.CABundle
	case src.OCI != nil:
		if r := src.OCI.PullSecretRef; r != nil {
			secret(r.Name, RemotePullSecretDir, []corev1.KeyToPath{{Key: RemotePullSecretKey, Path: RemotePullSecretKey}})
		}
		ca = src.OCI.CABundle
	}
	if ca != nil {
		key := ca.Key
		if key == "" {
			key = DefaultCABundleKey
		}
		vols = append(vols, corev1.Volume{Name: volRemoteCA, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ca.ConfigMapName},
			Items:                []corev1.KeyToPath{{Key: key, Path: path.Base(RemoteCAFile)}}}}})
		mounts = append(mounts, corev1.VolumeMount{Name: volRemoteCA, MountPath: RemoteCADir, ReadOnly: true})
	}
	return vols, mounts
}

// IsRemoteSource says the blob's source is read over the network (S3,
// HTTP or an OCI registry): no claim, no host path, any node can be the
// origin.
func IsRemoteSource(src *pfsv1alpha1.BlobSource) bool {
	return src != nil && (src.S3 != nil || src.HTTP != nil || src.OCI != nil)
}
