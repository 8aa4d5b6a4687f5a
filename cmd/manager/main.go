// SPDX-License-Identifier: Apache-2.0

// Command manager runs the PacketFS operator: the PfsBlob, PfsTransfer and
// PcoreJob reconcilers, metrics and health probes. Its RBAC comes from the
// markers next to each reconciler (config/rbac/role.yaml); leader election
// additionally needs a Role on coordination.k8s.io leases in the manager's
// namespace, which the deployment (Helm chart) provides.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	topov1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/controllers"
	"packetfs.io/operator/internal/crds"
	"packetfs.io/operator/internal/holdermetrics"
	"packetfs.io/operator/internal/podspec"
	"packetfs.io/operator/internal/uninstall"
)

// options is the manager's configuration; it comes from flags only.
type options struct {
	metricsAddr             string
	metricsSecure           bool
	metricsCertDir          string
	watchNamespaces         string
	probeAddr               string
	leaderElection          bool
	leaderElectionNS        string
	dataplaneImage          string
	dataplanePullPolicy     string
	dataplaneBinary         string
	holderCPU               string
	holderFillCPU           string
	dataplaneLog            podspec.DataPlaneLog
	maxConcurrentReconciles int
	maxActiveTransfers      int
	unschedulableTimeout    time.Duration
	backoffBase             time.Duration
	backoffMax              time.Duration
	topologyCatchUp         time.Duration
	maxRequeueAfter         time.Duration
	hostPathSources         string
	hostPathPrefixes        string
	socketVolume            string
	holderMetricsPort       int
	progressInterval        time.Duration
	operandTolerations      string
	operandPriorityClass    string
	operandNodeAffinity     string
	operands                podspec.OperandPolicy // parsed by validate
	uninstall               bool
	applyCRDs               bool
	uninstallOpts           uninstall.Options
	uninstallXDPSweep       bool
}

func (o *options) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443",
		"Address the metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true,
		"Serve metrics over HTTPS to scrapers whose bearer token the apiserver authenticates and authorizes for "+
			"get on /metrics (TokenReview, SubjectAccessReview); false: plain HTTP with no check.")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "",
		"Directory holding the metrics endpoint's tls.crt and tls.key (reloaded on change); empty: a self-signed "+
			"certificate generated in memory at start.")
	fs.StringVar(&o.watchNamespaces, "watch-namespaces", "",
		"Comma-separated namespaces whose PfsBlobs, PfsTransfers and PcoreJobs the manager reconciles; empty: every namespace.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081",
		"Address the /healthz and /readyz probes bind to.")
	fs.BoolVar(&o.leaderElection, "leader-elect", false,
		"Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "",
		"Namespace of the leader election lease (default: the manager's namespace).")
	fs.StringVar(&o.dataplaneImage, "dataplane-image", "packetfs.io/dataplane:v0.1.0",
		"Image of the data-plane pods (blob holders, senders, receivers, pcores).")
	fs.StringVar(&o.dataplanePullPolicy, "dataplane-image-pull-policy", "IfNotPresent",
		"Pull policy of the data-plane image: Always, IfNotPresent or Never.")
	fs.StringVar(&o.dataplaneBinary, "dataplane-binary", podspec.DefaultBinary,
		"Absolute path of the pfs binary in the data-plane image.")
	fs.StringVar(&o.holderCPU, "holder-cpu", "1",
		"CPU request and limit of each blob holder pod (a quantity such as 1 or 200m; a fraction leaves the node's exclusive CPUs to transfers and pcores).")
	fs.StringVar(&o.holderFillCPU, "holder-fill-cpu", "4",
		"CPU limit of a blob holder's init container, which fills the blob (reads the source, fetches and verifies): its request stays --holder-cpu, so it bursts onto idle CPUs; at or below --holder-cpu it is --holder-cpu and holder pods stay Guaranteed.")
	fs.StringVar(&o.dataplaneLog.Format, "dataplane-log-format", "",
		"Log format of the data-plane pods (PFS_LOG_FORMAT): text or json; empty: pfs's default, text. The chart sets it from logging.encoder.")
	fs.StringVar(&o.dataplaneLog.Level, "dataplane-log-level", "",
		"Log level of the data-plane pods (PFS_LOG_LEVEL): error, warn, info or debug; empty: info.")
	fs.StringVar(&o.dataplaneLog.TimeEncoding, "dataplane-log-time-encoding", "",
		"Time encoding of the data-plane pods' JSON logs (PFS_LOG_TIME_ENCODING): epoch, millis, nano, iso8601, rfc3339 or rfc3339nano, as --zap-time-encoding; empty: epoch.")
	fs.StringVar(&o.hostPathSources, "host-path-sources", "disabled",
		"Whether a PfsBlob may read its source from a host path (spec.source.hostPath): enabled or disabled. A host path is a node privilege.")
	fs.StringVar(&o.hostPathPrefixes, "host-path-prefixes", "",
		"Comma-separated absolute directories a spec.source.hostPath must be in (with --host-path-sources=enabled).")
	// hostPath by default: a manager started without the chart may have no
	// CSI driver on the nodes; the chart passes csi when it installs one.
	fs.StringVar(&o.socketVolume, "socket-volume", string(podspec.SocketVolumeHostPath),
		"How blob holders and their consumers get the namespace's socket directory: csi (the csi.packetfs.io driver's inline "+
			"volume; Pod Security baseline admits it) or hostPath (needs a privileged namespace).")
	fs.IntVar(&o.holderMetricsPort, "holder-metrics-port", podspec.DefaultMetricsPort,
		"Port every blob holder serves its Prometheus page on (pfs --metrics-listen); the operator reads a filling holder's "+
			"progress from it. 0: no page, and no progress in status.")
	fs.DurationVar(&o.progressInterval, "progress-interval", controllers.DefaultTiming.ProgressInterval,
		"How often a running fan-out's progress is read from its holders into status: at most one status write per blob per "+
			"interval for progress, whatever the node count.")
	fs.StringVar(&o.operandTolerations, "operand-tolerations", "",
		"Tolerations of every pod the operator creates (holders, the scan, transfers, pcore jobs), as a JSON list of Kubernetes "+
			`tolerations, e.g. [{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]; empty: none.`)
	fs.StringVar(&o.operandPriorityClass, "operand-priority-class", "",
		"PriorityClass of every pod the operator creates; empty: none (the cluster's default).")
	fs.StringVar(&o.operandNodeAffinity, "operand-node-affinity", "",
		"Node affinity of every pod the operator creates, as a JSON Kubernetes nodeAffinity, e.g. "+
			`{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["gpu"]}]}]}}; `+
			"the operator plans holders only on nodes its required terms admit, and ANDs them with the node it pins a pod to; empty: none.")
	fs.BoolVar(&o.applyCRDs, "apply-crds", false,
		"Do not run the manager: server-side apply this version's three CustomResourceDefinitions, then exit (the chart's "+
			"pre-upgrade hook; Helm never upgrades crds/).")
	fs.BoolVar(&o.uninstall, "uninstall-cleanup", false,
		"Do not run the manager: delete every PfsTransfer, PcoreJob and PfsBlob in every namespace, wait until they and "+
			"every operand pod are gone, then exit (the chart's pre-delete hook).")
	fs.DurationVar(&o.uninstallOpts.Timeout, "uninstall-timeout", 5*time.Minute,
		"With --uninstall-cleanup: how long to wait for the objects and pods to go.")
	fs.BoolVar(&o.uninstallXDPSweep, "uninstall-xdp-sweep", false,
		"With --uninstall-cleanup: once every operand pod is gone, run one pod per Ready node (host network, NET_ADMIN and "+
			"SYS_ADMIN, the --dataplane-image) that removes the pfs XDP programs crashed AF_XDP runs left on the node's links, "+
			"in the namespace of $POD_NAMESPACE.")
	fs.BoolVar(&o.uninstallOpts.DeleteCRDs, "uninstall-delete-crds", false,
		"With --uninstall-cleanup: delete the three CustomResourceDefinitions too, once their objects are gone.")
	fs.IntVar(&o.maxConcurrentReconciles, "max-concurrent-reconciles", 2,
		"Reconciles each controller runs in parallel.")
	fs.IntVar(&o.maxActiveTransfers, "max-active-transfers", 16,
		"Most PfsTransfers running at once (pods created, not finished); the rest wait in creation order (reason Queued). 0: no limit.")
	fs.DurationVar(&o.unschedulableTimeout, "unschedulable-timeout", controllers.DefaultTiming.UnschedulableTimeout,
		"How long a transfer or job pod may stay unschedulable before its attempt fails (reason Unschedulable).")
	fs.DurationVar(&o.topologyCatchUp, "topology-catch-up", controllers.DefaultTiming.TopologyCatchUp,
		"How long after a pod change on a node its NodeResourceTopology, when it shows no room, is given to catch up before the "+
			"node is taken by the scheduler's count (the kubelet then picks the zone); set it above the publisher's interval. 0: at once.")
	fs.DurationVar(&o.maxRequeueAfter, "max-requeue-after", 0,
		"Longest wait a controller plans before looking at an object again (a pod's start deadline, the queue's recheck, a backoff); "+
			"a look before a deadline decides the same and plans again. 0: wait for each deadline. Tests set it short so that "+
			"every planned wake-up has fired soon after the last change.")
	fs.DurationVar(&o.backoffBase, "retry-backoff", controllers.DefaultTiming.BackoffBase,
		"Delay before the second attempt of a failed transfer; it doubles per failure.")
	fs.DurationVar(&o.backoffMax, "retry-backoff-max", controllers.DefaultTiming.BackoffMax,
		"Longest delay between attempts of a failed transfer.")
}

// validateOperands parses the operand tolerations into o.operands and
// checks them and the PriorityClass name as the apiserver would.
func (o *options) validateOperands() []error {
	var errs []error
	o.operands = podspec.OperandPolicy{PriorityClassName: o.operandPriorityClass}
	if o.operandTolerations != "" {
		dec := json.NewDecoder(strings.NewReader(o.operandTolerations))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o.operands.Tolerations); err != nil {
			errs = append(errs, fmt.Errorf("--operand-tolerations: %v: want a JSON list of tolerations such as "+
				`[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]`, err))
		}
	}
	for i, t := range o.operands.Tolerations {
		switch {
		case t.Operator != "" && t.Operator != corev1.TolerationOpExists && t.Operator != corev1.TolerationOpEqual:
			errs = append(errs, fmt.Errorf("--operand-tolerations[%d]: operator %q: want Exists or Equal", i, t.Operator))
		case t.Operator == corev1.TolerationOpExists && t.Value != "":
			errs = append(errs, fmt.Errorf("--operand-tolerations[%d]: operator Exists takes no value (%q)", i, t.Value))
		case t.Key == "" && t.Operator != corev1.TolerationOpExists:
			errs = append(errs, fmt.Errorf("--operand-tolerations[%d]: an empty key needs operator Exists", i))
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, fmt.Errorf("--operand-tolerations[%d]: effect %q: want NoSchedule, PreferNoSchedule or NoExecute", i, t.Effect))
		}
	}
	errs = append(errs, o.parseNodeAffinity()...)
	if p := o.operandPriorityClass; p != "" {
		for _, msg := range validation.IsDNS1123Subdomain(p) {
			errs = append(errs, fmt.Errorf("--operand-priority-class %q: %s", p, msg))
		}
	}
	return errs
}

// parseNodeAffinity parses --operand-node-affinity into o.operands and
// checks its terms as the scheduler would read them.
func (o *options) parseNodeAffinity() []error {
	if o.operandNodeAffinity == "" {
		return nil
	}
	na := &corev1.NodeAffinity{}
	dec := json.NewDecoder(strings.NewReader(o.operandNodeAffinity))
	dec.DisallowUnknownFields()
	if err := dec.Decode(na); err != nil {
		return []error{fmt.Errorf("--operand-node-affinity: %v: want a JSON nodeAffinity such as "+
			`{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["gpu"]}]}]}}`, err)}
	}
	var errs []error
	if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
		if len(r.NodeSelectorTerms) == 0 {
			errs = append(errs, errors.New("--operand-node-affinity: requiredDuringSchedulingIgnoredDuringExecution has no nodeSelectorTerms: it would admit no node"))
		}
		if _, err := nodeaffinity.NewNodeSelector(r); err != nil {
			errs = append(errs, fmt.Errorf("--operand-node-affinity: required terms: %v", err))
		}
	}
	if _, err := nodeaffinity.NewPreferredSchedulingTerms(na.PreferredDuringSchedulingIgnoredDuringExecution); err != nil {
		errs = append(errs, fmt.Errorf("--operand-node-affinity: preferred terms: %v", err))
	}
	o.operands.NodeAffinity = na
	return errs
}

// validateProgress checks the holders' metrics port and the progress interval.
func (o *options) validateProgress() []error {
	var errs []error
	if o.holderMetricsPort < 0 || o.holderMetricsPort > 65535 || o.holderMetricsPort == podspec.ReplicationPort {
		errs = append(errs, fmt.Errorf("--holder-metrics-port %d: want 0 (off) or a TCP port other than %d (replication)", o.holderMetricsPort, podspec.ReplicationPort))
	}
	if o.progressInterval < time.Second {
		errs = append(errs, fmt.Errorf("--progress-interval %s: want at least 1s (it bounds the status writes of a fan-out)", o.progressInterval))
	}
	return errs
}

func (o *options) validate() error {
	var errs []error
	if o.dataplaneImage == "" {
		errs = append(errs, errors.New("--dataplane-image must not be empty"))
	}
	switch o.dataplanePullPolicy {
	case "Always", "IfNotPresent", "Never":
	default:
		errs = append(errs, fmt.Errorf("--dataplane-image-pull-policy %q: want Always, IfNotPresent or Never", o.dataplanePullPolicy))
	}
	if o.dataplaneBinary == "" || o.dataplaneBinary[0] != '/' {
		errs = append(errs, fmt.Errorf("--dataplane-binary %q: want an absolute path", o.dataplaneBinary))
	}
	if q, err := resource.ParseQuantity(o.holderCPU); err != nil || q.Sign() <= 0 || q.MilliValue() < 10 {
		errs = append(errs, fmt.Errorf("--holder-cpu %q: want a CPU quantity of at least 10m, such as 1 or 200m", o.holderCPU))
	}
	if q, err := resource.ParseQuantity(o.holderFillCPU); err != nil || q.Sign() <= 0 || q.MilliValue() < 10 {
		errs = append(errs, fmt.Errorf("--holder-fill-cpu %q: want a CPU quantity of at least 10m, such as 4 or 500m", o.holderFillCPU))
	}
	for _, f := range []struct{ flag, value, want string }{
		{"dataplane-log-format", o.dataplaneLog.Format, "text json"},
		{"dataplane-log-level", o.dataplaneLog.Level, "error warn info debug"},
		{"dataplane-log-time-encoding", o.dataplaneLog.TimeEncoding, "epoch millis nano iso8601 rfc3339 rfc3339nano"},
	} {
		if f.value != "" && !slices.Contains(strings.Fields(f.want), f.value) {
			errs = append(errs, fmt.Errorf("--%s %q: want one of %s", f.flag, f.value, strings.ReplaceAll(f.want, " ", ", ")))
		}
	}
	if o.unschedulableTimeout <= 0 || o.backoffBase <= 0 || o.backoffMax < o.backoffBase {
		errs = append(errs, errors.New("--unschedulable-timeout and --retry-backoff must be positive and --retry-backoff-max at least --retry-backoff"))
	}
	errs = append(errs, o.validateProgress()...)
	errs = append(errs, o.validateOperands()...)
	errs = append(errs, o.validateServing()...)
	if o.maxRequeueAfter < 0 {
		errs = append(errs, fmt.Errorf("--max-requeue-after %s: want 0 (no cap) or a positive duration", o.maxRequeueAfter))
	}
	if o.topologyCatchUp < 0 || o.topologyCatchUp > o.unschedulableTimeout {
		errs = append(errs, fmt.Errorf("--topology-catch-up %s: want 0 or a positive duration no longer than --unschedulable-timeout (%s)",
			o.topologyCatchUp, o.unschedulableTimeout))
	}
	switch o.hostPathSources {
	case "enabled", "disabled":
	default:
		errs = append(errs, fmt.Errorf("--host-path-sources %q: want enabled or disabled", o.hostPathSources))
	}
	for _, p := range o.prefixes() {
		if !path.IsAbs(p) || strings.Contains("/"+p+"/", "/../") {
			errs = append(errs, fmt.Errorf("--host-path-prefixes: %q is not an absolute path without '..'", p))
		}
	}
	if o.maxActiveTransfers < 0 {
		errs = append(errs, fmt.Errorf("--max-active-transfers %d: want 0 (no limit) or more", o.maxActiveTransfers))
	}
	switch podspec.SocketVolumeType(o.socketVolume) {
	case podspec.SocketVolumeCSI, podspec.SocketVolumeHostPath:
	default:
		errs = append(errs, fmt.Errorf("--socket-volume %q: want %s or %s", o.socketVolume, podspec.SocketVolumeCSI, podspec.SocketVolumeHostPath))
	}
	if o.maxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent-reconciles %d: want at least 1", o.maxConcurrentReconciles))
	}
	return errors.Join(errs...)
}

// prefixes splits --host-path-prefixes.
func (o *options) prefixes() []string { return commaList(o.hostPathPrefixes) }

// commaList splits a comma-separated flag value: entries trimmed, empty
// ones and repeats dropped, in order.
func commaList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// runUninstall empties the cluster of PacketFS objects and operand pods
// (internal/uninstall): the exit code of the chart's pre-delete hook.
func runUninstall(o *options, log logr.Logger) int {
	if o.uninstallOpts.Timeout <= 0 {
		log.Error(nil, "Invalid flags", "uninstall-timeout", o.uninstallOpts.Timeout.String())
		return 2
	}
	s := newScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	c, err := client.New(ctrl.GetConfigOrDie(), client.Options{Scheme: s})
	if err != nil {
		log.Error(err, "Unable to create a client")
		return 1
	}
	if o.uninstallXDPSweep {
		o.uninstallOpts.Sweep = uninstall.Sweep{Namespace: os.Getenv("POD_NAMESPACE"), Image: o.dataplaneImage,
			PullPolicy: corev1.PullPolicy(o.dataplanePullPolicy), Binary: o.dataplaneBinary}
		if o.uninstallOpts.Sweep.Namespace == "" {
			log.Error(nil, "Invalid flags: --uninstall-xdp-sweep needs POD_NAMESPACE, the namespace its pods run in")
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := uninstall.Run(ctx, c, o.uninstallOpts, log.WithName("uninstall")); err != nil {
		log.Error(err, "Uninstall cleanup failed")
		return 1
	}
	return 0
}

// runApplyCRDs applies the embedded CRDs (internal/crds): the exit code of
// the chart's pre-upgrade hook.
func runApplyCRDs(log logr.Logger) int {
	c, err := client.New(ctrl.GetConfigOrDie(), client.Options{Scheme: newScheme()})
	if err != nil {
		log.Error(err, "Unable to create a client")
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := crds.Apply(ctx, c, log.WithName("crds")); err != nil {
		log.Error(err, "Applying the CRDs failed")
		return 1
	}
	return 0
}

// newScheme registers the built-in Kinds (pods, nodes, events) and ours.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(pfsv1alpha1.AddToScheme(s))
	utilruntime.Must(topov1alpha2.AddToScheme(s))
	return s
}

// setupReconcilers registers the three reconcilers with the manager.
func setupReconcilers(mgr ctrl.Manager, o *options) error {
	var progress controllers.ProgressReader
	if o.holderMetricsPort > 0 {
		progress = holdermetrics.NewReader()
	}
	deps := func(name string) controllers.Deps {
		return controllers.Deps{
			Progress:  progress,
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Recorder:  mgr.GetEventRecorderFor(name),
			Clock:     clock.RealClock{},
			Pods: podspec.Config{Image: o.dataplaneImage, PullPolicy: corev1.PullPolicy(o.dataplanePullPolicy),
				Binary: o.dataplaneBinary, HolderCPU: resource.MustParse(o.holderCPU),
				HolderFillCPU: resource.MustParse(o.holderFillCPU), Log: o.dataplaneLog,
				SocketVolume: podspec.SocketVolumeType(o.socketVolume), MetricsPort: int32(o.holderMetricsPort),
				Operands: o.operands},
			Timing: controllers.Timing{UnschedulableTimeout: o.unschedulableTimeout,
				BackoffBase: o.backoffBase, BackoffMax: o.backoffMax, TopologyCatchUp: o.topologyCatchUp,
				MaxRequeueAfter: o.maxRequeueAfter, ProgressInterval: o.progressInterval},
		}
	}
	if err := controllers.AddIndexes(context.Background(), mgr); err != nil {
		return fmt.Errorf("cache indexes: %w", err)
	}
	sources := controllers.SourcePolicy{HostPathEnabled: o.hostPathSources == "enabled", HostPathPrefixes: o.prefixes()}
	if err := (&controllers.PfsBlobReconciler{Deps: deps("pfsblob-controller"), Sources: sources}).SetupWithManager(mgr, o.maxConcurrentReconciles); err != nil {
		return fmt.Errorf("pfsblob controller: %w", err)
	}
	if err := (&controllers.PfsTransferReconciler{Deps: deps("pfstransfer-controller"),
		Admission: &controllers.Admission{Limit: o.maxActiveTransfers}}).SetupWithManager(mgr, o.maxConcurrentReconciles); err != nil {
		return fmt.Errorf("pfstransfer controller: %w", err)
	}
	if err := (&controllers.PcoreJobReconciler{Deps: deps("pcorejob-controller")}).SetupWithManager(mgr, o.maxConcurrentReconciles); err != nil {
		return fmt.Errorf("pcorejob controller: %w", err)
	}
	return nil
}

func main() {
	var o options
	o.bind(flag.CommandLine)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	if o.uninstall {
		os.Exit(runUninstall(&o, log))
	}
	if o.applyCRDs {
		os.Exit(runApplyCRDs(log))
	}
	if err := o.validate(); err != nil {
		log.Error(err, "Invalid flags")
		os.Exit(2)
	}

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  newScheme(),
		Metrics:                 o.metricsServer(),
		Cache:                   o.cacheOptions(),
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElection,
		LeaderElectionID:        "manager.pfs.packetfs.io",
		LeaderElectionNamespace: o.leaderElectionNS,
	})
	if err != nil {
		log.Error(err, "Unable to create manager")
		os.Exit(1)
	}
	if err := setupReconcilers(mgr, &o); err != nil {
		log.Error(err, "Unable to set up reconcilers")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "Unable to add health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "Unable to add ready check")
		os.Exit(1)
	}

	log.Info("Starting manager", "dataplaneImage", o.dataplaneImage, "leaderElection", o.leaderElection,
		"metricsSecure", o.metricsSecure, "watchNamespaces", o.namespaces())
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "Manager exited with an error")
		os.Exit(1)
	}
}
