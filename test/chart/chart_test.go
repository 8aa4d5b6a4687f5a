// SPDX-License-Identifier: Apache-2.0

//go:build chart

// Package chart tests the Helm chart charts/packetfs-operator: it renders the
// chart with `helm template` under several value sets and checks the decoded
// objects (kinds, Deployment flags, the device plugin DaemonSet's flags
// parsed by the plugin's own flag set, security contexts, RBAC equal to the
// generated config/rbac/role.yaml), and that values.schema.json and the
// templates reject bad values with a clear message.
//
// Run it with `make test-chart`, which installs the pinned helm into ./bin and
// passes its path in $HELM. The build tag keeps it out of `go test ./...`.
package chart

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/deviceplugin"
)

const (
	// root is the repository root, seen from this package's directory.
	root      = "../.."
	chartDir  = root + "/charts/packetfs-operator"
	release   = "pfs"
	namespace = "pfs-system"
	// nadAPI makes helm template believe Multus is installed.
	nadAPI = "k8s.cni.cncf.io/v1/NetworkAttachmentDefinition"
)

// helm returns the helm binary from $HELM; without it the test fails rather
// than skips, since `make test-chart` always sets it.
func helm(t *testing.T) string {
	t.Helper()
	h := os.Getenv("HELM")
	if h == "" {
		t.Fatal("HELM is not set: run `make test-chart`, which installs the pinned helm into ./bin and sets HELM to its path")
	}
	if _, err := os.Stat(h); err != nil {
		t.Fatalf("HELM=%s: %v (run `make helm`)", h, err)
	}
	return h
}

// render runs `helm template` on the chart with the given values (YAML, may be
// empty) and extra arguments, and returns stdout, or an error holding stderr.
func render(t *testing.T, values string, args ...string) (string, error) {
	t.Helper()
	// Not t.TempDir(): its path holds the test name, and helm splits
	// --values on commas.
	dir, err := os.MkdirTemp("", "chart-values")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helm(t), append([]string{"template", release, chartDir,
		"--namespace", namespace, "--include-crds", "--values", f}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", errors.New(strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// objects is a rendered chart, decoded.
type objects struct {
	raw  string
	list []unstructured.Unstructured
}

func decode(t *testing.T, out string) objects {
	t.Helper()
	o := objects{raw: out}
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		var u unstructured.Unstructured
		if err := d.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("decode rendered chart: %v\n%s", err, out)
		}
		if len(u.Object) == 0 {
			continue
		}
		o.list = append(o.list, u)
	}
	return o
}

// kinds returns "Kind/name" of every object, sorted.
func (o objects) kinds() []string {
	ks := make([]string, 0, len(o.list))
	for _, u := range o.list {
		ks = append(ks, u.GetKind()+"/"+u.GetName())
	}
	sort.Strings(ks)
	return ks
}

// get converts the one object of that kind and name into out; it fails the
// test when there is none.
func (o objects) get(t *testing.T, kind, name string, out any) {
	t.Helper()
	for _, u := range o.list {
		if u.GetKind() == kind && u.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
				t.Fatalf("%s/%s: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("no %s/%s in the rendered chart; have %v", kind, name, o.kinds())
}

func (o objects) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	o.get(t, "Deployment", name, &d)
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("Deployment %s has %d containers, want 1", name, n)
	}
	return &d
}

// generatedRules are the rules of config/rbac/role.yaml (controller-gen's
// output from the +kubebuilder:rbac markers).
func generatedRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(root + "/config/rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var r rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(b, &r); err != nil {
		t.Fatalf("config/rbac/role.yaml: %v", err)
	}
	if len(r.Rules) == 0 {
		t.Fatal("config/rbac/role.yaml has no rules")
	}
	return r.Rules
}

// leaderElectionRules are the rules of config/rbac/leader_election_role.yaml.
func leaderElectionRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(root + "/config/rbac/leader_election_role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var r rbacv1.Role
	if err := yaml.UnmarshalStrict(b, &r); err != nil {
		t.Fatalf("config/rbac/leader_election_role.yaml: %v", err)
	}
	if len(r.Rules) != 3 {
		t.Fatalf("config/rbac/leader_election_role.yaml has %d rules, want 3", len(r.Rules))
	}
	return r.Rules
}

// mainGo is cmd/manager/main.go, where the flags and the lease name live.
func mainGo(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(root + "/cmd/manager/main.go")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// managerFlags are the flags the manager binary accepts: its own (bound in
// options.bind) and controller-runtime's zap flags.
func managerFlags(t *testing.T) map[string]bool {
	t.Helper()
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`fs\.\w+Var\(&o\.[\w.]+,\s*"([a-z0-9-]+)"`).FindAllStringSubmatch(mainGo(t), -1) {
		flags[m[1]] = true
	}
	if len(flags) < 5 {
		t.Fatalf("found only %d flags in cmd/manager/main.go; has options.bind changed shape?", len(flags))
	}
	fs := flag.NewFlagSet("zap", flag.ContinueOnError)
	(&zap.Options{}).BindFlags(fs)
	fs.VisitAll(func(f *flag.Flag) { flags[f.Name] = true })
	return flags
}

// leaseName is LeaderElectionID in cmd/manager/main.go.
func leaseName(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`LeaderElectionID:\s*"([^"]+)"`).FindStringSubmatch(mainGo(t))
	if m == nil {
		t.Fatal("no LeaderElectionID in cmd/manager/main.go")
	}
	return m[1]
}

// devicePluginConfig parses a DaemonSet container's args with the device
// plugin's own flags (internal/deviceplugin and zap, as cmd/device-plugin
// binds them) and validates them, as the binary would at start.
func devicePluginConfig(t *testing.T, args []string) deviceplugin.Config {
	t.Helper()
	var cfg deviceplugin.Config
	fs := flag.NewFlagSet("pfs-device-plugin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.Bind(fs)
	(&zap.Options{}).BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("device plugin args %v: %v", args, err)
	}
	if fs.NArg() > 0 {
		t.Fatalf("device plugin args %v: %q are not flags", args, fs.Args())
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("device plugin args %v: %v", args, err)
	}
	return cfg
}

func (o objects) daemonSet(t *testing.T, name string) *appsv1.DaemonSet {
	t.Helper()
	var d appsv1.DaemonSet
	o.get(t, "DaemonSet", name, &d)
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("DaemonSet %s has %d containers, want 1", name, n)
	}
	return &d
}

// wantArgs is the Deployment's args with the default values; cases change
// entries by flag name.
func wantArgs(changes map[string]string) []string {
	base := []struct{ flag, value string }{
		{"metrics-bind-address", ":8443"},
		{"metrics-secure", "true"},
		{"metrics-cert-dir", "-"},
		{"health-probe-bind-address", ":8081"},
		{"leader-elect", "true"},
		{"leader-election-namespace", namespace},
		{"dataplane-image", "packetfs.io/dataplane:v0.1.0"},
		{"dataplane-image-pull-policy", "IfNotPresent"},
		{"dataplane-binary", "/usr/local/bin/pfs"},
		{"holder-cpu", "1"},
		{"holder-fill-cpu", "4"},
		{"holder-metrics-port", "9470"},
		{"operand-tolerations", `[{"effect":"NoSchedule","key":"nvidia.com/gpu","operator":"Exists"}]`},
		{"operand-priority-class", "-"},
		{"operand-node-affinity", "-"},
		{"watch-namespaces", "-"},
		{"host-path-sources", "disabled"},
		{"host-path-prefixes", "-"},
		{"socket-volume", "csi"},
		{"max-concurrent-reconciles", "2"},
		{"max-active-transfers", "16"},
		{"unschedulable-timeout", "5m"},
		{"retry-backoff", "10s"},
		{"retry-backoff-max", "6m"},
		{"topology-catch-up", "10s"},
		{"max-requeue-after", "0s"},
		{"progress-interval", "5s"},
		{"zap-log-level", "info"},
		{"zap-encoder", "json"},
		{"zap-time-encoding", "rfc3339"},
		{"dataplane-log-format", "json"},
		{"dataplane-log-level", "info"},
		{"dataplane-log-time-encoding", "rfc3339"},
	}
	var args []string
	for _, a := range base {
		v, changed := changes[a.flag]
		if !changed {
			v = a.value
		}
		if v == "-" {
			continue // removed, or absent by default
		}
		args = append(args, "--"+a.flag+"="+v)
	}
	return args
}

// The security contexts every manager pod must have, whatever the values.
var (
	wantPodSecurity = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To(int64(65532)),
		RunAsGroup:     ptr.To(int64(65532)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	wantContainerSecurity = &corev1.SecurityContext{
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To(int64(65532)),
		RunAsGroup:               ptr.To(int64(65532)),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
)

// The security contexts of every device plugin pod: uid 0 for the kubelet's
// socket directory, and nothing else a root process could use.
var (
	wantPluginPodSecurity = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(false),
		RunAsUser:      ptr.To(int64(0)),
		RunAsGroup:     ptr.To(int64(0)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	wantPluginContainerSecurity = &corev1.SecurityContext{
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(false),
		RunAsUser:                ptr.To(int64(0)),
		RunAsGroup:               ptr.To(int64(0)),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
)

// checkDevicePlugin holds for every rendered device plugin DaemonSet: the
// operator's image and the plugin binary, args the plugin accepts, the host
// network and nothing else of the host but the kubelet's socket directory,
// no service account token, the hardened security contexts.
func checkDevicePlugin(t *testing.T, o objects, d *appsv1.DaemonSet) {
	t.Helper()
	ps := d.Spec.Template.Spec
	c := ps.Containers[0]
	if diff := cmp.Diff(wantPluginPodSecurity, ps.SecurityContext); diff != "" {
		t.Errorf("device plugin pod securityContext (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantPluginContainerSecurity, c.SecurityContext); diff != "" {
		t.Errorf("device plugin container securityContext (-want +got):\n%s", diff)
	}
	if !ps.HostNetwork || ps.DNSPolicy != corev1.DNSClusterFirstWithHostNet || ps.HostPID || ps.HostIPC {
		t.Errorf("device plugin pod: hostNetwork %v dnsPolicy %q hostPID %v hostIPC %v; want the host network only, ClusterFirstWithHostNet",
			ps.HostNetwork, ps.DNSPolicy, ps.HostPID, ps.HostIPC)
	}
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Error("device plugin pod mounts a service account token; it needs no API access")
	}
	const dir = "/var/lib/kubelet/device-plugins"
	wantVolumes := []corev1.Volume{{Name: "device-plugins", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: ptr.To(corev1.HostPathDirectory)}}}}
	if diff := cmp.Diff(wantVolumes, ps.Volumes); diff != "" {
		t.Errorf("device plugin volumes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.VolumeMount{{Name: "device-plugins", MountPath: dir}}, c.VolumeMounts); diff != "" {
		t.Errorf("device plugin volume mounts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/pfs-device-plugin"}, c.Command); diff != "" {
		t.Errorf("device plugin command (-want +got):\n%s", diff)
	}
	if cfg := devicePluginConfig(t, c.Args); cfg.DevicePluginDir != dir {
		t.Errorf("--device-plugin-dir %q, want the mounted %s", cfg.DevicePluginDir, dir)
	}
	for _, u := range o.list {
		if u.GetKind() == "Deployment" {
			m := o.deployment(t, u.GetName()).Spec.Template.Spec.Containers[0]
			if c.Image != m.Image || c.ImagePullPolicy != m.ImagePullPolicy {
				t.Errorf("device plugin image %s (%s), want the manager's %s (%s)", c.Image, c.ImagePullPolicy, m.Image, m.ImagePullPolicy)
			}
		}
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("device plugin resources %+v: want a memory limit and a CPU request", c.Resources)
	}
	sel := d.Spec.Selector.MatchLabels
	if sel["app.kubernetes.io/component"] != "device-plugin" {
		t.Errorf("device plugin selector %v: want component device-plugin, apart from the manager's pods", sel)
	}
	for k, v := range sel {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("device plugin selector %s=%s does not match its pod labels %v", k, v, d.Spec.Template.Labels)
		}
	}
}

// checkInvariants holds for every successful render: hardened pods, only
// flags the manager has, probes on the health port, no privileged anything,
// the device plugin's invariants (checkDevicePlugin) and (with RBAC) the
// generated ClusterRole rules.
func checkInvariants(t *testing.T, o objects) {
	t.Helper()
	// The CSI node plugin's container is the one privileged container
	// (checkCSINode says why and checks it is that container).
	csiNodes := 0
	for _, u := range o.list {
		if u.GetKind() == "DaemonSet" && u.GetLabels()["app.kubernetes.io/component"] == "csi-node" {
			csiNodes++
		}
	}
	if n := len(regexp.MustCompile(`(?m)privileged:\s*true`).FindAllString(o.raw, -1)); n != csiNodes {
		t.Errorf("rendered chart contains privileged: true %d times, want %d (the CSI node plugin's container only)", n, csiNodes)
	}
	flags := managerFlags(t)
	for _, u := range o.list {
		if u.GetKind() != "Deployment" {
			continue
		}
		d := o.deployment(t, u.GetName())
		ps := d.Spec.Template.Spec
		if diff := cmp.Diff(wantPodSecurity, ps.SecurityContext); diff != "" {
			t.Errorf("pod securityContext (-want +got):\n%s", diff)
		}
		c := ps.Containers[0]
		if diff := cmp.Diff(wantContainerSecurity, c.SecurityContext); diff != "" {
			t.Errorf("container securityContext (-want +got):\n%s", diff)
		}
		if ps.HostNetwork || ps.HostPID || ps.HostIPC {
			t.Errorf("manager pod uses host namespaces: %+v", ps)
		}
		for _, v := range ps.Volumes { // the metrics certificate (metrics.certSecret) alone
			if v.Secret == nil || v.Name != "metrics-certs" {
				t.Errorf("manager pod volume %+v: want none but the metrics certificate Secret", v)
			}
		}
		for _, a := range c.Args {
			name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if !strings.HasPrefix(a, "--") || !flags[name] {
				t.Errorf("arg %q is not a flag of the manager (cmd/manager/main.go or zap)", a)
			}
		}
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
			if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.String() != "health" {
				t.Errorf("probe %+v: want an HTTP probe on the health port", p)
			}
		}
		if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
			t.Errorf("manager resources %+v: want a memory limit and a CPU request", c.Resources)
		}
		var health string
		for _, p := range c.Ports {
			if p.Name == "health" {
				health = fmt.Sprintf(":%d", p.ContainerPort)
			}
		}
		if !containsArg(c.Args, "--health-probe-bind-address="+health) {
			t.Errorf("health port %q does not match the args %v", health, c.Args)
		}
	}
	for _, u := range o.list {
		if u.GetKind() != "DaemonSet" {
			continue
		}
		switch c := u.GetLabels()["app.kubernetes.io/component"]; c {
		case "device-plugin":
			checkDevicePlugin(t, o, o.daemonSet(t, u.GetName()))
		case "csi-node":
			checkCSINode(t, o, o.daemonSet(t, u.GetName()))
		default:
			t.Errorf("DaemonSet %s has component %q, want device-plugin or csi-node", u.GetName(), c)
		}
	}
	for _, u := range o.list {
		// The CSI node plugin's own ClusterRole is checkCSINodeRBAC's, the
		// user roles checkUserRoles'.
		if u.GetKind() == "ClusterRole" && strings.HasSuffix(u.GetName(), "-manager") {
			var r rbacv1.ClusterRole
			o.get(t, "ClusterRole", u.GetName(), &r)
			if diff := cmp.Diff(generatedRules(t), r.Rules); diff != "" {
				t.Errorf("ClusterRole %s rules differ from config/rbac/role.yaml (-want +got):\n%s", u.GetName(), diff)
			}
		}
		// watchNamespaces binds the manager's rules in those namespaces
		// (TestWatchNamespaces); everything else is the release's.
		inWatched := u.GetKind() == "RoleBinding" && strings.HasSuffix(u.GetName(), "-manager")
		if u.GetNamespace() != "" && u.GetNamespace() != namespace && !inWatched {
			t.Errorf("%s/%s is in namespace %q, want the release namespace", u.GetKind(), u.GetName(), u.GetNamespace())
		}
	}
}

func containsArg(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

func sa(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: "ServiceAccount", Name: name, Namespace: namespace}
}

func TestRender(t *testing.T) {
	const full = "pfs-packetfs-operator"
	crds := []string{
		"CustomResourceDefinition/pcorejobs.pfs.packetfs.io",
		"CustomResourceDefinition/pfsblobs.pfs.packetfs.io",
		"CustomResourceDefinition/pfstransfers.pfs.packetfs.io",
	}
	// With csi.enabled (the default) every render has the CSIDriver, the
	// plugin's DaemonSet and ServiceAccount, and with RBAC its ClusterRole
	// and binding; cases without them use kindsNoCSI.
	// The user roles come with the manager's ClusterRole (rbac.create).
	userRoles := func(extra []string) []string {
		for _, k := range extra {
			if name, ok := strings.CutPrefix(k, "ClusterRole/"); ok && strings.HasSuffix(name, "-manager") {
				base := strings.TrimSuffix(name, "-manager")
				return []string{"ClusterRole/" + base + "-edit", "ClusterRole/" + base + "-view"}
			}
		}
		return nil
	}
	// So do the uninstall and CRD-upgrade hooks (their own identities, rbac.create).
	uninstallHook := func(extra []string) []string {
		for _, k := range extra {
			if name, ok := strings.CutPrefix(k, "ClusterRole/"); ok && strings.HasSuffix(name, "-manager") {
				out := make([]string, 0, 10)
				for _, hook := range []string{"-uninstall", "-crds"} { // pre-delete cleanup, pre-upgrade CRDs
					base := strings.TrimSuffix(name, "-manager") + hook
					out = append(out, "ClusterRole/"+base, "ClusterRoleBinding/"+base, "Job/"+base, "ServiceAccount/"+base)
				}
				// The XDP sweep's pods, in the release namespace alone (uninstall.xdpSweep).
				base := strings.TrimSuffix(name, "-manager") + "-uninstall"
				return append(out, "Role/"+base, "RoleBinding/"+base)
			}
		}
		return nil
	}
	// And the metrics-reader ClusterRole, with the metrics Service (secure by default).
	metricsReader := func(extra []string) []string {
		for _, k := range extra {
			if name, ok := strings.CutPrefix(k, "ClusterRole/"); ok && strings.HasSuffix(name, "-manager") {
				base := strings.TrimSuffix(name, "-manager")
				if slices.Contains(extra, "Service/"+base+"-metrics") {
					return []string{"ClusterRole/" + base + "-metrics-reader"}
				}
			}
		}
		return nil
	}
	kindsNoCSI := func(extra ...string) []string {
		ks := append(append([]string{}, crds...), extra...)
		ks = append(ks, metricsReader(extra)...)
		ks = append(ks, userRoles(extra)...)
		ks = append(ks, uninstallHook(extra)...)
		sort.Strings(ks)
		return ks
	}
	kinds := func(extra ...string) []string {
		fullName := full
		for _, k := range extra {
			if strings.HasPrefix(k, "Deployment/") {
				fullName = strings.TrimPrefix(k, "Deployment/")
			}
		}
		ks := append(append([]string{}, crds...), extra...)
		ks = append(ks, metricsReader(extra)...)
		ks = append(ks, userRoles(extra)...)
		ks = append(ks, uninstallHook(extra)...)
		ks = append(ks, "CSIDriver/"+csiDriver, "DaemonSet/"+fullName+"-csi-node", "ServiceAccount/"+fullName+"-csi-node")
		// The plugin's RBAC comes with the manager's (rbac.create).
		for _, k := range extra {
			if strings.HasPrefix(k, "ClusterRole/") {
				ks = append(ks, "ClusterRole/"+fullName+"-csi-node", "ClusterRoleBinding/"+fullName+"-csi-node")
				break
			}
		}
		sort.Strings(ks)
		return ks
	}
	fullValues, err := os.ReadFile("testdata/full-values.yaml")
	if err != nil {
		t.Fatal(err)
	}

	tests := map[string]struct {
		values    string
		args      []string
		wantKinds []string
		check     func(t *testing.T, o objects)
	}{
		"defaults": {
			wantKinds: kinds(
				"ClusterRole/"+full+"-manager", "ClusterRoleBinding/"+full+"-manager",
				"Deployment/"+full, "Role/"+full+"-leader-election", "RoleBinding/"+full+"-leader-election",
				"Service/"+full+"-metrics", "ServiceAccount/"+full),
			check: func(t *testing.T, o objects) {
				d := o.deployment(t, full)
				c := d.Spec.Template.Spec.Containers[0]
				if diff := cmp.Diff(wantArgs(nil), c.Args); diff != "" {
					t.Errorf("args (-want +got):\n%s", diff)
				}
				if c.Image != "packetfs.io/operator:v0.1.0" || c.ImagePullPolicy != corev1.PullIfNotPresent {
					t.Errorf("image %s %s, want packetfs.io/operator:v0.1.0 IfNotPresent", c.Image, c.ImagePullPolicy)
				}
				wantPorts := []corev1.ContainerPort{
					{Name: "metrics", ContainerPort: 8443, Protocol: corev1.ProtocolTCP},
					{Name: "health", ContainerPort: 8081, Protocol: corev1.ProtocolTCP},
				}
				if diff := cmp.Diff(wantPorts, c.Ports); diff != "" {
					t.Errorf("ports (-want +got):\n%s", diff)
				}
				if got := d.Spec.Template.Spec.ServiceAccountName; got != full {
					t.Errorf("serviceAccountName %q, want %q", got, full)
				}
				if *d.Spec.Replicas != 1 {
					t.Errorf("replicas %d, want 1", *d.Spec.Replicas)
				}

				var crb rbacv1.ClusterRoleBinding
				o.get(t, "ClusterRoleBinding", full+"-manager", &crb)
				wantRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: full + "-manager"}
				if diff := cmp.Diff(wantRef, crb.RoleRef); diff != "" {
					t.Errorf("ClusterRoleBinding roleRef (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]rbacv1.Subject{sa(full)}, crb.Subjects); diff != "" {
					t.Errorf("ClusterRoleBinding subjects (-want +got):\n%s", diff)
				}

				var role rbacv1.Role
				o.get(t, "Role", full+"-leader-election", &role)
				// The same rules as config/rbac/leader_election_role.yaml, which
				// the manager's envtest runs under; its lease is main.go's.
				wantRules := leaderElectionRules(t)
				if diff := cmp.Diff(wantRules, role.Rules); diff != "" {
					t.Errorf("leader-election Role rules differ from config/rbac/leader_election_role.yaml (-want +got):\n%s", diff)
				}
				if got := wantRules[1].ResourceNames; len(got) != 1 || got[0] != leaseName(t) {
					t.Errorf("config/rbac/leader_election_role.yaml names lease %v, main.go uses %q", got, leaseName(t))
				}
				if role.Namespace != namespace {
					t.Errorf("leader-election Role in %q, want %q", role.Namespace, namespace)
				}
				var rb rbacv1.RoleBinding
				o.get(t, "RoleBinding", full+"-leader-election", &rb)
				if diff := cmp.Diff([]rbacv1.Subject{sa(full)}, rb.Subjects); diff != "" {
					t.Errorf("RoleBinding subjects (-want +got):\n%s", diff)
				}

				var svc corev1.Service
				o.get(t, "Service", full+"-metrics", &svc)
				if svc.Spec.Type != corev1.ServiceTypeClusterIP || len(svc.Spec.Ports) != 1 ||
					svc.Spec.Ports[0].Port != 8443 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
					t.Errorf("metrics Service spec %+v: want ClusterIP 8443 -> metrics", svc.Spec)
				}
				if diff := cmp.Diff(d.Spec.Selector.MatchLabels, svc.Spec.Selector); diff != "" {
					t.Errorf("Service selector differs from the Deployment's (-deployment +service):\n%s", diff)
				}
				for k, v := range d.Spec.Selector.MatchLabels {
					if d.Spec.Template.Labels[k] != v {
						t.Errorf("pod template lacks selector label %s=%s", k, v)
					}
				}
			},
		},
		"CRDs are the generated ones": {
			wantKinds: nil, // checked by defaults
			check: func(t *testing.T, o objects) {
				for _, f := range []string{"pfs.packetfs.io_pcorejobs.yaml", "pfs.packetfs.io_pfsblobs.yaml", "pfs.packetfs.io_pfstransfers.yaml"} {
					b, err := os.ReadFile(root + "/config/crd/bases/" + f)
					if err != nil {
						t.Fatal(err)
					}
					var want, got apiextensionsv1.CustomResourceDefinition
					if err := yaml.UnmarshalStrict(b, &want); err != nil {
						t.Fatalf("%s: %v", f, err)
					}
					o.get(t, "CustomResourceDefinition", want.Name, &got)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("CRD %s differs from config/crd/bases/%s (run make manifests) (-want +got):\n%s", want.Name, f, diff)
					}
				}
			},
		},
		"custom images": {
			values: `
image: {repository: registry.example.com/pfs/operator, tag: dev-1, pullPolicy: Never}
dataplane:
  image: {repository: registry.example.com/pfs/dataplane, tag: dev-2, pullPolicy: Always}
  binary: /opt/pfs/pfs
imagePullSecrets: [{name: regcred}]
`,
			check: func(t *testing.T, o objects) {
				d := o.deployment(t, full)
				c := d.Spec.Template.Spec.Containers[0]
				if c.Image != "registry.example.com/pfs/operator:dev-1" || c.ImagePullPolicy != corev1.PullNever {
					t.Errorf("image %s %s, want registry.example.com/pfs/operator:dev-1 Never", c.Image, c.ImagePullPolicy)
				}
				want := wantArgs(map[string]string{
					"dataplane-image":             "registry.example.com/pfs/dataplane:dev-2",
					"dataplane-image-pull-policy": "Always",
					"dataplane-binary":            "/opt/pfs/pfs",
				})
				if diff := cmp.Diff(want, c.Args); diff != "" {
					t.Errorf("args (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]corev1.LocalObjectReference{{Name: "regcred"}}, d.Spec.Template.Spec.ImagePullSecrets); diff != "" {
					t.Errorf("imagePullSecrets (-want +got):\n%s", diff)
				}
			},
		},
		"leader election off": {
			values: "leaderElection: {enabled: false}\n",
			wantKinds: kinds(
				"ClusterRole/"+full+"-manager", "ClusterRoleBinding/"+full+"-manager",
				"Deployment/"+full, "Service/"+full+"-metrics", "ServiceAccount/"+full),
			check: func(t *testing.T, o objects) {
				c := o.deployment(t, full).Spec.Template.Spec.Containers[0]
				want := wantArgs(map[string]string{"leader-elect": "false", "leader-election-namespace": "-"})
				if diff := cmp.Diff(want, c.Args); diff != "" {
					t.Errorf("args (-want +got):\n%s", diff)
				}
			},
		},
		"metrics disabled": {
			values: "metrics: {enabled: false, port: 8080, service: {port: 8080}}\n",
			wantKinds: kinds(
				"ClusterRole/"+full+"-manager", "ClusterRoleBinding/"+full+"-manager",
				"Deployment/"+full, "Role/"+full+"-leader-election", "RoleBinding/"+full+"-leader-election",
				"ServiceAccount/"+full),
			check: func(t *testing.T, o objects) {
				c := o.deployment(t, full).Spec.Template.Spec.Containers[0]
				if diff := cmp.Diff(wantArgs(map[string]string{"metrics-bind-address": "0", "metrics-secure": "-"}), c.Args); diff != "" {
					t.Errorf("args (-want +got):\n%s", diff)
				}
				want := []corev1.ContainerPort{{Name: "health", ContainerPort: 8081, Protocol: corev1.ProtocolTCP}}
				if diff := cmp.Diff(want, c.Ports); diff != "" {
					t.Errorf("ports (-want +got):\n%s", diff)
				}
			},
		},
		"device plugin": {
			values: "devicePlugin: {enabled: true, links: [pfsdata0, pfsdata1/queues]}\n",
			wantKinds: kinds(
				"ClusterRole/"+full+"-manager", "ClusterRoleBinding/"+full+"-manager",
				"DaemonSet/"+full+"-device-plugin",
				"Deployment/"+full, "Role/"+full+"-leader-election", "RoleBinding/"+full+"-leader-election",
				"Service/"+full+"-metrics", "ServiceAccount/"+full),
			check: func(t *testing.T, o objects) {
				d := o.daemonSet(t, full+"-device-plugin")
				c := d.Spec.Template.Spec.Containers[0]
				want := deviceplugin.Config{
					Links:          []deviceplugin.LinkSpec{{IfName: "pfsdata0"}, {IfName: "pfsdata1", PerQueue: true}},
					ResourcePrefix: "packetfs.io", DevicePluginDir: "/var/lib/kubelet/device-plugins", Sysfs: "/sys",
					PollInterval: 5 * time.Second, Health: deviceplugin.HealthOperstate,
				}
				if diff := cmp.Diff(want, devicePluginConfig(t, c.Args)); diff != "" {
					t.Errorf("device plugin config from the args (-want +got):\n%s", diff)
				}
				for _, a := range []string{"--zap-log-level=info", "--zap-encoder=json", "--zap-time-encoding=rfc3339"} {
					if !containsArg(c.Args, a) {
						t.Errorf("device plugin args %v lack %s (the logging values)", c.Args, a)
					}
				}
				ps := d.Spec.Template.Spec
				if ps.PriorityClassName != "system-node-critical" || ps.NodeSelector != nil || ps.Tolerations != nil || ps.ImagePullSecrets != nil {
					t.Errorf("device plugin pod: priorityClassName %q nodeSelector %v tolerations %v pull secrets %v; want system-node-critical and none",
						ps.PriorityClassName, ps.NodeSelector, ps.Tolerations, ps.ImagePullSecrets)
				}
				if got := c.Resources.Limits.Memory().String() + " " + c.Resources.Requests.Cpu().String(); got != "128Mi 10m" {
					t.Errorf("device plugin memory limit and CPU request %s, want 128Mi 10m", got)
				}
				// The manager is as it was.
				if diff := cmp.Diff(wantArgs(nil), o.deployment(t, full).Spec.Template.Spec.Containers[0].Args); diff != "" {
					t.Errorf("manager args (-want +got):\n%s", diff)
				}
			},
		},
		"csi disabled": {
			values: "csi: {enabled: false}\n",
			wantKinds: kindsNoCSI(
				"ClusterRole/"+full+"-manager", "ClusterRoleBinding/"+full+"-manager",
				"Deployment/"+full, "Role/"+full+"-leader-election", "RoleBinding/"+full+"-leader-election",
				"Service/"+full+"-metrics", "ServiceAccount/"+full),
			check: func(t *testing.T, o objects) {
				// The operator's pods keep the hostPath volume.
				c := o.deployment(t, full).Spec.Template.Spec.Containers[0]
				if diff := cmp.Diff(wantArgs(map[string]string{"socket-volume": "hostPath"}), c.Args); diff != "" {
					t.Errorf("args (-want +got):\n%s", diff)
				}
			},
		},
		"device resources and data networks": {
			values: `
dataNetworks:
  - name: pfs-data
    resourceName: afxdp/pool
    config: '{"cniVersion":"0.3.1","type":"host-device","device":"pfs0"}'
  - name: sriov-data
    resourceName: intel.com/sriov_netdevice
    config: '{"cniVersion":"0.3.1","type":"sriov"}'
  - name: plain
    config: '{"cniVersion":"0.3.1","type":"macvlan","master":"eth1"}'
example: {transport: AFXDP, numa: Required, network: pfs-data, resourceName: afxdp/pool}
`,
			args: []string{"--api-versions", nadAPI},
			wantKinds: kinds(
				"ClusterRole/"+full+"-manager", "ClusterRoleBinding/"+full+"-manager",
				"Deployment/"+full, "Role/"+full+"-leader-election", "RoleBinding/"+full+"-leader-election",
				"Service/"+full+"-metrics", "ServiceAccount/"+full,
				"NetworkAttachmentDefinition/pfs-data", "NetworkAttachmentDefinition/sriov-data",
				"NetworkAttachmentDefinition/plain"),
			check: func(t *testing.T, o objects) {
				type nad struct {
					annotations map[string]string
					config      string
				}
				want := map[string]nad{
					"pfs-data":   {map[string]string{"k8s.v1.cni.cncf.io/resourceName": "afxdp/pool"}, `{"cniVersion":"0.3.1","type":"host-device","device":"pfs0"}`},
					"sriov-data": {map[string]string{"k8s.v1.cni.cncf.io/resourceName": "intel.com/sriov_netdevice"}, `{"cniVersion":"0.3.1","type":"sriov"}`},
					"plain":      {nil, `{"cniVersion":"0.3.1","type":"macvlan","master":"eth1"}`},
				}
				got := map[string]nad{}
				for _, u := range o.list {
					if u.GetKind() == "NetworkAttachmentDefinition" {
						cfg, _, _ := unstructured.NestedString(u.Object, "spec", "config")
						got[u.GetName()] = nad{u.GetAnnotations(), cfg}
						if u.GetNamespace() != namespace || u.GetAPIVersion() != "k8s.cni.cncf.io/v1" {
							t.Errorf("NAD %s: %s in %q, want k8s.cni.cncf.io/v1 in %q", u.GetName(), u.GetAPIVersion(), u.GetNamespace(), namespace)
						}
					}
				}
				if diff := cmp.Diff(want, got, cmp.AllowUnexported(nad{})); diff != "" {
					t.Errorf("NetworkAttachmentDefinitions (-want +got):\n%s", diff)
				}
				// The operator has no flags for these: the args stay the defaults.
				c := o.deployment(t, full).Spec.Template.Spec.Containers[0]
				if diff := cmp.Diff(wantArgs(nil), c.Args); diff != "" {
					t.Errorf("args (-want +got):\n%s", diff)
				}
			},
		},
		"existing service account, no RBAC": {
			values:    "serviceAccount: {create: false, name: platform-sa}\nrbac: {create: false}\n",
			wantKinds: kinds("Deployment/"+full, "Service/"+full+"-metrics"),
			check: func(t *testing.T, o objects) {
				if got := o.deployment(t, full).Spec.Template.Spec.ServiceAccountName; got != "platform-sa" {
					t.Errorf("serviceAccountName %q, want platform-sa", got)
				}
			},
		},
		"every value set": {
			values: string(fullValues),
			args:   []string{"--api-versions", nadAPI},
			wantKinds: kinds(
				"ClusterRole/pfs-op-manager", "ClusterRole/pfs-op-manager-cluster", "ClusterRoleBinding/pfs-op-manager-cluster",
				"ClusterRoleBinding/pfs-op-metrics-reader", "DaemonSet/pfs-op-device-plugin",
				"Deployment/pfs-op", "Role/pfs-op-leader-election", "RoleBinding/pfs-op-leader-election",
				"RoleBinding/pfs-op-manager", "RoleBinding/pfs-op-manager", "NetworkPolicy/pfs-op-allow-metrics",
				"Service/pfs-op-metrics", "ServiceAccount/pfs-manager",
				"NetworkAttachmentDefinition/pfs-data", "NetworkAttachmentDefinition/sriov-data"),
			check: func(t *testing.T, o objects) {
				d := o.deployment(t, "pfs-op")
				c := d.Spec.Template.Spec.Containers[0]
				want := wantArgs(map[string]string{
					"metrics-bind-address":        ":9090",
					"metrics-cert-dir":            "/etc/packetfs/metrics-certs",
					"watch-namespaces":            "team-a,team-b",
					"health-probe-bind-address":   ":9091",
					"dataplane-image":             "registry.example.com/packetfs/dataplane:v0.1.0-rc1",
					"dataplane-image-pull-policy": "Always",
					"dataplane-binary":            "/opt/pfs/bin/pfs",
					"holder-cpu":                  "250m",
					"holder-fill-cpu":             "2",
					"holder-metrics-port":         "9471",
					"operand-tolerations":         `[{"effect":"NoSchedule","key":"nvidia.com/gpu","operator":"Exists"},{"effect":"NoSchedule","key":"dedicated","operator":"Equal","value":"ml"}]`,
					"operand-priority-class":      "pfs-holders",
					"operand-node-affinity":       `{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["gpu"]}]}]}}`,
					"host-path-sources":           "enabled",
					"host-path-prefixes":          "/srv/models,/data",
					"max-concurrent-reconciles":   "4",
					"max-active-transfers":        "3",
					"unschedulable-timeout":       "2m30s",
					"retry-backoff":               "5s",
					"retry-backoff-max":           "1h",
					"topology-catch-up":           "0s",
					"max-requeue-after":           "20s",
					"progress-interval":           "10s",
					"zap-log-level":               "debug",
					"zap-encoder":                 "console",
					"zap-time-encoding":           "iso8601",
					// console is zap's text: pfs's is text too
					"dataplane-log-format":        "text",
					"dataplane-log-level":         "debug",
					"dataplane-log-time-encoding": "iso8601",
				})
				if diff := cmp.Diff(want, c.Args); diff != "" {
					t.Errorf("args (-want +got):\n%s", diff)
				}
				if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.PriorityClassName != "system-cluster-critical" ||
					len(d.Spec.Template.Spec.Tolerations) != 1 || d.Spec.Template.Spec.Affinity == nil ||
					d.Spec.Template.Labels["team"] != "platform" || d.Spec.Template.Annotations["example.com/scrape"] != "yes" {
					t.Errorf("pod settings not applied: replicas %d, %+v", *d.Spec.Replicas, d.Spec.Template)
				}
				if got := c.Resources.Limits.Memory().String(); got != "512Mi" {
					t.Errorf("memory limit %s, want 512Mi", got)
				}
				ds := o.daemonSet(t, "pfs-op-device-plugin")
				pc := ds.Spec.Template.Spec.Containers[0]
				wantPlugin := deviceplugin.Config{
					Links: []deviceplugin.LinkSpec{{IfName: "pfsdata0"}, {IfName: "pfsdata1", PerQueue: true},
						{PCIAddress: "0000:3b:00.1"}},
					ResourcePrefix: "net.example.com", DevicePluginDir: "/var/lib/kubelet/device-plugins", Sysfs: "/sys",
					PollInterval: 2 * time.Second, Health: deviceplugin.HealthPresence,
				}
				if diff := cmp.Diff(wantPlugin, devicePluginConfig(t, pc.Args)); diff != "" {
					t.Errorf("device plugin config from the args (-want +got):\n%s", diff)
				}
				if !containsArg(pc.Args, "--zap-log-level=debug") || pc.Image != "registry.example.com/packetfs/operator:v0.1.0-rc1" {
					t.Errorf("device plugin args %v image %s: want the logging values and the operator image", pc.Args, pc.Image)
				}
				dps := ds.Spec.Template.Spec
				if dps.PriorityClassName != "pfs-data-plane" || dps.NodeSelector["packetfs.io/data-links"] != "true" ||
					len(dps.Tolerations) != 1 || dps.Tolerations[0].Key != "packetfs.io/data" || len(dps.ImagePullSecrets) != 1 {
					t.Errorf("device plugin pod settings not applied: %+v", dps)
				}
				if got := pc.Resources.Limits.Memory().String(); got != "96Mi" {
					t.Errorf("device plugin memory limit %s, want 96Mi", got)
				}
				var svc corev1.Service
				o.get(t, "Service", "pfs-op-metrics", &svc)
				if p := svc.Spec.Ports[0]; p.Port != 8443 || p.TargetPort.String() != "metrics" {
					t.Errorf("metrics Service port %+v, want 8443 -> metrics", p)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := render(t, tc.values, tc.args...)
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			o := decode(t, out)
			if tc.wantKinds != nil {
				if diff := cmp.Diff(tc.wantKinds, o.kinds()); diff != "" {
					t.Errorf("objects (-want +got):\n%s", diff)
				}
			}
			checkInvariants(t, o)
			tc.check(t, o)
		})
	}
}

// TestRejects: values.schema.json and the templates refuse bad values, and the
// error names the offending key.
func TestRejects(t *testing.T) {
	tests := map[string]struct {
		values string
		args   []string
		want   []string // substrings of the error
	}{
		"unknown top-level key": {
			values: "imageTag: v1\n",
			want:   []string{"values don't meet the specifications of the schema", "imageTag"},
		},
		"unknown nested key": {
			values: "metrics: {enabled: true, port: 8080, service: {port: 8080, type: NodePort}}\n",
			want:   []string{"/metrics/service", "type"},
		},
		"bad pull policy": {
			values: "dataplane: {image: {repository: x, tag: y, pullPolicy: Sometimes}, binary: /pfs}\n",
			want:   []string{"/dataplane/image/pullPolicy", "Always"},
		},
		"replicaCount not an integer": {
			values: "replicaCount: two\n",
			want:   []string{"/replicaCount", "integer"},
		},
		"bad duration": {
			values: "controller: {maxConcurrentReconciles: 2, unschedulableTimeout: 5m, retryBackoff: 10 seconds, retryBackoffMax: 6m}\n",
			want:   []string{"/controller/retryBackoff"},
		},
		"bad NUMA policy": {
			values: "example: {transport: TCP, numa: Strict, network: '', resourceName: ''}\n",
			want:   []string{"/example/numa", "Preferred"},
		},
		"AFXDP example without a network": {
			values: "example: {transport: AFXDP, numa: Preferred, network: '', resourceName: afxdp/pool}\n",
			want:   []string{"/example/network"},
		},
		"device resource without a vendor prefix": {
			values: "dataNetworks: [{name: pfs-data, resourceName: pool, config: '{\"type\":\"host-device\"}'}]\n",
			args:   []string{"--api-versions", nadAPI},
			want:   []string{"/dataNetworks/0/resourceName"},
		},
		"relative data-plane binary": {
			values: "dataplane: {image: {repository: x, tag: y, pullPolicy: Always}, binary: pfs}\n",
			want:   []string{"/dataplane/binary"},
		},
		"privileged ports for the manager": {
			values: "health: {port: 81}\n",
			want:   []string{"/health/port"},
		},
		"several replicas without leader election": {
			values: "replicaCount: 2\nleaderElection: {enabled: false}\n",
			want:   []string{"replicaCount > 1 needs leaderElection.enabled=true"},
		},
		"metrics and health on one port": {
			values: "health: {port: 8443}\n",
			want:   []string{"metrics.port and health.port must differ"},
		},
		"data networks without Multus": {
			values: "dataNetworks: [{name: pfs-data, config: '{\"type\":\"host-device\"}'}]\n",
			want:   []string{"dataNetworks needs Multus"},
		},
		"data network config not JSON": {
			values: "dataNetworks: [{name: pfs-data, config: 'type: host-device'}]\n",
			args:   []string{"--api-versions", nadAPI},
			want:   []string{"dataNetworks pfs-data: config must be a CNI configuration in JSON"},
		},
		"csi with a relative kubelet directory": {
			values: "csi: {enabled: true, kubeletDir: var/lib/kubelet, pollInterval: 5s}\n",
			want:   []string{"/csi/kubeletDir"},
		},
		"csi with an unknown key": {
			values: "csi: {enabled: true, kubeletDir: /var/lib/kubelet, pollInterval: 5s, socketRoot: /tmp}\n",
			want:   []string{"/csi", "socketRoot"},
		},
		"device plugin without links": {
			values: "devicePlugin: {enabled: true}\n",
			want:   []string{"/devicePlugin/links", "minItems"},
		},
		"device plugin link with an unknown mode": {
			values: "devicePlugin: {enabled: true, links: [pfsdata0/rx]}\n",
			want:   []string{"/devicePlugin/links/0", "pfsdata0/rx"},
		},
		"device plugin link name too long": {
			values: "devicePlugin: {enabled: true, links: [abcdefghijklmnop]}\n",
			want:   []string{"/devicePlugin/links/0"},
		},
		"device plugin in the kubernetes.io domain": {
			values: "devicePlugin: {enabled: true, links: [pfsdata0], resourcePrefix: nic.kubernetes.io}\n",
			want:   []string{"/devicePlugin/resourcePrefix"},
		},
		"device plugin with an unknown key": {
			values: "devicePlugin: {enabled: true, links: [pfsdata0], privileged: true}\n",
			want:   []string{"/devicePlugin", "privileged"},
		},
		"device plugin bad health": {
			values: "devicePlugin: {enabled: true, links: [pfsdata0], health: carrier}\n",
			want:   []string{"/devicePlugin/health", "operstate"},
		},
		"existing service account without a name": {
			values: "serviceAccount: {create: false, name: ''}\n",
			want:   []string{"serviceAccount.name is required when serviceAccount.create is false"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := render(t, tc.values, tc.args...)
			if err == nil {
				t.Fatalf("helm template accepted the values; rendered:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

// renderNotes renders templates/NOTES.txt, which `helm template` skips: on a
// copy of the chart, the notes become a named template that a comment-only
// manifest includes.
func renderNotes(t *testing.T, values string, args ...string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "chart-notes")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	chart := filepath.Join(dir, "packetfs-operator")
	if err := os.CopyFS(chart, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(chart, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wrapped := `{{- define "test.notes" -}}` + string(notes) + "{{- end }}"
	show := "# {{ include \"test.notes\" . | replace \"\\n\" \"\\n# \" }}\n"
	for name, text := range map[string]string{"NOTES.txt": "", "test-notes.tpl": wrapped, "test-notes.yaml": show} {
		f := filepath.Join(chart, "templates", name)
		if text == "" {
			err = os.Remove(f)
		} else {
			err = os.WriteFile(f, []byte(text), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	vf := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(vf, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helm(t), append([]string{"template", release, chart, "--namespace", namespace,
		"--values", vf, "--show-only", "templates/test-notes.yaml"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("helm template (notes): %s", ee.Stderr)
		}
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(l, "#"); ok && !strings.HasPrefix(l, "# Source:") {
			lines = append(lines, strings.TrimPrefix(rest, " "))
		}
	}
	return strings.Join(lines, "\n")
}

// TestNotes: the sample PfsTransfer the install notes print is a valid object
// carrying the example values (NUMA policy, network, device resource).
func TestNotes(t *testing.T) {
	endpoint := func(network, res string) pfsv1alpha1.Endpoint {
		return pfsv1alpha1.Endpoint{Network: network, ResourceName: res, Queues: 1}
	}
	tests := map[string]struct {
		values    string
		args      []string
		wantSpec  pfsv1alpha1.PfsTransferSpec
		wantLines []string
	}{
		"defaults": {
			wantSpec: pfsv1alpha1.PfsTransferSpec{Mode: "Payload", Transport: "TCP", NUMA: pfsv1alpha1.NUMAPolicyPreferred,
				Sender: endpoint("", ""), Receiver: endpoint("", "")},
			wantLines: []string{
				"kubectl -n pfs-system rollout status deployment/pfs-packetfs-operator",
				"Metrics: https://pfs-packetfs-operator-metrics.pfs-system.svc:8443/metrics",
				"(a bearer token of a subject bound to the ClusterRole pfs-packetfs-operator-metrics-reader)",
				"Data-plane pods run packetfs.io/dataplane:v0.1.0 (pull policy IfNotPresent);",
			},
		},
		"AF_XDP on a device pool, NUMA required": {
			values: `
dataNetworks: [{name: pfs-data, resourceName: afxdp/pool, config: '{"type":"host-device","device":"pfs0"}'}]
example: {transport: AFXDP, numa: Required, network: pfs-system/pfs-data, resourceName: afxdp/pool}
metrics: {enabled: false}
`,
			args: []string{"--api-versions", nadAPI},
			wantSpec: pfsv1alpha1.PfsTransferSpec{Mode: "Payload", Transport: "AFXDP", NUMA: pfsv1alpha1.NUMAPolicyRequired,
				Sender: endpoint("pfs-system/pfs-data", "afxdp/pool"), Receiver: endpoint("pfs-system/pfs-data", "afxdp/pool")},
			wantLines: []string{
				`Data network pfs-data (device resource afxdp/pool): use spec.sender.network and spec.receiver.network "pfs-system/pfs-data".`,
			},
		},
		"device plugin": {
			values: "devicePlugin: {enabled: true, links: [pfsdata0, pfsdata1/queues]}\n",
			wantSpec: pfsv1alpha1.PfsTransferSpec{Mode: "Payload", Transport: "TCP", NUMA: pfsv1alpha1.NUMAPolicyPreferred,
				Sender: endpoint("", ""), Receiver: endpoint("", "")},
			wantLines: []string{
				"Device plugin: DaemonSet pfs-packetfs-operator-device-plugin advertises the links pfsdata0, pfsdata1/queues\n" +
					"as packetfs.io/<interface> on each node it runs on (docs/guides/device-plugin.md):",
				"kubectl -n pfs-system rollout status daemonset/pfs-packetfs-operator-device-plugin",
			},
		},
		"SR-IOV device": {
			values: "example: {transport: UDP, numa: None, network: sriov-data, resourceName: intel.com/sriov_netdevice}\n",
			wantSpec: pfsv1alpha1.PfsTransferSpec{Mode: "Payload", Transport: "UDP", NUMA: pfsv1alpha1.NUMAPolicyNone,
				Sender:   endpoint("sriov-data", "intel.com/sriov_netdevice"),
				Receiver: endpoint("sriov-data", "intel.com/sriov_netdevice")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			notes := renderNotes(t, tc.values, tc.args...)
			for _, l := range tc.wantLines {
				if !strings.Contains(notes, l) {
					t.Errorf("notes lack %q:\n%s", l, notes)
				}
			}
			if strings.Contains(notes, "Metrics:") != !strings.Contains(tc.values, "enabled: false") {
				t.Errorf("metrics line present = %v, want it only with metrics enabled:\n%s", strings.Contains(notes, "Metrics:"), notes)
			}
			_, rest, ok := strings.Cut(notes, "<<'YAML'\n")
			sample, _, ok2 := strings.Cut(rest, "\nYAML")
			if !ok || !ok2 {
				t.Fatalf("no sample between <<'YAML' and YAML in the notes:\n%s", notes)
			}
			var tr pfsv1alpha1.PfsTransfer
			if err := yaml.UnmarshalStrict([]byte(sample), &tr); err != nil {
				t.Fatalf("sample PfsTransfer: %v\n%s", err, sample)
			}
			if tr.APIVersion != pfsv1alpha1.GroupVersion.String() || tr.Kind != "PfsTransfer" {
				t.Errorf("sample is %s %s, want %s PfsTransfer", tr.APIVersion, tr.Kind, pfsv1alpha1.GroupVersion)
			}
			want := tc.wantSpec
			want.Range = &pfsv1alpha1.Range{Offset: resource.MustParse("0"), Length: resource.MustParse("64Mi")}
			if diff := cmp.Diff(want, tr.Spec); diff != "" {
				t.Errorf("sample spec (-want +got):\n%s", diff)
			}
		})
	}
}
