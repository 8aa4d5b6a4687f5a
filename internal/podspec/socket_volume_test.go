// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
)

// TestSocketVolume: every pod that uses the socket directory gets it as
// cfg.SocketVolume says, writable for the holders that create their
// sockets, read-only (CSI) for the pods that only connect, and always at
// the same path, so the sockets' paths do not depend on the mode.
func TestSocketVolume(t *testing.T) {
	hostPathVol := corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
		Path: "/run/packetfs/ns", Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}
	csiVol := func(readOnly bool) corev1.VolumeSource {
		return corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "csi.packetfs.io", ReadOnly: ptr.To(readOnly)}}
	}
	b := blob(pfsv1alpha1.PageSize2Mi, "64Mi")
	src := sourceBlob(pvc("m"), "")
	x := transfer(pfsv1alpha1.ModeOffset, pfsv1alpha1.TransportTCP)
	x.Spec.BlobRef = &pfsv1alpha1.BlobReference{Name: "b"}
	in := TransferInputs{Blob: b, BlobNodes: []string{"n1"}}
	job := &pfsv1alpha1.PcoreJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"},
		Spec: pfsv1alpha1.PcoreJobSpec{Op: pfsv1alpha1.OpCRC32C, Pcores: 1, BlobRef: pfsv1alpha1.BlobReference{Name: "b"}}}
	pods := map[string]struct {
		spec    func(Config) corev1.PodSpec
		creates bool
	}{
		"blob holder DaemonSet": {func(c Config) corev1.PodSpec { return BlobHolderDaemonSet(c, b).Spec.Template.Spec }, true},
		"source origin holder": {func(c Config) corev1.PodSpec {
			return BlobSourceHolderPod(c, src, SourceHolder{Node: "n1", Role: pfsv1alpha1.BlobNodeOrigin, Size: 1 << 21, Attempt: 1}).Spec
		}, true},
		"source relay holder over a base": {func(c Config) corev1.PodSpec {
			return BlobSourceHolderPod(c, src, SourceHolder{Node: "n2", Role: pfsv1alpha1.BlobNodeRelay, Size: 1 << 21, Attempt: 1,
				Upstreams: []string{"h:7470"}, Base: "old"}).Spec
		}, true},
		"receiver": {func(c Config) corev1.PodSpec { return ReceiverPod(c, x, in).Spec }, false},
		"sender": {func(c Config) corev1.PodSpec {
			return SenderPod(c, x, in, placement.Address{IP: "10.0.0.5"}).Spec
		}, false},
		"pcore": {func(c Config) corev1.PodSpec { return PcorePod(c, job, b, []string{"n1"}).Spec }, false},
	}
	for name, p := range pods {
		for _, mode := range []SocketVolumeType{"", SocketVolumeHostPath, SocketVolumeCSI} {
			t.Run(name+"/"+string(mode), func(t *testing.T) {
				c := cfg
				c.SocketVolume = mode
				spec := p.spec(c)
				want, wantRO := hostPathVol, false
				if mode == SocketVolumeCSI {
					want, wantRO = csiVol(!p.creates), !p.creates
				}
				var vol *corev1.Volume
				for i := range spec.Volumes {
					if spec.Volumes[i].Name == volSockets {
						vol = &spec.Volumes[i]
					}
				}
				if vol == nil {
					t.Fatalf("no %s volume in %v", volSockets, spec.Volumes)
				}
				if diff := cmp.Diff(want, vol.VolumeSource); diff != "" {
					t.Errorf("socket volume (-want +got):\n%s", diff)
				}
				mounted := 0
				for _, ctr := range append(spec.InitContainers, spec.Containers...) {
					for _, m := range ctr.VolumeMounts {
						if m.Name != volSockets {
							continue
						}
						mounted++
						if m.MountPath != "/run/packetfs/ns" || m.ReadOnly != wantRO {
							t.Errorf("%s mounts the sockets at %s read-only %t, want /run/packetfs/ns read-only %t",
								ctr.Name, m.MountPath, m.ReadOnly, wantRO)
						}
					}
				}
				if mounted == 0 {
					t.Error("no container mounts the socket volume")
				}
			})
		}
	}
}
