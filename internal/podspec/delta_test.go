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

func deltaTransfer(mut ...func(*pfsv1alpha1.PfsTransfer)) *pfsv1alpha1.PfsTransfer {
	x := transfer(pfsv1alpha1.ModeDelta, pfsv1alpha1.TransportTCP)
	x.Spec.BlobRef = &pfsv1alpha1.BlobReference{Name: "old"}
	x.Spec.Delta = &pfsv1alpha1.DeltaSpec{SourceRef: pfsv1alpha1.BlobReference{Name: "new"}, ZstdLevel: 3}
	for _, m := range mut {
		m(x)
	}
	return x
}

func namedBlob(name, size string) *pfsv1alpha1.PfsBlob {
	b := blob(pfsv1alpha1.PageSize2Mi, size)
	b.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: "ns"}
	return b
}

func TestDeltaTransferPods(t *testing.T) {
	base, source := namedBlob("old", "1Gi"), namedBlob("new", "1Gi")
	// A blob loaded from files: status.size counts its files and manifest; the
	// blob pfs maps is that rounded up to 2 MiB (1026Mi), which --max-size and
	// the memory requests follow.
	source.Status.Size = ptr.To(q("1025Mi"))
	secret := func(vol, blob string) corev1.Volume {
		return corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: blob + "-blob-token", DefaultMode: ptr.To(int32(0o440))}}}
	}
	runVol, _ := runVolume()
	sockets := socketVolume(cfg, "ns", socketsConnect)
	xferToken := corev1.Volume{Name: "transfer-token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: "x-transfer-token", DefaultMode: ptr.To(int32(0o440))}}}
	tests := map[string]struct {
		x            *pfsv1alpha1.PfsTransfer
		in           TransferInputs
		wantRecv     string
		wantSend     string
		wantRecvRes  corev1.ResourceList
		wantSendRes  corev1.ResourceList
		wantRecvVols []corev1.Volume
		wantRecvNode []string
		wantSendNode []string
	}{
		"the receiver holds the base": {
			x: deltaTransfer(),
			in: TransferInputs{Attempt: 1, Blob: base, Source: source,
				Delta: placement.Delta{SenderNodes: []string{"n2"}, ReceiverNodes: []string{"n1", "n2"}}},
			wantRecv: "recv --listen 0.0.0.0:5000 --mode delta --transport tcp --accept-timeout 300 --ready-file /run/pfs/ready " +
				"--blob-socket /run/packetfs/ns/old.sock --blob-token-file /etc/packetfs/token/token --max-size 1075838976 --delta-threads 1 --result-file /dev/termination-log --token-file /etc/packetfs/transfer-token/token",
			wantSend: "send --connect 10.0.0.5:5000 --mode delta --transport tcp --blob-socket /run/packetfs/ns/old.sock --blob-token-file /etc/packetfs/token/token " +
				"--src-blob-socket /run/packetfs/ns/new.sock --src-blob-token-file /etc/packetfs/source-token/token --zstd-level 3 --delta-threads 1 --result-file /dev/termination-log --token-file /etc/packetfs/transfer-token/token",
			wantRecvRes:  rl("cpu", "1", "memory", "1298Mi"),
			wantSendRes:  rl("cpu", "1", "memory", "1346Mi"),
			wantRecvVols: []corev1.Volume{runVol, sockets, secret("blob-token", "old"), xferToken},
			wantRecvNode: []string{"n1", "n2"},
			wantSendNode: []string{"n2"},
		},
		"the receiver is pinned where the base is not Ready: no base, a full copy": {
			x: deltaTransfer(func(x *pfsv1alpha1.PfsTransfer) {
				x.Spec.Receiver.NodeName = "n9"
				x.Spec.Sender = pfsv1alpha1.Endpoint{Queues: 4, Network: "datanet"}
				x.Spec.Delta.ZstdLevel = 19
			}),
			in: TransferInputs{Blob: base, Source: source,
				Delta: placement.Delta{SenderNodes: []string{"n1", "n2"}, NoBaseNode: "n9"}},
			wantRecv: "recv --listen 0.0.0.0:5000 --mode delta --transport tcp --accept-timeout 300 --ready-file /run/pfs/ready " +
				"--no-base --max-size 1075838976 --delta-threads 1 --result-file /dev/termination-log --token-file /etc/packetfs/transfer-token/token",
			wantSend: "send --connect 10.0.0.5:5000 --mode delta --transport tcp --blob-socket /run/packetfs/ns/old.sock --blob-token-file /etc/packetfs/token/token " +
				"--src-blob-socket /run/packetfs/ns/new.sock --src-blob-token-file /etc/packetfs/source-token/token --zstd-level 19 --delta-threads 4 --result-file /dev/termination-log --token-file /etc/packetfs/transfer-token/token",
			wantRecvRes:  rl("cpu", "1", "memory", "1298Mi"),
			wantSendRes:  rl("cpu", "4", "memory", "1346Mi"),
			wantRecvVols: []corev1.Volume{runVol, xferToken},
			wantSendNode: []string{"n1", "n2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			recv := ReceiverPod(cfg, tc.x, tc.in)
			send := SenderPod(cfg, tc.x, tc.in, placement.Address{IP: "10.0.0.5"})
			for _, c := range []struct {
				what  string
				pod   *corev1.Pod
				args  string
				res   corev1.ResourceList
				nodes []string
			}{{"receiver", recv, tc.wantRecv, tc.wantRecvRes, tc.wantRecvNode}, {"sender", send, tc.wantSend, tc.wantSendRes, tc.wantSendNode}} {
				checkTransferContainer(t, c.what, c.pod, c.args, c.res, nonRoot)
				ctr := c.pod.Spec.Containers[0]
				var nodes []string
				if a := c.pod.Spec.Affinity; a != nil {
					for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
						nodes = append(nodes, term.MatchFields[0].Values...)
					}
				}
				if diff := cmp.Diff(c.nodes, nodes); diff != "" {
					t.Errorf("%s affinity (-want +got):\n%s", c.what, diff)
				}
				// Every volume is mounted, every mount has its volume.
				mounted := map[string]bool{}
				for _, m := range ctr.VolumeMounts {
					mounted[m.Name] = true
				}
				for _, v := range c.pod.Spec.Volumes {
					if !mounted[v.Name] {
						t.Errorf("%s: volume %s is not mounted", c.what, v.Name)
					}
					delete(mounted, v.Name)
				}
				if len(mounted) > 0 {
					t.Errorf("%s: mounts without volumes: %v", c.what, mounted)
				}
			}
			if diff := cmp.Diff(tc.wantRecvVols, recv.Spec.Volumes, cmpQty); diff != "" {
				t.Errorf("receiver volumes (-want +got):\n%s", diff)
			}
			wantSendVols := []corev1.Volume{runVol, sockets, secret("blob-token", "old"), secret("source-token", "new"), xferToken}
			if diff := cmp.Diff(wantSendVols, send.Spec.Volumes, cmpQty); diff != "" {
				t.Errorf("sender volumes (-want +got):\n%s", diff)
			}
			if recv.Spec.NodeName != tc.x.Spec.Receiver.NodeName || recv.Spec.Containers[0].ReadinessProbe == nil {
				t.Errorf("receiver nodeName %q, readiness probe %v", recv.Spec.NodeName, recv.Spec.Containers[0].ReadinessProbe)
			}
		})
	}
}
