// SPDX-License-Identifier: Apache-2.0

// Package podspec builds the children the controllers create: the blob
// holder DaemonSet and its token Secret, a source blob's scan and holder
// pods and their headless Service, the receiver and sender pods of a
// transfer, and the pod of a pcore job. Builders take their inputs and return
// objects; they make no API calls and set no owner references (the
// controller does, with ctrl.SetControllerReference), so each is a pure
// function with a table test.
package podspec

import (
	"fmt"
	"hash/fnv"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels and annotations on every child. Label values are limited to 63
// characters, so children are found by their owner's UID; the owner's name,
// which may be longer, is an annotation.
const (
	LabelManagedBy     = "app.kubernetes.io/managed-by"
	ManagedBy          = "packetfs-operator"
	LabelComponent     = "app.kubernetes.io/component"
	LabelBlobUID       = "pfs.packetfs.io/blob-uid"
	LabelTransferUID   = "pfs.packetfs.io/transfer-uid"
	LabelPcoreJobUID   = "pfs.packetfs.io/pcorejob-uid"
	LabelAttempt       = "pfs.packetfs.io/attempt"
	AnnotationBlob     = "pfs.packetfs.io/blob"
	AnnotationOwner    = "pfs.packetfs.io/owner"
	AnnotationNetworks = "k8s.v1.cni.cncf.io/networks"
	// AnnotationNetworkStatus is written by Multus with each interface's IPs.
	AnnotationNetworkStatus = "k8s.v1.cni.cncf.io/network-status"
	// AnnotationTemplateHash on the DaemonSet records the desired template so
	// the controller updates it only when the desired state changed.
	AnnotationTemplateHash = "pfs.packetfs.io/template-hash"
	// LabelNodeHash on a source blob's holder pod is NodeHash of its node,
	// so the pods of one node are found with a label selector.
	LabelNodeHash = "pfs.packetfs.io/node-hash"
	// AnnotationNode on a source blob's holder pod names its node (node
	// names may exceed a label value's 63 characters).
	AnnotationNode = "pfs.packetfs.io/node"
	// AnnotationRole on a source blob's holder pod is Origin or Relay.
	AnnotationRole = "pfs.packetfs.io/role"
	// AnnotationDeltaBase on a source blob's holder pod names the base
	// (spec.base) it was given: Ready on its node when the pod was made.
	AnnotationDeltaBase = "pfs.packetfs.io/delta-base"
	// AnnotationPageFallback on a source blob's holder pod says why the
	// operator asked it for 4Ki pages instead of spec.pageSize (admission
	// found too few free hugepages on the node).
	AnnotationPageFallback = "pfs.packetfs.io/page-fallback"
	// AnnotationNUMAPlacement on a transfer pod is the operator's NUMA
	// decision for it (status.<side>.numaPlacement as JSON), so status can
	// be rebuilt from the pod when the status write after its creation was lost.
	AnnotationNUMAPlacement = "pfs.packetfs.io/numa-placement"
)

// Components (values of LabelComponent).
const (
	ComponentBlobHolder = "blob-holder"
	ComponentBlobScan   = "blob-scan"
	ComponentReceiver   = "receiver"
	ComponentSender     = "sender"
	ComponentPcore      = "pcore"
)

// Container names.
const (
	ContainerBlobCreate = "create"
	ContainerBlobServe  = "serve"
	ContainerBlobScan   = "scan"
	ContainerReceiver   = "receiver"
	ContainerSender     = "sender"
	ContainerPcore      = "pcore"
)

// Paths inside the data-plane containers.
const (
	// BlobDir is where the holder's blob file lives (hugetlbfs or tmpfs emptyDir).
	BlobDir = "/dev/hugepages-blob"
	// SocketRoot is the host directory of the blob sockets, one subdirectory
	// per namespace, mounted at the same path in holders and consumers.
	SocketRoot = "/run/packetfs"
	// TokenDir holds the blob's token Secret; the token is the file "token".
	TokenDir  = "/etc/packetfs/token"
	TokenKey  = "token"
	TokenFile = TokenDir + "/" + TokenKey
	// SourceTokenDir holds the token Secret of a Delta sender's second blob,
	// the source (spec.delta.sourceRef); TokenDir holds the base's.
	SourceTokenDir  = "/etc/packetfs/source-token"
	SourceTokenFile = SourceTokenDir + "/" + TokenKey
	// BaseTokenDir holds the token of a source blob's base (spec.base) in
	// its holder pod.
	BaseTokenDir  = "/etc/packetfs/base-token"
	BaseTokenFile = BaseTokenDir + "/" + TokenKey
	// TransferTokenDir holds a PfsTransfer's own token Secret in both of
	// its pods (pfs send/recv --token-file).
	TransferTokenDir  = "/etc/packetfs/transfer-token"
	TransferTokenFile = TransferTokenDir + "/" + TokenKey
	// RunDir is a small writable emptyDir (the root filesystem is read-only).
	RunDir = "/run/pfs"
	// ReadyFile is created by `pfs recv --ready-file` once it listens.
	ReadyFile = RunDir + "/ready"
	// TerminationLog is where every data-plane command writes its JSON result.
	TerminationLog = "/dev/termination-log"
	// ReceiverPort is the port `pfs recv` listens on (TCP and UDP).
	ReceiverPort = 5000
	// SourceDir is where a blob's source is mounted (read-only) in the scan
	// pod and the origin holder; it is the --source-root.
	SourceDir = "/source"
	// ReplicationPort is where holders of a source blob serve it to other
	// nodes (--replicate-listen), named ReplicationPortName.
	ReplicationPort     = 7470
	ReplicationPortName = "repl"
	// MetricsPortName names a holder's Prometheus page port
	// (Config.MetricsPort; a PodMonitor selects it by this name).
	MetricsPortName = "metrics"
	// DefaultMetricsPort is the manager's --holder-metrics-port default.
	DefaultMetricsPort = 9470
	// ReplicationDataPortName names ReplicationPort over UDP, where a UDP or
	// AFXDP relay receives its upstreams' datagrams (pfs --fetch-data-port
	// defaults to the --replicate-listen port).
	ReplicationDataPortName = "repl-data"
	// maxSocketPath is sun_path's size minus the terminating NUL.
	maxSocketPath = 107
)

// ChildName derives a child's name from its owner's name and a suffix,
// keeping it within maxLen characters (a DNS label for pods: 63). A name
// that would be too long is cut and given a hash of the full name, so two
// owners never share a child name.
func ChildName(owner, suffix string, maxLen int) string {
	name := owner + "-" + suffix
	if len(name) <= maxLen {
		return name
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	tail := fmt.Sprintf("-%08x-%s", h.Sum32(), suffix)
	cut := maxLen - len(tail)
	if cut < 1 {
		cut = 1
	}
	head := owner[:cut]
	for len(head) > 1 && (head[len(head)-1] == '-' || head[len(head)-1] == '.') {
		head = head[:len(head)-1]
	}
	return head + tail
}

// Name limits: a pod name is also its hostname (a DNS label); a DaemonSet's
// pods get a 5-character suffix and its name ends up in a 63-character label;
// a Service name is a DNS-1035 label.
const (
	PodNameMax       = 63
	DaemonSetNameMax = 52
	ServiceNameMax   = 63
)

// HolderName is the name of a blob's holder DaemonSet.
func HolderName(blob string) string { return ChildName(blob, "holder", DaemonSetNameMax) }

// ScanPodName is the name of the pod that scans a blob's source.
func ScanPodName(blob string) string { return ChildName(HolderName(blob), "scan", PodNameMax) }

// NodeHash is a short, stable hash of a node name (8 hex digits).
func NodeHash(node string) string { return shortHash(node) }

// shortHash is 8 hex digits of FNV-1a.
func shortHash(s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

// HolderServiceName is the name of the headless Service that gives a
// source blob's holder pods their DNS names: "<blob>-holders". A Service
// name is a DNS-1035 label, stricter than a blob name (a DNS subdomain: it
// may hold dots or start with a digit); such a blob name is rewritten and
// given a hash of itself, so two blobs never share a Service.
func HolderServiceName(blob string) string {
	if name := ChildName(blob, "holders", ServiceNameMax); len(validation.IsDNS1035Label(name)) == 0 {
		return name
	}
	label := strings.ReplaceAll(blob, ".", "-")
	if c := label[0]; c < 'a' || c > 'z' {
		label = "b-" + label
	}
	return ChildName(label, shortHash(blob)+"-holders", ServiceNameMax)
}

// HolderHostname is the spec.hostname of a source blob's holder pod on
// node, every attempt alike: the DNS name follows the node, so a relay
// whose upstream was retried reaches the new pod under the old name.
func HolderHostname(node string) string { return "h-" + NodeHash(node) }

// HolderDNSName is the DNS name of a source blob's holder on node:
// "h-<nodehash>.<service>.<namespace>.svc". Namespace-qualified, it is the
// form the Kubernetes DNS specification documents for a pod with a
// hostname and subdomain; a pod resolves it through the search path the
// kubelet writes for it (its last entry, the cluster domain), whatever
// that domain is called, which the operator does not know.
func HolderDNSName(blob, namespace, node string) string {
	return HolderHostname(node) + "." + HolderServiceName(blob) + "." + namespace + ".svc"
}

// PodDNSName is the name a pod with spec.hostname and spec.subdomain has
// in the cluster's DNS (once its subdomain's headless Service selects it),
// in HolderDNSName's form; "" for a pod without them.
func PodDNSName(p *corev1.Pod) string {
	if p.Spec.Hostname == "" || p.Spec.Subdomain == "" {
		return ""
	}
	return p.Spec.Hostname + "." + p.Spec.Subdomain + "." + p.Namespace + ".svc"
}

// SourceHolderPodName is the name of attempt n of a source blob's holder
// pod on node: "<blob>-holder-<nodehash>", then "-2", "-3" for retries.
func SourceHolderPodName(blob, node string, attempt int32) string {
	suffix := NodeHash(node)
	if attempt > 1 {
		suffix += fmt.Sprintf("-%d", attempt)
	}
	return ChildName(HolderName(blob), suffix, PodNameMax)
}

// TokenSecretName is the name of a blob's token Secret.
func TokenSecretName(blob string) string { return ChildName(blob, "blob-token", 253) }

// TransferTokenSecretName is the name of a PfsTransfer's token Secret.
func TransferTokenSecretName(transfer string) string {
	return ChildName(transfer, "transfer-token", 253)
}

// SocketDir is the host (and container) directory of a namespace's sockets.
func SocketDir(namespace string) string { return path.Join(SocketRoot, namespace) }

// SocketPath is where a blob's holder listens. The file is named after the
// blob when the path fits in a Unix socket address, else after a hash of it.
func SocketPath(namespace, blob string) string {
	p := path.Join(SocketDir(namespace), blob+".sock")
	if len(p) <= maxSocketPath {
		return p
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(blob))
	return path.Join(SocketDir(namespace), fmt.Sprintf("%016x.sock", h.Sum64()))
}
