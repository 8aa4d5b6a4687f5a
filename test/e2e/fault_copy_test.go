// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The fault behind two alerts (PacketFSBlobNodeFailed and
// PacketFSVerificationFailed): a node's copy damaged after it was
// verified, as a failing DIMM or a tampering process would, so that a node
// joining later receives bytes that do not match the manifest. The blob
// stays that way until testPrometheusAfter has seen both alerts fire and
// deletes it (endFaultCopy): an alert needs its fault to last.
const (
	faultBlob  = "fault-copy"
	faultLabel = "pfs-e2e/fault-copy"
	faultFile  = "silero_vad.onnx"
)

// testFaultCopy: the origin's copy changed by one byte on its node; the
// relay that joins then fails verification on each of its attempts, and the
// node ends Failed with reason VerificationFailed, naming the file.
func testFaultCopy(ctx context.Context, t *testing.T) {
	origin, joiner := env.nodes[len(env.nodes)-1], env.nodes[0]
	labelFault(t, origin)
	applyBlob(t, faultBlob, "silero6/"+faultFile, fmt.Sprintf("  nodeSelector: {%s: \"true\"}\n", faultLabel))
	waitBlob(ctx, t, faultBlob, 4*time.Minute, blobReady)
	damageCopy(t, origin, faultBlob, faultFile)
	labelFault(t, joiner)
	st := waitBlob(ctx, t, faultBlob, 4*time.Minute, func(st *blobStatus) (bool, error) {
		for _, n := range st.Nodes {
			if n.Node == joiner && n.State == "Failed" && !strings.Contains(n.Message, "retrying") {
				return true, nil
			}
			if n.Node == joiner && n.State == "Ready" {
				return false, fmt.Errorf("%s became Ready from a damaged upstream", joiner)
			}
		}
		return false, nil
	})
	for _, n := range st.Nodes {
		if n.Node != joiner {
			continue
		}
		if n.Reason != "VerificationFailed" || !strings.Contains(n.Message, faultFile) || n.Attempts < 3 {
			t.Errorf("node %s: reason %q after %d attempt(s), message %q; want VerificationFailed after 3, naming %s",
				joiner, n.Reason, n.Attempts, n.Message, faultFile)
		}
		t.Logf("node %s: %s %s after %d attempts: %s", joiner, n.State, n.Reason, n.Attempts, n.Message)
	}
	if st.ReadyNodes != 1 {
		t.Errorf("%d nodes Ready, want only the origin", st.ReadyNodes)
	}
}

// labelFault puts node under the fault blob's nodeSelector (endFaultCopy
// takes the label off).
func labelFault(t *testing.T, node string) {
	t.Helper()
	if out, err := kubectl("label", "node", node, faultLabel+"=true", "--overwrite"); err != nil {
		t.Fatalf("labelling %s: %v\n%s", node, err, out)
	}
}

// damageCopy changes one byte of file in the blob's copy on node: the
// holder's files on the CSI plugin's tmpfs, mapped shared by the holder, so
// what it serves from then on differs from its manifest.
func damageCopy(t *testing.T, node, blob, file string) {
	t.Helper()
	script := fmt.Sprintf(`set -e
for f in $(find /var/lib/kubelet/pods -path '*/%s.d/files/%s' 2>/dev/null); do
  old=$(dd if="$f" bs=1 skip=4096 count=1 2>/dev/null | od -An -tx1 | tr -d ' ')
  new=$(printf '%%03o' $(( 0x$old ^ 0xff )))
  if printf "\\$new" | dd of="$f" bs=1 seek=4096 conv=notrunc 2>/dev/null; then echo "$f: 0x$old -> octal $new"; exit 0; fi
done
echo "no writable copy of %s found" >&2; exit 1`, blob, file, file)
	out, err := run("podman", "exec", node, "sh", "-c", script)
	if err != nil {
		t.Fatalf("damaging the copy of %s on %s: %v\n%s", blob, node, err, out)
	}
	t.Logf("damaged the copy on %s: %s", node, strings.TrimSpace(out))
}

// endFaultCopy deletes the fault blob and its node labels.
func endFaultCopy(t *testing.T) {
	if out, err := kubectl("-n", testNS, "delete", "pfsblob", faultBlob, "--ignore-not-found", "--wait=true", "--timeout=120s"); err != nil {
		t.Errorf("deleting %s: %v\n%s", faultBlob, err, out)
	}
	for _, n := range env.nodes {
		_, _ = kubectl("label", "node", n, faultLabel+"-")
	}
}
