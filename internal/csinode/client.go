// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// NewBlobReader is the plugin's read-only, uncached client of PfsBlobs:
// from the kubeconfig file when one is given, else the pod's service
// account. Its RBAC is get/list/watch on pfsblobs and nothing else
// (charts/: the plugin's ClusterRole).
func NewBlobReader(kubeconfig string) (client.Reader, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("API server configuration (--kubeconfig %q): %w", kubeconfig, err)
	}
	return newBlobReader(cfg)
}

// newBlobReader is the client for a rest config; a scheme with the
// PacketFS Kinds only, since it reads nothing else.
func newBlobReader(cfg *rest.Config) (client.Reader, error) {
	scheme := runtime.NewScheme()
	if err := pfsv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	return c, nil
}
