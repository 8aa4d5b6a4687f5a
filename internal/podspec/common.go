// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// Config is what every data-plane pod shares; it comes from the manager's flags.
type Config struct {
	// Image is the data-plane image holding the static pfs binary.
	Image string
	// PullPolicy is the image pull policy.
	PullPolicy corev1.PullPolicy
	// Binary is the absolute path of pfs in the image.
	Binary string
	// HolderCPU is the CPU request (== limit) of a blob holder's containers;
	// zero means one whole CPU. A holder fills its blob once and then only
	// answers fd requests, so on small nodes a fraction (e.g. 200m) leaves the
	// node's exclusive CPUs to the transfers and pcores (requests == limits
	// either way; HolderFillCPU may raise the init container's limit).
	HolderCPU resource.Quantity
	// HolderFillCPU is the CPU limit of a holder's init container, the one
	// that fills the blob (reads the source, fetches and verifies, or
	// writes a seeded fill): it needs cores for seconds, the holder almost
	// none for as long as it serves. Its request stays HolderCPU, so the
	// scheduler counts nothing more (a pod's effective request is the
	// larger of its init container's and its containers'), and the fill
	// runs on idle CPUs up to this limit. Above HolderCPU it makes the pod
	// Burstable; zero means HolderCPU (Guaranteed, today's pods).
	HolderFillCPU resource.Quantity
	// Log is how the data plane logs in every pod: the same format, level
	// and time encoding as the operator's zap logs (set from one set of
	// chart values), through PFS_LOG_* in each container's environment.
	Log DataPlaneLog
	// SocketVolume is how the namespace's socket directory reaches the
	// pods; empty means SocketVolumeHostPath.
	SocketVolume SocketVolumeType
	// MetricsPort is where every holder serves its Prometheus page
	// (--metrics-listen :PORT on both of its containers, the port named
	// MetricsPortName on the server), and a transfer's receiver its own;
	// the operator reads a filling holder's and a running transfer's
	// progress from them. Zero: no pages, and status shows no progress.
	MetricsPort int32
	// Operands is what every pod the operator creates carries so it runs
	// where the work is: tolerations (GPU nodes are tainted) and a
	// PriorityClass (so GPU jobs do not preempt the holders).
	Operands OperandPolicy
}

// OperandPolicy is the scheduling every operand pod (holders, the scan,
// transfer and pcore pods) gets from the manager's --operand-tolerations,
// --operand-priority-class and --operand-node-affinity (chart values
// operands.*).
type OperandPolicy struct {
	Tolerations       []corev1.Toleration
	PriorityClassName string
	// NodeAffinity confines operand pods to some nodes (or prefers some);
	// a pod the operator pins to a node gets both (affinity).
	NodeAffinity *corev1.NodeAffinity
}

// metricsArgs is --metrics-listen for a holder's containers, or nothing.
func (cfg Config) metricsArgs() []string {
	if cfg.MetricsPort == 0 {
		return nil
	}
	return []string{"--metrics-listen", ":" + strconv.Itoa(int(cfg.MetricsPort))}
}

// metricsPorts declares the page's port on a holder's server container.
func (cfg Config) metricsPorts() []corev1.ContainerPort {
	if cfg.MetricsPort == 0 {
		return nil
	}
	return []corev1.ContainerPort{{Name: MetricsPortName, ContainerPort: cfg.MetricsPort, Protocol: corev1.ProtocolTCP}}
}

// SocketVolumeType says how a pod gets its namespace's socket directory.
type SocketVolumeType string

const (
	// SocketVolumeHostPath mounts SocketDir as a hostPath volume: no node
	// agent needed, but Pod Security admits it only in privileged namespaces.
	SocketVolumeHostPath SocketVolumeType = "hostPath"
	// SocketVolumeCSI asks the CSI node plugin (CSIDriverName) for the
	// directory as an ephemeral inline volume, which Pod Security baseline
	// and restricted admit; the plugin derives the directory from the pod's
	// namespace, so the pod names nothing.
	SocketVolumeCSI SocketVolumeType = "csi"
)

// CSIDriverName is the CSI node plugin's driver (internal/csinode.DriverName).
const CSIDriverName = "csi.packetfs.io"

// holderCPU is the holder's CPU quantity: cfg.HolderCPU, else 1.
func (cfg Config) holderCPU() resource.Quantity {
	if cfg.HolderCPU.IsZero() {
		return *resource.NewQuantity(1, resource.DecimalSI)
	}
	return cfg.HolderCPU.DeepCopy()
}

// DataPlaneLog is pfs's --log-format (text or json), --log-level (error,
// warn, info, debug) and --log-time-encoding (zap's names: epoch, millis,
// nano, iso8601, rfc3339, rfc3339nano). Empty fields are pfs's defaults.
type DataPlaneLog struct {
	Format, Level, TimeEncoding string
}

// env is the environment that asks pfs for these logs.
func (l DataPlaneLog) env() []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, v := range []struct{ name, value string }{{"PFS_LOG_FORMAT", l.Format}, {"PFS_LOG_LEVEL", l.Level},
		{"PFS_LOG_TIME_ENCODING", l.TimeEncoding}} {
		if v.value != "" {
			env = append(env, corev1.EnvVar{Name: v.name, Value: v.value})
		}
	}
	return env
}

// fillResources are a holder init container's resources: res with its CPU
// limit raised to HolderFillCPU when that is larger (never lowered below
// the request).
func (cfg Config) fillResources(res corev1.ResourceRequirements) corev1.ResourceRequirements {
	if cfg.HolderFillCPU.Cmp(res.Limits[corev1.ResourceCPU]) <= 0 {
		return res
	}
	out := corev1.ResourceRequirements{Requests: res.Requests.DeepCopy(), Limits: res.Limits.DeepCopy()}
	out.Limits[corev1.ResourceCPU] = cfg.HolderFillCPU.DeepCopy()
	return out
}

// DefaultBinary is where the data-plane image installs pfs.
const DefaultBinary = "/usr/local/bin/pfs"

// nonRootUID is the user every data-plane container runs as unless it needs
// root's ownership of host paths or capabilities (see securityFor).
const nonRootUID = 65532

// podBaseMemory is the memory of a data-plane container besides its blob:
// the binary, stacks, socket buffers and gram slabs.
var podBaseMemory = resource.MustParse("256Mi")

// holderBaseMemory is the memory of a holder besides its blob.
var holderBaseMemory = resource.MustParse("64Mi")

// privilege is the security profile of a container.
type privilege int

const (
	// privNonRoot: uid 65532, no capabilities (TCP, UDP, pcore).
	privNonRoot privilege = iota
	// privRootNoCaps: uid 0 with every capability dropped. The blob holder
	// creates its socket in a host directory owned by root, mode 0755 (the
	// kubelet creates it for hostPath DirectoryOrCreate, the CSI node plugin
	// for its volume); owning it needs uid 0, not CAP_DAC_OVERRIDE.
	privRootNoCaps
	// privAFXDP: uid 0 with exactly NET_RAW, NET_ADMIN, BPF and IPC_LOCK.
	// A non-root process does not get added capabilities in its effective
	// set (Kubernetes has no ambient capabilities), so non-root AF_XDP would
	// need file capabilities on the binary plus allowPrivilegeEscalation,
	// which is the weaker choice: uid 0 with four capabilities and no
	// privilege escalation keeps the capability set fixed and visible here.
	privAFXDP
)

// AFXDPCapabilities are the capabilities an AF_XDP endpoint needs: raw
// sockets (NET_RAW), attaching its XDP program and queue setup (NET_ADMIN),
// loading BPF (BPF) and pinning its UMEM beyond the 8 MiB memlock limit (IPC_LOCK).
var AFXDPCapabilities = []corev1.Capability{"NET_RAW", "NET_ADMIN", "BPF", "IPC_LOCK"}

// secondaryIfName is the interface Multus creates for the one network a
// data-plane pod lists in k8s.v1.cni.cncf.io/networks: the annotation names
// no interface, so Multus numbers it net1. AF_XDP binds it.
const secondaryIfName = "net1"

// xdpInterface is the interface an AF_XDP socket binds in a pod attached to
// network, "" on the pod network (pfs then takes the interface its TCP
// connection runs over).
func xdpInterface(network string) string {
	if network == "" {
		return ""
	}
	return secondaryIfName
}

func securityFor(p privilege) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	switch p {
	case privNonRoot:
		sc.RunAsNonRoot = ptr.To(true)
		sc.RunAsUser = ptr.To(int64(nonRootUID))
		sc.RunAsGroup = ptr.To(int64(nonRootUID))
	case privRootNoCaps:
		sc.RunAsNonRoot = ptr.To(false)
		sc.RunAsUser = ptr.To(int64(0))
		sc.RunAsGroup = ptr.To(int64(0))
	case privAFXDP:
		sc.RunAsNonRoot = ptr.To(false)
		sc.RunAsUser = ptr.To(int64(0))
		sc.RunAsGroup = ptr.To(int64(0))
		sc.Capabilities.Add = append([]corev1.Capability(nil), AFXDPCapabilities...)
	}
	return sc
}

// podSecurity is the pod-level context: seccomp, and the group that may read
// the token Secret (fsGroup applies to Secret volumes, not to hostPath nor
// to the CSI socket volume, whose driver has fsGroupPolicy None).
func podSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		FSGroup:        ptr.To(int64(nonRootUID)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// guaranteed returns requests == limits, so the pod is in the Guaranteed QoS
// class and, with whole CPUs, the static CPU manager pins it.
func guaranteed(cpu int64, memory resource.Quantity, extra corev1.ResourceList) corev1.ResourceRequirements {
	return guaranteedQ(*resource.NewQuantity(cpu, resource.DecimalSI), memory, extra)
}

// guaranteedQ is guaranteed with a CPU quantity that may be a fraction.
func guaranteedQ(cpu, memory resource.Quantity, extra corev1.ResourceList) corev1.ResourceRequirements {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:    cpu,
		corev1.ResourceMemory: memory,
	}
	for k, v := range extra {
		rl[k] = v
	}
	return corev1.ResourceRequirements{Requests: rl.DeepCopy(), Limits: rl}
}

// roundUp rounds n up to a multiple of unit.
func roundUp(n, unit int64) int64 {
	if unit <= 1 {
		return n
	}
	return (n + unit - 1) / unit * unit
}

// hugePageBytes is the hugetlb page size of a page kind; 0 for THP and 4Ki,
// which use ordinary memory.
func hugePageBytes(p pfsv1alpha1.PageSize) int64 {
	switch p {
	case pfsv1alpha1.PageSize1Gi:
		return 1 << 30
	case pfsv1alpha1.PageSize2Mi, "":
		return 2 << 20
	}
	return 0
}

// HugePagesResource is the resource name of a hugetlb page kind ("" for THP/4Ki).
func HugePagesResource(p pfsv1alpha1.PageSize) corev1.ResourceName {
	switch p {
	case pfsv1alpha1.PageSize1Gi:
		return "hugepages-1Gi"
	case pfsv1alpha1.PageSize2Mi, "":
		return "hugepages-2Mi"
	}
	return ""
}

// cliPage is the pfs CLI's name of a page kind (--page).
func cliPage(p pfsv1alpha1.PageSize) string {
	switch p {
	case pfsv1alpha1.PageSize1Gi:
		return "1g"
	case pfsv1alpha1.PageSizeTHP:
		return "thp"
	case pfsv1alpha1.PageSize4Ki:
		return "4k"
	}
	return "2m"
}

// blobConsumerVolumes mount the namespace's socket directory and the blob's
// token into a consumer pod, which then asks the holder for the blob's fd.
// A consumer only connects to sockets: through the CSI volume its mount is
// read-only.
func blobConsumerVolumes(cfg Config, namespace, blob string) ([]corev1.Volume, []corev1.VolumeMount) {
	return []corev1.Volume{socketVolume(cfg, namespace, socketsConnect), tokenVolume(blob)},
		[]corev1.VolumeMount{
			socketMount(cfg, namespace, socketsConnect),
			{Name: volToken, MountPath: TokenDir, ReadOnly: true},
		}
}

// blobConsumerArgs are the pfs options that fetch the blob from its holder.
func blobConsumerArgs(namespace, blob string) []string {
	return []string{"--blob-socket", SocketPath(namespace, blob), "--blob-token-file", TokenFile}
}

// cmdBlob is the pfs subcommand of the holder's and scan's command lines.
const cmdBlob = "blob"

const (
	volBlob    = "blob"
	volSockets = "blob-sockets"
	volToken   = "blob-token"
	// volSourceToken is a Delta sender's source token (volToken is the base's).
	volSourceToken = "source-token"
	// volTransferToken is the transfer's own token (TransferTokenDir).
	volTransferToken = "transfer-token"
	volRun           = "run"
)

// socketUse is what a pod does in the socket directory.
type socketUse int

const (
	// socketsCreate: the pod listens there (the holders).
	socketsCreate socketUse = iota
	// socketsConnect: the pod only connects (transfers, pcores).
	socketsConnect
)

// readOnly: connect() works through a read-only mount; bind() does not.
func (u socketUse) readOnly() bool { return u == socketsConnect }

// socketVolume is the namespace's socket directory as cfg.SocketVolume says.
// The CSI volume carries no attributes: the plugin takes the namespace from
// the kubelet, never from the pod.
func socketVolume(cfg Config, namespace string, use socketUse) corev1.Volume {
	if cfg.SocketVolume == SocketVolumeCSI {
		return corev1.Volume{Name: volSockets, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
			Driver: CSIDriverName, ReadOnly: ptr.To(use.readOnly())}}}
	}
	return corev1.Volume{Name: volSockets, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
		Path: SocketDir(namespace), Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}}
}

// socketMount mounts the socket directory where it is on the node, so a
// socket's path is the same in every pod and in the holder's arguments.
// Read-only for a consumer of the CSI volume; the hostPath mounts stay as
// they always were.
func socketMount(cfg Config, namespace string, use socketUse) corev1.VolumeMount {
	return corev1.VolumeMount{Name: volSockets, MountPath: SocketDir(namespace),
		ReadOnly: cfg.SocketVolume == SocketVolumeCSI && use.readOnly()}
}

func tokenVolume(blob string) corev1.Volume { return tokenVolumeNamed(volToken, blob) }

func tokenVolumeNamed(name, blob string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: TokenSecretName(blob), DefaultMode: ptr.To(int32(0o440))}}}
}

// sourceTokenVolume mounts a second blob's token at SourceTokenDir; its
// socket is in the namespace's socket directory, which blobConsumerVolumes
// mounts with the first blob.
func sourceTokenVolume(blob string) (corev1.Volume, corev1.VolumeMount) {
	return tokenVolumeNamed(volSourceToken, blob), corev1.VolumeMount{Name: volSourceToken, MountPath: SourceTokenDir, ReadOnly: true}
}

// runVolume is a small writable directory for the ready file.
func runVolume() (corev1.Volume, corev1.VolumeMount) {
	return corev1.Volume{Name: volRun, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Mi"))}}},
		corev1.VolumeMount{Name: volRun, MountPath: RunDir}
}

// dataPlaneContainer is a container running pfs with its result in the
// termination log.
func dataPlaneContainer(cfg Config, name string, args []string, res corev1.ResourceRequirements, p privilege) corev1.Container {
	return corev1.Container{
		Name:                     name,
		Image:                    cfg.Image,
		ImagePullPolicy:          cfg.PullPolicy,
		Command:                  []string{cfg.Binary},
		Args:                     args,
		Resources:                res,
		Env:                      cfg.Log.env(),
		SecurityContext:          securityFor(p),
		TerminationMessagePath:   TerminationLog,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
}
