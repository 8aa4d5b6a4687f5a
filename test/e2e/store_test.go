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
)

// The store tests (issue 30) load blobs from a real S3 server on the host
// (SeaweedFS over TLS, hack/s3-server.sh) and from its filer's plain HTTP
// side, holding real model files uploaded by boto3.
const (
	storeBucket  = "models"
	storeCreds   = "store-creds"
	s3DirBlob    = "minilm-s3"
	httpFileBlob = "minilm-weights-http"
	s3ResumeBlob = "dict-s3-resumed"
	// storeRate paces the store's answers to the nodes in the resume test
	// so the read lasts ~20 s: long enough to kill the server mid-read.
	storeRate = "80mbit"
)

// testStoreSources is issue 30's proof on the cluster.
func testStoreSources(ctx context.Context, t *testing.T) {
	s := startStore(t)
	// The blobs go when the step ends: their holders' CPU requests (one
	// per node each) would otherwise leave a node too little for the
	// 1-CPU transfer pods of later steps.
	t.Cleanup(func() { deleteBlobs(t, s3DirBlob, httpFileBlob, s3ResumeBlob) })
	checksums := s.upload(t, filepath.Join(env.dataDir, "minilm"), storeBucket, "minilm")
	s.upload(t, filepath.Join(env.dataDir, "sudachi", "system.dic"), storeBucket, "sudachi")
	s.applySecrets(t, storeCreds, s.secret)
	t.Run("a model directory from S3 over TLS reaches every node with the digest of the same files read from disk", func(t *testing.T) {
		testS3Dir(ctx, t, s, checksums)
	})
	t.Run("a file over HTTP reaches every node with its sha256", func(t *testing.T) {
		testHTTPFile(ctx, t, s)
	})
	t.Run("the store killed mid-read and started again: the origin resumes its ranges, nothing read twice", func(t *testing.T) {
		testStoreKilled(ctx, t, s)
	})
	t.Run("bad sources: each a clear condition, no secret shown", func(t *testing.T) {
		testStoreBadInput(ctx, t, s)
	})
}

func testS3Dir(ctx context.Context, t *testing.T, s *s3Store, checksums int) {
	want := localDigest(t, filepath.Join(env.dataDir, "minilm"))
	// Ranges of 1 MiB, 8 at once: the origin must send at least one GET per
	// MiB (the default, 8 MiB, would send 8 times fewer).
	applySourceBlob(t, s3DirBlob, s3Source(s, "prefix: minilm/", storeCreds)+"      reads: {concurrency: 8, rangeSize: 1Mi}\n")
	st := waitBlob(ctx, t, s3DirBlob, 5*time.Minute, blobReady)
	checkEveryNode(t, st, want)
	if wantSrc := "s3://" + storeBucket + "/minilm/"; st.Source != wantSrc {
		t.Errorf("status.source %q, want %q", st.Source, wantSrc)
	}
	r := originResultRemote(t, st)
	// boto3 stored a sha256 with each object: the origin compared every one
	// that is a sha256 of the bytes.
	if r.Checksums != int64(checksums) {
		t.Errorf("origin source.remote %+v: want %d store checksums compared", r, checksums)
	}
	if size, _ := strconv.ParseInt(st.Size, 10, 64); r.Requests < size>>20 {
		t.Errorf("origin sent %d requests for %s bytes: want one GET per MiB (reads.rangeSize 1Mi)", r.Requests, st.Size)
	}
	noneShows(t, s.secret, s3DirBlob)
	t.Logf("S3 directory Ready %s in %s s, sha256 %s, origin %+v", st.Ready, st.DistributionSeconds, st.SHA256, r)
}

func testHTTPFile(ctx context.Context, t *testing.T, s *s3Store) {
	path := filepath.Join(env.dataDir, "minilm", "model.safetensors")
	want := sha256File(t, path)
	// The filer serves the bucket's objects over plain HTTP, with ranges and
	// ETags, as a web server or a mirror of a model hub does.
	url := fmt.Sprintf("http://%s:%s/buckets/%s/minilm/model.safetensors", s.addr, s.filerPort, storeBucket)
	applySourceBlob(t, httpFileBlob, fmt.Sprintf("    http: {url: %q}\n", url))
	st := waitBlob(ctx, t, httpFileBlob, 5*time.Minute, blobReady)
	checkEveryNode(t, st, want)
	if st.Source != url {
		t.Errorf("status.source %q, want the URL %q", st.Source, url)
	}
	t.Logf("HTTP file Ready %s in %s s, sha256 %s", st.Ready, st.DistributionSeconds, st.SHA256)
}

func testStoreKilled(ctx context.Context, t *testing.T, s *s3Store) {
	want := sha256File(t, filepath.Join(env.dataDir, "sudachi", "system.dic"))
	throttle(t, s.iface, s.s3Port, storeRate)
	s.applyS3Blob(t, s3ResumeBlob, "key: sudachi/system.dic", storeCreds)
	// The origin's init container reads the store; kill the store once it
	// has read for a while, and start it again on the same directory.
	var origin string
	err := poll(ctx, 3*time.Minute, func() (bool, error) {
		st, err := getBlobStatus(s3ResumeBlob)
		if err != nil {
			return false, err
		}
		for _, n := range st.Nodes {
			if n.Role == "Origin" && n.Pod != "" {
				origin = n.Pod
			}
		}
		if origin == "" {
			return false, nil
		}
		out, _ := kubectl("-n", testNS, "get", "pod", origin, "-o",
			`jsonpath={.status.initContainerStatuses[?(@.name=="create")].state.running.startedAt}`)
		return out != "", nil
	})
	if err != nil {
		t.Fatalf("the origin of %s never started reading: %v\n%s", s3ResumeBlob, err, describe("pfsblob", s3ResumeBlob))
	}
	time.Sleep(6 * time.Second)
	if out, _ := kubectl("-n", testNS, "get", "pod", origin, "-o",
		`jsonpath={.status.initContainerStatuses[?(@.name=="create")].state.running.startedAt}`); out == "" {
		t.Fatalf("origin %s finished reading before the store could be killed: lower storeRate", origin)
	}
	s.kill(t)
	t.Logf("killed the store mid-read of %s (origin %s)", s3ResumeBlob, origin)
	time.Sleep(2 * time.Second)
	s.start(t)
	st := waitBlob(ctx, t, s3ResumeBlob, 6*time.Minute, blobReady)
	checkEveryNode(t, st, want)
	for _, n := range st.Nodes {
		if n.Role == "Origin" && (n.Pod != origin || n.Attempts > 1) {
			t.Errorf("origin %s after %d attempt(s): want the same pod %s, its load resumed, not restarted", n.Pod, n.Attempts, origin)
		}
	}
	r := originResultRemote(t, st)
	if r.Retries < 1 || r.ResumedBytes < 1 {
		t.Errorf("origin source.remote %+v: want ranges retried and resumed where they stopped", r)
	}
	t.Logf("resumed after the store was killed: Ready %s, origin %+v", st.Ready, r)
}

// noneShows asserts the secret appears nowhere a user without its Secret
// can read: the blob, the events, the pods' specs and logs.
func noneShows(t *testing.T, secret, blob string) {
	t.Helper()
	places := map[string]string{}
	places["pfsblob"], _ = kubectl("-n", testNS, "get", "pfsblob", blob, "-o", "yaml")
	places["events"], _ = kubectl("-n", testNS, "get", "events", "-o", "yaml")
	places["pods"], _ = kubectl("-n", testNS, "get", "pods", "-o", "yaml")
	pods, _ := kubectl("-n", testNS, "get", "pods", "-o", "name")
	for _, p := range strings.Fields(pods) {
		places["logs of "+p], _ = kubectl("-n", testNS, "logs", p, "--all-containers")
	}
	for where, text := range places {
		if strings.Contains(text, secret) {
			t.Errorf("the secret shows in %s", where)
		}
	}
}

// waitReason waits until the blob is not Ready for reason and returns the
// message.
func waitReason(ctx context.Context, t *testing.T, blob, reason string) string {
	t.Helper()
	var msg string
	waitBlob(ctx, t, blob, 3*time.Minute, func(st *blobStatus) (bool, error) {
		s, r, m := st.ready()
		msg = m
		return s == "False" && r == reason, nil
	})
	return msg
}

func testStoreBadInput(ctx context.Context, t *testing.T, s *s3Store) {
	const wrongSecret = "0123456789abcdef0123456789abcdef01234567"
	s.applySecrets(t, "store-creds-wrong", wrongSecret)
	cases := []refusal{
		{"bad-secret-missing", s3Source(s, "key: sudachi/system.dic", "no-such-secret"),
			"SourceNotFound", []string{"no-such-secret"}},
		{"bad-keys-wrong", s3Source(s, "key: sudachi/system.dic", "store-creds-wrong"),
			"SourceInvalid", []string{"403"}},
		{"bad-key-missing", s3Source(s, "key: sudachi/no-such.dic", storeCreds),
			"SourceInvalid", []string{"404", "sudachi/no-such.dic"}},
		// The store's CA is a throwaway one: without caBundle the image's
		// system bundle (Debian's) does not trust it.
		{"bad-no-ca-bundle", strings.Replace(s3Source(s, "key: sudachi/system.dic", storeCreds), "      caBundle: {configMapName: store-ca}\n", "", 1),
			"SourceInvalid", []string{"certificate not trusted", "CA bundle"}},
		{"bad-url-missing", fmt.Sprintf("    http: {url: \"http://%s:%s/buckets/%s/nothing.bin\"}\n", s.addr, s.filerPort, storeBucket),
			"SourceInvalid", []string{"404"}},
	}
	checkRefusals(ctx, t, cases, wrongSecret, s.secret)
	// The API refuses a spec it cannot run, saying how to fix it.
	out, err := kubectlIn(fmt.Sprintf(`apiVersion: pfs.packetfs.io/v1alpha1
kind: PfsBlob
metadata: {name: bad-both, namespace: %s}
spec:
  source:
    s3: {endpoint: %q, bucket: models, key: a, prefix: b/}
`, testNS, s.endpoint), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "needs exactly one of key") {
		t.Errorf("a source with key and prefix: kubectl apply said %q (%v), want the API to refuse it and say why", out, err)
	}
}

func s3Source(s *s3Store, keyOrPrefix, secret string) string {
	return fmt.Sprintf(`    s3:
      endpoint: %s
      bucket: %s
      %s
      credentialsSecretRef: {name: %s}
      caBundle: {configMapName: store-ca}
`, s.endpoint, storeBucket, keyOrPrefix, secret)
}

// refusal is a blob whose source cannot be read: the Ready condition's
// reason it must end with and what its message must say.
type refusal struct {
	name, source, reason string
	want                 []string
}

// checkRefusals creates every case's blob at once and checks each ends
// not Ready for its reason, saying what it must, on no node, and showing
// none of secrets; then deletes them.
func checkRefusals(ctx context.Context, t *testing.T, cases []refusal, secrets ...string) {
	t.Helper()
	for _, c := range cases {
		applySourceBlob(t, c.name, c.source)
	}
	for _, c := range cases {
		msg := waitReason(ctx, t, c.name, c.reason)
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %s message %q does not say %q", c.name, c.reason, msg, w)
			}
		}
		for _, sec := range secrets {
			if strings.Contains(msg, sec) {
				t.Errorf("%s: the message shows a secret: %q", c.name, msg)
			}
		}
		// Nothing half-filled: no node holds such a blob.
		if st, err := getBlobStatus(c.name); err != nil || st.ReadyNodes != 0 {
			t.Errorf("%s: %d nodes ready (%v), want none", c.name, st.ReadyNodes, err)
		}
		t.Logf("%s: %s: %s", c.name, c.reason, msg)
		_, _ = kubectl("-n", testNS, "delete", "pfsblob", c.name, "--wait=false")
	}
}
