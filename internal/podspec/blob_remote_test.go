// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

func s3Source(key, prefix string, creds, ca bool) pfsv1alpha1.BlobSource {
	s := &pfsv1alpha1.S3BlobSource{Endpoint: "https://s3.example:9000/", Bucket: "models", Key: key, Prefix: prefix, Region: "eu-west-3"}
	if creds {
		s.CredentialsSecretRef = &pfsv1alpha1.SecretReference{Name: "s3-creds"}
	}
	if ca {
		s.CABundle = &pfsv1alpha1.CABundleReference{ConfigMapName: "store-ca", Key: "bundle.pem"}
	}
	return pfsv1alpha1.BlobSource{S3: s}
}

// mountsOf is "volume=path" of every mount of c.
func mountsOf(c corev1.Container) []string {
	m := make([]string, 0, len(c.VolumeMounts))
	for _, v := range c.VolumeMounts {
		m = append(m, v.Name+"="+v.MountPath)
	}
	return m
}

func TestRemoteSourcePods(t *testing.T) {
	httpSrc := pfsv1alpha1.BlobSource{HTTP: &pfsv1alpha1.HTTPBlobSource{URL: "https://hub.example/llama",
		Files: []pfsv1alpha1.SourceFileName{"config.json", "model.safetensors"}, HeadersSecretRef: &pfsv1alpha1.SecretReference{Name: "hub-token"}}}
	httpReads := httpSrc.DeepCopy()
	httpReads.HTTP.Files, httpReads.HTTP.HeadersSecretRef = nil, nil
	httpReads.HTTP.Reads = &pfsv1alpha1.RangedReads{Concurrency: ptr.To(int32(12)), RangeSize: ptr.To(resource.MustParse("16Mi"))}
	s3Reads := s3Source("m.safetensors", "", false, false)
	s3Reads.S3.Reads = &pfsv1alpha1.RangedReads{RangeSize: ptr.To(resource.MustParse("64Ki"))}
	tests := map[string]struct {
		src        pfsv1alpha1.BlobSource
		wantArgs   string
		wantMounts []string // the reading container's, besides the holder's own
		wantVols   map[string]string
	}{
		"s3 prefix with credentials and a CA bundle": {src: s3Source("", "llama", true, true),
			wantArgs: "--source-s3 models/llama/ --source-s3-endpoint https://s3.example:9000 --source-s3-region eu-west-3 " +
				"--source-credentials /etc/packetfs/source-credentials --source-ca-file /etc/packetfs/source-ca/ca.crt",
			wantMounts: []string{"source-secret=/etc/packetfs/source-credentials", "source-ca=/etc/packetfs/source-ca"},
			wantVols:   map[string]string{"source-secret": "secret s3-creds", "source-ca": "configmap store-ca bundle.pem"}},
		"s3 key, anonymous": {src: s3Source("llama/model.safetensors", "", false, false),
			wantArgs: "--source-s3 models/llama/model.safetensors --source-s3-endpoint https://s3.example:9000 --source-s3-region eu-west-3"},
		"http files with a headers Secret": {src: httpSrc,
			wantArgs:   "--source-url https://hub.example/llama --source-files config.json,model.safetensors --source-header-file /etc/packetfs/source-headers/headers",
			wantMounts: []string{"source-secret=/etc/packetfs/source-headers"},
			wantVols:   map[string]string{"source-secret": "secret hub-token headers"}},
		"http reads: concurrency and range size": {src: *httpReads,
			wantArgs: "--source-url https://hub.example/llama --source-threads 12 --source-chunk 16777216"},
		"oci over HTTP with a pull Secret": {src: pfsv1alpha1.BlobSource{OCI: &pfsv1alpha1.OCIBlobSource{
			Reference: "10.89.0.1:5000/models/minilm@sha256:" + strings.Repeat("ab", 32), Protocol: pfsv1alpha1.RegistryHTTP,
			PullSecretRef: &pfsv1alpha1.SecretReference{Name: "pull"}, Reads: &pfsv1alpha1.RangedReads{Concurrency: ptr.To(int32(8))}}},
			wantArgs: "--source-oci 10.89.0.1:5000/models/minilm@sha256:" + strings.Repeat("ab", 32) +
				" --source-oci-auth /etc/packetfs/source-pull/.dockerconfigjson --source-oci-plain-http --source-threads 8",
			wantMounts: []string{"source-secret=/etc/packetfs/source-pull"},
			wantVols:   map[string]string{"source-secret": "secret pull .dockerconfigjson"}},
		"oci anonymous over HTTPS with a CA bundle": {src: pfsv1alpha1.BlobSource{OCI: &pfsv1alpha1.OCIBlobSource{
			Reference: "registry.example/models/llama:v1", Protocol: pfsv1alpha1.RegistryHTTPS, Path: "/models",
			CABundle: &pfsv1alpha1.CABundleReference{ConfigMapName: "reg-ca"}}},
			wantArgs:   "--source-oci registry.example/models/llama:v1 --source-oci-path /models --source-ca-file /etc/packetfs/source-ca/ca.crt",
			wantMounts: []string{"source-ca=/etc/packetfs/source-ca"},
			wantVols:   map[string]string{"source-ca": "configmap reg-ca ca.crt"}},
		"s3 reads: range size alone": {src: s3Reads,
			wantArgs: "--source-s3-region eu-west-3 --source-chunk 65536"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := sourceBlob(tc.src, "")
			scan := BlobScanPod(Config{Binary: "/pfs"}, b)
			origin := BlobSourceHolderPod(Config{Binary: "/pfs"}, b, SourceHolder{Node: "w0", Role: pfsv1alpha1.BlobNodeOrigin, Size: 4 << 20,
				Page: pfsv1alpha1.PageSize2Mi, Attempt: 1})
			relay := BlobSourceHolderPod(Config{Binary: "/pfs"}, b, SourceHolder{Node: "w1", Role: pfsv1alpha1.BlobNodeRelay, Size: 4 << 20,
				Page: pfsv1alpha1.PageSize2Mi, Attempt: 1, Upstreams: []string{"10.0.0.1:7470"}})
			for _, c := range []corev1.Container{scan.Spec.Containers[0], origin.Spec.InitContainers[0]} {
				if args := strings.Join(c.Args, " "); !strings.Contains(args, tc.wantArgs) || strings.Contains(args, "--source-root") {
					t.Errorf("%s args %q, want %q in them and no --source-root", c.Name, args, tc.wantArgs)
				}
				for _, m := range tc.wantMounts {
					if !slices.Contains(mountsOf(c), m) {
						t.Errorf("%s mounts %v, want %s", c.Name, mountsOf(c), m)
					}
				}
			}
			if m := mountsOf(scan.Spec.Containers[0]); len(m) != len(tc.wantMounts) {
				t.Errorf("the scan mounts %v, want only %v: no data volume for a store", m, tc.wantMounts)
			}
			// The secrets reach the reading containers only.
			for _, c := range append(origin.Spec.Containers, relay.Spec.InitContainers...) {
				for _, m := range mountsOf(c) {
					if strings.HasPrefix(m, "source-") {
						t.Errorf("%s mounts %s: only the containers that read the store may", c.Name, m)
					}
				}
			}
			for _, v := range relay.Spec.Volumes {
				if strings.HasPrefix(v.Name, "source-") {
					t.Errorf("the relay has the volume %s", v.Name)
				}
			}
			got := map[string]string{}
			for _, v := range origin.Spec.Volumes {
				switch {
				case v.Secret != nil && v.Name == volRemoteSecret:
					got[v.Name] = "secret " + v.Secret.SecretName
					for _, it := range v.Secret.Items {
						got[v.Name] += " " + it.Key
					}
					if *v.Secret.DefaultMode != 0o400 {
						t.Errorf("secret mode %o, want 0400", *v.Secret.DefaultMode)
					}
				case v.ConfigMap != nil:
					got[v.Name] = "configmap " + v.ConfigMap.Name + " " + v.ConfigMap.Items[0].Key
				}
			}
			if len(got) != len(tc.wantVols) {
				t.Errorf("origin volumes %v, want %v", got, tc.wantVols)
			}
			for k, v := range tc.wantVols {
				if got[k] != v {
					t.Errorf("volume %s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}
