// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/test/testenv"
)

// The blob volumes end to end: a real kube-apiserver (envtest) holds the
// PfsBlobs and their status, the plugin reads them as a user with exactly
// the chart's RBAC (get/list/watch pfsblobs), and publishing mounts real
// tmpfs file systems and binds in TestMain's private mount namespace.

// pluginUser is the API user the plugin reads PfsBlobs as.
const pluginUser = "system:serviceaccount:packetfs-system:pfs-csi-node"

// apiEnv starts envtest and returns an admin client and the plugin's own
// read-only client.
func apiEnv(t *testing.T) (*testenv.Env, client.Reader) {
	t.Helper()
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	// The ClusterRole the chart gives the plugin (charts/.../csi/rbac.yaml).
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pfs-csi-node"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{pfsv1alpha1.GroupVersion.Group}, Resources: []string{"pfsblobs"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pfs-csi-node"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: pluginUser}}}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := env.UserConfig(pluginUser, nil)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := newBlobReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return env, reader
}

// publishVC publishes target with exactly the pod info of pod ns/name and
// the volume attributes vc; ephemeral false stands for a PersistentVolume.
func (n *node) publishVC(ns, pod, target string, readOnly, ephemeral bool, vc map[string]string) error {
	ctx := map[string]string{keyEphemeral: "false", keyPodNamespace: ns, keyPodName: pod, keyPodUID: "uid-" + pod, keyServiceAccount: "default"}
	id := "pv-handle-" + pod
	if ephemeral {
		ctx[keyEphemeral], id = "true", "csi-"+pod
	}
	for k, v := range vc {
		ctx[k] = v
	}
	mode := csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	if !ephemeral {
		mode = csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	}
	_, err := n.csi.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: id, TargetPath: target, Readonly: readOnly, VolumeContext: ctx,
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
		}})
	return err
}

// wantRefused checks a refusal's code and that its message holds each part.
func wantRefused(t *testing.T, what string, err error, code codes.Code, parts ...string) {
	t.Helper()
	st := status.Convert(err)
	if err == nil || st.Code() != code {
		t.Errorf("%s: %v, want %s", what, err, code)
		return
	}
	for _, p := range parts {
		if !strings.Contains(st.Message(), p) {
			t.Errorf("%s: message %q lacks %q", what, st.Message(), p)
		}
	}
}

// mountFlags are a mount's ro/nosuid/nodev/noexec flags (statfs).
func mountFlags(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Flags & int64(unix.ST_RDONLY|unix.ST_NOSUID|unix.ST_NODEV|unix.ST_NOEXEC)
}

// tree lists every file below dir with its content ("d" for directories).
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			got[rel] = "d"
			return nil
		}
		b, err := os.ReadFile(p)
		got[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	return got
}

// setNodes writes a blob's status.nodes, as the operator does.
func setNodes(t *testing.T, env *testenv.Env, b *pfsv1alpha1.PfsBlob, nodes ...pfsv1alpha1.BlobNodeStatus) {
	t.Helper()
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	b.Status.Nodes = nodes
	if err := env.Client.Status().Update(context.Background(), b); err != nil {
		t.Fatalf("status of %s: %v", b.Name, err)
	}
}

func TestBlobVolumes(t *testing.T) {
	needMountNS(t)
	env, reader := apiEnv(t)
	n := startNodeWith(t, reader)
	ctx := context.Background()
	models, err := env.CreateNamespace(ctx, "models")
	if err != nil {
		t.Fatal(err)
	}
	teamB, err := env.CreateNamespace(ctx, "team-b")
	if err != nil {
		t.Fatal(err)
	}
	// newBlob: a blob loaded from a claim (its holders keep it as files),
	// or with fill a fill of 1Mi (one file).
	newBlob := func(name string, fill bool) *pfsv1alpha1.PfsBlob {
		b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Namespace: models, Name: name},
			Spec: pfsv1alpha1.PfsBlobSpec{Source: &pfsv1alpha1.BlobSource{
				PersistentVolumeClaim: &pfsv1alpha1.PVCBlobSource{ClaimName: "models"}}}}
		if fill {
			b.Spec = pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("1Mi")}
		}
		if err := env.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	llama := newBlob("llama", false)
	const holderPod = "llama-holder-x"
	holderAttrs := map[string]string{attrRole: roleHolder, attrHolder: "llama", attrPage: "2Mi", attrSize: "1048576"}

	// The holder: a fresh tmpfs with the options of its page kind and size,
	// staged below the staging directory and bound writable onto the target.
	holder := n.target(t, "holder")
	if err := n.publishVC(models, holderPod, holder, false, true, holderAttrs); err != nil {
		t.Fatalf("publish the holder's volume: %v", err)
	}
	staging := filepath.Join(n.cfg.StagingDir, models, "llama", holderPod)
	sst, err := mountAt(staging)
	if err != nil || !sst.mounted || sst.fsType != "tmpfs" || sst.root != "/" {
		t.Fatalf("staging %s: %+v, %v; want a tmpfs", staging, sst, err)
	}
	for _, o := range []string{"size=5120k", "mode=755", "huge=within_size"} { // 1 MiB + 4 MiB
		if !strings.Contains(","+sst.superOptions+",", ","+o+",") {
			t.Errorf("holder tmpfs options %s lack %s", sst.superOptions, o)
		}
	}
	hst, err := mountAt(holder)
	if err != nil || hst.dev != sst.dev || hst.readOnly || hst.root != "/" {
		t.Errorf("holder target %+v, %v; want a writable bind of the staging tmpfs %s", hst, err, sst.dev)
	}
	if got, want := mountFlags(t, holder), int64(unix.ST_NOSUID|unix.ST_NODEV|unix.ST_NOEXEC); got != want {
		t.Errorf("holder mount flags %#x, want %#x (rw,nosuid,nodev,noexec)", got, want)
	}
	if err := n.publishVC(models, holderPod, holder, false, true, holderAttrs); err != nil {
		t.Errorf("publish the holder's volume again: %v, want OK", err)
	}
	// The size limit holds: 6 MiB do not fit in 1 MiB + 4 MiB.
	big := filepath.Join(holder, "too-big")
	if err := os.WriteFile(big, make([]byte, 6<<20), 0o600); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("write 6 MiB into the holder's 5 MiB tmpfs: %v, want ENOSPC", err)
	}
	_ = os.Remove(big)

	// The holder fills its files (design29 section 1) through its volume.
	files := map[string]string{
		"model.safetensors":     strings.Repeat("w", 100000),
		"config.json":           `{"model_type":"llama"}`,
		"tokenizer":             "d",
		"tokenizer/vocab.json":  `{"a":1}`,
		"tokenizer/merges.txt":  "a b\n",
		"tokenizer/empty-file":  "",
		"tokenizer/nested":      "d",
		"tokenizer/nested/x.py": "print(1)\n",
	}
	d := filepath.Join(holder, "llama.d")
	for _, p := range []string{"files/tokenizer/nested"} {
		if err := os.MkdirAll(filepath.Join(d, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range files {
		if body != "d" {
			if err := os.WriteFile(filepath.Join(d, "files", name), []byte(body), 0o444); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(d, "tail"), make([]byte, 4096), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "progress"), []byte(`{"bytes":39321600,"size":91226112,"state":"fetching"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	// A consumer in the blob's own namespace.
	blobAttrs := map[string]string{attrBlob: "llama"}
	reader1 := n.target(t, "reader-1")
	wantRefused(t, "a blob with no status", n.publishVC(models, "reader-1", reader1, true, true, blobAttrs), codes.FailedPrecondition,
		"blob "+models+"/llama is not held on node node-1 (its nodeSelector does not select it): schedule the pod")
	setNodes(t, env, llama, pfsv1alpha1.BlobNodeStatus{Node: "node-2", Pod: "llama-holder-y", State: pfsv1alpha1.BlobNodeReady},
		pfsv1alpha1.BlobNodeStatus{Node: "node-1", Pod: holderPod, State: pfsv1alpha1.BlobNodeMaterializing})
	wantRefused(t, "a copy still materializing", n.publishVC(models, "reader-1", reader1, true, true, blobAttrs), codes.Unavailable,
		"blob "+models+"/llama is not ready on node node-1: state Materializing, 43% (37.5 MiB of 87.0 MiB); the pod starts when this node's copy is verified")
	if st, _ := mountAt(reader1); st.mounted {
		t.Fatal("a copy not verified got mounted")
	}
	setNodes(t, env, llama, pfsv1alpha1.BlobNodeStatus{Node: "node-2", Pod: "llama-holder-y", State: pfsv1alpha1.BlobNodeReady},
		pfsv1alpha1.BlobNodeStatus{Node: "node-1", Pod: holderPod, State: pfsv1alpha1.BlobNodeReady})
	if err := n.publishVC(models, "reader-1", reader1, true, true, blobAttrs); err != nil {
		t.Fatalf("publish a Ready blob: %v", err)
	}
	if diff := cmp.Diff(files, tree(t, reader1)); diff != "" {
		t.Errorf("the consumer's volume (-want +got):\n%s", diff)
	}
	if got, want := mountFlags(t, reader1), int64(unix.ST_RDONLY|unix.ST_NOSUID|unix.ST_NODEV); got != want {
		t.Errorf("consumer mount flags %#x, want %#x (ro,nosuid,nodev)", got, want)
	}
	for _, p := range []string{"new-file", "tokenizer/new"} {
		if err := os.WriteFile(filepath.Join(reader1, p), nil, 0o600); !errors.Is(err, unix.EROFS) {
			t.Errorf("create %s in the consumer's volume: %v, want EROFS", p, err)
		}
	}
	if err := os.Chmod(filepath.Join(reader1, "config.json"), 0o666); !errors.Is(err, unix.EROFS) {
		t.Errorf("chmod in the consumer's volume: %v, want EROFS", err)
	}
	// The consumer sees the holder's very pages: a byte the holder changes
	// (it never does once Ready; here it proves there is no copy) shows.
	if err := os.WriteFile(filepath.Join(d, "files", "config.json"), []byte(`{"model_type":"LLAMA"}`), 0o444); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(reader1, "config.json")); string(b) != `{"model_type":"LLAMA"}` {
		t.Errorf("the consumer reads %q after the holder's write: not the same pages", b)
	}
	files["config.json"] = `{"model_type":"LLAMA"}`
	if err := n.publishVC(models, "reader-1", reader1, true, true, blobAttrs); err != nil {
		t.Errorf("publish the consumer again: %v, want OK", err)
	}
	// The same target asked for as a holder is something else.
	wantRefused(t, "a holder over a consumer's target", n.publishVC(models, holderPod, reader1, false, true, holderAttrs),
		codes.AlreadyExists, "already holds another mount")

	// subPath: a directory of the files; a file, a missing name, a link out
	// of the tmpfs are refused.
	sub := n.target(t, "reader-sub")
	if err := n.publishVC(models, "reader-sub", sub, true, true, map[string]string{attrBlob: "llama", attrSubPath: "tokenizer/"}); err != nil {
		t.Fatalf("publish subPath tokenizer: %v", err)
	}
	wantSub := map[string]string{"vocab.json": `{"a":1}`, "merges.txt": "a b\n", "empty-file": "", "nested": "d", "nested/x.py": "print(1)\n"}
	if diff := cmp.Diff(wantSub, tree(t, sub)); diff != "" {
		t.Errorf("subPath tokenizer (-want +got):\n%s", diff)
	}
	if err := os.Symlink("/etc", filepath.Join(d, "files", "escape")); err != nil {
		t.Fatal(err)
	}
	for sp, why := range map[string]string{"config.json": "not a directory", "missing": "no such file", "escape": "too many levels of symbolic links"} {
		tgt := n.target(t, "reader-"+sp)
		wantRefused(t, "subPath "+sp, n.publishVC(models, "reader-x", tgt, true, true, map[string]string{attrBlob: "llama", attrSubPath: sp}),
			codes.FailedPrecondition, `subPath "`+sp+`"`, why, "volumeMounts[].subPath")
		if st, _ := mountAt(tgt); st.mounted {
			t.Errorf("subPath %s got mounted", sp)
		}
		n.unpublish(t, tgt)
	}
	_ = os.Remove(filepath.Join(d, "files", "escape"))
	wantRefused(t, "subPath ..", n.publishVC(models, "reader-x", n.target(t, "reader-up"), true, true,
		map[string]string{attrBlob: "llama", attrSubPath: "../tail"}), codes.InvalidArgument, `".." would leave the blob's files`)

	// A holder volume with a bad attribute is refused before anything is
	// created for it.
	wantRefused(t, "a holder with a bad page kind", n.publishVC(models, "bad-holder", n.target(t, "bad-holder"), false, true,
		map[string]string{attrRole: roleHolder, attrHolder: "bad", attrPage: "2M", attrSize: "4096"}), codes.InvalidArgument,
		`packetfs.io/page "2M": want 2Mi, 1Gi, THP or 4Ki`)
	if _, err := os.Lstat(filepath.Join(n.cfg.StagingDir, models, "bad")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused holder volume left a staging directory (%v)", err)
	}

	// Another namespace: refused until the blob grants it; then mounted,
	// here through a PersistentVolume (the same attributes in
	// csi.volumeAttributes, the volume handle as its ID).
	pvAttrs := map[string]string{attrBlob: "llama", attrNamespace: models}
	other := n.target(t, "reader-b")
	wantRefused(t, "another namespace without a grant", n.publishVC(teamB, "reader-b", other, false, false, pvAttrs), codes.PermissionDenied,
		"blob "+models+"/llama does not grant namespace "+teamB, "spec.access.namespaces")
	if st, _ := mountAt(other); st.mounted {
		t.Fatal("a namespace without a grant got mounted")
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(llama), llama); err != nil {
		t.Fatal(err)
	}
	llama.Spec.Access = &pfsv1alpha1.BlobAccess{Namespaces: []string{teamB}}
	if err := env.Client.Update(ctx, llama); err != nil {
		t.Fatalf("grant %s: %v", teamB, err)
	}
	if err := n.publishVC(teamB, "reader-b", other, false, false, pvAttrs); err != nil {
		t.Fatalf("publish for a granted namespace through a PV: %v", err)
	}
	if diff := cmp.Diff(files, tree(t, other)); diff != "" {
		t.Errorf("the granted namespace's volume (-want +got):\n%s", diff)
	}
	if st, _ := mountAt(other); !st.readOnly {
		t.Error("a PV asked writable got a writable mount; consumers are always read-only")
	}

	// Other refusals that go through the API: no such blob; a blob whose
	// nodes do not include this one.
	wantRefused(t, "no such blob", n.publishVC(models, "reader-x", n.target(t, "reader-nf"), true, true, map[string]string{attrBlob: "nope"}),
		codes.NotFound, "blob "+models+"/nope not found (pod "+models+"/reader-x on node node-1)")
	elsewhere := newBlob("elsewhere", false)
	setNodes(t, env, elsewhere, pfsv1alpha1.BlobNodeStatus{Node: "node-2", Pod: "elsewhere-holder-y", State: pfsv1alpha1.BlobNodeReady})
	wantRefused(t, "not held here", n.publishVC(models, "reader-x", n.target(t, "reader-el"), true, true, map[string]string{attrBlob: "elsewhere"}),
		codes.FailedPrecondition, "blob "+models+"/elsewhere is not held on node node-1", "spec.nodeSelector")

	// A 4Ki holder gets plain pages.
	small := n.target(t, "holder-4k")
	if err := n.publishVC(models, "elsewhere-holder-z", small, false, true,
		map[string]string{attrRole: roleHolder, attrHolder: "elsewhere", attrPage: "4Ki", attrSize: "4096"}); err != nil {
		t.Fatalf("publish a 4Ki holder: %v", err)
	}
	// The kernel shows huge= only when it is not never (the default).
	if st, _ := mountAt(filepath.Join(n.cfg.StagingDir, models, "elsewhere", "elsewhere-holder-z")); !st.mounted ||
		strings.Contains(st.superOptions, "huge=") || !strings.Contains(st.superOptions, "size=4100k") {
		t.Errorf("4Ki holder tmpfs %+v: want a tmpfs with size=4100k and huge=never (no huge= shown)", st)
	}
	n.unpublish(t, small)

	// A fill (no source): its holder's volume is a hugetlbfs of the
	// blob's 2Mi pages with the files directory made in it; the holder
	// keeps its one file there, and that file is all a consumer sees.
	noise := newBlob("noise", true)
	fillHolder := n.target(t, "holder-fill")
	if err := n.publishVC(models, "noise-holder-x", fillHolder, false, true, map[string]string{attrRole: roleHolder,
		attrHolder: "noise", attrPage: "2Mi", attrSize: "1048576", attrLayout: layoutFlat}); err != nil {
		t.Fatalf("publish a fill's holder volume: %v", err)
	}
	if st, _ := mountAt(filepath.Join(n.cfg.StagingDir, models, "noise", "noise-holder-x")); !st.mounted || st.fsType != fsHugetlbfs ||
		!strings.Contains(st.superOptions, "pagesize=2M") {
		t.Errorf("fill holder staging %+v: want a hugetlbfs with pagesize=2M", st)
	}
	if fi, err := os.Stat(filepath.Join(fillHolder, "noise.d", "files")); err != nil || !fi.IsDir() {
		t.Fatalf("the fill holder's noise.d/files: %v, %v; want the directory the plugin made", fi, err)
	}
	setNodes(t, env, noise, pfsv1alpha1.BlobNodeStatus{Node: "node-1", Pod: "noise-holder-x", State: pfsv1alpha1.BlobNodeReady})
	fillAttrs := map[string]string{attrBlob: "noise"}
	wantRefused(t, "a fill kept outside its volume", n.publishVC(models, "reader-fill", n.target(t, "reader-fill-0"), true, true, fillAttrs),
		codes.FailedPrecondition, "keeps it outside its volume (no file noise", "spec.pageFallback")
	// The holder's one file, sized but not written: a hugetlbfs reads its
	// holes as zeros, and this machine may have no hugepages to fault.
	f, err := os.OpenFile(filepath.Join(fillHolder, "noise.d", "files", "noise"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 20); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	readerFill := n.target(t, "reader-fill")
	if err := n.publishVC(models, "reader-fill", readerFill, true, true, fillAttrs); err != nil {
		t.Fatalf("publish a Ready fill: %v", err)
	}
	if diff := cmp.Diff(map[string]string{"noise": string(make([]byte, 2<<20))}, tree(t, readerFill)); diff != "" {
		t.Errorf("the fill's volume, one file (-want +got):\n%.400s", diff)
	}
	n.unpublish(t, readerFill)
	n.unpublish(t, fillHolder)

	// A consumer's unpublish leaves the holder's tmpfs alone.
	n.unpublish(t, sub)
	if st, _ := mountAt(staging); !isHolderBind(st) || st.dev != sst.dev {
		t.Fatalf("staging %s after a consumer's unpublish: %+v; want the holder's tmpfs still there", staging, st)
	}
	if b, err := os.ReadFile(filepath.Join(holder, "llama.d", "files", "config.json")); err != nil || string(b) != files["config.json"] {
		t.Errorf("the holder's files after a consumer's unpublish: %q, %v", b, err)
	}

	// The holder goes first: its tmpfs is detached and its staging
	// directory removed, but the consumers keep the file system and read
	// every byte still.
	n.unpublish(t, holder)
	n.unpublish(t, holder)
	if st, _ := mountAt(staging); st.mounted {
		t.Errorf("staging %s still mounted after the holder's unpublish", staging)
	}
	if _, err := os.Lstat(staging); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("staging %s still there after the holder's unpublish (%v)", staging, err)
	}
	if diff := cmp.Diff(files, tree(t, reader1)); diff != "" {
		t.Errorf("the consumer after the holder's unpublish (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(files, tree(t, other)); diff != "" {
		t.Errorf("the other namespace's consumer after the holder's unpublish (-want +got):\n%s", diff)
	}
	// A new consumer while the status still names the gone holder waits.
	wantRefused(t, "a consumer after its holder left", n.publishVC(models, "reader-late", n.target(t, "reader-late"), true, true, blobAttrs),
		codes.Unavailable, "holder pod "+holderPod+" has no files volume on this node", "--socket-volume=csi")

	for _, tgt := range []string{reader1, reader1, other} {
		n.unpublish(t, tgt)
	}
	if entries, err := os.ReadDir(n.cfg.StagingDir); err != nil || len(entries) != 0 {
		t.Errorf("staging directory holds %v (%v) after every unpublish, want nothing", entries, err)
	}
}

// TestSweepOrphans: at start the plugin detaches a staging tmpfs that no
// holder or consumer mounts (a crash between a publish's two mounts), and
// keeps one that a target still shows.
func TestSweepOrphans(t *testing.T) {
	needMountNS(t)
	root := t.TempDir()
	orphan, kept := filepath.Join(root, "ns", "blob", "pod-a"), filepath.Join(root, "ns", "blob", "pod-b")
	target := filepath.Join(t.TempDir(), "mount")
	for _, d := range []string{orphan, kept, target} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{orphan, kept} {
		if _, err := mountHolder(d, holderMountFor("b", "4Ki", layoutFiles, 4096)); err != nil {
			t.Fatal(err)
		}
	}
	if err := bindMount(kept, target, holderFlags); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, d := range []string{target, kept, orphan} {
			_ = unmountAll(d, unix.MNT_DETACH)
		}
	})
	sweepOrphans(root, testr.New(t))
	if st, _ := mountAt(orphan); st.mounted {
		t.Errorf("orphaned staging %s still mounted after the sweep", orphan)
	}
	if st, _ := mountAt(kept); !st.mounted {
		t.Errorf("staging %s, still bound at %s, was swept", kept, target)
	}
}
