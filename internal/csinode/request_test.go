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

func TestParsePublish(t *testing.T) {
	target := "/var/lib/kubelet/pods/uid/volumes/kubernetes.io~csi/blob-sockets/mount"
	tests := map[string]struct {
		edit func(*csi.NodePublishVolumeRequest)
		want publication
		err  string // substring of an InvalidArgument message; "" means accepted
	}{
		"consumer, read-only": {want: publication{namespace: "team-a", pod: "team-a/reader", target: target, readOnly: true}},
		"holder, writable": {edit: func(r *csi.NodePublishVolumeRequest) { r.Readonly = false },
			want: publication{namespace: "team-a", pod: "team-a/reader", target: target}},
		"reader-only access mode is read-only": {edit: func(r *csi.NodePublishVolumeRequest) {
			r.Readonly = false
			r.VolumeCapability.AccessMode.Mode = csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
		}, want: publication{namespace: "team-a", pod: "team-a/reader", target: target, readOnly: true}},
		"target cleaned": {edit: func(r *csi.NodePublishVolumeRequest) { r.TargetPath = target + "/" },
			want: publication{namespace: "team-a", pod: "team-a/reader", target: target, readOnly: true}},
		"no volume id":    {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeId = "" }, err: "no volume_id"},
		"no target":       {edit: func(r *csi.NodePublishVolumeRequest) { r.TargetPath = "" }, err: `target_path "": want an absolute path`},
		"relative target": {edit: func(r *csi.NodePublishVolumeRequest) { r.TargetPath = "pods/x" }, err: `target_path "pods/x"`},
		"no capability":   {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeCapability = nil }, err: "no volume_capability"},
		"block": {edit: func(r *csi.NodePublishVolumeRequest) {
			r.VolumeCapability.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
		}, err: "block access is not supported"},
		"fsType": {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeCapability.GetMount().FsType = "ext4" },
			err: `fsType "ext4": the volume is a bind mount`},
		"mount options": {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeCapability.GetMount().MountFlags = []string{"exec"} },
			err: "mount options [exec] are not supported"},
		"secrets": {edit: func(r *csi.NodePublishVolumeRequest) { r.Secrets = map[string]string{"k": "v"} },
			err: "takes no secrets"},
		"unknown attributes": {edit: func(r *csi.NodePublishVolumeRequest) {
			r.VolumeContext["namespace"] = "kube-system"
			r.VolumeContext["csi.storage.k8s.io/serviceAccount.tokens"] = "{}"
		}, err: "unknown volume attributes csi.storage.k8s.io/serviceAccount.tokens, namespace: csi.packetfs.io takes none"},
		"persistent volume": {edit: func(r *csi.NodePublishVolumeRequest) { r.VolumeContext[keyEphemeral] = "false" },
			err: "serves only ephemeral inline volumes"},
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
