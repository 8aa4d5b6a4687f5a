// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// TestSourceHolderStorage: under --socket-volume=csi a source holder's blob
// volume is the plugin's holder volume, its create runs --layout files and it
// asks for memory += size with no hugepages; under hostPath (and the unset
// default) the pod is what it always was: an emptyDir, flat, hugepages.
func TestSourceHolderStorage(t *testing.T) {
	const size = 314572800 // 300Mi
	csiVol := func(page string) corev1.VolumeSource {
		return corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "csi.packetfs.io", VolumeAttributes: map[string]string{
			"packetfs.io/role": "holder", "packetfs.io/blob": "w", "packetfs.io/page": page, "packetfs.io/size": "314572800"}}}
	}
	hugeVol := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: "HugePages-2Mi"}}
	tmpfsVol := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptrQ("300Mi")}}
	tests := map[string]struct {
		mode       SocketVolumeType
		role       pfsv1alpha1.BlobNodeRole
		page       pfsv1alpha1.PageSize
		udp        bool
		wantVol    corev1.VolumeSource
		wantLayout bool
		wantLimits corev1.ResourceList
	}{
		"csi origin 2Mi": {SocketVolumeCSI, pfsv1alpha1.BlobNodeOrigin, pfsv1alpha1.PageSize2Mi, false,
			csiVol("2Mi"), true, rl("cpu", "1", "memory", "364Mi")},
		"csi relay 1Gi": {SocketVolumeCSI, pfsv1alpha1.BlobNodeRelay, pfsv1alpha1.PageSize1Gi, false,
			csiVol("1Gi"), true, rl("cpu", "1", "memory", "364Mi")},
		"csi relay 4Ki": {SocketVolumeCSI, pfsv1alpha1.BlobNodeRelay, pfsv1alpha1.PageSize4Ki, false,
			csiVol("4Ki"), true, rl("cpu", "1", "memory", "364Mi")},
		"csi origin page unset is 2Mi": {SocketVolumeCSI, pfsv1alpha1.BlobNodeOrigin, "", false,
			csiVol("2Mi"), true, rl("cpu", "1", "memory", "364Mi")},
		"csi UDP relay adds its window": {SocketVolumeCSI, pfsv1alpha1.BlobNodeRelay, pfsv1alpha1.PageSizeTHP, true,
			csiVol("THP"), true, rl("cpu", "1", "memory", "428Mi")},
		"hostPath origin 2Mi": {SocketVolumeHostPath, pfsv1alpha1.BlobNodeOrigin, pfsv1alpha1.PageSize2Mi, false,
			hugeVol, false, rl("cpu", "1", "memory", "65Mi", "hugepages-2Mi", "300Mi")},
		"hostPath relay 4Ki": {SocketVolumeHostPath, pfsv1alpha1.BlobNodeRelay, pfsv1alpha1.PageSize4Ki, false,
			tmpfsVol, false, rl("cpu", "1", "memory", "365Mi")},
		"default mode origin 2Mi": {"", pfsv1alpha1.BlobNodeOrigin, pfsv1alpha1.PageSize2Mi, false,
			hugeVol, false, rl("cpu", "1", "memory", "65Mi", "hugepages-2Mi", "300Mi")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := cfg
			c.SocketVolume = tc.mode
			b := sourceBlob(pvc("models"), "")
			if tc.udp {
				b.Spec.Replication = &pfsv1alpha1.BlobReplication{Transport: pfsv1alpha1.TransportUDP}
			}
			h := SourceHolder{Node: "w1", Role: tc.role, Size: size, Page: tc.page, Attempt: 1, Upstreams: []string{"10.0.0.1:7470"}}
			p := BlobSourceHolderPod(c, b, h)
			var vol *corev1.Volume
			for i := range p.Spec.Volumes {
				if p.Spec.Volumes[i].Name == volBlob {
					vol = &p.Spec.Volumes[i]
				}
			}
			if vol == nil {
				t.Fatalf("no %s volume in %+v", volBlob, p.Spec.Volumes)
			}
			if diff := cmp.Diff(tc.wantVol, vol.VolumeSource); diff != "" {
				t.Errorf("blob volume (-want +got):\n%s", diff)
			}
			create, serve := p.Spec.InitContainers[0], p.Spec.Containers[0]
			i := slices.Index(create.Args, "--layout")
			if got := i >= 0 && i+1 < len(create.Args) && create.Args[i+1] == "files"; got != tc.wantLayout {
				t.Errorf("create has --layout files: %v, want %v: %s", got, tc.wantLayout, strings.Join(create.Args, " "))
			}
			if slices.Contains(serve.Args, "--layout") {
				t.Errorf("serve finds the layout on disk, it takes no --layout: %s", strings.Join(serve.Args, " "))
			}
			for _, ctr := range []corev1.Container{create, serve} {
				if diff := cmp.Diff(tc.wantLimits, ctr.Resources.Limits); diff != "" {
					t.Errorf("%s limits (-want +got):\n%s", ctr.Name, diff)
				}
				if diff := cmp.Diff(tc.wantLimits, ctr.Resources.Requests); diff != "" {
					t.Errorf("%s requests (-want +got):\n%s", ctr.Name, diff)
				}
				mounted := false
				for _, m := range ctr.VolumeMounts {
					if m.Name == volBlob {
						mounted = m.MountPath == BlobDir && !m.ReadOnly
					}
				}
				if !mounted {
					t.Errorf("%s does not mount the blob volume writable at %s: %+v", ctr.Name, BlobDir, ctr.VolumeMounts)
				}
			}
			// What admission counts is what the pod asks for (less the
			// datagram window, which admission adds itself).
			want := SourceHolderResources(c, size, tc.page)
			if tc.udp {
				addMemory(&want, DatagramMemory(pfsv1alpha1.TransportUDP))
			}
			if diff := cmp.Diff(want.Limits, serve.Resources.Limits); diff != "" {
				t.Errorf("SourceHolderResources differs from the pod (-want +got):\n%s", diff)
			}
		})
	}
}

func ptrQ(s string) *resource.Quantity { v := q(s); return &v }

// TestFillHolderStorage: under --socket-volume=csi a fill's holder keeps
// its one file on the plugin's holder volume (layout flat: hugetlbfs for
// 2Mi and 1Gi) in <blob>.d/files, the directory consumers mount, with the
// same resources as before; under hostPath nothing changes.
func TestFillHolderStorage(t *testing.T) {
	tests := map[string]struct {
		mode    SocketVolumeType
		page    pfsv1alpha1.PageSize
		wantVol corev1.VolumeSource
		wantDir string
	}{
		"csi 2Mi": {SocketVolumeCSI, pfsv1alpha1.PageSize2Mi, corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "csi.packetfs.io",
			VolumeAttributes: map[string]string{"packetfs.io/role": "holder", "packetfs.io/blob": "noise", "packetfs.io/page": "2Mi",
				"packetfs.io/size": "8388608", "packetfs.io/layout": "flat"}}}, BlobDir + "/noise.d/files"},
		"csi 4Ki": {SocketVolumeCSI, pfsv1alpha1.PageSize4Ki, corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "csi.packetfs.io",
			VolumeAttributes: map[string]string{"packetfs.io/role": "holder", "packetfs.io/blob": "noise", "packetfs.io/page": "4Ki",
				"packetfs.io/size": "8388608", "packetfs.io/layout": "flat"}}}, BlobDir + "/noise.d/files"},
		"hostPath 2Mi": {SocketVolumeHostPath, pfsv1alpha1.PageSize2Mi,
			corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: "HugePages-2Mi"}}, BlobDir},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := cfg
			c.SocketVolume = tc.mode
			b := &pfsv1alpha1.PfsBlob{}
			b.Name, b.Namespace = "noise", "team-a"
			b.Spec.Size, b.Spec.PageSize = q("8Mi"), tc.page
			ds := BlobHolderDaemonSet(c, b)
			spec := ds.Spec.Template.Spec
			if diff := cmp.Diff(tc.wantVol, spec.Volumes[0].VolumeSource); diff != "" || spec.Volumes[0].Name != volBlob {
				t.Errorf("blob volume %s (-want +got):\n%s", spec.Volumes[0].Name, diff)
			}
			wantRes, _ := HolderResources(c, 8<<20, tc.page)
			for _, ctr := range []corev1.Container{spec.InitContainers[0], spec.Containers[0]} {
				i := slices.Index(ctr.Args, "--dir")
				if i < 0 || i+1 >= len(ctr.Args) || ctr.Args[i+1] != tc.wantDir {
					t.Errorf("%s: want --dir %s: %s", ctr.Name, tc.wantDir, strings.Join(ctr.Args, " "))
				}
				if diff := cmp.Diff(wantRes, ctr.Resources); diff != "" {
					t.Errorf("%s resources differ from HolderResources (-want +got):\n%s", ctr.Name, diff)
				}
			}
		})
	}
}
