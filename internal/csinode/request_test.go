// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// publishReq is a request as the kubelet sends it for an inline volume of
// a pod team-a/reader with podInfoOnMount; edit changes it.
func publishReq(edit func(*csi.NodePublishVolumeRequest)) *csi.NodePublishVolumeRequest {
	req := &csi.NodePublishVolumeRequest{
		VolumeId:   "csi-0123abcd",
		TargetPath: "/var/lib/kubelet/pods/uid/volumes/kubernetes.io~csi/blob-sockets/mount",
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		},
		Readonly: true,
		VolumeContext: map[string]string{
			keyEphemeral: "true", keyPodNamespace: "team-a", keyPodName: "reader", keyPodUID: "uid", keyServiceAccount: "default",
		},
	}
	if edit != nil {
		edit(req)
	}
	return req
}

// attrs sets volume attributes (and more edits).
func attrs(vc map[string]string, more ...func(*csi.NodePublishVolumeRequest)) func(*csi.NodePublishVolumeRequest) {
	return func(r *csi.NodePublishVolumeRequest) {
		for k, v := range vc {
			r.VolumeContext[k] = v
		}
		for _, m := range more {
			m(r)
		}
	}
}

// holderAttrs: the holder volume the operator asks for (podspec), writable,
// with vc over it; an empty value deletes the key.
func holderAttrs(vc map[string]string, more ...func(*csi.NodePublishVolumeRequest)) func(*csi.NodePublishVolumeRequest) {
	return func(r *csi.NodePublishVolumeRequest) {
		r.Readonly = false
		for k, v := range map[string]string{attrRole: roleHolder, attrHolder: "llama", attrPage: "2Mi", attrSize: "314572800"} {
			r.VolumeContext[k] = v
		}
		for k, v := range vc {
			if v == "" {
				delete(r.VolumeContext, k)
			} else {
				r.VolumeContext[k] = v
			}
		}
		for _, m := range more {
			m(r)
		}
	}
}

func TestParsePublish(t *testing.T) {
	target := "/var/lib/kubelet/pods/uid/volumes/kubernetes.io~csi/blob-sockets/mount"
	tests := map[string]struct {
		edit func(*csi.NodePublishVolumeRequest)
		want publication
		err  string // substring of an InvalidArgument message; "" means accepted
	}{
		"consumer, read-only": {want: publication{namespace: "team-a", podName: "reader", pod: "team-a/reader", target: target, readOnly: true}},
		"holder, writable": {edit: func(r *csi.NodePublishVolumeRequest) { r.Readonly = false },
			want: publication{namespace: "team-a", podName: "reader", pod: "team-a/reader", target: target}},
		"reader-only access mode is read-only": {edit: func(r *csi.NodePublishVolumeRequest) {
			r.Readonly = false
			r.VolumeCapability.AccessMode.Mode = csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
		}, want: publication{namespace: "team-a", podName: "reader", pod: "team-a/reader", target: target, readOnly: true}},
		"target cleaned": {edit: func(r *csi.NodePublishVolumeRequest) { r.TargetPath = target + "/" },
			want: publication{namespace: "team-a", podName: "reader", pod: "team-a/reader", target: target, readOnly: true}},

		// A blob holder's tmpfs (the operator's holder pods).
		"holder volume": {edit: holderAttrs(nil), want: publication{kind: kindHolder, namespace: "team-a", podName: "reader",
			pod: "team-a/reader", target: target, blob: "llama", blobNamespace: "team-a", page: "2Mi", size: 314572800, layout: layoutFiles}},
		"holder 4Ki": {edit: holderAttrs(map[string]string{attrPage: "4Ki"}), want: publication{kind: kindHolder, namespace: "team-a",
			podName: "reader", pod: "team-a/reader", target: target, blob: "llama", blobNamespace: "team-a", page: "4Ki", size: 314572800, layout: layoutFiles}},
		"holder of a fill": {edit: holderAttrs(map[string]string{attrLayout: "flat"}), want: publication{kind: kindHolder, namespace: "team-a",
			podName: "reader", pod: "team-a/reader", target: target, blob: "llama", blobNamespace: "team-a", page: "2Mi", size: 314572800, layout: layoutFlat}},
		"holder files named": {edit: holderAttrs(map[string]string{attrLayout: "files"}), want: publication{kind: kindHolder, namespace: "team-a",
			podName: "reader", pod: "team-a/reader", target: target, blob: "llama", blobNamespace: "team-a", page: "2Mi", size: 314572800, layout: layoutFiles}},
		"holder bad layout": {edit: holderAttrs(map[string]string{attrLayout: "tar"}), err: `packetfs.io/layout "tar": want files (a blob loaded from a source) or flat (a fill)`},
		"blob with layout": {edit: attrs(map[string]string{attrBlob: "llama", attrLayout: "flat"}),
			err: "a consumer volume (blob: <name>) takes no packetfs.io/layout"},
		"holder read-only":  {edit: holderAttrs(nil, func(r *csi.NodePublishVolumeRequest) { r.Readonly = true }), err: "a holder volume is writable"},
		"holder other role": {edit: holderAttrs(map[string]string{attrRole: "relay"}), err: `packetfs.io/role "relay": the only role is "holder"`},
		"holder no role":    {edit: holderAttrs(map[string]string{attrRole: ""}), err: `packetfs.io/role "": the only role is "holder"`},
		"holder no blob":    {edit: holderAttrs(map[string]string{attrHolder: ""}), err: "no packetfs.io/blob: name the PfsBlob"},
		"holder bad blob":   {edit: holderAttrs(map[string]string{attrHolder: "../x"}), err: `packetfs.io/blob "../x" is not a PfsBlob name`},
		"holder bad page":   {edit: holderAttrs(map[string]string{attrPage: "2M"}), err: `packetfs.io/page "2M": want 2Mi, 1Gi, THP or 4Ki`},
		"holder no size":    {edit: holderAttrs(map[string]string{attrSize: ""}), err: `packetfs.io/size "": want the blob's size in bytes`},
		"holder size units": {edit: holderAttrs(map[string]string{attrSize: "300Mi"}), err: `packetfs.io/size "300Mi"`},
		"holder too big":    {edit: holderAttrs(map[string]string{attrSize: "70368744177665"}), err: "from 1 to 70368744177664 (64Ti)"},
		"holder with blob":  {edit: holderAttrs(map[string]string{attrBlob: "x"}), err: "takes no blob: that is a consumer's attribute"},
		"holder as a PV": {edit: holderAttrs(map[string]string{keyEphemeral: "false"}),
			err: "a holder volume is an ephemeral inline volume of the holder pod, not a PersistentVolume"},
		"holder without pod name": {edit: holderAttrs(map[string]string{keyPodName: ""}), err: `pod name ""`},

		// A blob's files (consumers), inline or a PersistentVolume.
		"blob": {edit: attrs(map[string]string{attrBlob: "llama"}), want: publication{kind: kindConsumer, namespace: "team-a",
			podName: "reader", pod: "team-a/reader", target: target, readOnly: true, blob: "llama", blobNamespace: "team-a"}},
		"blob of another namespace, subPath, writable asked": {edit: attrs(map[string]string{attrBlob: "llama", attrNamespace: "models",
			attrSubPath: "tokenizer/./"}, func(r *csi.NodePublishVolumeRequest) { r.Readonly = false }),
			want: publication{kind: kindConsumer, namespace: "team-a", podName: "reader", pod: "team-a/reader", target: target,
				readOnly: true, blob: "llama", blobNamespace: "models", subPath: "tokenizer"}},
		"blob through a PersistentVolume": {edit: attrs(map[string]string{attrBlob: "llama", keyEphemeral: "false"},
			func(r *csi.NodePublishVolumeRequest) {
				r.VolumeId = "pv-llama"
				r.VolumeCapability.AccessMode.Mode = csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
			}), want: publication{kind: kindConsumer, namespace: "team-a", podName: "reader", pod: "team-a/reader", target: target,
			readOnly: true, blob: "llama", blobNamespace: "team-a"}},
		"subPath dot": {edit: attrs(map[string]string{attrBlob: "llama", attrSubPath: "."}), want: publication{kind: kindConsumer,
			namespace: "team-a", podName: "reader", pod: "team-a/reader", target: target, readOnly: true, blob: "llama", blobNamespace: "team-a"}},
		"subPath up":             {edit: attrs(map[string]string{attrBlob: "llama", attrSubPath: "a/../../b"}), err: `subPath "a/../../b": ".." would leave`},
		"subPath absolute":       {edit: attrs(map[string]string{attrBlob: "llama", attrSubPath: "/etc"}), err: `subPath "/etc": want a path relative`},
		"namespace, no blob":     {edit: attrs(map[string]string{attrNamespace: "models"}), err: "no blob: name the PfsBlob"},
		"bad blob namespace":     {edit: attrs(map[string]string{attrBlob: "llama", attrNamespace: "Models"}), err: `namespace "Models" is not a namespace name`},
		"blob with page":         {edit: attrs(map[string]string{attrBlob: "llama", attrPage: "2Mi"}), err: "a consumer volume (blob: <name>) takes no packetfs.io/page"},
		"empty blob":             {edit: attrs(map[string]string{attrBlob: ""}), err: "volume attribute blob is empty"},
		"sockets as a PV":        {edit: attrs(map[string]string{keyEphemeral: "false"}), err: "a PersistentVolume of a blob's files sets volumeAttributes.blob"},
		"blob name with a slash": {edit: attrs(map[string]string{attrBlob: "a/b"}), err: `blob "a/b" is not a PfsBlob name`},
		"no volume id":           {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeId = "" }, err: "no volume_id"},
		"no target":              {edit: func(r *csi.NodePublishVolumeRequest) { r.TargetPath = "" }, err: `target_path "": want an absolute path`},
		"relative target":        {edit: func(r *csi.NodePublishVolumeRequest) { r.TargetPath = "pods/x" }, err: `target_path "pods/x"`},
		"no capability":          {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeCapability = nil }, err: "no volume_capability"},
		"block": {edit: func(r *csi.NodePublishVolumeRequest) {
			r.VolumeCapability.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
		}, err: "block access is not supported"},
		"fsType": {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeCapability.GetMount().FsType = "ext4" },
			err: `fsType "ext4": the plugin chooses the volume's file system`},
		"mount options": {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeCapability.GetMount().MountFlags = []string{"exec"} },
			err: "mount options [exec] are not supported"},
		"secrets": {edit: func(r *csi.NodePublishVolumeRequest) { r.Secrets = map[string]string{"k": "v"} },
			err: "takes no secrets"},
		"unknown attributes": {edit: func(r *csi.NodePublishVolumeRequest) {
			r.VolumeContext["csi.storage.k8s.io/serviceAccount.tokens"] = "{}"
			r.VolumeContext["readonly"] = "true"
		}, err: "unknown volume attributes csi.storage.k8s.io/serviceAccount.tokens, readonly: csi.packetfs.io takes blob, namespace, subPath"},
		"no pod info": {edit: func(r *csi.NodePublishVolumeRequest) {
			r.VolumeContext = map[string]string{keyEphemeral: "true"}
		}, err: "needs podInfoOnMount: true"},
		"parent directory":  {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeContext[keyPodNamespace] = ".." }, err: `pod namespace ".." is not a DNS-1123 label`},
		"path in namespace": {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeContext[keyPodNamespace] = "a/../b" }, err: `pod namespace "a/../b"`},
		"empty namespace":   {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeContext[keyPodNamespace] = "" }, err: `pod namespace ""`},
		"upper case":        {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeContext[keyPodNamespace] = "Team-A" }, err: `pod namespace "Team-A"`},
		"too long": {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeContext[keyPodNamespace] = strings.Repeat("a", 64) },
			err: "is not a DNS-1123 label"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parsePublish(publishReq(tc.edit))
			if tc.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(publication{})); diff != "" {
					t.Errorf("publication (-want +got):\n%s", diff)
				}
				return
			}
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tc.err) {
				t.Errorf("error %v, want InvalidArgument containing %q", err, tc.err)
			}
		})
	}
}
