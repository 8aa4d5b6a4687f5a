// SPDX-License-Identifier: Apache-2.0

// Package crds applies the manager's own CustomResourceDefinitions (the
// chart's pre-upgrade hook, manager --apply-crds): Helm installs crds/ once
// and never upgrades them, so a new version's fields and validation would
// otherwise never reach a cluster that upgraded.
package crds

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"packetfs.io/operator/config/crd"
)

// FieldManager owns the fields the hook applies.
const FieldManager = "packetfs-operator-crds"

// Read returns the embedded CRDs, sorted by name.
func Read() ([]*unstructured.Unstructured, error) {
	files, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := crd.Bases.ReadFile(f)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", path.Base(f), err)
		}
		if u.GetKind() != "CustomResourceDefinition" || u.GetName() == "" {
			return nil, fmt.Errorf("%s: not a named CustomResourceDefinition", path.Base(f))
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CRDs embedded")
	}
	return out, nil
}

// Apply server-side applies every embedded CRD, taking over the fields an
// earlier install wrote (Helm's create of crds/, an earlier hook): the
// apiserver then holds exactly this version's CRDs. It returns their names.
func Apply(ctx context.Context, c client.Client, log logr.Logger) ([]string, error) {
	all, err := Read()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, u := range all {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return names, fmt.Errorf("apply CustomResourceDefinition %s: %w", u.GetName(), err)
		}
		log.Info("Applied CustomResourceDefinition", "name", u.GetName())
		names = append(names, u.GetName())
	}
	return names, nil
}
