// SPDX-License-Identifier: Apache-2.0

// Package crd carries the generated CustomResourceDefinitions
// (bases/, make manifests) into the manager binary, so that its
// --apply-crds mode (the chart's pre-upgrade hook) applies exactly the CRDs
// of its own version.
package crd

import "embed"

// Bases holds bases/*.yaml.
//
//go:embed bases/*.yaml
var Bases embed.FS
