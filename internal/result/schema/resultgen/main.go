// SPDX-License-Identifier: Apache-2.0

// Command resultgen writes package result's Go structs from the pfs result
// schema. `go generate ./internal/result/...` (make generate) runs it;
// make verify fails when its output is stale.
package main

import (
	"flag"
	"fmt"
	"os"

	"packetfs.io/operator/internal/result/schema"
)

func main() {
	in := flag.String("schema", "", "the schema file")
	name := flag.String("name", "", "how the generated file's header names the schema (default: -schema)")
	out := flag.String("out", "", "the Go file to write")
	pkg := flag.String("package", "result", "its package")
	flag.Parse()
	if *in == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: resultgen -schema FILE -out FILE.go [-package NAME] [-name TEXT]")
		os.Exit(2)
	}
	if *name == "" {
		*name = *in
	}
	s, err := schema.Load(*in)
	if err == nil {
		var src []byte
		if src, err = s.GoSource(*pkg, *name); err == nil {
			err = os.WriteFile(*out, src, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "resultgen:", err)
		os.Exit(1)
	}
}
