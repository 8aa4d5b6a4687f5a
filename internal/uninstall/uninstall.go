// SPDX-License-Identifier: Apache-2.0

// Package uninstall empties the cluster of what the operator made before
// Helm removes the operator itself: the chart's pre-delete hook runs the
// manager binary with --uninstall-cleanup. Helm never deletes the CRDs of
// a chart's crds/ directory, so without this every PfsBlob, PfsTransfer
// and PcoreJob, and the holder pods, DaemonSets and Services they own,
// would outlive the release in every namespace, with nobody left to
// process their finalizers. The operator still runs while the hook does
// (pre-delete hooks run before any release resource goes), so a blob's
// finalizer is handled as on any deletion.
package uninstall

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// Options says how long to wait and whether the CRDs go too.
type Options struct {
	// Timeout bounds the wait for every object and operand pod to be gone.
	Timeout time.Duration
	// Poll is how often to look again (0: 2s).
	Poll time.Duration
	// DeleteCRDs removes the three CustomResourceDefinitions at the end
	// (the chart's uninstall.deleteCRDs); by default they stay.
	DeleteCRDs bool
	// Sweep, when its Image is set, removes the XDP programs crashed
	// AF_XDP runs left on the nodes' links, once every operand pod is gone
	// (so a program still there belongs to no live run).
	Sweep Sweep
}

// CRDs are the operator's CustomResourceDefinitions.
var CRDs = []string{"pfsblobs.pfs.packetfs.io", "pfstransfers.pfs.packetfs.io", "pcorejobs.pfs.packetfs.io"}

// Run deletes every PfsTransfer, PcoreJob and PfsBlob in every namespace,
// waits until they and every operand pod are gone, sweeps the nodes' links
// of stale XDP programs when asked, then deletes the CRDs when asked. On timeout it returns an error naming what is left and what holds
// it (a blob a pod still mounts keeps its finalizer until that pod goes).
func Run(ctx context.Context, c client.Client, o Options, log logr.Logger) error {
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	for _, k := range kinds() {
		if err := deleteAll(ctx, c, k, log); err != nil {
			return err
		}
	}
	var left []string
	err := wait.PollUntilContextTimeout(ctx, o.Poll, o.Timeout, true, func(ctx context.Context) (bool, error) {
		l, err := remaining(ctx, c)
		if err != nil {
			if ctx.Err() != nil {
				return false, nil // the wait ran out mid-list: what the last look saw stands
			}
			return false, err
		}
		left = l
		return len(left) == 0, nil
	})
	if err != nil {
		if len(left) > 0 {
			return fmt.Errorf("after %s these are still there: %s; delete what holds them (the pods that mount a blob or use "+
				"a %s volume), or uninstall with --no-hooks to leave them", o.Timeout, strings.Join(left, "; "), podspec.CSIDriverName)
		}
		return err
	}
	log.Info("Every PacketFS object and operand pod is gone")
	if o.Sweep.Image != "" {
		if err := sweepXDP(ctx, c, o.Sweep, o.Timeout, o.Poll, log); err != nil {
			return err
		}
	}
	if o.DeleteCRDs {
		return deleteCRDs(ctx, c, log)
	}
	return nil
}

// kind is one of the operator's Kinds and an empty list of it.
type kind struct {
	name string
	list client.ObjectList
}

// kinds are the operator's Kinds, those that own others last.
func kinds() []kind {
	return []kind{{"PfsTransfer", &pfsv1alpha1.PfsTransferList{}}, {"PcoreJob", &pfsv1alpha1.PcoreJobList{}},
		{"PfsBlob", &pfsv1alpha1.PfsBlobList{}}}
}

// list lists every object of k in every namespace; none when the API
// server does not serve the Kind (its CRD is gone already).
func list(ctx context.Context, c client.Client, k kind) ([]client.Object, error) {
	if err := c.List(ctx, k.list); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list %s: %w", k.name, err)
	}
	items, err := meta.ExtractList(k.list)
	if err != nil {
		return nil, err
	}
	objs := make([]client.Object, 0, len(items))
	for _, it := range items {
		objs = append(objs, it.(client.Object))
	}
	return objs, nil
}

// deleteAll deletes every object of k, in every namespace.
func deleteAll(ctx context.Context, c client.Client, k kind, log logr.Logger) error {
	objs, err := list(ctx, c, k)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		err := c.Delete(ctx, obj, client.PropagationPolicy("Background"))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s %s/%s: %w", k.name, obj.GetNamespace(), obj.GetName(), err)
		}
		log.Info("Deleted", "kind", k.name, "namespace", obj.GetNamespace(), "name", obj.GetName())
	}
	return nil
}

// remaining lists what is still there: objects of the three Kinds (with
// the finalizers and mounting pods that keep a blob), operand pods, and
// any other pod with an inline volume of our CSI driver.
func remaining(ctx context.Context, c client.Client) ([]string, error) {
	var left []string
	for _, k := range kinds() {
		objs, err := list(ctx, c, k)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			left = append(left, describe(k.name, obj))
		}
	}
	// One list of every pod: the operand pods, and any other pod with a
	// volume of our CSI driver (a blob's files, or the socket directory),
	// which needs the driver to unpublish it when it goes: were the
	// driver's DaemonSet removed first, the pod would stay Terminating.
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods); err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		switch {
		case p.Labels[podspec.LabelManagedBy] == podspec.ManagedBy:
			left = append(left, "pod "+p.Namespace+"/"+p.Name)
		case usesDriver(&p):
			left = append(left, "pod "+p.Namespace+"/"+p.Name+" (a "+podspec.CSIDriverName+" volume: the driver must outlive it)")
		}
	}
	slices.Sort(left)
	return left, nil
}

// usesDriver: the pod has an inline volume of the csi.packetfs.io driver.
func usesDriver(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
		return v.CSI != nil && v.CSI.Driver == podspec.CSIDriverName
	})
}

// describe names an object that is still there, and what keeps it.
func describe(kind string, obj client.Object) string {
	s := kind + " " + obj.GetNamespace() + "/" + obj.GetName()
	if f := obj.GetFinalizers(); len(f) > 0 {
		s += " (finalizers " + strings.Join(f, ", ")
		if b, ok := obj.(*pfsv1alpha1.PfsBlob); ok && len(b.Status.MountedBy) > 0 {
			s += "; mounted by " + strings.Join(b.Status.MountedBy, ", ")
		}
		s += ")"
	}
	return s
}

func deleteCRDs(ctx context.Context, c client.Client, log logr.Logger) error {
	var errs []error
	for _, name := range CRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		crd.Name = name
		if err := c.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete CRD %s: %w", name, err))
			continue
		}
		log.Info("Deleted the CustomResourceDefinition", "name", name)
	}
	return errors.Join(errs...)
}
