// SPDX-License-Identifier: Apache-2.0

//go:build chart

package chart

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// The uninstall hook: a pre-delete Job of the manager image with
// --uninstall-cleanup, restricted like the manager, whose identity may list
// and delete the three Kinds and list pods, and the CRDs by name only with
// uninstall.deleteCRDs; gone with uninstall.cleanup false or rbac.create false.
func TestUninstallHook(t *testing.T) {
	name := release + "-packetfs-operator-uninstall"
	out, err := render(t, "uninstall: {cleanup: true, timeout: 120, deleteCRDs: false}")
	if err != nil {
		t.Fatal(err)
	}
	o := decode(t, out)
	var job batchv1.Job
	var role rbacv1.ClusterRole
	o.get(t, "Job", name, &job)
	o.get(t, "ClusterRole", name, &role)
	for _, k := range []string{"Job", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"} {
		for _, u := range o.list {
			if u.GetKind() == k && u.GetName() == name && u.GetAnnotations()["helm.sh/hook"] != "pre-delete" {
				t.Errorf("%s %s: annotations %v, want a pre-delete hook", k, name, u.GetAnnotations())
			}
		}
	}
	ps := job.Spec.Template.Spec
	if diff := cmp.Diff(wantPodSecurity, ps.SecurityContext); diff != "" {
		t.Errorf("hook pod securityContext (-want +got):\n%s", diff)
	}
	c := ps.Containers[0]
	if diff := cmp.Diff(wantContainerSecurity, c.SecurityContext); diff != "" {
		t.Errorf("hook container securityContext (-want +got):\n%s", diff)
	}
	flags := managerFlags(t)
	for _, a := range c.Args {
		n, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !flags[n] {
			t.Errorf("hook arg %q is not a flag of the manager", a)
		}
	}
	if !slices.Contains(c.Args, "--uninstall-cleanup") || !slices.Contains(c.Args, "--uninstall-timeout=120s") ||
		job.Spec.ActiveDeadlineSeconds == nil || *job.Spec.ActiveDeadlineSeconds != 180 || ps.ServiceAccountName != name {
		t.Errorf("hook job: args %v, deadline %v, service account %q", c.Args, job.Spec.ActiveDeadlineSeconds, ps.ServiceAccountName)
	}
	for _, k := range []string{"pfsblobs", "pfstransfers", "pcorejobs"} {
		if !allows(role.Rules, k, "delete") || !allows(role.Rules, k, "list") || allows(role.Rules, k, "create") {
			t.Errorf("hook role on %s: %+v", k, role.Rules)
		}
	}
	if allows(role.Rules, "customresourcedefinitions", "delete") || !allows(role.Rules, "pods", "list") || allows(role.Rules, "pods", "delete") {
		t.Errorf("hook role without deleteCRDs: %+v", role.Rules)
	}
	// uninstall.xdpSweep (the default): the sweep pods' image and namespace,
	// nodes listed cluster-wide, pods created and deleted only here.
	var sweepRole rbacv1.Role
	o.get(t, "Role", name, &sweepRole)
	wantSweep := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "delete"}}}
	if diff := cmp.Diff(wantSweep, sweepRole.Rules); diff != "" || sweepRole.Namespace != namespace || !allows(role.Rules, "nodes", "list") {
		t.Errorf("sweep rules in %q (-want +got):\n%s; cluster rules %+v", sweepRole.Namespace, diff, role.Rules)
	}
	for _, a := range []string{"--uninstall-xdp-sweep=true", "--dataplane-image=packetfs.io/dataplane:v", "--dataplane-binary=/usr/local/bin/pfs"} {
		if !slices.ContainsFunc(c.Args, func(s string) bool { return strings.HasPrefix(s, a) }) {
			t.Errorf("hook args %v: no %s", c.Args, a)
		}
	}
	if len(c.Env) != 1 || c.Env[0].Name != "POD_NAMESPACE" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("hook env %+v, want POD_NAMESPACE from the pod's namespace", c.Env)
	}
	out, err = render(t, "uninstall: {cleanup: true, timeout: 120, deleteCRDs: false, xdpSweep: false}")
	if err != nil {
		t.Fatal(err)
	}
	o = decode(t, out)
	o.get(t, "ClusterRole", name, &role)
	o.get(t, "Job", name, &job)
	if slices.Contains(o.kinds(), "Role/"+name) || allows(role.Rules, "nodes", "list") ||
		!slices.Contains(job.Spec.Template.Spec.Containers[0].Args, "--uninstall-xdp-sweep=false") {
		t.Errorf("xdpSweep false: kinds %v, cluster rules %+v, args %v", o.kinds(), role.Rules, job.Spec.Template.Spec.Containers[0].Args)
	}
	out, err = render(t, "uninstall: {cleanup: true, timeout: 120, deleteCRDs: true}")
	if err != nil {
		t.Fatal(err)
	}
	decode(t, out).get(t, "ClusterRole", name, &role)
	crdRule := role.Rules[len(role.Rules)-1]
	if !allows(role.Rules, "customresourcedefinitions", "delete") ||
		!slices.Equal(crdRule.ResourceNames, []string{"pfsblobs.pfs.packetfs.io", "pfstransfers.pfs.packetfs.io", "pcorejobs.pfs.packetfs.io"}) {
		t.Errorf("deleteCRDs: the CRD rule %+v, want delete on the three by name", crdRule)
	}
	for _, values := range []string{"uninstall: {cleanup: false, timeout: 120, deleteCRDs: false}",
		"rbac: {create: false}\nserviceAccount: {create: false, name: sa}"} {
		out, err := render(t, values)
		if err != nil {
			t.Fatal(err)
		}
		if k := decode(t, out).kinds(); slices.ContainsFunc(k, func(s string) bool { return strings.HasSuffix(s, "-uninstall") }) {
			t.Errorf("%q renders the uninstall hook: %v", values, k)
		}
	}
}

// The CRD-upgrade hook: a pre-upgrade Job of the manager image with
// --apply-crds, restricted like the manager, whose identity may create CRDs
// and get and patch only the three (the rules test/integration/crds runs the
// apply under); gone with crds.upgrade false or rbac.create false.
func TestCRDUpgradeHook(t *testing.T) {
	name := release + "-packetfs-operator-crds"
	out, err := render(t, "")
	if err != nil {
		t.Fatal(err)
	}
	o := decode(t, out)
	var job batchv1.Job
	var role rbacv1.ClusterRole
	o.get(t, "Job", name, &job)
	o.get(t, "ClusterRole", name, &role)
	for _, u := range o.list {
		if u.GetName() == name && u.GetAnnotations()["helm.sh/hook"] != "pre-upgrade" {
			t.Errorf("%s %s: annotations %v, want a pre-upgrade hook", u.GetKind(), name, u.GetAnnotations())
		}
	}
	ps := job.Spec.Template.Spec
	c := ps.Containers[0]
	if diff := cmp.Diff(wantContainerSecurity, c.SecurityContext); diff != "" || !cmp.Equal(wantPodSecurity, ps.SecurityContext) {
		t.Errorf("hook security contexts (-want +got):\n%s", diff)
	}
	if !slices.Equal(c.Args, []string{"--apply-crds"}) || !managerFlags(t)["apply-crds"] || ps.ServiceAccountName != name {
		t.Errorf("hook job: args %v, service account %q", c.Args, ps.ServiceAccountName)
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"create"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "patch"},
			ResourceNames: []string{"pcorejobs.pfs.packetfs.io", "pfsblobs.pfs.packetfs.io", "pfstransfers.pfs.packetfs.io"}},
	}
	if diff := cmp.Diff(want, role.Rules); diff != "" {
		t.Errorf("hook rules (-want +got):\n%s", diff)
	}
	for _, values := range []string{"crds: {upgrade: false}", "rbac: {create: false}\nserviceAccount: {create: false, name: sa}"} {
		out, err := render(t, values)
		if err != nil {
			t.Fatal(err)
		}
		if k := decode(t, out).kinds(); slices.ContainsFunc(k, func(s string) bool { return strings.HasSuffix(s, "-crds") }) {
			t.Errorf("%q renders the CRD hook: %v", values, k)
		}
	}
}
