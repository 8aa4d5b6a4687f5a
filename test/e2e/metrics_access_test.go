// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The operator's metrics endpoint is HTTPS and lets in only tokens the
// apiserver authorizes for get /metrics (the chart's metrics.secure). The
// e2e's Prometheus scrapes as the ServiceAccount metricsReaderSA, which
// testHelmInstall binds to the chart's metrics-reader ClusterRole through
// metrics.readers, as a user would bind their Prometheus's.
const (
	metricsReaderSA = "pfs-e2e-prometheus"
	// metricsStrangerSA has a token and no binding: it must be refused.
	metricsStrangerSA = "pfs-e2e-stranger"
)

// metricsReaders is the --set-json value of the install.
func metricsReaders() string {
	return fmt.Sprintf(`metrics.readers=[{"kind":"ServiceAccount","name":%q,"namespace":%q}]`, metricsReaderSA, releaseNS)
}

// createScrapers creates both ServiceAccounts in the release's namespace.
func createScrapers(t *testing.T) {
	t.Helper()
	for _, sa := range []string{metricsReaderSA, metricsStrangerSA} {
		manifest := fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: %s, namespace: %s}\n", sa, releaseNS)
		if out, err := kubectlIn(manifest, "apply", "-f", "-"); err != nil {
			t.Fatalf("ServiceAccount %s: %v\n%s", sa, err, out)
		}
	}
}

// saToken is a token the apiserver issues for the ServiceAccount.
func saToken(t *testing.T, sa string) string {
	t.Helper()
	out, err := kubectl("-n", releaseNS, "create", "token", sa, "--duration=24h")
	if err != nil || out == "" {
		t.Fatalf("token of %s: %v %s", sa, err, out)
	}
	return out
}

var forwarding = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) ->`)

// operatorGet GETs the operator pod's /metrics with the token (none when
// empty) through `kubectl port-forward`: the apiserver's proxy would not
// pass the token on, a scraper in the cluster connects directly.
func operatorGet(t *testing.T, token string) (int, string) {
	t.Helper()
	pod := operatorPod(t)
	cmd := exec.Command(env.kubectl, "-n", releaseNS, "port-forward", "pod/"+pod, ":metrics", "--address=127.0.0.1")
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+env.kubeconfig)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := forwarding.FindStringSubmatch(sc.Text()); m != nil {
				port <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var p string
	select {
	case p = <-port:
	case <-time.After(30 * time.Second):
		t.Fatalf("kubectl port-forward to %s printed no local port in 30 s", pod)
	}
	req, err := http.NewRequest(http.MethodGet, "https://127.0.0.1:"+p+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the operator's self-signed certificate
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics of %s: %v", pod, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET /metrics of %s: %v", pod, err)
	}
	return resp.StatusCode, string(body)
}

// testMetricsAccess: a scrape without a token is refused (401), one with a
// token of an account not bound to metrics-reader too (403); the reader's
// gets the operator's series.
func testMetricsAccess(t *testing.T) {
	if code, body := operatorGet(t, ""); code != http.StatusUnauthorized {
		t.Errorf("unauthenticated scrape: HTTP %d, want 401\n%.200s", code, body)
	}
	if code, body := operatorGet(t, saToken(t, metricsStrangerSA)); code != http.StatusForbidden {
		t.Errorf("scrape by %s (not a metrics reader): HTTP %d, want 403\n%.200s", metricsStrangerSA, code, body)
	}
	code, body := operatorGet(t, saToken(t, metricsReaderSA))
	if code != http.StatusOK || !strings.Contains(body, "packetfs_") {
		t.Errorf("scrape by %s: HTTP %d, want 200 with packetfs_ series\n%.300s", metricsReaderSA, code, body)
	}
}
