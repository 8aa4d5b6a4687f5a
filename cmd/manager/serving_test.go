// SPDX-License-Identifier: Apache-2.0

package main

import (
	"crypto/tls"
	"flag"
	"maps"
	"slices"
	"testing"
)

func parsed(t *testing.T, args ...string) *options {
	t.Helper()
	var o options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	o.bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &o
}

// TestMetricsServer: secure by default (HTTPS, the authn/authz filter, no
// HTTP/2), plain HTTP only when asked, and a given certificate directory used.
func TestMetricsServer(t *testing.T) {
	m := parsed(t).metricsServer()
	if !m.SecureServing || m.FilterProvider == nil || m.BindAddress != ":8443" || m.CertDir != "" {
		t.Errorf("default metrics server: secure %v filter %v bind %q certDir %q; want HTTPS with authn/authz on :8443, self-signed",
			m.SecureServing, m.FilterProvider != nil, m.BindAddress, m.CertDir)
	}
	var c tls.Config
	for _, f := range m.TLSOpts {
		f(&c)
	}
	if !slices.Equal(c.NextProtos, []string{"http/1.1"}) {
		t.Errorf("ALPN %v: want http/1.1 only", c.NextProtos)
	}
	if m := parsed(t, "--metrics-cert-dir=/certs").metricsServer(); m.CertDir != "/certs" {
		t.Errorf("certDir %q, want /certs", m.CertDir)
	}
	if m := parsed(t, "--metrics-secure=false", "--metrics-bind-address=:8080").metricsServer(); m.SecureServing || m.FilterProvider != nil {
		t.Errorf("--metrics-secure=false: secure %v filter %v, want plain HTTP", m.SecureServing, m.FilterProvider != nil)
	}
}

// TestCacheOptions: no namespaces watches all; a list (spaces and repeats
// trimmed) limits the namespaced informers to it.
func TestCacheOptions(t *testing.T) {
	if c := parsed(t).cacheOptions(); c.DefaultNamespaces != nil {
		t.Errorf("default: namespaces %v, want every namespace", c.DefaultNamespaces)
	}
	c := parsed(t, "--watch-namespaces= team-a,team-b ,team-a,").cacheOptions()
	if got := slices.Sorted(maps.Keys(c.DefaultNamespaces)); !slices.Equal(got, []string{"team-a", "team-b"}) {
		t.Errorf("namespaces %v, want [team-a team-b]", got)
	}
}
