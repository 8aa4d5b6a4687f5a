#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one cross-built aarch64 TAP program (build/arm64/tests/*) under
# user-mode qemu with a CPU model that has CRC32 and Advanced SIMD, so the
# ARMv8 CRC32C path and the NEON kernels run on an x86 host; on an aarch64
# host it runs the program directly. Used by run.sh as `--via tests/arm64.sh`.
# Without the cross compiler or qemu the program is one TAP SKIP with the
# reason, never a pass.
set -u
prog=$1
qemu=${QEMU_ARM64:-qemu-aarch64-static}
cpu=${QEMU_ARM64_CPU:-max}
cc=${ARM64_CC:-aarch64-linux-gnu-gcc}

skip() {
	printf '1..1\nok 1 %s (arm64) # SKIP %s\n# 1 skipped\n0 passed, 0 failed\n' \
		"$(basename "$prog")" "$1"
}

if [ ! -x "$prog" ]; then
	if ! command -v "$cc" >/dev/null 2>&1; then
		skip "no aarch64 cross compiler ($cc; hack/install-deps.sh installs it)"
		exit 0
	fi
	echo "# $prog was not built although $cc is installed"
	exit 1
fi
if [ "$(uname -m)" = aarch64 ]; then
	exec "$prog"
fi
if ! command -v "$qemu" >/dev/null 2>&1; then
	skip "no $qemu (qemu-user-static; hack/install-deps.sh installs it)"
	exit 0
fi
echo "# $qemu -cpu $cpu"
exec "$qemu" -cpu "$cpu" "$prog"
