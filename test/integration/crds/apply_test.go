// SPDX-License-Identifier: Apache-2.0

// Package crds tests the chart's pre-upgrade hook (internal/crds, manager
// --apply-crds) against a real apiserver, as an identity holding only the
// hook's rules: CRDs an earlier version left (a printer column gone, a
// field's validation loosened) are back to this version's; a deleted CRD
// is created again.
package crds

import (
	"context"
	"os"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"packetfs.io/operator/internal/crds"
	"packetfs.io/operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// hookRules are the chart's (templates/operator/crd-upgrade.yaml; the
// chart tests check they stay equal).
var hookRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"create"}},
	{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "patch"},
		ResourceNames: []string{"pcorejobs.pfs.packetfs.io", "pfsblobs.pfs.packetfs.io", "pfstransfers.pfs.packetfs.io"}},
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	s := testenv.Scheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	const user = "pfs-crd-hook"
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: hookRules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}},
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := env.UserConfig(user, nil)
	if err != nil {
		t.Fatal(err)
	}
	hook, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	log := zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr))

	// An earlier version's CRDs: pfsblobs without its printer columns,
	// pcorejobs gone.
	blobs := &apiextensionsv1.CustomResourceDefinition{}
	if err := admin.Get(ctx, client.ObjectKey{Name: "pfsblobs.pfs.packetfs.io"}, blobs); err != nil {
		t.Fatal(err)
	}
	blobs.Spec.Versions[0].AdditionalPrinterColumns = nil
	if err := admin.Update(ctx, blobs); err != nil {
		t.Fatal(err)
	}
	jobs := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "pcorejobs.pfs.packetfs.io"}}
	if err := admin.Delete(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	// Its deletion finishes before the hook runs, as an upgrade's would.
	for deadline := time.Now().Add(30 * time.Second); admin.Get(ctx, client.ObjectKeyFromObject(jobs), jobs) == nil; {
		if time.Now().After(deadline) {
			t.Fatal("pcorejobs' CRD still there 30 s after its deletion")
		}
		time.Sleep(100 * time.Millisecond)
	}

	names, err := crds.Apply(ctx, hook, log)
	if err != nil {
		t.Fatalf("apply as the hook's identity: %v", err)
	}
	if len(names) != 3 {
		t.Errorf("applied %v, want the three CRDs", names)
	}
	want, err := crds.Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range want {
		var w, got apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w); err != nil {
			t.Fatal(err)
		}
		if err := admin.Get(ctx, client.ObjectKey{Name: u.GetName()}, &got); err != nil {
			t.Fatalf("%s after apply: %v", u.GetName(), err)
		}
		if !equality.Semantic.DeepEqual(w.Spec.Versions[0].AdditionalPrinterColumns, got.Spec.Versions[0].AdditionalPrinterColumns) ||
			!equality.Semantic.DeepEqual(w.Spec.Versions[0].Schema, got.Spec.Versions[0].Schema) {
			t.Errorf("%s is not this version's after apply", u.GetName())
		}
		owned := false
		for _, m := range got.ManagedFields {
			owned = owned || m.Manager == crds.FieldManager
		}
		if !owned {
			t.Errorf("%s: no fields owned by %s", u.GetName(), crds.FieldManager)
		}
	}
}
