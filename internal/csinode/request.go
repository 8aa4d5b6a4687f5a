// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/validation"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// Keys the kubelet writes into a volume's context when the CSIDriver has
// podInfoOnMount. It writes them over the pod's own volumeAttributes, so
// the namespace is the pod's, whatever the pod (or a PV) says.
const (
	keyEphemeral      = "csi.storage.k8s.io/ephemeral"
	keyPodNamespace   = "csi.storage.k8s.io/pod.namespace"
	keyPodName        = "csi.storage.k8s.io/pod.name"
	keyPodUID         = "csi.storage.k8s.io/pod.uid"
	keyServiceAccount = "csi.storage.k8s.io/serviceAccount.name"
)

// The volume attributes (design29.md section 3). The operator's holder pods
// ask with the packetfs.io/ keys; users ask for a blob's files with the
// short ones, in an inline volume or a PersistentVolume's volumeAttributes.
const (
	attrRole      = "packetfs.io/role"
	attrHolder    = "packetfs.io/blob"
	attrPage      = "packetfs.io/page"
	attrSize      = "packetfs.io/size"
	attrLayout    = "packetfs.io/layout"
	attrBlob      = "blob"
	attrNamespace = "namespace"
	attrSubPath   = "subPath"

	roleHolder = "holder"

	// layoutFiles (the default) is a blob kept as its files; layoutFlat
	// one file holding a blob without a source (a fill).
	layoutFiles = "files"
	layoutFlat  = "flat"
)

// podKeys are what the kubelet adds; attrKeys what a volume may set.
var (
	podKeys  = map[string]bool{keyEphemeral: true, keyPodNamespace: true, keyPodName: true, keyPodUID: true, keyServiceAccount: true}
	attrKeys = map[string]bool{attrRole: true, attrHolder: true, attrPage: true, attrSize: true, attrLayout: true,
		attrBlob: true, attrNamespace: true, attrSubPath: true}
)

// maxHolderSize is the largest blob a holder volume is made for: the
// PfsBlob API's bound on spec.size.
const maxHolderSize = pfsv1alpha1.MaxBlobSize

// volumeKind tells the three volumes apart, by their attributes.
type volumeKind int

const (
	// kindSockets: no attributes; the namespace's socket directory.
	kindSockets volumeKind = iota
	// kindHolder: packetfs.io/role holder; a fresh tmpfs for a holder pod.
	kindHolder
	// kindConsumer: blob; a blob's files, read-only.
	kindConsumer
)

func (k volumeKind) String() string {
	return [...]string{"sockets", "holder", "consumer"}[k]
}

// publication is what a NodePublishVolume request asks for, checked.
type publication struct {
	kind volumeKind
	// namespace is the pod's namespace (the kubelet's word, never the pod's).
	namespace string
	// podName is the pod's name: a holder's staging directory is per pod.
	podName string
	// pod is namespace/name, for the logs.
	pod    string
	target string
	// readOnly: the mount is read-only (always, for a consumer).
	readOnly bool
	// blob is the PfsBlob's name (holder and consumer).
	blob string
	// blobNamespace is the PfsBlob's namespace: the pod's for a holder, the
	// namespace attribute (default the pod's) for a consumer.
	blobNamespace string
	// page is the holder's page kind (2Mi, 1Gi, THP, 4Ki).
	page string
	// size is the holder's blob size in bytes.
	size int64
	// layout is the holder's layout: layoutFiles or layoutFlat.
	layout string
	// subPath is a consumer's directory below the blob's files ("" = all).
	subPath string
}

// parsePublish checks a request against what the plugin serves and
// returns what it asks for; a refusal is an InvalidArgument status whose
// message says what to change.
func parsePublish(req *csi.NodePublishVolumeRequest) (publication, error) {
	var p publication
	if req.GetVolumeId() == "" {
		return p, invalid("no volume_id")
	}
	if t := req.GetTargetPath(); t == "" || !filepath.IsAbs(t) {
		return p, invalid("target_path %q: want an absolute path", t)
	}
	p.target = filepath.Clean(req.GetTargetPath())
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return p, err
	}
	if len(req.GetSecrets()) > 0 {
		return p, invalid("%s takes no secrets: remove nodePublishSecretRef from the volume", DriverName)
	}
	vc := req.GetVolumeContext()
	var unknown []string
	for k := range vc {
		if !podKeys[k] && !attrKeys[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return p, invalid("unknown volume attributes %s: %s takes %s (a blob's files), %s, or none (the socket directory)",
			strings.Join(unknown, ", "), DriverName, strings.Join([]string{attrBlob, attrNamespace, attrSubPath}, ", "), attrRole)
	}
	ns, ok := vc[keyPodNamespace]
	if !ok {
		return p, invalid("no %s in the volume context: the CSIDriver %s needs podInfoOnMount: true", keyPodNamespace, DriverName)
	}
	// A label has no '/' and is not "." or "..": every path built from it
	// stays one level below its root.
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return p, invalid("pod namespace %q is not a DNS-1123 label (%s): refused", ns, strings.Join(msgs, "; "))
	}
	p.namespace, p.podName, p.pod = ns, vc[keyPodName], ns+"/"+vc[keyPodName]
	mode := req.GetVolumeCapability().GetAccessMode().GetMode()
	p.readOnly = req.GetReadonly() || mode == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY ||
		mode == csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	ephemeral := vc[keyEphemeral] == "true"
	// The role decides; without one, a consumer's keys do; a holder's
	// keys without the role are a holder volume missing it.
	switch {
	case vc[attrRole] != "":
		return p, parseHolder(&p, vc, ephemeral)
	case vc[attrBlob] != "" || vc[attrNamespace] != "" || vc[attrSubPath] != "":
		return p, parseConsumer(&p, vc)
	case vc[attrHolder] != "" || vc[attrPage] != "" || vc[attrSize] != "" || vc[attrLayout] != "":
		return p, parseHolder(&p, vc, ephemeral)
	}
	for k := range vc {
		if attrKeys[k] {
			return p, invalid("volume attribute %s is empty: give it a value or remove it", k)
		}
	}
	if !ephemeral {
		return p, invalid("a %s volume without attributes is a namespace's socket directory, served only as an "+
			"ephemeral inline volume (a pod's volumes[].csi), not a PersistentVolume (volume context %s=%q); "+
			"a PersistentVolume of a blob's files sets volumeAttributes.%s", DriverName, keyEphemeral, vc[keyEphemeral], attrBlob)
	}
	p.kind = kindSockets
	return p, nil
}

// parseHolder checks a holder's attributes: the operator's holder pods
// ask for them in an inline volume, writable.
func parseHolder(p *publication, vc map[string]string, ephemeral bool) error {
	p.kind = kindHolder
	if r := vc[attrRole]; r != roleHolder {
		return invalid("%s %q: the only role is %q (a blob's holder pod); a consumer sets %s instead", attrRole, r, roleHolder, attrBlob)
	}
	for _, k := range []string{attrBlob, attrNamespace, attrSubPath} {
		if _, ok := vc[k]; ok {
			return invalid("a holder volume (%s: %s) takes no %s: that is a consumer's attribute", attrRole, roleHolder, k)
		}
	}
	if !ephemeral {
		return invalid("a holder volume is an ephemeral inline volume of the holder pod, not a PersistentVolume")
	}
	if p.readOnly {
		return invalid("a holder volume is writable (the holder fills it): set readOnly: false")
	}
	if msgs := validation.IsDNS1123Subdomain(p.podName); len(msgs) > 0 {
		return invalid("pod name %q (%s) is not a DNS-1123 subdomain (%s): the CSIDriver needs podInfoOnMount: true",
			p.podName, keyPodName, strings.Join(msgs, "; "))
	}
	if err := checkBlobName(attrHolder, vc[attrHolder]); err != nil {
		return err
	}
	p.blob, p.blobNamespace = vc[attrHolder], p.namespace
	switch pg := vc[attrPage]; pg {
	case "2Mi", "1Gi", "THP", "4Ki":
		p.page = pg
	default:
		return invalid("%s %q: want 2Mi, 1Gi, THP or 4Ki (the PfsBlob's spec.pageSize)", attrPage, pg)
	}
	size, err := strconv.ParseInt(vc[attrSize], 10, 64)
	if err != nil || size < 1 || size > maxHolderSize {
		return invalid("%s %q: want the blob's size in bytes, a whole number from 1 to %d (64Ti)", attrSize, vc[attrSize], maxHolderSize)
	}
	p.size = size
	switch l := vc[attrLayout]; l {
	case "", layoutFiles:
		p.layout = layoutFiles
	case layoutFlat:
		p.layout = layoutFlat
	default:
		return invalid("%s %q: want %s (a blob loaded from a source) or %s (a fill)", attrLayout, l, layoutFiles, layoutFlat)
	}
	return nil
}

// parseConsumer checks a consumer's attributes: an inline volume or a
// PersistentVolume's volumeAttributes. The mount is read-only whatever the
// pod asks: the files are the node's one copy.
func parseConsumer(p *publication, vc map[string]string) error {
	p.kind = kindConsumer
	p.readOnly = true
	for _, k := range []string{attrHolder, attrPage, attrSize, attrLayout} {
		if _, ok := vc[k]; ok {
			return invalid("a consumer volume (%s: <name>) takes no %s: the holder's attributes are the operator's", attrBlob, k)
		}
	}
	if err := checkBlobName(attrBlob, vc[attrBlob]); err != nil {
		return err
	}
	p.blob, p.blobNamespace = vc[attrBlob], p.namespace
	if ns, ok := vc[attrNamespace]; ok {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			return invalid("%s %q is not a namespace name (%s): name the PfsBlob's namespace, or leave it out for the pod's own",
				attrNamespace, ns, strings.Join(msgs, "; "))
		}
		p.blobNamespace = ns
	}
	sp, err := cleanSubPath(vc[attrSubPath])
	if err != nil {
		return err
	}
	p.subPath = sp
	return nil
}

// checkBlobName: a PfsBlob's name is a DNS-1123 subdomain, so it has no
// '/' and is never "." or "..": <name>.d is one level below its parent.
func checkBlobName(key, name string) error {
	if name == "" {
		return invalid("no %s: name the PfsBlob", key)
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return invalid("%s %q is not a PfsBlob name (%s)", key, name, strings.Join(msgs, "; "))
	}
	return nil
}

// cleanSubPath checks a subPath: relative, below the blob's files, no
// "..". The plugin resolves it without following links (consumer.go), so
// this is only the first of two checks.
func cleanSubPath(sp string) (string, error) {
	if sp == "" {
		return "", nil
	}
	if len(sp) > 4096 || strings.ContainsRune(sp, 0) {
		return "", invalid("%s: too long, or holds a NUL byte", attrSubPath)
	}
	if path.IsAbs(sp) {
		return "", invalid("%s %q: want a path relative to the blob's files (e.g. tokenizer/), not an absolute one", attrSubPath, sp)
	}
	for _, c := range strings.Split(sp, "/") {
		if c == ".." {
			return "", invalid("%s %q: \"..\" would leave the blob's files; name a directory below them", attrSubPath, sp)
		}
	}
	if c := path.Clean(sp); c != "." {
		return c, nil
	}
	return "", nil
}

// checkCapability accepts a mount (a directory) with no file system type
// and no mount options: the plugin chooses the mount.
func checkCapability(c *csi.VolumeCapability) error {
	switch {
	case c == nil:
		return invalid("no volume_capability")
	case c.GetBlock() != nil:
		return invalid("block access is not supported: the volume is a directory (volumeMode Filesystem)")
	case c.GetMount() == nil:
		return invalid("volume_capability has no access type: want mount")
	case c.GetMount().GetFsType() != "":
		return invalid("fsType %q: the plugin chooses the volume's file system; leave fsType unset",
			c.GetMount().GetFsType())
	case len(c.GetMount().GetMountFlags()) > 0:
		return invalid("mount options %v are not supported: the plugin chooses the mount's options", c.GetMount().GetMountFlags())
	}
	return nil
}

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// stagingDir is a holder pod's tmpfs, in the host mount namespace:
// <staging root>/<namespace>/<blob>/<pod>. Every part was checked above.
func stagingDir(root, namespace, blob, pod string) string {
	return filepath.Join(root, namespace, blob, pod)
}
