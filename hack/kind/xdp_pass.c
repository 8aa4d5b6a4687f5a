// SPDX-License-Identifier: GPL-2.0
/*
 * The smallest XDP program: pass every frame. hack/kind/smoke.sh attaches
 * it in native (driver) mode to the data links to prove their MTU and queue
 * counts allow native XDP on veth. Stateless; no maps.
 */
#include <linux/bpf.h>

__attribute__((section("xdp"), used)) int xdp_pass(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

char LICENSE[] __attribute__((section("license"), used)) = "GPL";
