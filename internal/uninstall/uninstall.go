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
}

// CRDs are the operator's CustomResourceDefinitions.
var CRDs = []string{"pfsblobs.pfs.packetfs.io", "pfstransfers.pfs.packetfs.io", "pcorejobs.pfs.packetfs.io"}

// Run deletes every PfsTransfer, PcoreJob and PfsBlob in every namespace,
// waits until they and every operand pod are gone, then the CRDs when
// asked. On timeout it returns an error naming what is left and what holds
// it (a blob a pod still mounts keeps its finalizer until that pod goes).
func Run(ctx context.Context, c client.Client, o Options, log logr.Logger) error {
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	kinds := []client.ObjectList{&pfsv1alpha1.PfsTransferList{}, &pfsv1alpha1.PcoreJobList{}, &pfsv1alpha1.PfsBlobList{}}
	for _, l := range kinds {
		if err := deleteAll(ctx, c, l, log); err != nil {
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
			return fmt.Errorf("after %s these are still there: %s; delete what holds them (the pods that mount a blob), "+
				"or uninstall with --no-hooks to leave them", o.Timeout, strings.Join(left, "; "))
		}
		return err
	}
	log.Info("Every PacketFS object and operand pod is gone")
	if o.DeleteCRDs {
		return deleteCRDs(ctx, c, log)
	}
	return nil
}

// deleteAll deletes every object of the list's Kind, in every namespace.
func deleteAll(ctx context.Context, c client.Client, l client.ObjectList, log logr.Logger) error {
	if err := c.List(ctx, l); err != nil {
		if apierrors.IsNotFound(err) || noKind(err) {
			return nil // the CRD is gone already
		}
		return fmt.Errorf("list: %w", err)
	}
	return forEach(l, func(obj client.Object) error {
		err := c.Delete(ctx, obj, client.PropagationPolicy("Background"))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s %s/%s: %w", kindName(obj), obj.GetNamespace(), obj.GetName(), err)
		}
		log.Info("Deleted", "kind", kindName(obj), "namespace", obj.GetNamespace(), "name", obj.GetName())
		return nil
	})
}

// remaining lists what is still there: objects of the three Kinds (with
// the finalizers and mounting pods that keep a blob) and operand pods.
func remaining(ctx context.Context, c client.Client) ([]string, error) {
	var left []string
	for _, l := range []client.ObjectList{&pfsv1alpha1.PfsTransferList{}, &pfsv1alpha1.PcoreJobList{}, &pfsv1alpha1.PfsBlobList{}} {
		if err := c.List(ctx, l); err != nil {
			if apierrors.IsNotFound(err) || noKind(err) {
				continue
			}
			return nil, err
		}
		_ = forEach(l, func(obj client.Object) error {
			left = append(left, describe(obj))
			return nil
		})
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.MatchingLabels{podspec.LabelManagedBy: podspec.ManagedBy}); err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		left = append(left, "pod "+p.Namespace+"/"+p.Name)
	}
	slices.Sort(left)
	return left, nil
}

// describe names an object that is still there, and what keeps it.
func describe(obj client.Object) string {
	s := kindName(obj) + " " + obj.GetNamespace() + "/" + obj.GetName()
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

func forEach(l client.ObjectList, fn func(client.Object) error) error {
	switch t := l.(type) {
	case *pfsv1alpha1.PfsBlobList:
		for i := range t.Items {
			if err := fn(&t.Items[i]); err != nil {
				return err
			}
		}
	case *pfsv1alpha1.PfsTransferList:
		for i := range t.Items {
			if err := fn(&t.Items[i]); err != nil {
				return err
			}
		}
	case *pfsv1alpha1.PcoreJobList:
		for i := range t.Items {
			if err := fn(&t.Items[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func kindName(obj client.Object) string {
	switch obj.(type) {
	case *pfsv1alpha1.PfsBlob:
		return "PfsBlob"
	case *pfsv1alpha1.PfsTransfer:
		return "PfsTransfer"
	case *pfsv1alpha1.PcoreJob:
		return "PcoreJob"
	}
	return "object"
}

// noKind: the API server does not serve the Kind (its CRD is gone).
func noKind(err error) bool {
	return meta.IsNoMatchError(err)
}
