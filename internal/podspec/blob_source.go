// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// A blob with spec.source has no DaemonSet: a scan pod sizes the source,
// then one holder pod per admitted node, each pinned to its node. The
// origin's init container reads the source; the relays' fetch the bytes
// from upstream holders (--fetch-from); every holder serves the blob on to
// the next nodes on ReplicationPort. Consumers see the same socket and
// token as with a DaemonSet holder.

// scanResources: the scan lists files and maps nothing.
var scanResources = guaranteedQ(resource.MustParse("100m"), resource.MustParse("64Mi"), nil)

// SourceHolder is what the controller decided for one node's holder pod.
type SourceHolder struct {
	// Node is the node the pod is pinned to.
	Node string
	// Role is Origin (reads the source) or Relay (fetches from Upstreams).
	Role pfsv1alpha1.BlobNodeRole
	// Size is the effective blob size in bytes.
	Size int64
	// Page is the page kind to map: spec.pageSize, or 4Ki when admission
	// found too few hugepages and spec.pageFallback allows it.
	Page pfsv1alpha1.PageSize
	// PageFallback says why Page is not spec.pageSize; empty otherwise.
	PageFallback string
	// Upstreams are the relay's "host:port" sources, nearest first: the
	// holders' DNS names on the pod network, their IPs on a network.
	Upstreams []string
	// Tail is where a relay finishes once it stepped aside (--fetch-tail):
	// the chain's last holders, last first; empty: it stays.
	Tail []string
	// Attempt is 1 for the node's first pod, 2 and 3 for its retries.
	Attempt int32
	// Base is spec.base's name when the base is Ready on Node: the holder
	// maps it from its holder there, fetches delta grams over it (relay) and
	// serves delta grams against it; empty: the blob travels whole.
	Base string
}

// BlobScanLabels select a blob's scan pod.
func BlobScanLabels(b *pfsv1alpha1.PfsBlob) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelComponent: ComponentBlobScan, LabelBlobUID: string(b.UID)}
}

// SourceArgs are the pfs options that read a blob's source mounted at
// SourceDir. --source is relative to --source-root (pfs refuses an absolute
// one), "." for a whole volume; a hostPath is mounted at SourceDir/<base>,
// so a file works as well as a directory.
func SourceArgs(b *pfsv1alpha1.PfsBlob) []string {
	rel := "."
	switch src := b.Spec.Source; {
	case src == nil:
		return nil
	case src.PersistentVolumeClaim != nil:
		if p := strings.Trim(path.Clean("/"+src.PersistentVolumeClaim.Path), "/"); p != "" {
			rel = p
		}
	case src.HostPath != nil:
		rel = hostPathBase(src.HostPath.Path)
	case IsRemoteSource(src):
		return remoteArgs(src)
	}
	return []string{"--source", rel, "--source-root", SourceDir}
}

// hostPathBase is the name a hostPath source is mounted under in SourceDir.
func hostPathBase(p string) string {
	base := path.Base(path.Clean(p))
	if base == "/" || base == "." {
		return "host"
	}
	return base
}

// sourceVolumes mount the source read-only: the claim at SourceDir, or the
// host path at SourceDir/<base>; a store's Secret and CA bundle
// (remoteVolumes). The hostPath type is unset: a source may be a file or
// a directory, and the scan reports a missing one.
func sourceVolumes(b *pfsv1alpha1.PfsBlob) ([]corev1.Volume, []corev1.VolumeMount) {
	const name = "source"
	src := b.Spec.Source
	switch {
	case IsRemoteSource(src):
		return remoteVolumes(src)
	case src.HostPath != nil:
		return []corev1.Volume{{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: path.Clean(src.HostPath.Path), Type: ptr.To(corev1.HostPathUnset)}}}},
			[]corev1.VolumeMount{{Name: name, MountPath: path.Join(SourceDir, hostPathBase(src.HostPath.Path)), ReadOnly: true}}
	}
	return []corev1.Volume{{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: src.PersistentVolumeClaim.ClaimName, ReadOnly: true}}}},
		[]corev1.VolumeMount{{Name: name, MountPath: SourceDir, ReadOnly: true}}
}

// BlobScanPod builds the pod that lists a blob's source and prints the blob
// size it needs (`pfs blob create --source … --dry-run`), read-only, with
// small resources and no hugepages. It runs as the origin holder does
// (uid 0, no capabilities) so it can read exactly what the origin will.
// The scheduler places it (for a ReadWriteOnce claim, where the volume can
// be attached); that node becomes the origin.
func BlobScanPod(cfg Config, b *pfsv1alpha1.PfsBlob) *corev1.Pod {
	args := append([]string{cmdBlob, "create"}, SourceArgs(b)...)
	args = append(args, "--dry-run", "--result-file", TerminationLog)
	vols, mounts := sourceVolumes(b)
	c := dataPlaneContainer(cfg, ContainerBlobScan, args, scanResources, privRootNoCaps)
	c.VolumeMounts = mounts
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: ScanPodName(b.Name), Namespace: b.Namespace,
			Labels: BlobScanLabels(b), Annotations: map[string]string{AnnotationBlob: b.Name}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			NodeSelector:                  copyMap(b.Spec.NodeSelector),
			Affinity:                      cfg.affinity(nil),
			Containers:                    []corev1.Container{c},
			Volumes:                       vols,
			SecurityContext:               podSecurity(),
			Tolerations:                   cfg.tolerations(b.Spec.Scheduling),
			PriorityClassName:             cfg.priorityClass(b.Spec.Scheduling),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To(int64(5)),
		},
	}
}

// replicateArgs are the serving options both holder containers take.
func replicateArgs(b *pfsv1alpha1.PfsBlob) []string {
	args := []string{"--replicate-listen", "0.0.0.0:" + strconv.Itoa(ReplicationPort)}
	if r := b.Spec.Replication; r != nil && r.BandwidthLimit != nil {
		args = append(args, "--replicate-rate", strconv.FormatInt(r.BandwidthLimit.Value(), 10))
	}
	return args
}

// BlobSourceHolderPod builds one node's holder of a blob with a source: the
// DaemonSet holder's pod (same socket, token, memory and probe) pinned to
// h.Node with a required node affinity on metadata.name, restartPolicy
// Never, whose init container reads the source (origin) or fetches it from
// h.Upstreams (relay), and which serves it on ReplicationPort.
func BlobSourceHolderPod(cfg Config, b *pfsv1alpha1.PfsBlob, h SourceHolder) *corev1.Pod {
	res, blobVol, layoutArgs := sourceHolderStorage(cfg, b, h.Size, h.Page)
	addDatagramMemory(&res, b)
	network, resourceName := replicationNetwork(b)
	if resourceName != "" {
		// Both containers: the init container fetches over the device, the
		// server serves over it; the kubelet hands the init container's
		// device on, so the pod holds one unit.
		one := *resource.NewQuantity(1, resource.DecimalSI)
		res.Requests[corev1.ResourceName(resourceName)], res.Limits[corev1.ResourceName(resourceName)] = one, one
	}
	args := append(holderCreateArgs(b, BlobDir, h.Size, h.Page), layoutArgs...)
	if b.Spec.PageFallback == pfsv1alpha1.PageFallbackNever {
		args = append(args, "--no-fallback")
	}
	args = append(args, "--replace", "--result-file", TerminationLog)
	if !cfg.FilesLayout() {
		args = append(args, "--chunks-dir", ChunksDir)
	}
	volumes := []corev1.Volume{blobVol, socketVolume(cfg, b.Namespace, socketsCreate), tokenVolume(b.Name)}
	mounts := holderMounts(cfg, b)
	createMounts := []corev1.VolumeMount{mounts[0], mounts[2]}
	if h.Role == pfsv1alpha1.BlobNodeOrigin {
		args = append(args, SourceArgs(b)...)
		srcVols, srcMounts := sourceVolumes(b)
		volumes = append(volumes, srcVols...)
		createMounts = append(createMounts, srcMounts...)
	} else {
		args = append(args, "--fetch-from", fetchFrom(h.Upstreams))
		if len(h.Tail) > 0 {
			args = append(args, "--fetch-tail", fetchFrom(h.Tail))
		}
		args = append(args, fetchTransportArgs(b)...)
	}
	args = append(args, "--token-file", TokenFile)
	args = append(args, replicateArgs(b)...)
	args = append(args, cfg.metricsArgs()...)
	serveArgs := replicateArgs(b)
	var serveMounts []corev1.VolumeMount
	if !cfg.FilesLayout() {
		// The chunk list of a flat blob (blob_chunks.go).
		vol, mount := chunksVolume(h.Size)
		ro := mount
		ro.ReadOnly = true // the server only reads the list the fill kept
		volumes, createMounts, serveMounts = append(volumes, vol), append(createMounts, mount), append(serveMounts, ro)
		serveArgs = append(serveArgs, "--chunks-dir", ChunksDir)
	}
	if h.Base != "" {
		// Both containers: the init container fetches and serves while it
		// fills, the server serves late joiners and retries.
		da := deltaBaseArgs(b, h.Base)
		args, serveArgs = append(args, da...), append(serveArgs, da...)
		vol, mount := baseTokenVolume(h.Base)
		volumes = append(volumes, vol)
		createMounts, serveMounts = append(createMounts, mounts[1], mount), append(serveMounts, mount)
		addMemory(&res, deltaMemory)
	}
	create := dataPlaneContainer(cfg, ContainerBlobCreate, args, cfg.fillResources(res), fetchPrivilege(b, h.Role))
	create.VolumeMounts = createMounts
	create.Ports = fetchPorts(b, h.Role)
	serve := serveContainer(cfg, b, BlobDir, res, serveArgs)
	serve.VolumeMounts = append(serve.VolumeMounts, serveMounts...)
	serve.Ports = append([]corev1.ContainerPort{{Name: ReplicationPortName, ContainerPort: ReplicationPort, Protocol: corev1.ProtocolTCP}}, serve.Ports...)

	labels := BlobHolderLabels(b)
	labels[LabelNodeHash] = NodeHash(h.Node)
	labels[LabelAttempt] = strconv.Itoa(int(h.Attempt))
	ann := map[string]string{AnnotationBlob: b.Name, AnnotationNode: h.Node, AnnotationRole: string(h.Role)}
	if h.PageFallback != "" {
		ann[AnnotationPageFallback] = h.PageFallback
	}
	if network != "" {
		ann[AnnotationNetworks] = network
	}
	if h.Base != "" {
		ann[AnnotationDeltaBase] = h.Base
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: SourceHolderPodName(b.Name, h.Node, h.Attempt), Namespace: b.Namespace,
			Labels: labels, Annotations: ann},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			Affinity:                      cfg.affinity(pinToNode(h.Node)),
			InitContainers:                []corev1.Container{create},
			Containers:                    []corev1.Container{serve},
			Volumes:                       volumes,
			SecurityContext:               podSecurity(),
			Tolerations:                   cfg.tolerations(b.Spec.Scheduling),
			PriorityClassName:             cfg.priorityClass(b.Spec.Scheduling),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To(int64(10)),
		},
	}
	if network == "" {
		// A DNS name through BlobHolderService. On a network, relays fetch
		// from the holders' IPs there: a name resolves to the pod IP.
		pod.Spec.Hostname, pod.Spec.Subdomain = HolderHostname(h.Node), HolderServiceName(b.Name)
	}
	return pod
}

// maxFetchFrom is the longest --fetch-from pfs takes: it copies the list
// into a 4096-byte buffer (tools/pfs/cli.h, upbuf), NUL included.
const maxFetchFrom = 4095

// fetchFrom is the --fetch-from value: the upstreams, nearest first, less
// the farthest ones that do not fit in maxFetchFrom (eight DNS names in a
// namespace and of a blob with 63-character names take 1183: they fit).
func fetchFrom(upstreams []string) string {
	out := ""
	for _, u := range upstreams {
		next := u
		if out != "" {
			next = out + "," + u
		}
		if len(next) > maxFetchFrom {
			break
		}
		out = next
	}
	return out
}

// datagramWindowMemory is what a datagram transport holds besides the
// blob, per container: 16 MiB of reassembly slots (receiving), 16 MiB of
// 4 KiB UMEM (AF_XDP), 16 MiB of send slots per connection served (a tree
// serves two). TCP holds nothing: it streams from the blob.
var datagramWindowMemory = resource.MustParse("64Mi")

// DatagramMemory is the memory a source holder replicating over tr needs
// besides HolderResources: datagramWindowMemory for UDP and AFXDP, 0 for
// TCP. Admission counts it too.
func DatagramMemory(tr pfsv1alpha1.Transport) resource.Quantity {
	if tr == pfsv1alpha1.TransportTCP || tr == "" {
		return resource.Quantity{}
	}
	return datagramWindowMemory.DeepCopy()
}

// addDatagramMemory raises a UDP or AFXDP holder's memory by
// DatagramMemory (requests == limits stay equal: Guaranteed).
func addDatagramMemory(res *corev1.ResourceRequirements, b *pfsv1alpha1.PfsBlob) {
	if extra := DatagramMemory(b.Spec.Replication.TransportOrDefault()); !extra.IsZero() {
		addMemory(res, extra)
	}
}

// fetchTransportArgs are a relay's options for receiving from its
// upstreams. TCP adds none, so a TCP blob's holders keep the command line
// they had before datagram replication. The datagrams arrive on the
// default --fetch-data-port, ReplicationPort. AF_XDP on a network binds
// its interface; on the pod network pfs finds the interface itself.
func fetchTransportArgs(b *pfsv1alpha1.PfsBlob) []string {
	r := b.Spec.Replication
	tr := r.TransportOrDefault()
	if tr == pfsv1alpha1.TransportTCP {
		return nil
	}
	args := []string{"--fetch-transport", cliTransport(tr)}
	if ifname := xdpInterface(r.NetworkOrDefault()); tr == pfsv1alpha1.TransportAFXDP && ifname != "" {
		args = append(args, "--fetch-if", ifname)
	}
	return args
}

// fetchPrivilege is the create container's profile: an AFXDP relay attaches
// an XDP program and an AF_XDP socket there, as a transfer's AF_XDP pod
// does; the origin and every serving container send over plain sockets
// and need no capability.
func fetchPrivilege(b *pfsv1alpha1.PfsBlob, role pfsv1alpha1.BlobNodeRole) privilege {
	if role == pfsv1alpha1.BlobNodeRelay && b.Spec.Replication.TransportOrDefault() == pfsv1alpha1.TransportAFXDP {
		return privAFXDP
	}
	return privRootNoCaps
}

// fetchPorts declares the UDP port a datagram relay receives on, in the
// container that receives: the init container fetches, while serving (in
// either container) sends from an ephemeral port.
func fetchPorts(b *pfsv1alpha1.PfsBlob, role pfsv1alpha1.BlobNodeRole) []corev1.ContainerPort {
	if role != pfsv1alpha1.BlobNodeRelay || b.Spec.Replication.TransportOrDefault() == pfsv1alpha1.TransportTCP {
		return nil
	}
	return []corev1.ContainerPort{{Name: ReplicationDataPortName, ContainerPort: ReplicationPort, Protocol: corev1.ProtocolUDP}}
}

// replicationNetwork is the NetworkAttachmentDefinition the holders
// replicate over and the device-plugin resource behind it, as a transfer
// pod requests its endpoint's network; both empty for the pod network.
func replicationNetwork(b *pfsv1alpha1.PfsBlob) (network, resourceName string) {
	if r := b.Spec.Replication; r != nil && r.Network != "" {
		return r.Network, r.ResourceName
	}
	return "", ""
}

// pinToNode is the node affinity the DaemonSet controller gives its pods:
// required, on the node's metadata.name.
func pinToNode(node string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}}
}
