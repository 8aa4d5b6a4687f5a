// SPDX-License-Identifier: Apache-2.0

//go:build chart

package chart

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// The user roles: aggregated into the built-in admin and edit (write the
// three Kinds) and view (read them), nothing else, nothing bound; off with
// rbac.userRoles false or rbac.create false.
func TestUserRoles(t *testing.T) {
	out, err := render(t, "")
	if err != nil {
		t.Fatal(err)
	}
	o := decode(t, out)
	kinds := []string{"pfsblobs", "pfstransfers", "pcorejobs"}
	var edit, view rbacv1.ClusterRole
	o.get(t, "ClusterRole", release+"-packetfs-operator-edit", &edit)
	o.get(t, "ClusterRole", release+"-packetfs-operator-view", &view)
	for role, labels := range map[*rbacv1.ClusterRole][]string{
		&edit: {"rbac.authorization.k8s.io/aggregate-to-admin", "rbac.authorization.k8s.io/aggregate-to-edit"},
		&view: {"rbac.authorization.k8s.io/aggregate-to-view"},
	} {
		for _, l := range labels {
			if role.Labels[l] != "true" {
				t.Errorf("%s lacks label %s=true: %v", role.Name, l, role.Labels)
			}
		}
		for _, r := range role.Rules {
			if !slices.Equal(r.APIGroups, []string{"pfs.packetfs.io"}) {
				t.Errorf("%s: a rule outside pfs.packetfs.io: %+v", role.Name, r)
			}
			for _, res := range r.Resources {
				if !slices.Contains(kinds, strings.TrimSuffix(res, "/status")) {
					t.Errorf("%s: resource %s is not one of the three Kinds", role.Name, res)
				}
				if strings.HasSuffix(res, "/status") && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
					t.Errorf("%s: users may write %s (the operator's alone): %v", role.Name, res, r.Verbs)
				}
			}
		}
	}
	for _, k := range kinds {
		if !allows(edit.Rules, k, "create") || !allows(edit.Rules, k, "delete") {
			t.Errorf("edit cannot create and delete %s", k)
		}
		if !allows(view.Rules, k, "list") || allows(view.Rules, k, "create") || allows(view.Rules, k, "delete") {
			t.Errorf("view on %s: list %v, create %v", k, allows(view.Rules, k, "list"), allows(view.Rules, k, "create"))
		}
	}
	for _, values := range []string{"rbac: {userRoles: false}", "rbac: {create: false}\nserviceAccount: {create: false, name: sa}"} {
		out, err := render(t, values)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range decode(t, out).kinds() {
			if strings.HasSuffix(k, "-edit") || strings.HasSuffix(k, "-view") {
				t.Errorf("%q renders %s", values, k)
			}
		}
	}
}

func allows(rules []rbacv1.PolicyRule, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}
