// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// inMountNS is set in the copy of the test binary that runs in a private
// mount namespace, to the mount namespace of the process that started it.
const inMountNS = "PFS_CSINODE_TEST_MOUNT_NS"

// TestMain runs the tests again, as root, in a mount namespace of their
// own whose mounts propagate nowhere (os/exec makes / private when it
// unshares CLONE_NEWNS), so publish mounts for real and the host never
// sees them. A namespace for one locked OS thread would not do: the gRPC
// handlers that mount run on whatever thread. Without root, the tests that
// mount are skipped.
func TestMain(m *testing.M) {
	if os.Getenv(inMountNS) == "" && os.Geteuid() == 0 {
		parent, err := os.Readlink("/proc/self/ns/mnt")
		if err != nil {
			fmt.Fprintf(os.Stderr, "read the mount namespace: %v\n", err)
			os.Exit(1)
		}
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Env = append(os.Environ(), inMountNS+"="+parent)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		err = cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			os.Exit(exit.ExitCode())
		case err != nil:
			fmt.Fprintf(os.Stderr, "run the tests in a private mount namespace: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// needMountNS skips a test that mounts unless it runs in the private
// mount namespace TestMain made, and checks that it really is another
// namespace than the one the tests were started in.
func needMountNS(t *testing.T) {
	t.Helper()
	parent := os.Getenv(inMountNS)
	if parent == "" {
		t.Skip("needs root: publish bind-mounts, done in a private mount namespace")
	}
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil || self == parent {
		t.Fatalf("not in a private mount namespace: %s (%v), started in %s", self, err, parent)
	}
}
