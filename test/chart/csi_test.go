// SPDX-License-Identifier: Apache-2.0

//go:build chart

package chart

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"packetfs.io/operator/internal/csinode"
	"packetfs.io/operator/internal/podspec"
)

// csiDriver is the CSIDriver's name; the plugin and the operator's pods
// name the same driver.
const csiDriver = csinode.DriverName

// csiNodeConfig parses the CSI node plugin's args with its own flags (as
// cmd/csi-node binds them, NODE_NAME standing for the downward API) and
// validates them, as the binary would at start.
func csiNodeConfig(t *testing.T, args []string) csinode.Config {
	t.Helper()
	var cfg csinode.Config
	fs := flag.NewFlagSet("pfs-csi-node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.Bind(fs, "")
	(&zap.Options{}).BindFlags(fs)
	expanded := make([]string, 0, len(args))
	for _, a := range args {
		expanded = append(expanded, strings.ReplaceAll(a, "$(NODE_NAME)", "node-1"))
	}
	if err := fs.Parse(expanded); err != nil {
		t.Fatalf("CSI node plugin args %v: %v", args, err)
	}
	if fs.NArg() > 0 {
		t.Fatalf("CSI node plugin args %v: %q are not flags", args, fs.Args())
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("CSI node plugin args %v: %v", args, err)
	}
	return cfg
}

// checkCSINode holds for every rendered CSI node plugin: the operator's
// image and the plugin binary, args the plugin accepts, exactly the host
// paths it needs mounted where the node has them (the kubelet dials the
// endpoint path the plugin names, and publishes below its pods directory),
// Bidirectional propagation on the pods directory and the plugin directory
// (the holders' tmpfs) only, and with it the privileged container that
// propagation needs; its own ServiceAccount's token, which may only read
// PfsBlobs; no host namespaces; and the CSIDriver the kubelet needs for
// inline volumes and PersistentVolumes.
func checkCSINode(t *testing.T, o objects, d *appsv1.DaemonSet) {
	t.Helper()
	ps := d.Spec.Template.Spec
	c := ps.Containers[0]
	if diff := cmp.Diff([]string{"/pfs-csi-node"}, c.Command); diff != "" {
		t.Errorf("CSI node command (-want +got):\n%s", diff)
	}
	cfg := csiNodeConfig(t, c.Args)
	if cfg.SocketRoot != podspec.SocketRoot {
		t.Errorf("--socket-root %s, want the operator's %s", cfg.SocketRoot, podspec.SocketRoot)
	}
	if cfg.Kubeconfig != "" {
		t.Errorf("--kubeconfig %s: the plugin reads the API with its ServiceAccount's token", cfg.Kubeconfig)
	}
	var kubelet string
	for _, m := range c.VolumeMounts {
		if m.Name == "pods-dir" {
			kubelet = strings.TrimSuffix(m.MountPath, "/pods")
		}
	}
	plugin := kubelet + "/plugins/" + csiDriver
	if cfg.Endpoint != plugin+"/csi.sock" || cfg.RegistrationDir != kubelet+"/plugins_registry" || cfg.StagingDir != plugin+"/blobs" {
		t.Errorf("endpoint %s, registry %s, staging %s; want %s/csi.sock, %s/plugins_registry and %s/blobs",
			cfg.Endpoint, cfg.RegistrationDir, cfg.StagingDir, plugin, kubelet, plugin)
	}
	hostPath := func(name, path string, typ corev1.HostPathType) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(typ)}}}
	}
	wantVolumes := []corev1.Volume{
		hostPath("sockets", podspec.SocketRoot, corev1.HostPathDirectoryOrCreate),
		hostPath("plugin-dir", plugin, corev1.HostPathDirectoryOrCreate),
		hostPath("registration-dir", kubelet+"/plugins_registry", corev1.HostPathDirectory),
		hostPath("pods-dir", kubelet+"/pods", corev1.HostPathDirectory),
	}
	if diff := cmp.Diff(wantVolumes, ps.Volumes); diff != "" {
		t.Errorf("CSI node volumes (-want +got):\n%s", diff)
	}
	wantMounts := []corev1.VolumeMount{
		{Name: "sockets", MountPath: podspec.SocketRoot},
		{Name: "plugin-dir", MountPath: plugin, MountPropagation: ptr.To(corev1.MountPropagationBidirectional)},
		{Name: "registration-dir", MountPath: kubelet + "/plugins_registry"},
		{Name: "pods-dir", MountPath: kubelet + "/pods", MountPropagation: ptr.To(corev1.MountPropagationBidirectional)},
	}
	if diff := cmp.Diff(wantMounts, c.VolumeMounts); diff != "" {
		t.Errorf("CSI node volume mounts (-want +got):\n%s", diff)
	}
	wantSec := &corev1.SecurityContext{Privileged: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true),
		RunAsNonRoot: ptr.To(false), RunAsUser: ptr.To(int64(0)), RunAsGroup: ptr.To(int64(0))}
	if diff := cmp.Diff(wantSec, c.SecurityContext); diff != "" {
		t.Errorf("CSI node container securityContext (-want +got):\n%s", diff)
	}
	if ps.AutomountServiceAccountToken == nil || !*ps.AutomountServiceAccountToken || ps.ServiceAccountName != d.Name {
		t.Errorf("CSI node pod: service account %q, token %v; want its own, %s, with its token mounted (it reads PfsBlobs)",
			ps.ServiceAccountName, ps.AutomountServiceAccountToken, d.Name)
	}
	var sa corev1.ServiceAccount
	o.get(t, "ServiceAccount", d.Name, &sa)
	checkCSINodeRBAC(t, o, d.Name)
	if ps.HostNetwork || ps.HostPID || ps.HostIPC {
		t.Errorf("CSI node pod uses host namespaces: network %v pid %v ipc %v", ps.HostNetwork, ps.HostPID, ps.HostIPC)
	}
	wantEnv := []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
	if diff := cmp.Diff(wantEnv, c.Env); diff != "" {
		t.Errorf("CSI node env (-want +got):\n%s", diff)
	}
	for _, u := range o.list {
		if u.GetKind() == "Deployment" {
			m := o.deployment(t, u.GetName()).Spec.Template.Spec.Containers[0]
			if c.Image != m.Image || c.ImagePullPolicy != m.ImagePullPolicy {
				t.Errorf("CSI node image %s (%s), want the manager's %s (%s)", c.Image, c.ImagePullPolicy, m.Image, m.ImagePullPolicy)
			}
			if !containsArg(m.Args, "--socket-volume=csi") {
				t.Errorf("manager args %v lack --socket-volume=csi while the CSI driver is installed", m.Args)
			}
		}
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("CSI node resources %+v: want a memory limit and a CPU request", c.Resources)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("CSI node selector %s=%s does not match its pod labels %v", k, v, d.Spec.Template.Labels)
		}
	}
	if d.Spec.Selector.MatchLabels["app.kubernetes.io/component"] != "csi-node" {
		t.Errorf("CSI node selector %v: want component csi-node", d.Spec.Selector.MatchLabels)
	}

	var drv storagev1.CSIDriver
	o.get(t, "CSIDriver", csiDriver, &drv)
	wantSpec := storagev1.CSIDriverSpec{
		AttachRequired:       ptr.To(false),
		PodInfoOnMount:       ptr.To(true),
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral, storagev1.VolumeLifecyclePersistent},
		FSGroupPolicy:        ptr.To(storagev1.NoneFSGroupPolicy),
		RequiresRepublish:    ptr.To(false),
		StorageCapacity:      ptr.To(false),
	}
	if diff := cmp.Diff(wantSpec, drv.Spec); diff != "" {
		t.Errorf("CSIDriver spec (-want +got):\n%s", diff)
	}
}

// checkCSINodeRBAC: with RBAC, the plugin's ServiceAccount is bound to a
// ClusterRole that reads PfsBlobs and nothing else, and nothing else binds it.
func checkCSINodeRBAC(t *testing.T, o objects, name string) {
	t.Helper()
	var roles []string
	for _, u := range o.list {
		if u.GetKind() == "ClusterRole" || u.GetKind() == "Role" {
			roles = append(roles, u.GetKind()+"/"+u.GetName())
		}
	}
	if len(roles) == 0 {
		return // rbac.create false: the user binds it
	}
	var role rbacv1.ClusterRole
	o.get(t, "ClusterRole", name, &role)
	want := []rbacv1.PolicyRule{{APIGroups: []string{"pfs.packetfs.io"}, Resources: []string{"pfsblobs"}, Verbs: []string{"get", "list", "watch"}}}
	if diff := cmp.Diff(want, role.Rules); diff != "" {
		t.Errorf("CSI node ClusterRole rules (-want +got):\n%s", diff)
	}
	var binding rbacv1.ClusterRoleBinding
	o.get(t, "ClusterRoleBinding", name, &binding)
	wantRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	if diff := cmp.Diff(wantRef, binding.RoleRef); diff != "" {
		t.Errorf("CSI node ClusterRoleBinding roleRef (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]rbacv1.Subject{sa(name)}, binding.Subjects); diff != "" {
		t.Errorf("CSI node ClusterRoleBinding subjects (-want +got):\n%s", diff)
	}
	for _, u := range o.list {
		if k := u.GetKind(); (k == "ClusterRoleBinding" || k == "RoleBinding") && u.GetName() != name {
			var other rbacv1.ClusterRoleBinding // the subjects are the same in a RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &other); err != nil {
				t.Fatal(err)
			}
			for _, s := range other.Subjects {
				if s.Kind == "ServiceAccount" && s.Name == name {
					t.Errorf("%s/%s binds the CSI node plugin's ServiceAccount too", k, u.GetName())
				}
			}
		}
	}
}

// TestCSINode: the plugin's values reach its flags and pod.
func TestCSINode(t *testing.T) {
	const name = "pfs-packetfs-operator-csi-node"
	tests := map[string]struct {
		values   string
		want     csinode.Config
		priority string
		tols     []corev1.Toleration
	}{
		"defaults": {
			want: csinode.Config{NodeName: "node-1", SocketRoot: "/run/packetfs", Endpoint: "/var/lib/kubelet/plugins/csi.packetfs.io/csi.sock",
				StagingDir:      "/var/lib/kubelet/plugins/csi.packetfs.io/blobs",
				RegistrationDir: "/var/lib/kubelet/plugins_registry", PollInterval: 5 * time.Second},
			priority: "system-node-critical",
		},
		"another kubelet directory": {
			values: "csi: {enabled: true, kubeletDir: /var/lib/k0s/kubelet, pollInterval: 1m, priorityClassName: '', tolerations: [{operator: Exists}]}\n",
			want: csinode.Config{NodeName: "node-1", SocketRoot: "/run/packetfs", Endpoint: "/var/lib/k0s/kubelet/plugins/csi.packetfs.io/csi.sock",
				StagingDir:      "/var/lib/k0s/kubelet/plugins/csi.packetfs.io/blobs",
				RegistrationDir: "/var/lib/k0s/kubelet/plugins_registry", PollInterval: time.Minute},
			tols: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
	for tcName, tc := range tests {
		t.Run(tcName, func(t *testing.T) {
			out, err := render(t, tc.values)
			if err != nil {
				t.Fatalf("render: %v\n%s", err, out)
			}
			o := decode(t, out)
			checkInvariants(t, o)
			d := o.daemonSet(t, name)
			c := d.Spec.Template.Spec.Containers[0]
			if diff := cmp.Diff(tc.want, csiNodeConfig(t, c.Args)); diff != "" {
				t.Errorf("CSI node config from the args (-want +got):\n%s", diff)
			}
			ps := d.Spec.Template.Spec
			if ps.PriorityClassName != tc.priority {
				t.Errorf("priorityClassName %q, want %q", ps.PriorityClassName, tc.priority)
			}
			if diff := cmp.Diff(tc.tols, ps.Tolerations); diff != "" {
				t.Errorf("tolerations (-want +got):\n%s", diff)
			}
		})
	}
}
