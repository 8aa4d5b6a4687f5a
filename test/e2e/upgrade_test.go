// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// upgradeScript maps the blob through its holder's socket, then hashes the
// whole mapping every 2 s and prints it, until it is deleted: a holder
// replaced under it, or a mapping lost, would change or end the lines.
const upgradeScript = `
import hashlib, os, time, packetfs
b = packetfs.attach(os.environ["PFS_BLOB_SOCKET"], open(os.environ["PFS_BLOB_TOKEN_FILE"]).read().strip())
for i in range(300):
    print("sha256", hashlib.sha256(b.view).hexdigest(), "fingerprint %016x" % b.fingerprint, flush=True)
    time.sleep(2)
`

// testUpgradeKeepsBlobs: helm upgrade to a new chart version whose
// operator and data-plane images are new tags (the release's images under
// the version's tag, so the operator pod is replaced and the holders'
// desired template changes), with the pre-upgrade hook's CRDs, while a
// consumer maps the e2e blob. Nothing of the blob may move: its holder pods
// are the same pods, not restarted, their fill not run again (0 bytes
// re-received); the consumer reads the same bytes throughout; the CRD an
// earlier version left (no printer columns) is this version's again; a blob
// created after the upgrade runs the new data plane.
func testUpgradeKeepsBlobs(ctx context.Context, t *testing.T) {
	ver, err := run("hack/dist.sh", "version")
	if err != nil {
		t.Fatal(err)
	}
	next := nextVersion(t, ver)
	newTag := "v" + next
	chart := publishNext(t, ver, next)

	// The consumer, and what the blob's holders are before.
	manifest := strings.Replace(consumerManifest(testNS, "upgrade-reader", blobName), fmt.Sprintf("%q", attachScript), fmt.Sprintf("%q", upgradeScript), 1)
	manifest = strings.Replace(manifest, "restartPolicy: Never", "restartPolicy: Never\n  nodeName: "+env.worker, 1)
	if out, err := kubectlIn(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("consumer: %v\n%s", err, out)
	}
	defer func() {
		_, _ = kubectl("-n", testNS, "delete", "pod", "upgrade-reader", "--wait=true", "--timeout=120s")
	}()
	if err := poll(ctx, 2*time.Minute, func() (bool, error) {
		logs, _ := kubectl("-n", testNS, "logs", "upgrade-reader")
		return strings.Count(logs, "sha256 ") >= 1, nil
	}); err != nil {
		t.Fatalf("the consumer never read the blob: %v\n%s", err, describe("pod", "upgrade-reader"))
	}
	before := holderPods(ctx, t)
	blob := &pfsv1alpha1.PfsBlob{}
	if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: blobName}, blob); err != nil {
		t.Fatal(err)
	}
	fingerprint := blob.Status.Fingerprint

	// An earlier version's CRD: no printer columns.
	if out, err := kubectl("patch", "crd", "pfsblobs.pfs.packetfs.io", "--type=json",
		"-p", `[{"op":"remove","path":"/spec/versions/0/additionalPrinterColumns"}]`); err != nil {
		t.Fatalf("patch the CRD: %v %s", err, out)
	}

	args := append([]string{"upgrade", releaseName}, chart...)
	args = append(args, "-n", releaseNS, "--reuse-values", "--wait", "--timeout", "5m")
	if out, err := run(env.helm, args...); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	if out, err := kubectl("-n", releaseNS, "rollout", "status", "deployment", "-l", "app.kubernetes.io/instance="+releaseName, "--timeout=180s"); err != nil {
		t.Fatalf("the upgraded operator is not available: %v\n%s", err, out)
	}
	if chartVer, _ := kubectl("-n", releaseNS, "get", "deployment", "-l", "app.kubernetes.io/instance="+releaseName,
		"-o", "jsonpath={.items[*].metadata.labels.helm\\.sh/chart} {.items[*].spec.template.spec.containers[0].image}"); !strings.Contains(chartVer, next+" ") ||
		!strings.HasSuffix(chartVer, ":"+newTag) {
		t.Errorf("the operator after the upgrade: chart and image %q, want chart %s running the operator image %s", chartVer, next, newTag)
	}
	cols, _ := kubectl("get", "crd", "pfsblobs.pfs.packetfs.io", "-o", "jsonpath={.spec.versions[0].additionalPrinterColumns[*].name}")
	if !strings.Contains(cols, "Ready") {
		t.Errorf("the pre-upgrade hook did not bring back the CRD's printer columns: %q", cols)
	}

	// The new operator has the holders' DaemonSet on the new template
	// (OnDelete): the pods stay.
	ds := &appsv1.DaemonSet{}
	err = poll(ctx, 2*time.Minute, func() (bool, error) {
		if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: podspec.HolderName(blobName)}, ds); err != nil {
			return false, err
		}
		return strings.HasSuffix(ds.Spec.Template.Spec.Containers[0].Image, ":"+newTag), nil
	})
	if err != nil || ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		t.Fatalf("the holders' DaemonSet after the upgrade: image %s strategy %s (%v)", ds.Spec.Template.Spec.Containers[0].Image, ds.Spec.UpdateStrategy.Type, err)
	}
	time.Sleep(10 * time.Second) // a rollout, had one started, would have replaced a pod by now
	after := holderPods(ctx, t)
	for node, p := range before {
		q, ok := after[node]
		switch {
		case !ok:
			t.Errorf("node %s: its holder %s is gone after the upgrade", node, p.Name)
		case q.UID != p.UID || restarts(q) != restarts(p):
			t.Errorf("node %s: holder %s (uid %s, %d restarts) became %s (uid %s, %d restarts): the blob was filled again",
				node, p.Name, p.UID, restarts(p), q.Name, q.UID, restarts(q))
		}
	}
	if err := env.c.Get(ctx, client.ObjectKeyFromObject(blob), blob); err != nil {
		t.Fatal(err)
	}
	if c := blobReadyNow(blob); !c || blob.Status.Fingerprint != fingerprint {
		t.Errorf("blob after the upgrade: Ready %v fingerprint %s (was %s)", c, blob.Status.Fingerprint, fingerprint)
	}
	logs, _ := kubectl("-n", testNS, "logs", "upgrade-reader")
	phase, _ := kubectl("-n", testNS, "get", "pod", "upgrade-reader", "-o", "jsonpath={.status.phase} {.status.containerStatuses[0].restartCount}")
	lines := map[string]bool{}
	for _, l := range strings.Split(logs, "\n") {
		if strings.HasPrefix(l, "sha256 ") {
			lines[l] = true
		}
	}
	if phase != "Running 0" || len(lines) != 1 {
		t.Errorf("the consumer through the upgrade: %q, %d distinct readings:\n%s", phase, len(lines), logs)
	}

	// A blob made after the upgrade runs the new data plane.
	nb := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "after-upgrade", Namespace: testNS},
		Spec: pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("16Mi"), PageSize: pfsv1alpha1.PageSize2Mi,
			Fill: pfsv1alpha1.BlobFill{Type: pfsv1alpha1.FillSeed, Seed: ptr.To(int64(7))}}}
	createReadyBlob(ctx, t, nb)
	defer deleteBlobs(t, nb.Name)
	pods := &corev1.PodList{}
	if err := env.c.List(ctx, pods, client.InNamespace(testNS), client.MatchingLabels(podspec.BlobHolderLabels(nb))); err != nil || len(pods.Items) == 0 {
		t.Fatalf("holders of %s: %v", nb.Name, err)
	}
	for _, p := range pods.Items {
		if img := p.Spec.Containers[0].Image; !strings.HasSuffix(img, ":"+newTag) {
			t.Errorf("holder %s of a blob made after the upgrade runs %s, want the new data plane (%s)", p.Name, img, newTag)
		}
	}
	t.Logf("upgraded chart %s to %s (operator and data plane %s): %d holders of %s kept (same pods, no restart), the consumer read one sha256 %d times; the CRD's columns are back",
		ver, next, newTag, len(after), blobName, strings.Count(logs, "sha256 "))
}

// nextVersion is the next patch release after ver, marked as the e2e's own
// (semver orders it after ver): 0.1.0 -> 0.1.1-e2e.upgrade.
func nextVersion(t *testing.T, ver string) string {
	t.Helper()
	core, _, _ := strings.Cut(ver, "-")
	parts := strings.Split(core, ".")
	patch, err := strconv.Atoi(parts[len(parts)-1])
	if len(parts) != 3 || err != nil {
		t.Fatalf("VERSION %q is not MAJOR.MINOR.PATCH", ver)
	}
	return fmt.Sprintf("%s.%s.%d-e2e.upgrade", parts[0], parts[1], patch+1)
}

// publishNext makes release next where the chart is installed from: the
// chart packaged as version next (appVersion v+next, the images' tag) and
// both images under that tag, in the registry, or side-loaded into the
// nodes with E2E_INSTALL=local. It returns helm upgrade's chart arguments.
func publishNext(t *testing.T, ver, next string) []string {
	t.Helper()
	dir := t.TempDir()
	if out, err := run(env.helm, "package", "charts/packetfs-operator", "--version", next, "--app-version", "v"+next, "-d", dir); err != nil {
		t.Fatalf("helm package %s: %v\n%s", next, err, out)
	}
	pkg := filepath.Join(dir, "packetfs-operator-"+next+".tgz")
	if releaseRegistry == nil {
		for _, node := range env.nodes {
			for _, img := range []string{env.operatorImage, env.dataplaneImage} {
				if out, err := run("podman", "exec", node, "ctr", "-n", "k8s.io", "images", "tag", "--force",
					img, strings.TrimSuffix(img, ":v"+ver)+":v"+next); err != nil {
					t.Fatalf("%s: ctr images tag: %v %s", node, err, out)
				}
			}
		}
		return []string{pkg}
	}
	r := releaseRegistry
	for _, name := range []string{"operator", "dataplane"} {
		if out, err := run(r.orasBin(), "tag", "--ca-file", r.caFile, r.image(name)+":v"+ver, "v"+next); err != nil {
			t.Fatalf("oras tag %s: %v %s", name, err, out)
		}
	}
	if out, err := run(env.helm, "push", pkg, "oci://"+r.addr+"/packetfs/charts", "--ca-file", r.caFile); err != nil {
		t.Fatalf("helm push %s: %v\n%s", next, err, out)
	}
	return []string{r.chartRef(), "--version", next, "--ca-file", r.caFile}
}

// holderPods are the e2e blob's holder pods by node.
func holderPods(ctx context.Context, t *testing.T) map[string]corev1.Pod {
	t.Helper()
	b := &pfsv1alpha1.PfsBlob{}
	if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: blobName}, b); err != nil {
		t.Fatal(err)
	}
	pods := &corev1.PodList{}
	if err := env.c.List(ctx, pods, client.InNamespace(testNS), client.MatchingLabels(podspec.BlobHolderLabels(b))); err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Spec.NodeName] = p
		}
	}
	if len(out) == 0 {
		t.Fatalf("no holder pods of %s", blobName)
	}
	return out
}

func restarts(p corev1.Pod) int32 {
	var n int32
	for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		n += s.RestartCount
	}
	return n
}

func blobReadyNow(b *pfsv1alpha1.PfsBlob) bool {
	for _, c := range b.Status.Conditions {
		if c.Type == pfsv1alpha1.ConditionReady {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
