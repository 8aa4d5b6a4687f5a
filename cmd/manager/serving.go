// SPDX-License-Identifier: Apache-2.0

package main

import (
	"crypto/tls"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The metrics endpoint's authentication and authorization (filters) ask the
// apiserver about every scraper's token, as kubebuilder's scaffold does.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsServer is how the manager serves /metrics. Secure (the default):
// HTTPS, and a scraper must present a bearer token the apiserver accepts
// (TokenReview) for a subject allowed to get the non-resource URL /metrics
// (SubjectAccessReview); anything else is 401 or 403. The certificate is
// read from --metrics-cert-dir and reloaded when it changes, or, without
// one, generated self-signed in memory at start (the root file system stays
// read-only). Insecure is plain HTTP with no check, for a cluster that
// fences the port by other means.
func (o *options) metricsServer() metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.metricsAddr}
	if !o.metricsSecure {
		return m
	}
	m.SecureServing = true
	m.FilterProvider = filters.WithAuthenticationAndAuthorization
	// HTTP/2 is off, as in kubebuilder's scaffold: its stream handling
	// was the attack surface of the "rapid reset" and stream-cancellation
	// CVEs, and a scrape gains nothing from it.
	m.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	if o.metricsCertDir != "" {
		m.CertDir = o.metricsCertDir
	}
	return m
}

// validateServing checks the metrics and namespace flags.
func (o *options) validateServing() []error {
	var errs []error
	if o.metricsCertDir != "" && !filepath.IsAbs(o.metricsCertDir) {
		errs = append(errs, fmt.Errorf("--metrics-cert-dir %q: want an absolute directory holding tls.crt and tls.key", o.metricsCertDir))
	}
	if o.metricsCertDir != "" && !o.metricsSecure {
		errs = append(errs, fmt.Errorf("--metrics-cert-dir %q is for HTTPS: it needs --metrics-secure", o.metricsCertDir))
	}
	for _, ns := range o.namespaces() {
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, fmt.Errorf("--watch-namespaces: %q is not a namespace name: %s", ns, msg))
		}
	}
	return errs
}

// namespaces splits --watch-namespaces: the namespaces whose PfsBlobs,
// PfsTransfers and PcoreJobs (and the pods, Secrets and DaemonSets made for
// them) the manager watches; none means every namespace.
func (o *options) namespaces() []string { return commaList(o.watchNamespaces) }

// cacheOptions limits the informers to the watched namespaces. Nodes,
// PersistentVolumes and NodeResourceTopologies are cluster-scoped and are
// still watched cluster-wide (the chart binds only those cluster-wide when
// it is given namespaces).
func (o *options) cacheOptions() cache.Options {
	ns := o.namespaces()
	if len(ns) == 0 {
		return cache.Options{}
	}
	c := cache.Options{DefaultNamespaces: make(map[string]cache.Config, len(ns))}
	for _, n := range ns {
		c.DefaultNamespaces[n] = cache.Config{}
	}
	return c
}
