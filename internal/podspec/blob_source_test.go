// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

func sourceBlob(src pfsv1alpha1.BlobSource, rate string) *pfsv1alpha1.PfsBlob {
	b := &pfsv1alpha1.PfsBlob{
		ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: "uid-w"},
		Spec: pfsv1alpha1.PfsBlobSpec{PageSize: pfsv1alpha1.PageSize2Mi, PageFallback: pfsv1alpha1.PageFallbackNever,
			Source: &src, NodeSelector: map[string]string{"pool": "gpu"}},
	}
	if rate != "" {
		b.Spec.Replication = &pfsv1alpha1.BlobReplication{BandwidthLimit: ptr.To(q(rate))}
	}
	return b
}

// onNetwork sets spec.replication.network and resourceName.
func onNetwork(b *pfsv1alpha1.PfsBlob, network, resourceName string) *pfsv1alpha1.PfsBlob {
	if b.Spec.Replication == nil {
		b.Spec.Replication = &pfsv1alpha1.BlobReplication{}
	}
	b.Spec.Replication.Network, b.Spec.Replication.ResourceName = network, resourceName
	return b
}

func pvc(p string) pfsv1alpha1.BlobSource {
	return pfsv1alpha1.BlobSource{PersistentVolumeClaim: &pfsv1alpha1.PVCBlobSource{ClaimName: "data", Path: p}}
}

func hostPath(p string) pfsv1alpha1.BlobSource {
	return pfsv1alpha1.BlobSource{HostPath: &pfsv1alpha1.HostPathBlobSource{Path: p}}
}

func TestBlobScanPod(t *testing.T) {
	cfg := Config{Image: "img", Binary: "/pfs"}
	tests := map[string]struct {
		src       pfsv1alpha1.BlobSource
		wantArgs  string
		wantMount corev1.VolumeMount
		wantVol   corev1.VolumeSource
	}{
		"pvc file": {pvc("models/x.safetensors"),
			"blob create --source models/x.safetensors --source-root /source --dry-run --result-file /dev/termination-log",
			corev1.VolumeMount{Name: "source", MountPath: "/source", ReadOnly: true},
			corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: true}}},
		"pvc whole volume": {pvc(""),
			"blob create --source . --source-root /source --dry-run --result-file /dev/termination-log",
			corev1.VolumeMount{Name: "source", MountPath: "/source", ReadOnly: true},
			corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: true}}},
		"pvc path with a trailing slash": {pvc("models/"),
			"blob create --source models --source-root /source --dry-run --result-file /dev/termination-log",
			corev1.VolumeMount{Name: "source", MountPath: "/source", ReadOnly: true},
			corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: true}}},
		"hostPath": {hostPath("/srv/models/x.bin"),
			"blob create --source x.bin --source-root /source --dry-run --result-file /dev/termination-log",
			corev1.VolumeMount{Name: "source", MountPath: "/source/x.bin", ReadOnly: true},
			corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/models/x.bin", Type: ptr.To(corev1.HostPathUnset)}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := BlobScanPod(cfg, sourceBlob(tc.src, ""))
			if p.Name != "w-holder-scan" || p.Spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("name %q restartPolicy %q", p.Name, p.Spec.RestartPolicy)
			}
			if diff := cmp.Diff(map[string]string{LabelManagedBy: ManagedBy, LabelComponent: ComponentBlobScan, LabelBlobUID: "uid-w"}, p.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			c := p.Spec.Containers[0]
			if got := strings.Join(c.Args, " "); got != tc.wantArgs {
				t.Errorf("args = %q, want %q", got, tc.wantArgs)
			}
			if diff := cmp.Diff([]corev1.VolumeMount{tc.wantMount}, c.VolumeMounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantVol, p.Spec.Volumes[0].VolumeSource); diff != "" {
				t.Errorf("volume (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(rootNoCaps, c.SecurityContext); diff != "" {
				t.Errorf("securityContext (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(rl("cpu", "100m", "memory", "64Mi"), c.Resources.Limits); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
			if p.Spec.NodeSelector["pool"] != "gpu" || *p.Spec.AutomountServiceAccountToken {
				t.Errorf("nodeSelector %v automount %v", p.Spec.NodeSelector, *p.Spec.AutomountServiceAccountToken)
			}
		})
	}
}

func TestBlobSourceHolderPod(t *testing.T) {
	cfg := Config{Image: "img", Binary: "/pfs"}
	const create = "blob create --dir /dev/hugepages-blob --name w --size 314572800 "
	const serve = "blob serve --dir /dev/hugepages-blob --name w --socket /run/packetfs/ns/w.sock --token-file /etc/packetfs/token/token --read-only --socket-group 65532 --replicate-listen 0.0.0.0:7470"
	const chunks = " --chunks-dir /run/pfs-chunks"
	tests := map[string]struct {
		blob       *pfsv1alpha1.PfsBlob
		h          SourceHolder
		wantName   string
		wantCreate string
		wantServe  string
		wantLimits corev1.ResourceList
		wantVols   int
		// wantNetworks is the Multus networks annotation ("" for none).
		wantNetworks string
	}{
		"origin": {sourceBlob(pvc("models/x.safetensors"), ""),
			SourceHolder{Node: "w0", Role: pfsv1alpha1.BlobNodeOrigin, Size: 314572800, Page: pfsv1alpha1.PageSize2Mi, Attempt: 1},
			"w-holder-" + NodeHash("w0"),
			create + "--page 2m --no-fallback --replace --result-file /dev/termination-log --chunks-dir /run/pfs-chunks --source models/x.safetensors --source-root /source --token-file /etc/packetfs/token/token --replicate-listen 0.0.0.0:7470",
			serve + chunks, rl("cpu", "1", "memory", "65Mi", "hugepages-2Mi", "300Mi"), 5, ""},
		"relay with a rate limit, second attempt": {sourceBlob(pvc(""), "100Mi"),
			SourceHolder{Node: "w2", Role: pfsv1alpha1.BlobNodeRelay, Size: 314572800, Page: pfsv1alpha1.PageSize2Mi,
				Upstreams: []string{"h-" + NodeHash("w1") + ".w-holders.ns.svc:7470", "h-" + NodeHash("w0") + ".w-holders.ns.svc:7470"}, Attempt: 2},
			"w-holder-" + NodeHash("w2") + "-2",
			create + "--page 2m --no-fallback --replace --result-file /dev/termination-log --chunks-dir /run/pfs-chunks --fetch-from h-" + NodeHash("w1") + ".w-holders.ns.svc:7470,h-" + NodeHash("w0") + ".w-holders.ns.svc:7470 --token-file /etc/packetfs/token/token --replicate-listen 0.0.0.0:7470 --replicate-rate 104857600",
			serve + " --replicate-rate 104857600" + chunks, rl("cpu", "1", "memory", "65Mi", "hugepages-2Mi", "300Mi"), 4, ""},
		"relay falling back to 4Ki": {sourceBlob(hostPath("/srv/x"), ""),
			SourceHolder{Node: "w1", Role: pfsv1alpha1.BlobNodeRelay, Size: 314572800, Page: pfsv1alpha1.PageSize4Ki,
				PageFallback: "node w1 has 0 of hugepages-2Mi free", Upstreams: []string{"10.0.0.1:7470"}, Attempt: 1},
			"w-holder-" + NodeHash("w1"),
			create + "--page 4k --no-fallback --replace --result-file /dev/termination-log --chunks-dir /run/pfs-chunks --fetch-from 10.0.0.1:7470 --token-file /etc/packetfs/token/token --replicate-listen 0.0.0.0:7470",
			serve + chunks, rl("cpu", "1", "memory", "365Mi"), 4, ""},
		"origin on a network with a device-plugin resource": {onNetwork(sourceBlob(pvc(""), ""), "fabric", "intel.com/sriov_netdevice"),
			SourceHolder{Node: "w0", Role: pfsv1alpha1.BlobNodeOrigin, Size: 314572800, Page: pfsv1alpha1.PageSize2Mi, Attempt: 1},
			"w-holder-" + NodeHash("w0"),
			create + "--page 2m --no-fallback --replace --result-file /dev/termination-log --chunks-dir /run/pfs-chunks --source . --source-root /source --token-file /etc/packetfs/token/token --replicate-listen 0.0.0.0:7470",
			serve + chunks, rl("cpu", "1", "memory", "65Mi", "hugepages-2Mi", "300Mi", "intel.com/sriov_netdevice", "1"), 5, "fabric"},
		"relay on a network of another namespace": {onNetwork(sourceBlob(pvc(""), ""), "nets/fabric", ""),
			SourceHolder{Node: "w1", Role: pfsv1alpha1.BlobNodeRelay, Size: 314572800, Page: pfsv1alpha1.PageSize2Mi,
				Upstreams: []string{"192.168.9.1:7470"}, Attempt: 1},
			"w-holder-" + NodeHash("w1"),
			create + "--page 2m --no-fallback --replace --result-file /dev/termination-log --chunks-dir /run/pfs-chunks --fetch-from 192.168.9.1:7470 --token-file /etc/packetfs/token/token --replicate-listen 0.0.0.0:7470",
			serve + chunks, rl("cpu", "1", "memory", "65Mi", "hugepages-2Mi", "300Mi"), 4, "nets/fabric"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := BlobSourceHolderPod(cfg, tc.blob, tc.h)
			if p.Name != tc.wantName {
				t.Errorf("name = %q, want %q", p.Name, tc.wantName)
			}
			if got := strings.Join(p.Spec.InitContainers[0].Args, " "); got != tc.wantCreate {
				t.Errorf("create args:\n got %q\nwant %q", got, tc.wantCreate)
			}
			s := p.Spec.Containers[0]
			if got := strings.Join(s.Args, " "); got != tc.wantServe {
				t.Errorf("serve args:\n got %q\nwant %q", got, tc.wantServe)
			}
			if diff := cmp.Diff(tc.wantLimits, s.Resources.Limits); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLimits, p.Spec.InitContainers[0].Resources.Requests); diff != "" {
				t.Errorf("create requests (-want +got):\n%s", diff)
			}
			if got, ok := p.Annotations[AnnotationNetworks]; got != tc.wantNetworks || ok != (tc.wantNetworks != "") {
				t.Errorf("networks annotation %q (present %v), want %q", got, ok, tc.wantNetworks)
			}
			// On the pod network a holder has a DNS name (every attempt the
			// same); on a network its peers use its IP there.
			var wantHost, wantSub string
			if tc.wantNetworks == "" {
				wantHost, wantSub = "h-"+NodeHash(tc.h.Node), "w-holders"
			}
			if p.Spec.Hostname != wantHost || p.Spec.Subdomain != wantSub {
				t.Errorf("hostname %q subdomain %q, want %q %q", p.Spec.Hostname, p.Spec.Subdomain, wantHost, wantSub)
			}
			if len(p.Spec.Volumes) != tc.wantVols {
				t.Errorf("%d volumes, want %d: %+v", len(p.Spec.Volumes), tc.wantVols, p.Spec.Volumes)
			}
			for _, m := range p.Spec.InitContainers[0].VolumeMounts {
				if m.Name == "source" && !m.ReadOnly {
					t.Error("source mounted read-write")
				}
			}
			if diff := cmp.Diff([]corev1.ContainerPort{{Name: "repl", ContainerPort: 7470, Protocol: corev1.ProtocolTCP}}, s.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			want := map[string]string{LabelManagedBy: ManagedBy, LabelComponent: ComponentBlobHolder, LabelBlobUID: "uid-w",
				LabelNodeHash: NodeHash(tc.h.Node), LabelAttempt: fmt.Sprint(tc.h.Attempt)}
			if diff := cmp.Diff(want, p.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if p.Annotations[AnnotationNode] != tc.h.Node || p.Annotations[AnnotationRole] != string(tc.h.Role) ||
				p.Annotations[AnnotationPageFallback] != tc.h.PageFallback {
				t.Errorf("annotations %v", p.Annotations)
			}
			terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			if f := terms[0].MatchFields[0]; f.Key != "metadata.name" || f.Values[0] != tc.h.Node {
				t.Errorf("affinity %+v", terms)
			}
			if p.Spec.RestartPolicy != corev1.RestartPolicyNever || p.Spec.NodeSelector != nil {
				t.Errorf("restartPolicy %q nodeSelector %v", p.Spec.RestartPolicy, p.Spec.NodeSelector)
			}
			// Consumers find the same socket and token as with a DaemonSet holder.
			if s.VolumeMounts[1].MountPath != SocketDir("ns") || p.Spec.Volumes[1].HostPath.Path != "/run/packetfs/ns" {
				t.Errorf("socket dir %+v", s.VolumeMounts)
			}
		})
	}
}

func TestFetchFrom(t *testing.T) {
	// The longest DNS names: a 63-character blob in a 63-character namespace.
	name := func(node string) string {
		return HolderDNSName(strings.Repeat("b", 63), strings.Repeat("n", 63), node) + ":7470"
	}
	var longest, long600 []string
	for i := 0; i < 8; i++ {
		longest = append(longest, name(fmt.Sprint("w", i)))
		long600 = append(long600, fmt.Sprintf("%0595d:7470", i))
	}
	tests := map[string]struct {
		ups  []string
		want string
	}{
		"one":                     {[]string{"10.0.0.1:7470"}, "10.0.0.1:7470"},
		"nearest first, in order": {[]string{"a.svc:7470", "[fd00::1]:7470"}, "a.svc:7470,[fd00::1]:7470"},
		"the longest names fit":   {longest, strings.Join(longest, ",")},
		"the farthest do not fit": {long600, strings.Join(long600[:6], ",")},
	}
	for n, tc := range tests {
		t.Run(n, func(t *testing.T) {
			got := fetchFrom(tc.ups)
			if got != tc.want {
				t.Errorf("fetchFrom = %q (%d), want %q", got, len(got), tc.want)
			}
			if len(got) > maxFetchFrom {
				t.Errorf("%d characters: pfs takes at most %d", len(got), maxFetchFrom)
			}
		})
	}
}
