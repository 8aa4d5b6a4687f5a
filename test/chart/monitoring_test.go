// SPDX-License-Identifier: Apache-2.0

//go:build chart

package chart

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const (
	alertsFile    = "../../charts/packetfs-operator/files/alerts.yaml"
	dashboardFile = "../../charts/packetfs-operator/files/dashboard.json"
)

func promtool(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (hack/install-deps.sh installs Debian's prometheus): %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = "testdata"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// The alert rules are valid, and each fires on its fault and not without
// it (promtool's unit tests, testdata/alerts_test.yaml).
func TestAlertRules(t *testing.T) {
	promtool(t, "check", "rules", "../"+alertsFile)
	promtool(t, "test", "rules", "alerts_test.yaml")
}

// dashboardExprs are the PromQL expressions of every panel of the dashboard.
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out[p.Title+" "+tg.RefID] = tg.Expr
		}
	}
	return out
}

// Every panel's query parses as PromQL: they go through promtool as the
// expressions of recording rules (promtool has no check for a bare query).
func TestDashboardQueriesParse(t *testing.T) {
	exprs := dashboardExprs(t)
	rules := make([]map[string]string, 0, len(exprs))
	i := 0
	for _, e := range exprs {
		i++
		rules = append(rules, map[string]string{"record": fmt.Sprintf("packetfs:panel_%d", i), "expr": e})
	}
	doc, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "panels.yaml")
	if err := os.WriteFile(f, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	promtool(t, "check", "rules", f)
}

// The toggles: nothing by default; each object when enabled, the
// PrometheusRule carrying exactly files/alerts.yaml's groups, the
// PodMonitor on the holders' metrics port in every namespace, the
// dashboard's ConfigMap holding files/dashboard.json; a PodMonitor without
// holder pages and a ServiceMonitor without the metrics Service refused.
func TestMonitoringObjects(t *testing.T) {
	out, err := render(t, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range decode(t, out).kinds() {
		if strings.HasPrefix(k, "PrometheusRule/") || strings.HasPrefix(k, "PodMonitor/") || strings.HasPrefix(k, "ServiceMonitor/") {
			t.Errorf("%s rendered by default", k)
		}
	}
	out, err = render(t, `monitoring:
  serviceMonitor: {enabled: true, labels: {release: kps}}
  podMonitor: {enabled: true}
  prometheusRule: {enabled: true}
  dashboard: {enabled: true, namespace: grafana}
`)
	if err != nil {
		t.Fatal(err)
	}
	o := decode(t, out)
	var rule, pm, sm, cm unstructured.Unstructured
	o.get(t, "PrometheusRule", release+"-packetfs-operator", &rule.Object)
	o.get(t, "PodMonitor", release+"-packetfs-operator-holders", &pm.Object)
	o.get(t, "ServiceMonitor", release+"-packetfs-operator", &sm.Object)
	o.get(t, "ConfigMap", release+"-packetfs-operator-dashboard", &cm.Object)

	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := yaml.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups"); !reflect.DeepEqual(got, want["groups"]) {
		t.Errorf("PrometheusRule groups differ from %s:\n%v", alertsFile, got)
	}
	if every, _, _ := unstructured.NestedBool(pm.Object, "spec", "namespaceSelector", "any"); !every {
		t.Error("PodMonitor does not look in every namespace")
	}
	eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" {
		t.Errorf("PodMonitor endpoints %v, want the port named metrics", eps)
	}
	sel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	if sel["app.kubernetes.io/component"] != "blob-holder" || sel["app.kubernetes.io/managed-by"] != "packetfs-operator" {
		t.Errorf("PodMonitor selector %v", sel)
	}
	if l := sm.GetLabels()["release"]; l != "kps" {
		t.Errorf("ServiceMonitor labels %v", sm.GetLabels())
	}
	dash, _ := os.ReadFile(dashboardFile)
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "packetfs.json"); strings.TrimSpace(got) != strings.TrimSpace(string(dash)) {
		t.Error("the dashboard ConfigMap does not hold files/dashboard.json")
	}
	if cm.GetNamespace() != "grafana" || cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap namespace %q labels %v", cm.GetNamespace(), cm.GetLabels())
	}

	for values, msg := range map[string]string{
		"monitoring: {podMonitor: {enabled: true}}\ndataplane: {metricsPort: 0}":   "monitoring.podMonitor.enabled needs dataplane.metricsPort",
		"monitoring: {serviceMonitor: {enabled: true}}\nmetrics: {enabled: false}": "monitoring.serviceMonitor.enabled needs metrics.enabled",
	} {
		if _, err := render(t, values); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want %q", values, err, msg)
		}
	}
}
