// SPDX-License-Identifier: Apache-2.0

//go:build chart

package chart

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// readClusterRole reads a ClusterRole of config/rbac.
func readClusterRole(t *testing.T, name string) rbacv1.ClusterRole {
	t.Helper()
	b, err := os.ReadFile(root + "/config/rbac/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var r rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(b, &r); err != nil {
		t.Fatalf("config/rbac/%s: %v", name, err)
	}
	return r
}

// TestMetricsAccess: the metrics endpoint is HTTPS with authn/authz by
// default; the metrics-reader ClusterRole holds config/rbac's rule and is
// bound only to metrics.readers; the manager may create the reviews the
// check needs; a certificate Secret is mounted read-only; the
// ServiceMonitor scrapes with its token; secure false is plain HTTP with
// no reader role.
func TestMetricsAccess(t *testing.T) {
	const full = release + "-packetfs-operator"
	out, err := render(t, "")
	if err != nil {
		t.Fatal(err)
	}
	o := decode(t, out)
	var reader rbacv1.ClusterRole
	o.get(t, "ClusterRole", full+"-metrics-reader", &reader)
	if diff := cmp.Diff(readClusterRole(t, "metrics_reader_role.yaml").Rules, reader.Rules); diff != "" {
		t.Errorf("metrics-reader rules differ from config/rbac/metrics_reader_role.yaml (-want +got):\n%s", diff)
	}
	if slices.Contains(o.kinds(), "ClusterRoleBinding/"+full+"-metrics-reader") {
		t.Error("the metrics-reader ClusterRole is bound to someone by default")
	}
	var mgr rbacv1.ClusterRole
	o.get(t, "ClusterRole", full+"-manager", &mgr)
	if !allows(mgr.Rules, "tokenreviews", "create") || !allows(mgr.Rules, "subjectaccessreviews", "create") {
		t.Error("the manager may not create TokenReviews and SubjectAccessReviews: the metrics endpoint cannot check a scraper")
	}
	c := o.deployment(t, full).Spec.Template.Spec.Containers[0]
	if !containsArg(c.Args, "--metrics-secure=true") || len(c.VolumeMounts) != 0 {
		t.Errorf("default args %v mounts %v: want --metrics-secure=true and no certificate", c.Args, c.VolumeMounts)
	}

	out, err = render(t, `metrics:
  certSecret: metrics-tls
  readers: [{kind: ServiceAccount, name: prometheus-k8s, namespace: monitoring}, {kind: Group, name: sre}]
monitoring: {serviceMonitor: {enabled: true}}
`)
	if err != nil {
		t.Fatal(err)
	}
	o = decode(t, out)
	var crb rbacv1.ClusterRoleBinding
	o.get(t, "ClusterRoleBinding", full+"-metrics-reader", &crb)
	wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus-k8s", Namespace: "monitoring"},
		{Kind: "Group", Name: "sre", APIGroup: rbacv1.GroupName}}
	if diff := cmp.Diff(wantSubjects, crb.Subjects); diff != "" || crb.RoleRef.Name != full+"-metrics-reader" {
		t.Errorf("metrics-reader binding to %s, subjects (-want +got):\n%s", crb.RoleRef.Name, diff)
	}
	d := o.deployment(t, full)
	c = d.Spec.Template.Spec.Containers[0]
	wantMount := []corev1.VolumeMount{{Name: "metrics-certs", MountPath: "/etc/packetfs/metrics-certs", ReadOnly: true}}
	if !containsArg(c.Args, "--metrics-cert-dir=/etc/packetfs/metrics-certs") || !cmp.Equal(wantMount, c.VolumeMounts) {
		t.Errorf("certSecret: args %v mounts %v", c.Args, c.VolumeMounts)
	}
	if v := d.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret == nil || v[0].Secret.SecretName != "metrics-tls" {
		t.Errorf("certSecret volumes %+v, want the Secret metrics-tls", v)
	}
	var sm unstructured.Unstructured
	o.get(t, "ServiceMonitor", full, &sm.Object)
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	ep, _ := eps[0].(map[string]any)
	skip, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify")
	if ep["scheme"] != "https" || ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" || !skip {
		t.Errorf("ServiceMonitor endpoint %v: want https with the pod's token", ep)
	}
	out, err = render(t, "monitoring: {serviceMonitor: {enabled: true, tlsConfig: {serverName: pfs-metrics, ca: {secret: {name: ca, key: ca.crt}}}}}\n")
	if err != nil {
		t.Fatal(err)
	}
	decode(t, out).get(t, "ServiceMonitor", full, &sm.Object)
	eps, _, _ = unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	tls, _, _ := unstructured.NestedMap(eps[0].(map[string]any), "tlsConfig")
	if tls["serverName"] != "pfs-metrics" || tls["insecureSkipVerify"] != nil {
		t.Errorf("ServiceMonitor tlsConfig %v: want the values' instead of skipping verification", tls)
	}

	out, err = render(t, "metrics: {secure: false, port: 8080, service: {port: 8080}}\nmonitoring: {serviceMonitor: {enabled: true}}\n")
	if err != nil {
		t.Fatal(err)
	}
	o = decode(t, out)
	if slices.Contains(o.kinds(), "ClusterRole/"+full+"-metrics-reader") {
		t.Error("secure false still renders the metrics-reader ClusterRole")
	}
	o.get(t, "ServiceMonitor", full, &sm.Object)
	eps, _, _ = unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if ep := eps[0].(map[string]any); ep["scheme"] != nil || ep["bearerTokenFile"] != nil {
		t.Errorf("plain HTTP ServiceMonitor endpoint %v sends a token", ep)
	}
	if _, err := render(t, "metrics: {readers: [{kind: ServiceAccount, name: prom}]}\n"); err == nil ||
		!strings.Contains(err.Error(), "metrics.readers: a ServiceAccount needs its namespace") {
		t.Errorf("a reader ServiceAccount without namespace: %v", err)
	}
}

// TestMetricsNetworkPolicy: off by default; on, it selects the manager pods
// alone and admits only the selected namespaces' pods, on the metrics port.
func TestMetricsNetworkPolicy(t *testing.T) {
	const full = release + "-packetfs-operator"
	out, err := render(t, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range decode(t, out).kinds() {
		if strings.HasPrefix(k, "NetworkPolicy/") {
			t.Errorf("%s rendered by default", k)
		}
	}
	out, err = render(t, "metrics: {networkPolicy: {enabled: true, podSelector: {matchLabels: {app: prometheus}}}}\n")
	if err != nil {
		t.Fatal(err)
	}
	o := decode(t, out)
	var np networkingv1.NetworkPolicy
	o.get(t, "NetworkPolicy", full+"-allow-metrics", &np)
	d := o.deployment(t, full)
	if !cmp.Equal(np.Spec.PodSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("policy selects %v, the manager pods are %v", np.Spec.PodSelector.MatchLabels, d.Spec.Selector.MatchLabels)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != 1 {
		t.Fatalf("policy %+v: want one ingress rule", np.Spec)
	}
	in := np.Spec.Ingress[0]
	if len(in.Ports) != 1 || in.Ports[0].Port.String() != "metrics" || len(in.From) != 1 ||
		in.From[0].NamespaceSelector.MatchLabels["metrics"] != "enabled" || in.From[0].PodSelector.MatchLabels["app"] != "prometheus" {
		t.Errorf("ingress %+v: want the metrics port from namespaces metrics=enabled, pods app=prometheus", in)
	}
}

// namespaced are the resources of config/rbac/role.yaml that live in a
// namespace; clusterScoped the others. A resource in neither list fails
// the test: the chart's watchNamespaces split must learn about it.
var (
	namespaced = []string{"configmaps", "persistentvolumeclaims", "events", "pods", "secrets", "services", "daemonsets",
		"network-attachment-definitions", "pcorejobs", "pfstransfers", "pfsblobs"}
	clusterScoped = []string{"nodes", "persistentvolumes", "noderesourcetopologies", "tokenreviews", "subjectaccessreviews"}
)

// TestWatchNamespaces: with watchNamespaces the manager gets --watch-namespaces,
// its rules bound by a RoleBinding in each namespace and no ClusterRoleBinding,
// and cluster-wide exactly role.yaml's rules on cluster-scoped resources.
func TestWatchNamespaces(t *testing.T) {
	const full = release + "-packetfs-operator"
	out, err := render(t, "watchNamespaces: [team-a, team-b]\n")
	if err != nil {
		t.Fatal(err)
	}
	o := decode(t, out)
	if !containsArg(o.deployment(t, full).Spec.Template.Spec.Containers[0].Args, "--watch-namespaces=team-a,team-b") {
		t.Error("no --watch-namespaces=team-a,team-b")
	}
	if slices.Contains(o.kinds(), "ClusterRoleBinding/"+full+"-manager") {
		t.Error("the manager's rules are still bound cluster-wide")
	}
	var bound []string
	for _, u := range o.list {
		if u.GetKind() != "RoleBinding" || u.GetName() != full+"-manager" {
			continue
		}
		var rb rbacv1.RoleBinding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &rb); err != nil {
			t.Fatal(err)
		}
		bound = append(bound, rb.Namespace)
		if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != full+"-manager" || !cmp.Equal(rb.Subjects, []rbacv1.Subject{sa(full)}) {
			t.Errorf("RoleBinding in %s: ref %+v subjects %+v", rb.Namespace, rb.RoleRef, rb.Subjects)
		}
	}
	if !slices.Equal(bound, []string{"team-a", "team-b"}) {
		t.Errorf("the manager's rules are bound in %v, want team-a and team-b", bound)
	}
	var want []rbacv1.PolicyRule
	for _, r := range readClusterRole(t, "role.yaml").Rules {
		var res []string
		for _, x := range r.Resources {
			base, _, _ := strings.Cut(x, "/")
			switch {
			case slices.Contains(clusterScoped, base):
				res = append(res, x)
			case !slices.Contains(namespaced, base):
				t.Errorf("config/rbac/role.yaml has %s: add it to namespaced or clusterScoped, and to the chart's split", x)
			}
		}
		if len(res) > 0 {
			r.Resources = res
			want = append(want, r)
		}
	}
	var cluster rbacv1.ClusterRole
	o.get(t, "ClusterRole", full+"-manager-cluster", &cluster)
	if diff := cmp.Diff(want, cluster.Rules); diff != "" {
		t.Errorf("cluster-wide rules (-want +got):\n%s", diff)
	}
	var crb rbacv1.ClusterRoleBinding
	o.get(t, "ClusterRoleBinding", full+"-manager-cluster", &crb)
	if crb.RoleRef.Name != full+"-manager-cluster" || !cmp.Equal(crb.Subjects, []rbacv1.Subject{sa(full)}) {
		t.Errorf("cluster binding ref %+v subjects %+v", crb.RoleRef, crb.Subjects)
	}
	if _, err := render(t, "watchNamespaces: [Team_A]\n"); err == nil || !strings.Contains(err.Error(), "watchNamespaces") {
		t.Errorf("a bad namespace name: %v", err)
	}
}
