// SPDX-License-Identifier: Apache-2.0

// Package contract checks the operator against the data plane it drives:
// every pod the builders produce (holder, transfer sides, pcore job, and
// their exec probes) is run through the real pfs binary with --check-args,
// which parses and validates the arguments exactly as the pod would and
// exits before doing any work. A flag the binary lacks, or a value it
// rejects, fails here instead of in a user's cluster.
package contract

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/podspec"
)

// MetricsPort as the manager's default: every holder line carries --metrics-listen.
var cfg = podspec.Config{Image: "img", Binary: "/usr/local/bin/pfs", MetricsPort: podspec.DefaultMetricsPort}

// pfsBinary is the data plane built by `make -C dataplane`; `make test-go`
// builds it and sets PFS_BIN.
func pfsBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PFS_BIN")
	if bin == "" {
		t.Skip("PFS_BIN is not set: run through `make test-go`, which builds dataplane/build/pfs")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("PFS_BIN=%s: %v", bin, err)
	}
	return bin
}

// transports lists the --transport values this pfs build has: it names them
// when asked for one it does not know.
func transports(t *testing.T, bin string) string {
	out, _ := exec.Command(bin, "send", "--connect", "127.0.0.1:1", "--mode", "payload",
		"--transport", "no-such-transport").CombinedOutput()
	_, have, ok := strings.Cut(string(out), "this build has: ")
	if !ok {
		t.Fatalf("pfs did not list its transports:\n%s", out)
	}
	have, _, _ = strings.Cut(have, ")")
	return have
}

func hasTransport(have string, tr pfsv1alpha1.Transport) bool {
	for _, name := range strings.Split(have, " | ") {
		if name == strings.ToLower(string(tr)) {
			return true
		}
	}
	return false
}

// check runs one command line of a container (or probe) with --check-args.
func check(t *testing.T, bin, what string, cmd []string) {
	t.Helper()
	if len(cmd) == 0 || cmd[0] != cfg.Binary {
		t.Fatalf("%s: command %q does not start with the data-plane binary %s", what, cmd, cfg.Binary)
	}
	c := exec.Command(bin, append([]string{"--check-args"}, cmd[1:]...)...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Run(); err != nil {
		t.Errorf("%s: pfs rejects the arguments the operator gives it: %v\n  pfs %s\n  %s", what, err,
			strings.Join(cmd[1:], " "), strings.TrimSpace(stderr.String()))
	}
}

func checkPod(t *testing.T, bin string, spec *corev1.PodSpec) {
	t.Helper()
	all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	if len(all) == 0 {
		t.Fatal("pod has no containers")
	}
	for _, c := range all {
		check(t, bin, "container "+c.Name, append(append([]string{}, c.Command...), c.Args...))
		for kind, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
			if p != nil && p.Exec != nil {
				check(t, bin, kind+" probe of "+c.Name, p.Exec.Command)
			}
		}
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func blob(page pfsv1alpha1.PageSize, fill pfsv1alpha1.FillType) *pfsv1alpha1.PfsBlob {
	b := &pfsv1alpha1.PfsBlob{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", UID: "uid-b"},
		Spec: pfsv1alpha1.PfsBlobSpec{Size: q("64Mi"), PageSize: page, PageFallback: pfsv1alpha1.PageFallbackAllow,
			Fill: pfsv1alpha1.BlobFill{Type: fill}},
	}
	if fill == pfsv1alpha1.FillSeed {
		b.Spec.Fill.Seed = ptr.To(int64(7))
	}
	return b
}

func TestBlobHolder(t *testing.T) {
	bin := pfsBinary(t)
	for _, page := range []pfsv1alpha1.PageSize{pfsv1alpha1.PageSize2Mi, pfsv1alpha1.PageSize1Gi, pfsv1alpha1.PageSizeTHP, pfsv1alpha1.PageSize4Ki} {
		for _, fill := range []pfsv1alpha1.FillType{pfsv1alpha1.FillSeed, pfsv1alpha1.FillZero} {
			for _, fallback := range []pfsv1alpha1.PageFallback{pfsv1alpha1.PageFallbackAllow, pfsv1alpha1.PageFallbackNever} {
				t.Run(fmt.Sprintf("%s/%s/%s", page, fill, fallback), func(t *testing.T) {
					b := blob(page, fill)
					b.Spec.PageFallback = fallback
					checkPod(t, bin, &podspec.BlobHolderDaemonSet(cfg, b).Spec.Template.Spec)
				})
			}
		}
	}
}

// TestSourceBlobPods runs the scan pod and the origin and relay holders of a
// blob with a source through pfs. The fan-out options (--fetch-from,
// --replicate-listen, --replicate-rate) arrive with the data plane of issue
// 14: a pfs without them skips the holders, saying so, rather than passing.
func TestSourceBlobPods(t *testing.T) {
	bin := pfsBinary(t)
	b := blob(pfsv1alpha1.PageSize2Mi, "")
	b.Spec.Size = resource.Quantity{}
	b.Spec.Source = &pfsv1alpha1.BlobSource{PersistentVolumeClaim: &pfsv1alpha1.PVCBlobSource{ClaimName: "data", Path: "models/x.safetensors"}}
	b.Spec.Replication = &pfsv1alpha1.BlobReplication{BandwidthLimit: ptr.To(q("100Mi"))}
	t.Run("scan", func(t *testing.T) { checkPod(t, bin, &podspec.BlobScanPod(cfg, b).Spec) })
	for _, role := range []pfsv1alpha1.BlobNodeRole{pfsv1alpha1.BlobNodeOrigin, pfsv1alpha1.BlobNodeRelay} {
		t.Run(string(role), func(t *testing.T) {
			h := podspec.SourceHolder{Node: "w1", Role: role, Size: 67108864, Page: pfsv1alpha1.PageSize2Mi,
				Upstreams: []string{"10.0.0.1:7470", "10.0.0.2:7470"}, Attempt: 1}
			checkPod(t, bin, &podspec.BlobSourceHolderPod(cfg, b, h).Spec)
		})
	}
	// Sources in a store: S3 (a prefix, credentials, a CA bundle) and HTTP
	// (files under a base URL, a headers Secret).
	stores := map[string]*pfsv1alpha1.BlobSource{
		"s3": {S3: &pfsv1alpha1.S3BlobSource{Endpoint: "https://s3.example:9000", Bucket: "models", Prefix: "llama/", Region: "eu-west-3",
			CredentialsSecretRef: &pfsv1alpha1.SecretReference{Name: "s3-creds"},
			CABundle:             &pfsv1alpha1.CABundleReference{ConfigMapName: "store-ca"}}},
		"s3 key": {S3: &pfsv1alpha1.S3BlobSource{Endpoint: "http://seaweedfs:8333", Bucket: "models", Key: "m.safetensors",
			Reads: &pfsv1alpha1.RangedReads{Concurrency: ptr.To(int32(16)), RangeSize: ptr.To(resource.MustParse("256Mi"))}}},
		"oci": {OCI: &pfsv1alpha1.OCIBlobSource{Reference: "10.89.0.1:5000/models/minilm:v1", Protocol: pfsv1alpha1.RegistryHTTP, Path: "/models",
			PullSecretRef: &pfsv1alpha1.SecretReference{Name: "pull"}, CABundle: &pfsv1alpha1.CABundleReference{ConfigMapName: "reg-ca"},
			Reads: &pfsv1alpha1.RangedReads{Concurrency: ptr.To(int32(8)), RangeSize: ptr.To(resource.MustParse("16Mi"))}}},
		"http": {HTTP: &pfsv1alpha1.HTTPBlobSource{URL: "https://hub.example/llama", Files: []pfsv1alpha1.SourceFileName{"config.json", "a/b.json"},
			HeadersSecretRef: &pfsv1alpha1.SecretReference{Name: "hub-token"}}},
	}
	for name, src := range stores {
		sb := b.DeepCopy()
		sb.Spec.Source = src
		t.Run(name+" scan", func(t *testing.T) { checkPod(t, bin, &podspec.BlobScanPod(cfg, sb).Spec) })
		t.Run(name+" origin", func(t *testing.T) {
			h := podspec.SourceHolder{Node: "w1", Role: pfsv1alpha1.BlobNodeOrigin, Size: 67108864, Page: pfsv1alpha1.PageSize2Mi, Attempt: 1}
			checkPod(t, bin, &podspec.BlobSourceHolderPod(cfg, sb, h).Spec)
		})
	}
	// On the pod network a relay names its upstreams by DNS; the longest
	// names (a 63-character blob in a 63-character namespace), eight of
	// them, must still make a --fetch-from pfs takes.
	t.Run("relay by DNS name, the longest names", func(t *testing.T) {
		long := b.DeepCopy()
		long.Name, long.Namespace = strings.Repeat("b", 63), strings.Repeat("n", 63)
		var ups []string
		for i := 0; i < 8; i++ {
			ups = append(ups, podspec.HolderDNSName(long.Name, long.Namespace, fmt.Sprint("w", i))+":7470")
		}
		h := podspec.SourceHolder{Node: "w8", Role: pfsv1alpha1.BlobNodeRelay, Size: 67108864, Page: pfsv1alpha1.PageSize2Mi,
			Upstreams: ups, Attempt: 1}
		checkPod(t, bin, &podspec.BlobSourceHolderPod(cfg, long, h).Spec)
	})
	// With spec.base Ready on the node, both containers map the base and
	// serve (and the relay fetches) delta grams.
	withBase := b.DeepCopy()
	withBase.Spec.Base = &pfsv1alpha1.BlobBase{Name: "model-v1", ZstdLevel: 9}
	for _, role := range []pfsv1alpha1.BlobNodeRole{pfsv1alpha1.BlobNodeOrigin, pfsv1alpha1.BlobNodeRelay} {
		t.Run(string(role)+" with a base", func(t *testing.T) {
			h := podspec.SourceHolder{Node: "w1", Role: role, Size: 67108864, Page: pfsv1alpha1.PageSize2Mi,
				Upstreams: []string{"10.0.0.1:7470"}, Attempt: 1, Base: "model-v1"}
			checkPod(t, bin, &podspec.BlobSourceHolderPod(cfg, withBase, h).Spec)
		})
	}
}

// TestFilesLayoutHolderPods runs the origin and relay holders the operator
// builds under the CSI plugin (--socket-volume=csi: the blob kept as files,
// `pfs blob create --layout files`) through pfs.
func TestFilesLayoutHolderPods(t *testing.T) {
	bin := pfsBinary(t)
	csi := cfg
	csi.SocketVolume = podspec.SocketVolumeCSI
	b := blob(pfsv1alpha1.PageSize2Mi, "")
	b.Spec.Size = resource.Quantity{}
	b.Spec.Source = &pfsv1alpha1.BlobSource{PersistentVolumeClaim: &pfsv1alpha1.PVCBlobSource{ClaimName: "data", Path: "models"}}
	for _, role := range []pfsv1alpha1.BlobNodeRole{pfsv1alpha1.BlobNodeOrigin, pfsv1alpha1.BlobNodeRelay} {
		t.Run(string(role), func(t *testing.T) {
			h := podspec.SourceHolder{Node: "w1", Role: role, Size: 67108864, Page: pfsv1alpha1.PageSize2Mi,
				Upstreams: []string{"10.0.0.1:7470"}, Attempt: 1}
			checkPod(t, bin, &podspec.BlobSourceHolderPod(csi, b, h).Spec)
		})
	}
}

// TestDatagramRelayPods runs the holders of a blob replicated over UDP and
// AFXDP, on the pod network and on a secondary one, through pfs.
func TestDatagramRelayPods(t *testing.T) {
	bin := pfsBinary(t)
	for _, tr := range []pfsv1alpha1.Transport{pfsv1alpha1.TransportUDP, pfsv1alpha1.TransportAFXDP} {
		for net, network := range map[string]string{"pod network": "", "secondary network": "fabric"} {
			for _, role := range []pfsv1alpha1.BlobNodeRole{pfsv1alpha1.BlobNodeOrigin, pfsv1alpha1.BlobNodeRelay} {
				t.Run(fmt.Sprintf("%s/%s/%s", tr, net, role), func(t *testing.T) {
					b := blob(pfsv1alpha1.PageSize2Mi, "")
					b.Spec.Size = resource.Quantity{}
					b.Spec.Source = &pfsv1alpha1.BlobSource{PersistentVolumeClaim: &pfsv1alpha1.PVCBlobSource{ClaimName: "data"}}
					b.Spec.Replication = &pfsv1alpha1.BlobReplication{Transport: tr, Network: network}
					h := podspec.SourceHolder{Node: "w1", Role: role, Size: 67108864, Page: pfsv1alpha1.PageSize2Mi,
						Upstreams: []string{"10.0.0.1:7470", "[fd00::2]:7470"}, Attempt: 1}
					checkPod(t, bin, &podspec.BlobSourceHolderPod(cfg, b, h).Spec)
				})
			}
		}
	}
}

func TestTransferPods(t *testing.T) {
	bin := pfsBinary(t)
	have := transports(t, bin)
	modes := []pfsv1alpha1.TransferMode{pfsv1alpha1.ModePayload, pfsv1alpha1.ModeOffset, pfsv1alpha1.ModeArithmetic}
	trs := []pfsv1alpha1.Transport{pfsv1alpha1.TransportTCP, pfsv1alpha1.TransportUDP, pfsv1alpha1.TransportAFXDP}
	integ := []pfsv1alpha1.IntegrityAlgorithm{pfsv1alpha1.IntegrityCRC32C, pfsv1alpha1.IntegrityFNV1a64, pfsv1alpha1.IntegrityNone}
	for _, mode := range modes {
		for _, tr := range trs {
			for _, in := range integ {
				for _, withBlob := range []bool{true, false} {
					if !withBlob && mode != pfsv1alpha1.ModePayload {
						continue // the API requires blobRef for Offset and Arithmetic
					}
					if tr != pfsv1alpha1.TransportTCP && in != pfsv1alpha1.IntegrityCRC32C {
						continue // the API allows FNV1a64 and None over TCP only
					}
					name := fmt.Sprintf("%s/%s/%s/blob=%v", mode, tr, in, withBlob)
					t.Run(name, func(t *testing.T) {
						if !hasTransport(have, tr) {
							t.Fatalf("this pfs build has no %s transport (it has: %s): the operator asks for it", tr, have)
						}
						x := &pfsv1alpha1.PfsTransfer{
							ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "uid-x"},
							Spec: pfsv1alpha1.PfsTransferSpec{Mode: mode, Transport: tr, Integrity: in,
								Range: &pfsv1alpha1.Range{Offset: q("1Mi"), Length: q("8Mi")}, Passes: ptr.To(int32(2)),
								Gram: pfsv1alpha1.GramSpec{DescriptorsPerGram: 512, SlabBytes: q("1Mi"),
									MaxDescriptorLength: q("64Ki"), Align: 64},
								Sender:   pfsv1alpha1.Endpoint{Network: "data", Queues: 2},
								Receiver: pfsv1alpha1.Endpoint{Network: "data", Queues: 2}},
						}
						inputs := podspec.TransferInputs{Attempt: 1}
						if withBlob {
							x.Spec.BlobRef = &pfsv1alpha1.BlobReference{Name: "b"}
							inputs.Blob, inputs.BlobNodes = blob(pfsv1alpha1.PageSize2Mi, pfsv1alpha1.FillSeed), []string{"n1"}
						}
						addr := placement.Address{IP: "10.1.2.3", MAC: "02:00:00:00:00:01", Interface: "net1"}
						checkPod(t, bin, &podspec.ReceiverPod(cfg, x, inputs).Spec)
						checkPod(t, bin, &podspec.SenderPod(cfg, x, inputs, addr).Spec)
						addr.IP = "fd00::3"
						checkPod(t, bin, &podspec.SenderPod(cfg, x, inputs, addr).Spec)
						// Placed by the NUMA decision: pfs binds to the zone (--numa).
						inputs.NUMA = &pfsv1alpha1.NUMAPlacement{Node: "n1", Zone: ptr.To(int32(1))}
						checkPod(t, bin, &podspec.ReceiverPod(cfg, x, inputs).Spec)
						checkPod(t, bin, &podspec.SenderPod(cfg, x, inputs, addr).Spec)
					})
				}
			}
		}
	}
}

// TestDeltaTransferPods runs the pods of a Delta transfer through pfs: the
// receiver with the base and without it (--no-base), the sender with both
// blobs, on IPv4 and IPv6. Their options (--mode delta, --no-base,
// --src-blob-socket, --zstd-level, --delta-threads) are the CLI contract of
// issue 15: a pfs from before the data plane's delta mode fails here.
func TestDeltaTransferPods(t *testing.T) {
	bin := pfsBinary(t)
	named := func(name string) *pfsv1alpha1.PfsBlob {
		b := blob(pfsv1alpha1.PageSize2Mi, pfsv1alpha1.FillSeed)
		b.Name = name
		return b
	}
	x := &pfsv1alpha1.PfsTransfer{
		ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "uid-x"},
		Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModeDelta, Transport: pfsv1alpha1.TransportTCP,
			BlobRef: &pfsv1alpha1.BlobReference{Name: "old"},
			Delta:   &pfsv1alpha1.DeltaSpec{SourceRef: pfsv1alpha1.BlobReference{Name: "new"}, ZstdLevel: 19},
			Sender:  pfsv1alpha1.Endpoint{Network: "data", Queues: 4}},
	}
	for name, d := range map[string]placement.Delta{
		"the receiver holds the base": {SenderNodes: []string{"n1"}, ReceiverNodes: []string{"n1", "n2"}},
		"the receiver holds no base":  {SenderNodes: []string{"n1"}, NoBaseNode: "n3"},
	} {
		t.Run(name, func(t *testing.T) {
			in := podspec.TransferInputs{Attempt: 1, Blob: named("old"), BlobNodes: []string{"n1", "n2"}, Source: named("new"), Delta: d}
			checkPod(t, bin, &podspec.ReceiverPod(cfg, x, in).Spec)
			for _, ip := range []string{"10.1.2.3", "fd00::3"} {
				checkPod(t, bin, &podspec.SenderPod(cfg, x, in, placement.Address{IP: ip}).Spec)
			}
			in.NUMA = &pfsv1alpha1.NUMAPlacement{Node: "n1", Zone: ptr.To(int32(0))}
			checkPod(t, bin, &podspec.ReceiverPod(cfg, x, in).Spec)
			checkPod(t, bin, &podspec.SenderPod(cfg, x, in, placement.Address{IP: "10.1.2.3"}).Spec)
		})
	}
}

func TestPcorePods(t *testing.T) {
	bin := pfsBinary(t)
	ops := []pfsv1alpha1.PcoreOp{pfsv1alpha1.OpXor, pfsv1alpha1.OpAdd, pfsv1alpha1.OpCountEq, pfsv1alpha1.OpFNV, pfsv1alpha1.OpCRC32C}
	for _, op := range ops {
		for _, fill := range []pfsv1alpha1.FillType{pfsv1alpha1.FillSeed, pfsv1alpha1.FillZero} {
			for _, page := range []pfsv1alpha1.PageSize{pfsv1alpha1.PageSize2Mi, pfsv1alpha1.PageSize4Ki} {
				t.Run(fmt.Sprintf("%s/%s/%s", op, fill, page), func(t *testing.T) {
					j := &pfsv1alpha1.PcoreJob{
						ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "uid-j"},
						Spec: pfsv1alpha1.PcoreJobSpec{BlobRef: pfsv1alpha1.BlobReference{Name: "b"}, Op: op,
							Imm: ptr.To(int32(7)), Range: &pfsv1alpha1.Range{Offset: q("4Ki"), Length: q("16Mi")},
							Pcores: 2, Passes: ptr.To(int32(3)), DescriptorsPerFrame: 32, Align: 64, RingSlots: 128,
							Baseline: pfsv1alpha1.BaselineThreads, NUMA: pfsv1alpha1.NUMAPolicyPreferred},
					}
					checkPod(t, bin, &podspec.PcorePod(cfg, j, blob(page, fill), []string{"n1"}).Spec)
					j.Spec.Passes, j.Spec.Duration = nil, &metav1.Duration{Duration: 1500_000_000}
					checkPod(t, bin, &podspec.PcorePod(cfg, j, blob(page, fill), []string{"n1"}).Spec)
				})
			}
		}
	}
}

// TestSamples builds the pods of every sample in config/samples, as the
// apiserver would default them, so the examples users copy run as shown.
func TestSamples(t *testing.T) {
	bin := pfsBinary(t)
	have := transports(t, bin)
	files, _ := filepath.Glob("../../../config/samples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no samples in config/samples")
	}
	blobs := map[string]*pfsv1alpha1.PfsBlob{}
	var xfers []*pfsv1alpha1.PfsTransfer
	var jobs []*pfsv1alpha1.PcoreJob
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(data, &meta); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch meta.Kind {
		case "PfsBlob":
			b := &pfsv1alpha1.PfsBlob{}
			mustDecode(t, f, data, b)
			b.Namespace = "ns"
			if b.Spec.PageSize == "" {
				b.Spec.PageSize = pfsv1alpha1.PageSize2Mi
			}
			blobs[b.Name] = b
		case "PfsTransfer":
			x := &pfsv1alpha1.PfsTransfer{}
			mustDecode(t, f, data, x)
			xfers = append(xfers, x)
		case "PcoreJob":
			j := &pfsv1alpha1.PcoreJob{}
			mustDecode(t, f, data, j)
			jobs = append(jobs, j)
		}
	}
	for _, b := range blobs {
		if b.Spec.Source != nil {
			// Its holders need the fan-out data plane: TestSourceBlobPods.
			checkPod(t, bin, &podspec.BlobScanPod(cfg, b).Spec)
			continue
		}
		checkPod(t, bin, &podspec.BlobHolderDaemonSet(cfg, b).Spec.Template.Spec)
	}
	for _, x := range xfers {
		t.Run("transfer "+x.Name, func(t *testing.T) {
			if !hasTransport(have, x.Spec.Transport) {
				t.Fatalf("this pfs build has no %s transport (it has: %s): the operator asks for it", x.Spec.Transport, have)
			}
			x.Namespace = "ns"
			in := podspec.TransferInputs{}
			if x.Spec.BlobRef != nil {
				in.Blob = blobs[x.Spec.BlobRef.Name]
				if in.Blob == nil {
					t.Fatalf("sample refers to blob %q, which no sample defines", x.Spec.BlobRef.Name)
				}
			}
			if d := x.Spec.Delta; d != nil {
				if in.Source = blobs[d.SourceRef.Name]; in.Source == nil {
					t.Fatalf("sample refers to blob %q, which no sample defines", d.SourceRef.Name)
				}
				in.Delta = placement.PlanDelta([]string{"n1", "n2"}, []string{"n1"}, x.Spec.Sender, x.Spec.Receiver)
			}
			checkPod(t, bin, &podspec.ReceiverPod(cfg, x, in).Spec)
			checkPod(t, bin, &podspec.SenderPod(cfg, x, in, placement.Address{IP: "10.0.0.2"}).Spec)
		})
	}
	for _, j := range jobs {
		t.Run("pcorejob "+j.Name, func(t *testing.T) {
			j.Namespace = "ns"
			b := blobs[j.Spec.BlobRef.Name]
			if b == nil {
				t.Fatalf("sample refers to blob %q, which no sample defines", j.Spec.BlobRef.Name)
			}
			checkPod(t, bin, &podspec.PcorePod(cfg, j, b, nil).Spec)
		})
	}
}

func mustDecode(t *testing.T, file string, data []byte, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}
