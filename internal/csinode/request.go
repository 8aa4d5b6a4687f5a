// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Keys the kubelet writes into an inline volume's context when the
// CSIDriver has podInfoOnMount. It writes them over the pod's own
// volumeAttributes, so the namespace is the pod's, whatever the pod says.
const (
	keyEphemeral      = "csi.storage.k8s.io/ephemeral"
	keyPodNamespace   = "csi.storage.k8s.io/pod.namespace"
	keyPodName        = "csi.storage.k8s.io/pod.name"
	keyPodUID         = "csi.storage.k8s.io/pod.uid"
	keyServiceAccount = "csi.storage.k8s.io/serviceAccount.name"
)

// knownKeys: the volume takes no attributes of its own; anything else in
// the context is a pod asking for something the plugin does not do.
var knownKeys = map[string]bool{keyEphemeral: true, keyPodNamespace: true, keyPodName: true, keyPodUID: true, keyServiceAccount: true}

// publication is what a NodePublishVolume request asks for, checked.
type publication struct {
	// namespace is the pod's namespace: the socket directory's name.
	namespace string
	// pod is namespace/name, for the logs.
	pod      string
	target   string
	readOnly bool
}

// parsePublish checks a request against what the plugin serves (an
// ephemeral inline volume, a directory, no options) and returns what it
// asks for; a refusal is an InvalidArgument status whose message says what
// to change.
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
		if !knownKeys[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return p, invalid("unknown volume attributes %s: %s takes none (remove volumeAttributes from the volume)",
			strings.Join(unknown, ", "), DriverName)
	}
	if vc[keyEphemeral] != "true" {
		return p, invalid("%s serves only ephemeral inline volumes (a pod's volumes[].csi), not PersistentVolumes "+
			"(volume context %s=%q)", DriverName, keyEphemeral, vc[keyEphemeral])
	}
	ns, ok := vc[keyPodNamespace]
	if !ok {
		return p, invalid("no %s in the volume context: the CSIDriver %s needs podInfoOnMount: true", keyPodNamespace, DriverName)
	}
	// A label has no '/' and is not "." or "..": the directory is always
	// one level below the socket root.
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return p, invalid("pod namespace %q is not a DNS-1123 label (%s): refused", ns, strings.Join(msgs, "; "))
	}
	p.namespace, p.pod = ns, ns+"/"+vc[keyPodName]
	mode := req.GetVolumeCapability().GetAccessMode().GetMode()
	p.readOnly = req.GetReadonly() || mode == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY ||
		mode == csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	return p, nil
}

// checkCapability accepts a mount (a directory) with no file system type
// and no mount options: the volume is a bind mount of a host directory.
func checkCapability(c *csi.VolumeCapability) error {
	switch {
	case c == nil:
		return invalid("no volume_capability")
	case c.GetBlock() != nil:
		return invalid("block access is not supported: the volume is a directory (volumeMode Filesystem)")
	case c.GetMount() == nil:
		return invalid("volume_capability has no access type: want mount")
	case c.GetMount().GetFsType() != "":
		return invalid("fsType %q: the volume is a bind mount of a directory with no file system of its own; leave fsType unset",
			c.GetMount().GetFsType())
	case len(c.GetMount().GetMountFlags()) > 0:
		return invalid("mount options %v are not supported: the plugin chooses the mount's options", c.GetMount().GetMountFlags())
	}
	return nil
}

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}
