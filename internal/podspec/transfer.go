// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
)

// AcceptTimeoutSeconds is how long a receiver waits for its sender: the
// sender is created once the receiver is ready and must still be scheduled
// and started.
const AcceptTimeoutSeconds = 300

// TransferInputs are what the transfer pods depend on besides the spec.
type TransferInputs struct {
	// Attempt numbers the attempt (0 for the first); each has its own pods.
	Attempt int32
	// Blob is the referenced PfsBlob; nil without spec.blobRef.
	Blob *pfsv1alpha1.PfsBlob
	// BlobNodes are the nodes holding a Ready copy of the blob.
	BlobNodes []string
	// Source is the PfsBlob of spec.delta.sourceRef (mode Delta); nil otherwise.
	Source *pfsv1alpha1.PfsBlob
	// Delta is where the pods of a Delta transfer run (mode Delta).
	Delta placement.Delta
	// NUMA is the NUMA decision for the pod being built (nil: none): the
	// one node it runs on ("": the nodes above, else the scheduler's
	// choice) and the zone pfs binds its memory to (--numa; nil: none).
	// The pod carries it in AnnotationNUMAPlacement.
	NUMA *pfsv1alpha1.NUMAPlacement
}

// NUMAPlacementOf reads the decision a transfer pod carries; nil when it
// carries none or it does not parse.
func NUMAPlacementOf(pod *corev1.Pod) *pfsv1alpha1.NUMAPlacement {
	raw, ok := pod.Annotations[AnnotationNUMAPlacement]
	if !ok {
		return nil
	}
	p := &pfsv1alpha1.NUMAPlacement{}
	if err := json.Unmarshal([]byte(raw), p); err != nil {
		return nil
	}
	return p
}

// TransferPodName is the name of one side's pod in one attempt.
func TransferPodName(transfer string, attempt int32, component string) string {
	short := "recv"
	if component == ComponentSender {
		short = "send"
	}
	return ChildName(transfer, fmt.Sprintf("a%d-%s", attempt, short), PodNameMax)
}

// TransferPodLabels select one attempt's pods of a transfer.
func TransferPodLabels(x *pfsv1alpha1.PfsTransfer, attempt int32, component string) map[string]string {
	l := map[string]string{
		LabelManagedBy:   ManagedBy,
		LabelTransferUID: string(x.UID),
		LabelAttempt:     strconv.Itoa(int(attempt)),
	}
	if component != "" {
		l[LabelComponent] = component
	}
	return l
}

// RangeLength is the length of the range a transfer or job works on: the
// spec's range, else the whole blob (0 when neither is known).
func RangeLength(r *pfsv1alpha1.Range, blob *pfsv1alpha1.PfsBlob) int64 {
	if r != nil && !r.Length.IsZero() {
		return r.Length.Value()
	}
	if blob != nil {
		return blob.EffectiveSize()
	}
	return 0
}

// EffectiveBytes is how many bytes a transfer moves: totalBytes, else
// passes times the range, else the range once.
func EffectiveBytes(x *pfsv1alpha1.PfsTransfer, blob *pfsv1alpha1.PfsBlob) int64 {
	if x.Spec.TotalBytes != nil {
		return x.Spec.TotalBytes.Value()
	}
	n := RangeLength(x.Spec.Range, blob)
	if x.Spec.Passes != nil {
		n *= int64(*x.Spec.Passes)
	}
	return n
}

// DeadlineBackstop is how much later than its run's activeDeadlineSeconds
// the kubelet ends a pod by its own deadline. The operator ends the run at
// the deadline and deletes the pods still running; the kubelet's deadline,
// counted from the pod's start, is for an operator that is down. Were the
// two the same, the kubelet would often end a pod first, and the run would
// end on that pod's failure instead, its pods kept as failed pods are.
const DeadlineBackstop = 30

// PodDeadline is a run pod's activeDeadlineSeconds: the run's plus
// DeadlineBackstop (nil: none).
func PodDeadline(run *int64) *int64 {
	if run == nil {
		return nil
	}
	return ptr.To(*run + DeadlineBackstop)
}

// TransferGracePeriod is the seconds a deleted transfer pod gets between
// SIGTERM, on which pfs ends at once, and SIGKILL.
const TransferGracePeriod = 10

// ReceiverPod builds the receiving side. It listens, creates ReadyFile once
// it does, and its readiness probe (pfs itself: the image has no shell)
// reports that file, so the controller starts the sender only when the
// receiver can take it. A TCP probe would not do: `pfs recv` accepts one
// peer and would take the kubelet's probe connection for its sender.
func ReceiverPod(cfg Config, x *pfsv1alpha1.PfsTransfer, in TransferInputs) *corev1.Pod {
	var side transferSide
	if x.Spec.Mode == pfsv1alpha1.ModeDelta {
		side = deltaReceiver(x, in)
	} else {
		side = receiver(x, in)
	}
	pod := transferPod(cfg, x, in, side)
	c := &pod.Spec.Containers[0]
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
			Command: []string{cfg.Binary, "probe", "--ready-file", ReadyFile}}},
		PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 1,
	}
	// Every transport opens its control connection (handshake, repair
	// requests, verdict) on the TCP port; UDP carries the grams on the
	// same port number, AF_XDP in frames our XDP program takes off the
	// secondary interface before the kernel's stack (no port to declare).
	c.Ports = []corev1.ContainerPort{{Name: "control", ContainerPort: ReceiverPort, Protocol: corev1.ProtocolTCP}}
	if x.Spec.Transport == pfsv1alpha1.TransportUDP {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: "grams", ContainerPort: ReceiverPort, Protocol: corev1.ProtocolUDP})
	}
	if x.Spec.Mode != pfsv1alpha1.ModeDelta {
		// How far it got, for status.progress while it runs (a Delta
		// receiver has no page).
		c.Args = append(c.Args, cfg.metricsArgs()...)
		c.Ports = append(c.Ports, cfg.metricsPorts()...)
	}
	return pod
}

// receiver is the receiving side of the gram modes: it listens for grams
// and, but in Payload mode, executes them over its copy of the blob.
func receiver(x *pfsv1alpha1.PfsTransfer, in TransferInputs) transferSide {
	args := recvArgs(x)
	// The receiver does no more work than the sender was told to plan:
	// anyone else who reaches its port first with a larger HELLO is
	// refused (in offset and arithmetic modes a few bytes name gigabytes
	// of the receiver's blob to hash).
	if n := EffectiveBytes(x, in.Blob); n > 0 {
		args = append(args, "--max-work", strconv.FormatInt(n, 10))
	}
	args = append(args, transportArgs(x, x.Spec.Receiver)...)
	args = append(args, integrityArgs(x)...)
	side := transferSide{component: ComponentReceiver, ep: x.Spec.Receiver}
	if x.Spec.Mode != pfsv1alpha1.ModePayload && in.Blob != nil {
		args = append(args, blobConsumerArgs(x.Namespace, in.Blob.Name)...)
		side.blob, side.nodes = in.Blob, in.BlobNodes
	}
	side.args = append(args, "--result-file", TerminationLog)
	return side
}

// recvArgs are the options every receiver starts with: where it listens,
// the mode and transport, how long it waits for its sender and its ready
// file.
func recvArgs(x *pfsv1alpha1.PfsTransfer) []string {
	return []string{"recv",
		"--listen", "0.0.0.0:" + strconv.Itoa(ReceiverPort),
		"--mode", cliMode(x.Spec.Mode),
		"--transport", cliTransport(x.Spec.Transport),
		"--accept-timeout", strconv.Itoa(AcceptTimeoutSeconds),
		"--ready-file", ReadyFile,
	}
}

// SenderPod builds the sending side, which connects to the receiver at addr.
func SenderPod(cfg Config, x *pfsv1alpha1.PfsTransfer, in TransferInputs, addr placement.Address) *corev1.Pod {
	if x.Spec.Mode == pfsv1alpha1.ModeDelta {
		return transferPod(cfg, x, in, deltaSender(x, in, addr))
	}
	return transferPod(cfg, x, in, sender(x, in, addr))
}

// sender is the sending side of the gram modes. Without a blob it fills a
// scratch blob of the range's length on 2Mi hugepages of its own (Payload
// mode only).
func sender(x *pfsv1alpha1.PfsTransfer, in TransferInputs, addr placement.Address) transferSide {
	args := []string{"send",
		"--connect", addr.HostPort(ReceiverPort),
		"--mode", cliMode(x.Spec.Mode),
		"--transport", cliTransport(x.Spec.Transport),
		"--bytes", strconv.FormatInt(EffectiveBytes(x, in.Blob), 10),
	}
	if x.Spec.Transport == pfsv1alpha1.TransportAFXDP && addr.MAC != "" {
		args = append(args, "--peer-mac", addr.MAC)
	}
	args = append(args, transportArgs(x, x.Spec.Sender)...)
	args = append(args, integrityArgs(x)...)
	g := x.Spec.Gram
	if g.DescriptorsPerGram > 0 {
		args = append(args, "--desc-per-gram", strconv.Itoa(int(g.DescriptorsPerGram)))
	}
	if !g.MaxDescriptorLength.IsZero() {
		args = append(args, "--max-len", strconv.FormatInt(g.MaxDescriptorLength.Value(), 10))
	}
	if g.Align > 0 {
		args = append(args, "--align", strconv.Itoa(int(g.Align)))
	}
	if x.Spec.Mode == pfsv1alpha1.ModePayload && !g.SlabBytes.IsZero() {
		args = append(args, "--gram-bytes", strconv.FormatInt(g.SlabBytes.Value(), 10))
	}
	side := transferSide{component: ComponentSender, ep: x.Spec.Sender}
	if in.Blob != nil {
		if r := x.Spec.Range; r != nil {
			args = append(args, "--range", fmt.Sprintf("%d:%d", r.Offset.Value(), RangeLength(r, in.Blob)))
		}
		args = append(args, blobConsumerArgs(x.Namespace, in.Blob.Name)...)
		side.blob, side.nodes = in.Blob, in.BlobNodes
	} else {
		scratch := RangeLength(x.Spec.Range, nil)
		args = append(args, "--size", strconv.FormatInt(scratch, 10), "--page", "2m", "--fill", "seed")
		side.extra = corev1.ResourceList{"hugepages-2Mi": *resource.NewQuantity(roundUp(scratch, 2<<20), resource.BinarySI)}
	}
	side.args = append(args, "--result-file", TerminationLog)
	return side
}

// transferSide is what the two pods of a transfer differ in.
type transferSide struct {
	component string
	ep        pfsv1alpha1.Endpoint
	args      []string
	// blob is the PfsBlob whose holder socket and token the pod mounts (nil:
	// none); it then runs only on nodes.
	blob  *pfsv1alpha1.PfsBlob
	nodes []string
	// source is a second blob's token to mount: a Delta sender's source.
	source *pfsv1alpha1.PfsBlob
	// memory is the container's memory besides podBaseMemory (bytes).
	memory int64
	extra  corev1.ResourceList
}

// transferPod builds one side's pod; in's NUMA decision pins its node and
// gives pfs the zone.
func transferPod(cfg Config, x *pfsv1alpha1.PfsTransfer, in TransferInputs, side transferSide) *corev1.Pod {
	ep, component, attempt := side.ep, side.component, in.Attempt
	annotations := map[string]string{AnnotationOwner: x.Name}
	side.args = append(side.args, "--token-file", TransferTokenFile)
	if p := in.NUMA; p != nil {
		if p.Node != "" {
			side.nodes = []string{p.Node}
		}
		if p.Zone != nil {
			side.args = append(side.args, "--numa", strconv.Itoa(int(*p.Zone)))
		}
		raw, _ := json.Marshal(p) // plain strings and numbers: cannot fail
		annotations[AnnotationNUMAPlacement] = string(raw)
	}
	queues := int64(ep.Queues)
	if queues < 1 {
		queues = 1
	}
	res := side.extra.DeepCopy()
	if res == nil {
		res = corev1.ResourceList{}
	}
	if ep.ResourceName != "" {
		res[corev1.ResourceName(ep.ResourceName)] = *resource.NewQuantity(1, resource.DecimalSI)
	}
	priv := privNonRoot
	if x.Spec.Transport == pfsv1alpha1.TransportAFXDP {
		priv = privAFXDP
	}
	name := ContainerReceiver
	if component == ComponentSender {
		name = ContainerSender
	}
	memory := *resource.NewQuantity(podBaseMemory.Value()+side.memory, resource.BinarySI)
	c := dataPlaneContainer(cfg, name, side.args, guaranteed(queues, memory, res), priv)
	runVol, runMount := runVolume()
	vols := []corev1.Volume{runVol}
	c.VolumeMounts = []corev1.VolumeMount{runMount}
	if side.blob != nil {
		v, m := blobConsumerVolumes(cfg, x.Namespace, side.blob.Name)
		vols = append(vols, v...)
		c.VolumeMounts = append(c.VolumeMounts, m...)
	}
	if side.source != nil {
		v, m := sourceTokenVolume(side.source.Name)
		vols = append(vols, v)
		c.VolumeMounts = append(c.VolumeMounts, m)
	}
	// Both ends prove the transfer's token, so whoever else reaches the
	// receiver's port first is dropped, not taken for the sender.
	vols = append(vols, corev1.Volume{Name: volTransferToken, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: TransferTokenSecretName(x.Name), DefaultMode: ptr.To(int32(0o440))}}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volTransferToken, MountPath: TransferTokenDir, ReadOnly: true})

	if ep.Network != "" {
		annotations[AnnotationNetworks] = networkSelection(ep.Network, ep.IPs)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        TransferPodName(x.Name, attempt, component),
			Namespace:   x.Namespace,
			Labels:      TransferPodLabels(x, attempt, component),
			Annotations: annotations,
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			NodeName:                      ep.NodeName,
			NodeSelector:                  copyMap(ep.NodeSelector),
			Affinity:                      cfg.affinity(nil),
			Containers:                    []corev1.Container{c},
			Volumes:                       vols,
			SecurityContext:               podSecurity(),
			Tolerations:                   cfg.tolerations(x.Spec.Scheduling),
			PriorityClassName:             cfg.priorityClass(x.Spec.Scheduling),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To(int64(TransferGracePeriod)),
			ActiveDeadlineSeconds:         PodDeadline(x.Spec.ActiveDeadlineSeconds),
		},
	}
	pod.Spec.Affinity = placement.NodeAffinity(side.nodes)
	return pod
}

// transportArgs are the per-endpoint options of a transport: AF_XDP binds
// the endpoint's secondary interface (the API requires its network).
func transportArgs(x *pfsv1alpha1.PfsTransfer, ep pfsv1alpha1.Endpoint) []string {
	var args []string
	if x.Spec.Transport == pfsv1alpha1.TransportAFXDP {
		args = append(args, "--ifname", secondaryIfName)
	}
	if ep.Queues > 1 {
		args = append(args, "--queues", strconv.Itoa(int(ep.Queues)))
	}
	return args
}

// integrityArgs passes the checksum only when it is not the CLI's default
// (CRC32C), so a CLI that only knows CRC32C runs the default unchanged.
func integrityArgs(x *pfsv1alpha1.PfsTransfer) []string {
	switch x.Spec.Integrity {
	case pfsv1alpha1.IntegrityFNV1a64, pfsv1alpha1.IntegrityNone:
		return []string{"--integrity", strings.ToLower(string(x.Spec.Integrity))}
	}
	return nil
}

func cliMode(m pfsv1alpha1.TransferMode) string {
	switch m {
	case pfsv1alpha1.ModeOffset:
		return "offset"
	case pfsv1alpha1.ModeArithmetic:
		return "arith"
	case pfsv1alpha1.ModeDelta:
		return "delta"
	}
	return "payload"
}

func cliTransport(t pfsv1alpha1.Transport) string {
	switch t {
	case pfsv1alpha1.TransportUDP:
		return "udp"
	case pfsv1alpha1.TransportAFXDP:
		return "afxdp"
	}
	return "tcp"
}

// TransferTokenSecret is the Secret holding the token both pods of a
// PfsTransfer present to each other (TransferTokenDir). The controller
// creates it once with fresh random bytes before the first pod.
func TransferTokenSecret(x *pfsv1alpha1.PfsTransfer, token []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: TransferTokenSecretName(x.Name), Namespace: x.Namespace,
			Labels:      map[string]string{LabelManagedBy: ManagedBy, LabelTransferUID: string(x.UID)},
			Annotations: map[string]string{AnnotationOwner: x.Name},
		},
		Type:      corev1.SecretTypeOpaque,
		Immutable: ptr.To(true),
		Data:      map[string][]byte{TokenKey: append([]byte(nil), token...)},
	}
}
