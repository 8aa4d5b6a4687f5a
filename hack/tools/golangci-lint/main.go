// SPDX-License-Identifier: Apache-2.0

// Command golangci-lint is golangci-lint at the version go.mod pins with the
// module plugins below compiled in: what `golangci-lint custom` builds from
// a .custom-gcl.yml, made without the git clone of golangci-lint's
// repository that `custom` starts with (this machine and CI reach the Go
// module proxy, not GitHub). cmd/golangci-lint cannot be imported, so this
// main calls the same entry point, commands.Execute, with the version read
// from the build info. `make golangci-lint` builds it into ./bin.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/golangci/golangci-lint/v2/pkg/commands"
	"github.com/golangci/golangci-lint/v2/pkg/exitcodes"

	// Module plugins: each registers its linters in init (the
	// plugin-module-register contract); .golangci.yml enables them by name.
	_ "sigs.k8s.io/kube-api-linter" // kubeapilinter
)

func main() {
	info := commands.BuildInfo{Version: "unknown", Commit: "(module plugins: kube-api-linter)", Date: "(unknown)"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.GoVersion = bi.GoVersion
		for _, dep := range bi.Deps {
			if dep.Path == "github.com/golangci/golangci-lint/v2" {
				info.Version = strings.TrimPrefix(dep.Version, "v")
			}
		}
	}
	if err := commands.Execute(info); err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "golangci-lint: %v\n", err)
		os.Exit(exitcodes.Failure)
	}
}
