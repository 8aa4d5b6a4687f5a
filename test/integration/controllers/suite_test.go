// SPDX-License-Identifier: Apache-2.0

// Package controllers tests the three reconcilers against a real
// kube-apiserver and etcd (envtest) with the manager running in-process as a
// user that holds only the generated least-privilege ClusterRole.
// There is no kubelet, scheduler, DaemonSet controller or garbage collector
// in envtest, so the tests play those parts: they create the holder pods a
// DaemonSet would, bind pods to nodes, and write pod status (phase,
// readiness, termination messages) through the status subresource, the way
// a kubelet reports a finished container. All assertions read the apiserver
// through a direct (uncached) client.
package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"packetfs.io/operator/controllers"
	"packetfs.io/operator/internal/podspec"
	"packetfs.io/operator/test/testenv"
)

var env *testenv.Env

// testTiming keeps retries and timeouts short so the suite runs in seconds.
var testTiming = controllers.Timing{
	UnschedulableTimeout: 2 * time.Second,
	BackoffBase:          200 * time.Millisecond,
	BackoffMax:           time.Second,
	ProgressInterval:     time.Second,
}

var podConfig = podspec.Config{Image: "packetfs.io/dataplane:test", PullPolicy: corev1.PullNever, Binary: podspec.DefaultBinary,
	MetricsPort: podspec.DefaultMetricsPort}

// holderPages plays the holders' /metrics pages (progress_test.go).
var holderPages = newFakePages()

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(zapLevel()))))
	cfg, err := operatorConfig(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "operator identity: %v\n", err)
		return 1
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testenv.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		return 1
	}
	deps := func(name string) controllers.Deps {
		return controllers.Deps{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorderFor(name), Clock: clock.RealClock{}, Pods: podConfig, Timing: testTiming,
			Progress: holderPages}
	}
	for _, setup := range []func() error{
		func() error { return controllers.AddIndexes(context.Background(), mgr) },
		func() error {
			return (&controllers.PfsBlobReconciler{Deps: deps("pfsblob")}).SetupWithManager(mgr, 2)
		},
		func() error {
			return (&controllers.PfsTransferReconciler{Deps: deps("pfstransfer")}).SetupWithManager(mgr, 2)
		},
		func() error {
			return (&controllers.PcoreJobReconciler{Deps: deps("pcorejob")}).SetupWithManager(mgr, 2)
		},
	} {
		if err := setup(); err != nil {
			fmt.Fprintf(os.Stderr, "setting up reconcilers: %v\n", err)
			return 1
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// operatorConfig returns an identity holding only the ClusterRole generated
// from the RBAC markers (config/rbac/role.yaml), so every test also proves
// that the least-privilege role is enough for what the controllers do.
func operatorConfig(ctx context.Context) (*rest.Config, error) {
	data, err := os.ReadFile(filepath.Join(env.Root, "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(data, role); err != nil {
		return nil, fmt.Errorf("config/rbac/role.yaml: %w", err)
	}
	if err := env.Client.Create(ctx, role); err != nil {
		return nil, err
	}
	const user = "pfs-operator-test"
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pfs-operator-test"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if err := env.Client.Create(ctx, binding); err != nil {
		return nil, err
	}
	return env.UserConfig(user, nil)
}

// zapLevel is quiet by default; PFS_TEST_LOG=debug shows the reconcilers' logs.
func zapLevel() int8 {
	if os.Getenv("PFS_TEST_LOG") == "debug" {
		return -1
	}
	return 2 // errors only
}
