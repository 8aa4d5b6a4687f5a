// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
)

var cfg = Config{Image: "img:v1", PullPolicy: corev1.PullIfNotPresent, Binary: "/pfs"}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = q(kv[i+1])
	}
	return out
}

func blob(page pfsv1alpha1.PageSize, size string) *pfsv1alpha1.PfsBlob {
	return &pfsv1alpha1.PfsBlob{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", UID: "uid-b"},
		Spec: pfsv1alpha1.PfsBlobSpec{Size: q(size), PageSize: page, PageFallback: pfsv1alpha1.PageFallbackAllow,
			Fill: pfsv1alpha1.BlobFill{Type: pfsv1alpha1.FillSeed, Seed: ptr.To(int64(7))}},
	}
}

var nonRoot = &corev1.SecurityContext{
	Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
	Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	RunAsNonRoot:   ptr.To(true), RunAsUser: ptr.To(int64(65532)), RunAsGroup: ptr.To(int64(65532)),
}

var rootNoCaps = &corev1.SecurityContext{
	Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
	Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	RunAsNonRoot:   ptr.To(false), RunAsUser: ptr.To(int64(0)), RunAsGroup: ptr.To(int64(0)),
}

var afxdp = &corev1.SecurityContext{
	Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
	Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"},
		Add: []corev1.Capability{"NET_RAW", "NET_ADMIN", "BPF", "IPC_LOCK"}},
	SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	RunAsNonRoot:   ptr.To(false), RunAsUser: ptr.To(int64(0)), RunAsGroup: ptr.To(int64(0)),
}

func TestBlobHolderDaemonSet(t *testing.T) {
	tests := map[string]struct {
		blob       *pfsv1alpha1.PfsBlob
		holderCPU  string
		wantRes    corev1.ResourceList
		wantVolume corev1.VolumeSource
		wantCreate string
	}{
		"2Mi pages, size rounded up to the page": {
			blob:       blob(pfsv1alpha1.PageSize2Mi, "3Mi"),
			wantRes:    rl("cpu", "1", "memory", "64Mi", "hugepages-2Mi", "4Mi"),
			wantVolume: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: "HugePages-2Mi"}},
			wantCreate: "blob create --dir /dev/hugepages-blob --name b --size 3145728 --page 2m --fill seed --seed 7 --replace --result-file /dev/termination-log",
		},
		"holder CPU set to a fraction (small nodes)": {
			blob:       blob(pfsv1alpha1.PageSize2Mi, "4Mi"),
			holderCPU:  "200m",
			wantRes:    rl("cpu", "200m", "memory", "64Mi", "hugepages-2Mi", "4Mi"),
			wantVolume: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: "HugePages-2Mi"}},
			wantCreate: "blob create --dir /dev/hugepages-blob --name b --size 4194304 --page 2m --fill seed --seed 7 --replace --result-file /dev/termination-log",
		},
		"1Gi pages": {
			blob:       blob(pfsv1alpha1.PageSize1Gi, "1Gi"),
			wantRes:    rl("cpu", "1", "memory", "64Mi", "hugepages-1Gi", "1Gi"),
			wantVolume: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: "HugePages-1Gi"}},
			wantCreate: "blob create --dir /dev/hugepages-blob --name b --size 1073741824 --page 1g --fill seed --seed 7 --replace --result-file /dev/termination-log",
		},
		"THP: tmpfs counted in memory": {
			blob:       blob(pfsv1alpha1.PageSizeTHP, "64Mi"),
			wantRes:    rl("cpu", "1", "memory", "128Mi"),
			wantVolume: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(q("64Mi"))}},
			wantCreate: "blob create --dir /dev/hugepages-blob --name b --size 67108864 --page thp --fill seed --seed 7 --replace --result-file /dev/termination-log",
		},
		"4Ki, zero fill, no fallback": {
			blob: func() *pfsv1alpha1.PfsBlob {
				b := blob(pfsv1alpha1.PageSize4Ki, "1Mi")
				b.Spec.Fill = pfsv1alpha1.BlobFill{Type: pfsv1alpha1.FillZero}
				b.Spec.PageFallback = pfsv1alpha1.PageFallbackNever
				return b
			}(),
			wantRes:    rl("cpu", "1", "memory", "65Mi"),
			wantVolume: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(q("1Mi"))}},
			wantCreate: "blob create --dir /dev/hugepages-blob --name b --size 1048576 --page 4k --fill zero --no-fallback --replace --result-file /dev/termination-log",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := cfg
			if tc.holderCPU != "" {
				c.HolderCPU = q(tc.holderCPU)
			}
			ds := BlobHolderDaemonSet(c, tc.blob)
			spec := ds.Spec.Template.Spec
			create, serve := spec.InitContainers[0], spec.Containers[0]
			for _, c := range []corev1.Container{create, serve} {
				if diff := cmp.Diff(tc.wantRes, c.Resources.Limits, cmpQty); diff != "" {
					t.Errorf("%s limits (-want +got):\n%s", c.Name, diff)
				}
				if diff := cmp.Diff(c.Resources.Limits, c.Resources.Requests, cmpQty); diff != "" {
					t.Errorf("%s requests != limits:\n%s", c.Name, diff)
				}
				if diff := cmp.Diff(rootNoCaps, c.SecurityContext); diff != "" {
					t.Errorf("%s security (-want +got):\n%s", c.Name, diff)
				}
				if c.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
					t.Errorf("%s terminationMessagePolicy %q", c.Name, c.TerminationMessagePolicy)
				}
			}
			if diff := cmp.Diff(tc.wantVolume, spec.Volumes[0].VolumeSource, cmpQty); diff != "" {
				t.Errorf("blob volume (-want +got):\n%s", diff)
			}
			if got := strings.Join(create.Args, " "); got != tc.wantCreate {
				t.Errorf("create args\n got %s\nwant %s", got, tc.wantCreate)
			}
			wantServe := "blob serve --dir /dev/hugepages-blob --name b --socket /run/packetfs/ns/b.sock --token-file /etc/packetfs/token/token --read-only --socket-group 65532"
			if got := strings.Join(serve.Args, " "); got != wantServe {
				t.Errorf("serve args\n got %s\nwant %s", got, wantServe)
			}
			wantProbe := []string{"/pfs", "blob", "ping", "--socket", "/run/packetfs/ns/b.sock", "--token-file", "/etc/packetfs/token/token"}
			if diff := cmp.Diff(wantProbe, serve.ReadinessProbe.Exec.Command); diff != "" {
				t.Errorf("readiness probe (-want +got):\n%s", diff)
			}
			wantSockets := corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/run/packetfs/ns", Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}
			if diff := cmp.Diff(wantSockets, spec.Volumes[1].VolumeSource); diff != "" {
				t.Errorf("socket volume (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels); diff != "" {
				t.Errorf("selector does not match the template:\n%s", diff)
			}
			if ds.Spec.Template.Annotations[AnnotationBlob] != "b" || ds.Annotations[AnnotationTemplateHash] == "" {
				t.Errorf("annotations %v / %v", ds.Spec.Template.Annotations, ds.Annotations)
			}
		})
	}
}

// The template hash changes with the desired state and only with it.
func TestBlobHolderTemplateHash(t *testing.T) {
	a := BlobHolderDaemonSet(cfg, blob(pfsv1alpha1.PageSize2Mi, "2Mi"))
	b := BlobHolderDaemonSet(cfg, blob(pfsv1alpha1.PageSize2Mi, "2Mi"))
	moved := blob(pfsv1alpha1.PageSize2Mi, "2Mi")
	moved.Spec.NodeSelector = map[string]string{"zone": "a"}
	c := BlobHolderDaemonSet(cfg, moved)
	if a.Annotations[AnnotationTemplateHash] != b.Annotations[AnnotationTemplateHash] {
		t.Error("same blob, different hashes")
	}
	if a.Annotations[AnnotationTemplateHash] == c.Annotations[AnnotationTemplateHash] {
		t.Error("nodeSelector changed, hash did not")
	}
}

func TestBlobTokenSecret(t *testing.T) {
	token := []byte("0123456789abcdef0123456789abcdef")
	s := BlobTokenSecret(blob(pfsv1alpha1.PageSize2Mi, "2Mi"), token)
	token[0] = 'X' // the Secret must hold its own copy
	want := map[string][]byte{"token": []byte("0123456789abcdef0123456789abcdef")}
	if diff := cmp.Diff(want, s.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	if s.Name != "b-blob-token" || !*s.Immutable {
		t.Errorf("name %q immutable %v", s.Name, *s.Immutable)
	}
}

func transfer(mode pfsv1alpha1.TransferMode, tr pfsv1alpha1.Transport) *pfsv1alpha1.PfsTransfer {
	return &pfsv1alpha1.PfsTransfer{
		ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "uid-x"},
		Spec: pfsv1alpha1.PfsTransferSpec{Mode: mode, Transport: tr, Integrity: pfsv1alpha1.IntegrityCRC32C,
			Gram: pfsv1alpha1.GramSpec{DescriptorsPerGram: 1024, SlabBytes: q("1Mi"), MaxDescriptorLength: q("256Ki"), Align: 64}},
	}
}

func TestTransferPods(t *testing.T) {
	b := blob(pfsv1alpha1.PageSize2Mi, "64Mi")
	tests := map[string]struct {
		x           *pfsv1alpha1.PfsTransfer
		in          TransferInputs
		addr        placement.Address
		wantRecv    string
		wantSend    string
		wantRecvRes corev1.ResourceList
		wantSendRes corev1.ResourceList
		wantSec     *corev1.SecurityContext
		wantAnnot   map[string]string
		wantRecvAnn map[string]string // receiver's, when it differs from the sender's
		wantNodes   int
	}{
		"offset over TCP with a blob": {
			x: func() *pfsv1alpha1.PfsTransfer {
				x := transfer(pfsv1alpha1.ModeOffset, pfsv1alpha1.TransportTCP)
				x.Spec.BlobRef = &pfsv1alpha1.BlobReference{Name: "b"}
				x.Spec.Passes = ptr.To(int32(3))
				return x
			}(),
			in:          TransferInputs{Attempt: 2, Blob: b, BlobNodes: []string{"n1", "n2"}},
			addr:        placement.Address{IP: "10.0.0.5"},
			wantRecv:    "recv --listen 0.0.0.0:5000 --mode offset --transport tcp --accept-timeout 300 --ready-file /run/pfs/ready --max-work 201326592 --blob-socket /run/packetfs/ns/b.sock --blob-token-file /etc/packetfs/token/token --result-file /dev/termination-log --token-file /etc/packetfs/transfer-token/token",
			wantSend:    "send --connect 10.0.0.5:5000 --mode offset --transport tcp --bytes 201326592 --desc-per-gram 1024 --max-len 262144 --align 64 --blob-socket /run/packetfs/ns/b.sock --blob-token-file /etc/packetfs/token/token --result-file /dev/termination-log --token-file /etc/packetfs/transfer-token/token",
			wantRecvRes: rl("cpu", "1", "memory", "256Mi"),
			wantSendRes: rl("cpu", "1", "memory", "256Mi"),
			wantSec:     nonRoot,
			wantAnnot:   map[string]string{AnnotationOwner: "x"},
			wantNodes:   2,
		},
		"payload over UDP without a blob: scratch on hugepages, FNV": {
			x: func() *pfsv1alpha1.PfsTransfer {
				x := transfer(pfsv1alpha1.ModePayload, pfsv1alpha1.TransportUDP)
				x.Spec.Range = &pfsv1alpha1.Range{Length: q("3Mi")}
				x.Spec.TotalBytes = ptr.To(q("1Gi"))
				x.Spec.Integrity = pfsv1alpha1.IntegrityFNV1a64
				x.Spec.Sender.Network = "datanet"
				x.Spec.Sender.Queues = 2
				return x
			}(),
			addr:        placement.Address{IP: "fd00::5"},
			wantRecv:    "recv --listen 0.0.0.0:5000 --mode payload --transport udp --accept-timeout 300 --ready-file /run/pfs/ready --max-work 1073741824 --integrity fnv1a64 --result-file /dev/termination-log --token-file /etc/packetfs/transfer-token/token",
			wantSend:    "send --connect [fd00::5]:5000 --mode payload --transport udp --bytes 1073741824 --queues 2 --integrity fnv1a64 --desc-per-gram 1024 --max-len 262144 --align 64 --gram-bytes 1048576 --size 3145728 --page 2m --fill seed --result-file /dev/termination-log --token-file /etc/packetfs/transfer-token/token",
			wantRecvRes: rl("cpu", "1", "memory", "256Mi"),
			wantSendRes: rl("cpu", "2", "memory", "256Mi", "hugepages-2Mi", "4Mi"),
			wantSec:     nonRoot,
			wantAnnot:   map[string]string{AnnotationOwner: "x", AnnotationNetworks: "datanet"},
			wantRecvAnn: map[string]string{AnnotationOwner: "x"},
		},
		"arithmetic over AF_XDP with devices and a range": {
			x: func() *pfsv1alpha1.PfsTransfer {
				x := transfer(pfsv1alpha1.ModeArithmetic, pfsv1alpha1.TransportAFXDP)
				x.Spec.BlobRef = &pfsv1alpha1.BlobReference{Name: "b"}
				x.Spec.Range = &pfsv1alpha1.Range{Offset: q("1Mi"), Length: q("2Mi")}
				x.Spec.Sender = pfsv1alpha1.Endpoint{Network: "xdp", ResourceName: "afxdp/pool", Queues: 1}
				x.Spec.Receiver = pfsv1alpha1.Endpoint{Network: "xdp", ResourceName: "afxdp/pool", Queues: 4}
				return x
			}(),
			in:          TransferInputs{Blob: b, BlobNodes: []string{"n1"}},
			addr:        placement.Address{IP: "192.168.1.2", MAC: "02:00:00:00:00:02", Interface: "net1"},
			wantRecv:    "recv --listen 0.0.0.0:5000 --mode arith --transport afxdp --accept-timeout 300 --ready-file /run/pfs/ready --max-work 2097152 --ifname net1 --queues 4 --blob-socket /run/packetfs/ns/b.sock --blob-token-file /etc/packetfs/token/token --result-file /dev/termination-log --token-file /etc/packetfs/transfer-token/token",
			wantSend:    "send --connect 192.168.1.2:5000 --mode arith --transport afxdp --bytes 2097152 --peer-mac 02:00:00:00:00:02 --ifname net1 --desc-per-gram 1024 --max-len 262144 --align 64 --range 1048576:2097152 --blob-socket /run/packetfs/ns/b.sock --blob-token-file /etc/packetfs/token/token --result-file /dev/termination-log --token-file /etc/packetfs/transfer-token/token",
			wantRecvRes: rl("cpu", "4", "memory", "256Mi", "afxdp/pool", "1"),
			wantSendRes: rl("cpu", "1", "memory", "256Mi", "afxdp/pool", "1"),
			wantSec:     afxdp,
			wantAnnot:   map[string]string{AnnotationOwner: "x", AnnotationNetworks: "xdp"},
			wantNodes:   1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			recv := ReceiverPod(cfg, tc.x, tc.in)
			send := SenderPod(cfg, tc.x, tc.in, tc.addr)
			for _, c := range []struct {
				pod            *corev1.Pod
				args           string
				res            corev1.ResourceList
				name, compName string
			}{{recv, tc.wantRecv, tc.wantRecvRes, TransferPodName("x", tc.in.Attempt, ComponentReceiver), ComponentReceiver},
				{send, tc.wantSend, tc.wantSendRes, TransferPodName("x", tc.in.Attempt, ComponentSender), ComponentSender}} {
				checkTransferContainer(t, c.compName, c.pod, c.args, c.res, tc.wantSec)
				if c.pod.Name != c.name || c.pod.Spec.RestartPolicy != corev1.RestartPolicyNever ||
					*c.pod.Spec.AutomountServiceAccountToken || c.pod.Labels[LabelComponent] != c.compName {
					t.Errorf("%s: name %q restart %q labels %v", c.compName, c.pod.Name, c.pod.Spec.RestartPolicy, c.pod.Labels)
				}
				nodes := 0
				if a := c.pod.Spec.Affinity; a != nil {
					nodes = len(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
				}
				if c.compName == ComponentReceiver || tc.in.Blob != nil {
					if nodes != tc.wantNodes {
						t.Errorf("%s affinity to %d nodes, want %d", c.compName, nodes, tc.wantNodes)
					}
				}
			}
			if diff := cmp.Diff(tc.wantAnnot, send.Annotations); diff != "" {
				t.Errorf("sender annotations (-want +got):\n%s", diff)
			}
			wantRecv := tc.wantRecvAnn
			if wantRecv == nil {
				wantRecv = tc.wantAnnot
			}
			if diff := cmp.Diff(wantRecv, recv.Annotations); diff != "" {
				t.Errorf("receiver annotations (-want +got):\n%s", diff)
			}
			// The control connection is TCP for every transport; UDP adds its datagrams.
			ports := recv.Spec.Containers[0].Ports
			wantPorts := []corev1.ContainerPort{{Name: "control", ContainerPort: ReceiverPort, Protocol: corev1.ProtocolTCP}}
			if tc.x.Spec.Transport == pfsv1alpha1.TransportUDP {
				wantPorts = append(wantPorts, corev1.ContainerPort{Name: "grams", ContainerPort: ReceiverPort, Protocol: corev1.ProtocolUDP})
			}
			if diff := cmp.Diff(wantPorts, ports); diff != "" {
				t.Errorf("receiver ports (-want +got):\n%s", diff)
			}
			probe := recv.Spec.Containers[0].ReadinessProbe.Exec.Command
			if diff := cmp.Diff([]string{"/pfs", "probe", "--ready-file", "/run/pfs/ready"}, probe); diff != "" {
				t.Errorf("receiver readiness probe (-want +got):\n%s", diff)
			}
		})
	}
}

// checkTransferContainer checks the data-plane container of one side of a
// transfer: its arguments, Guaranteed resources, security context, and the
// result in the termination message, read from the file.
func checkTransferContainer(t *testing.T, what string, pod *corev1.Pod, args string, res corev1.ResourceList, sec *corev1.SecurityContext) {
	t.Helper()
	ctr := pod.Spec.Containers[0]
	if got := strings.Join(ctr.Args, " "); got != args {
		t.Errorf("%s args\n got %s\nwant %s", what, got, args)
	}
	if diff := cmp.Diff(res, ctr.Resources.Limits, cmpQty); diff != "" {
		t.Errorf("%s limits (-want +got):\n%s", what, diff)
	}
	if diff := cmp.Diff(ctr.Resources.Limits, ctr.Resources.Requests, cmpQty); diff != "" {
		t.Errorf("%s requests != limits (not Guaranteed):\n%s", what, diff)
	}
	if diff := cmp.Diff(sec, ctr.SecurityContext); diff != "" {
		t.Errorf("%s security (-want +got):\n%s", what, diff)
	}
	if ctr.TerminationMessagePolicy != corev1.TerminationMessageReadFile || ctr.TerminationMessagePath != TerminationLog {
		t.Errorf("%s termination message %q at %q", what, ctr.TerminationMessagePolicy, ctr.TerminationMessagePath)
	}
}

func TestPcorePod(t *testing.T) {
	b := blob(pfsv1alpha1.PageSize2Mi, "64Mi")
	tests := map[string]struct {
		spec       pfsv1alpha1.PcoreJobSpec
		wantArgs   string
		wantCPU    string
		wantHuge   string // hugepages-2Mi of a private blob copy, or ""
		wantNoSock bool   // no holder socket mounted
		zeroBlob   bool   // the PfsBlob is zero-filled
	}{
		"add over a zero-filled blob: the private copy is zero-filled too": {
			spec:       pfsv1alpha1.PcoreJobSpec{Op: pfsv1alpha1.OpAdd, Imm: ptr.To(int32(1)), Pcores: 1, Passes: ptr.To(int32(2)), Baseline: pfsv1alpha1.BaselineNone},
			zeroBlob:   true,
			wantArgs:   "pcore run --op add --imm 1 --pcores 1 --passes 2 --size 67108864 --page 2m --fill zero --result-file /dev/termination-log",
			wantCPU:    "1",
			wantHuge:   "64Mi",
			wantNoSock: true,
		},
		"xor with range, duration and baseline": {
			spec: pfsv1alpha1.PcoreJobSpec{Op: pfsv1alpha1.OpXor, Imm: ptr.To(int32(255)), Pcores: 4,
				Range: &pfsv1alpha1.Range{Offset: q("0"), Length: q("32Mi")}, Duration: &metav1.Duration{Duration: 1500 * 1e6},
				DescriptorsPerFrame: 64, Align: 64, RingSlots: 65536, Baseline: pfsv1alpha1.BaselineThreads},
			// xor writes in place: a private copy, never the shared holder's blob.
			wantArgs:   "pcore run --op xor --imm 255 --range 0:33554432 --pcores 4 --dpf 64 --align 64 --ring-slots 65536 --duration 1.5 --baseline --size 67108864 --page 2m --fill seed --seed 7 --result-file /dev/termination-log",
			wantCPU:    "4",
			wantHuge:   "64Mi",
			wantNoSock: true,
		},
		"counteq reads the holder's blob": {
			spec:     pfsv1alpha1.PcoreJobSpec{Op: pfsv1alpha1.OpCountEq, Imm: ptr.To(int32(0)), Pcores: 2, Baseline: pfsv1alpha1.BaselineThreads},
			wantArgs: "pcore run --op counteq --imm 0 --pcores 2 --baseline --blob-socket /run/packetfs/ns/b.sock --blob-token-file /etc/packetfs/token/token --result-file /dev/termination-log",
			wantCPU:  "2",
		},
		"crc32c, passes, no baseline": {
			spec:     pfsv1alpha1.PcoreJobSpec{Op: pfsv1alpha1.OpCRC32C, Pcores: 1, Passes: ptr.To(int32(3)), Baseline: pfsv1alpha1.BaselineNone},
			wantArgs: "pcore run --op crc32c --pcores 1 --passes 3 --blob-socket /run/packetfs/ns/b.sock --blob-token-file /etc/packetfs/token/token --result-file /dev/termination-log",
			wantCPU:  "1",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.spec.BlobRef = pfsv1alpha1.BlobReference{Name: "b"}
			j := &pfsv1alpha1.PcoreJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "uid-j"}, Spec: tc.spec}
			bb := b
			if tc.zeroBlob {
				bb = b.DeepCopy()
				bb.Spec.Fill = pfsv1alpha1.BlobFill{Type: pfsv1alpha1.FillZero}
			}
			pod := PcorePod(cfg, j, bb, []string{"n1"})
			c := pod.Spec.Containers[0]
			if got := strings.Join(c.Args, " "); got != tc.wantArgs {
				t.Errorf("args\n got %s\nwant %s", got, tc.wantArgs)
			}
			if c.TerminationMessagePolicy != corev1.TerminationMessageReadFile || c.TerminationMessagePath != TerminationLog {
				t.Errorf("termination message %q at %q", c.TerminationMessagePolicy, c.TerminationMessagePath)
			}
			want := rl("cpu", tc.wantCPU, "memory", "256Mi")
			if tc.wantHuge != "" {
				want[corev1.ResourceName("hugepages-2Mi")] = resource.MustParse(tc.wantHuge)
			}
			if got := len(c.VolumeMounts) == 0 && len(pod.Spec.Volumes) == 0; got != tc.wantNoSock {
				t.Errorf("no holder volumes = %v, want %v (mounts %v)", got, tc.wantNoSock, c.VolumeMounts)
			}
			if diff := cmp.Diff(want, c.Resources.Limits, cmpQty); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, c.Resources.Requests, cmpQty); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(nonRoot, c.SecurityContext); diff != "" {
				t.Errorf("security (-want +got):\n%s", diff)
			}
			if pod.Name != "j-pcore" || pod.Labels[LabelPcoreJobUID] != "uid-j" || pod.Spec.Affinity == nil {
				t.Errorf("name %q labels %v affinity %v", pod.Name, pod.Labels, pod.Spec.Affinity)
			}
		})
	}
}

func TestChildName(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := map[string]struct {
		owner, suffix string
		max           int
		want          string
	}{
		"fits":                  {"xfer", "a0-recv", 63, "xfer-a0-recv"},
		"exactly the limit":     {strings.Repeat("b", 55), "a0-recv", 63, strings.Repeat("b", 55) + "-a0-recv"},
		"too long: cut + hash":  {long, "a0-recv", 63, strings.Repeat("a", 46) + "-d982cdb6-a0-recv"},
		"cut never ends in a -": {strings.Repeat("c", 45) + "-" + long, "holder", 52, strings.Repeat("c", 36) + "-9cf2b324-holder"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ChildName(tc.owner, tc.suffix, tc.max)
			if got != tc.want {
				t.Errorf("ChildName = %q (%d), want %q", got, len(got), tc.want)
			}
			if len(got) > tc.max {
				t.Errorf("%q is longer than %d", got, tc.max)
			}
		})
	}
}

func TestSocketPath(t *testing.T) {
	if got := SocketPath("ns", "blob"); got != "/run/packetfs/ns/blob.sock" {
		t.Errorf("short: %q", got)
	}
	got := SocketPath(strings.Repeat("n", 63), strings.Repeat("b", 200))
	if len(got) > 107 || !strings.HasSuffix(got, ".sock") {
		t.Errorf("long: %q (%d bytes) does not fit a Unix socket address", got, len(got))
	}
}

var cmpQty = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// A NUMA decision pins the pod to its node (replacing the blob's Ready
// nodes) and gives pfs the zone; without one the pod keeps the blob's nodes.
func TestTransferPodsNUMA(t *testing.T) {
	x := &pfsv1alpha1.PfsTransfer{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "u"},
		Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModeOffset, BlobRef: &pfsv1alpha1.BlobReference{Name: "b"}}}
	in := TransferInputs{Blob: blob(pfsv1alpha1.PageSize2Mi, "64Mi"), BlobNodes: []string{"n1", "n2"}}
	addr := placement.Address{IP: "10.0.0.5"}
	for _, pod := range []*corev1.Pod{ReceiverPod(cfg, x, in), SenderPod(cfg, x, in, addr)} {
		if diff := cmp.Diff(placement.NodeAffinity([]string{"n1", "n2"}), pod.Spec.Affinity); diff != "" {
			t.Errorf("%s without a decision: affinity (-want +got):\n%s", pod.Name, diff)
		}
		if args := strings.Join(pod.Spec.Containers[0].Args, " "); strings.Contains(args, "--numa") {
			t.Errorf("%s without a zone: %s", pod.Name, args)
		}
	}
	in.NUMA = &pfsv1alpha1.NUMAPlacement{Node: "n2", Zone: ptr.To[int32](1), Fit: pfsv1alpha1.NUMAFitSingleZone, Reason: "node n2 zone node-1: 2 cpu free"}
	for _, pod := range []*corev1.Pod{ReceiverPod(cfg, x, in), SenderPod(cfg, x, in, addr)} {
		if diff := cmp.Diff(in.NUMA, NUMAPlacementOf(pod)); diff != "" {
			t.Errorf("%s: the decision it carries (-want +got):\n%s", pod.Name, diff)
		}
		if diff := cmp.Diff(placement.NodeAffinity([]string{"n2"}), pod.Spec.Affinity); diff != "" {
			t.Errorf("%s: affinity (-want +got):\n%s", pod.Name, diff)
		}
		if args := strings.Join(pod.Spec.Containers[0].Args, " "); !strings.HasSuffix(args, "--result-file /dev/termination-log --token-file /etc/packetfs/transfer-token/token --numa 1") {
			t.Errorf("%s: args %s do not end with --numa 1", pod.Name, args)
		}
	}
	in.NUMA.Zone = nil // a node without a zone (node-level data, cross-zone)
	if args := strings.Join(ReceiverPod(cfg, x, in).Spec.Containers[0].Args, " "); strings.Contains(args, "--numa") {
		t.Errorf("no zone, yet %s", args)
	}
	pod := ReceiverPod(cfg, x, in)
	pod.Annotations[AnnotationNUMAPlacement] = "{"
	if NUMAPlacementOf(pod) != nil || NUMAPlacementOf(&corev1.Pod{}) != nil {
		t.Error("a pod without a readable decision carries one")
	}
}

// A transfer's pods carry the kubelet's deadline DeadlineBackstop seconds
// after the transfer's, so the operator's verdict at the deadline comes
// first; the grace period is the one the e2e deadline fault counts on.
func TestTransferPodsDeadline(t *testing.T) {
	x := &pfsv1alpha1.PfsTransfer{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "u"},
		Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModeOffset, BlobRef: &pfsv1alpha1.BlobReference{Name: "b"}}}
	in := TransferInputs{Blob: blob(pfsv1alpha1.PageSize2Mi, "64Mi"), BlobNodes: []string{"n1"}}
	addr := placement.Address{IP: "10.0.0.5"}
	for _, tc := range []struct {
		run, want *int64
	}{{nil, nil}, {ptr.To(int64(20)), ptr.To(int64(50))}, {ptr.To(int64(600)), ptr.To(int64(630))}} {
		x.Spec.ActiveDeadlineSeconds = tc.run
		for _, pod := range []*corev1.Pod{ReceiverPod(cfg, x, in), SenderPod(cfg, x, in, addr)} {
			if diff := cmp.Diff(tc.want, pod.Spec.ActiveDeadlineSeconds); diff != "" {
				t.Errorf("%s, transfer deadline %v: pod deadline (-want +got):\n%s", pod.Name, ptr.Deref(tc.run, -1), diff)
			}
			if g := ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, -1); g != TransferGracePeriod {
				t.Errorf("%s: grace period %d, want %d", pod.Name, g, TransferGracePeriod)
			}
		}
	}
}
