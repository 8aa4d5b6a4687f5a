// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// BlobHolderLabels select a blob's holder pods.
func BlobHolderLabels(b *pfsv1alpha1.PfsBlob) map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedBy,
		LabelComponent: ComponentBlobHolder,
		LabelBlobUID:   string(b.UID),
	}
}

// BlobHolderDaemonSet builds the DaemonSet that materialises a blob on every
// selected node: an init container creates, prefaults, fills and
// fingerprints the blob once (its JSON result is the termination message the
// controller reads), then `pfs blob serve` holds it and hands its file
// descriptor to consumer pods on the node over a Unix socket in a host
// directory, after checking the peer's token. The memory is the pod's:
// hugepages (requests == limits == size rounded to the page) for 2Mi/1Gi, a
// tmpfs emptyDir counted in the memory limit for THP and 4Ki.
func BlobHolderDaemonSet(cfg Config, b *pfsv1alpha1.PfsBlob) *appsv1.DaemonSet {
	size := b.Spec.Size.Value()
	page := b.Spec.PageSize
	res, blobVol := HolderResources(cfg, size, page)
	dir := BlobDir
	if cfg.FilesLayout() {
		// Under the CSI plugin a fill's one file is what consumers mount
		// (blob_files.go): same pages, on the plugin's volume.
		blobVol, dir = csiHolderVolume(b, size, page, CSILayoutFlat), FillDir(b.Name)
	}

	createArgs := holderCreateArgs(b, dir, size, page)
	switch b.Spec.Fill.Type {
	case pfsv1alpha1.FillZero:
		createArgs = append(createArgs, "--fill", "zero")
	default:
		var seed int64
		if b.Spec.Fill.Seed != nil {
			seed = *b.Spec.Fill.Seed
		}
		createArgs = append(createArgs, "--fill", "seed", "--seed", strconv.FormatInt(seed, 10))
	}
	if b.Spec.PageFallback == pfsv1alpha1.PageFallbackNever {
		createArgs = append(createArgs, "--no-fallback")
	}
	// --replace: a recreated pod sandbox runs the init container again over
	// the same emptyDir, where the previous blob file still exists.
	createArgs = append(createArgs, "--replace", "--result-file", TerminationLog)
	createArgs = append(createArgs, cfg.metricsArgs()...)
	create := dataPlaneContainer(cfg, ContainerBlobCreate, createArgs, cfg.fillResources(res), privRootNoCaps)
	create.VolumeMounts = holderMounts(cfg, b)[:1]
	serve := serveContainer(cfg, b, dir, res, nil)

	labels := BlobHolderLabels(b)
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels,
			Annotations: map[string]string{AnnotationBlob: b.Name}},
		Spec: corev1.PodSpec{
			NodeSelector:                  copyMap(b.Spec.NodeSelector),
			Affinity:                      cfg.affinity(nil),
			InitContainers:                []corev1.Container{create},
			Containers:                    []corev1.Container{serve},
			Volumes:                       []corev1.Volume{blobVol, socketVolume(cfg, b.Namespace, socketsCreate), tokenVolume(b.Name)},
			SecurityContext:               podSecurity(),
			Tolerations:                   cfg.tolerations(b.Spec.Scheduling),
			PriorityClassName:             cfg.priorityClass(b.Spec.Scheduling),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To(int64(10)),
		},
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: HolderName(b.Name), Namespace: b.Namespace, Labels: copyMap(labels),
			Annotations: map[string]string{AnnotationBlob: b.Name, AnnotationTemplateHash: templateHash(&tmpl)},
		},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: copyMap(labels)},
			Template: tmpl,
			// A new template (an operator upgrade's data-plane image, new
			// flags) reaches new holders only: a running holder keeps its
			// pages and the consumers that map them, and is never replaced
			// by a rollout (docs/design/controllers.md, "Upgrades").
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
		},
	}
	return ds
}

// HolderResources are the resources of a blob holder's containers for a
// blob of size bytes on page, and the volume its pages live in: hugepages
// (requests == limits == size rounded to the page) for 2Mi/1Gi, a tmpfs
// emptyDir counted in the memory limit for THP and 4Ki.
func HolderResources(cfg Config, size int64, page pfsv1alpha1.PageSize) (corev1.ResourceRequirements, corev1.Volume) {
	memory := holderBaseMemory.DeepCopy()
	extra := corev1.ResourceList{}
	blobVol := corev1.Volume{Name: volBlob}
	if hp := hugePageBytes(page); hp > 0 {
		extra[HugePagesResource(page)] = *resource.NewQuantity(roundUp(size, hp), resource.BinarySI)
		blobVol.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMedium("HugePages-" + string(page))}
	} else {
		// tmpfs pages are charged to the pod's memory cgroup: count them.
		tmpfs := roundUp(size, 4096)
		memory.Add(*resource.NewQuantity(tmpfs, resource.BinarySI))
		blobVol.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory,
			SizeLimit: resource.NewQuantity(tmpfs, resource.BinarySI)}
	}
	return guaranteedQ(cfg.holderCPU(), memory, extra), blobVol
}

// holderCreateArgs start the init container's `pfs blob create`.
func holderCreateArgs(b *pfsv1alpha1.PfsBlob, dir string, size int64, page pfsv1alpha1.PageSize) []string {
	return []string{cmdBlob, "create", "--dir", dir, "--name", b.Name,
		"--size", strconv.FormatInt(size, 10), "--page", cliPage(page)}
}

// holderMounts are the blob volume, the socket directory and the token, in
// that order.
func holderMounts(cfg Config, b *pfsv1alpha1.PfsBlob) []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: volBlob, MountPath: BlobDir},
		socketMount(cfg, b.Namespace, socketsCreate),
		{Name: volToken, MountPath: TokenDir, ReadOnly: true},
	}
}

// serveContainer is the holder's `pfs blob serve` with its readiness probe;
// dir holds the blob; extra are appended to its arguments. The holder hands out read-only
// descriptors, so no consumer can change the bytes other consumers'
// fingerprints vouch for; the socket's group is the consumers' (uid/gid
// 65532) so they can connect, and the token then decides.
func serveContainer(cfg Config, b *pfsv1alpha1.PfsBlob, dir string, res corev1.ResourceRequirements, extra []string) corev1.Container {
	sock := SocketPath(b.Namespace, b.Name)
	args := append([]string{cmdBlob, "serve", "--dir", dir, "--name", b.Name,
		"--socket", sock, "--token-file", TokenFile, "--read-only",
		"--socket-group", strconv.Itoa(nonRootUID)}, extra...)
	args = append(args, cfg.metricsArgs()...)
	serve := dataPlaneContainer(cfg, ContainerBlobServe, args, res, privRootNoCaps)
	serve.Ports = cfg.metricsPorts()
	serve.VolumeMounts = holderMounts(cfg, b)
	// Ready means the holder answers on its socket with the blob mapped;
	// the probe is pfs itself (the image has no shell).
	serve.ReadinessProbe = &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
			Command: []string{cfg.Binary, cmdBlob, "ping", "--socket", sock, "--token-file", TokenFile}}},
		PeriodSeconds: 5, TimeoutSeconds: 2, FailureThreshold: 3,
	}
	return serve
}

// BlobTokenSecret is the Secret holding the token a consumer presents to a
// blob's holder. The controller creates it once with fresh random bytes and
// never rotates it while holders run.
func BlobTokenSecret(b *pfsv1alpha1.PfsBlob, token []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: TokenSecretName(b.Name), Namespace: b.Namespace,
			Labels:      BlobHolderLabels(b),
			Annotations: map[string]string{AnnotationBlob: b.Name},
		},
		Type:      corev1.SecretTypeOpaque,
		Immutable: ptr.To(true),
		Data:      map[string][]byte{TokenKey: append([]byte(nil), token...)},
	}
}

// templateHash fingerprints a pod template so the controller can tell
// whether the DaemonSet it finds was built from the same desired state.
func templateHash(t *corev1.PodTemplateSpec) string {
	data, err := json.Marshal(t)
	if err != nil {
		panic(fmt.Sprintf("marshalling a pod template cannot fail: %v", err))
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return fmt.Sprintf("%016x", h.Sum64())
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
