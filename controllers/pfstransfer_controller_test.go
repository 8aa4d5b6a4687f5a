// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// Reconcile decides once per call, in each case where it used to decide
// again: a transfer the admission queue holds back, a pod no node fits,
// a pod the apiserver refuses; and the pod it creates is the one decided.
func TestTransferReconcileDecidesOnce(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, pfsv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	active := numaTransfer(pfsv1alpha1.NUMAPolicyNone, 0, pfsv1alpha1.PfsTransferStatus{Phase: pfsv1alpha1.PhasePlacing,
		Receiver: &pfsv1alpha1.EndpointStatus{Placement: pfsv1alpha1.Placement{Pod: "a-a0-recv"}}})
	active.Name, active.UID = "a", "a"
	// A Ready node with too little CPU for a transfer pod.
	small := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	tests := map[string]struct {
		policy     pfsv1alpha1.NUMAPolicy
		limit      int
		refuse     bool
		wantPlaced string
		wantPod    bool
		// wantHeld: x holds an admission slot afterwards.
		wantHeld bool
	}{
		"creates the receiver":        {policy: pfsv1alpha1.NUMAPolicyNone, limit: 2, wantPlaced: "False/PodsPending", wantPod: true, wantHeld: true},
		"queued":                      {policy: pfsv1alpha1.NUMAPolicyNone, limit: 1, wantPlaced: "False/Queued"},
		"no node fits":                {policy: pfsv1alpha1.NUMAPolicyRequired, limit: 2, wantPlaced: "False/NoNUMAFit"},
		"the apiserver refuses a pod": {policy: pfsv1alpha1.NUMAPolicyNone, limit: 2, refuse: true, wantPlaced: "False/PodsPending", wantHeld: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			x := numaTransfer(tc.policy, 0, pfsv1alpha1.PfsTransferStatus{})
			x.UID = "x"
			b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(x, active.DeepCopy(), small.DeepCopy()).
				WithStatusSubresource(&pfsv1alpha1.PfsTransfer{}).
				WithIndex(&corev1.Pod{}, podNodeNameField, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} })
			if tc.refuse {
				b = b.WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
					if _, pod := o.(*corev1.Pod); pod {
						return refusedByPSA
					}
					return c.Create(ctx, o, opts...)
				}})
			}
			c := b.Build()
			calls := 0
			r := &PfsTransferReconciler{
				Deps: Deps{Client: c, APIReader: c, Recorder: record.NewFakeRecorder(16), Clock: clocktesting.NewFakePassiveClock(t0),
					Pods: podspec.Config{Binary: "/pfs"}, Timing: DefaultTiming},
				Admission: &Admission{Limit: tc.limit},
			}
			r.decide = func(cfg podspec.Config, x *pfsv1alpha1.PfsTransfer, obs transferObservation) transferOutcome {
				calls++
				return decideTransferRun(cfg, x, obs)
			}
			_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "x"}})
			if (err != nil) != tc.refuse {
				t.Fatalf("Reconcile: %v", err)
			}
			if calls != 1 {
				t.Errorf("decide ran %d times in one reconcile, want 1", calls)
			}
			if !r.Admission.mu.TryLock() {
				t.Fatal("the admission lock is still held after Reconcile")
			}
			_, held := r.Admission.admitted[x.UID]
			r.Admission.mu.Unlock()
			if held != tc.wantHeld {
				t.Errorf("holds a slot: %v, want %v", held, tc.wantHeld)
			}
			got := &pfsv1alpha1.PfsTransfer{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(x), got); err != nil {
				t.Fatal(err)
			}
			if p := condSummary(got.Status.Conditions)[pfsv1alpha1.ConditionPlaced]; p != tc.wantPlaced {
				t.Errorf("Placed = %s, want %s", p, tc.wantPlaced)
			}
			pod := &corev1.Pod{}
			err = c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "x-a0-recv"}, pod)
			if (err == nil) != tc.wantPod {
				t.Fatalf("receiver pod: %v, want it created: %v", err, tc.wantPod)
			}
			if tc.wantPod && podspec.NUMAPlacementOf(pod) == nil {
				t.Error("the created receiver carries no NUMA decision")
			}
		})
	}
}
