// SPDX-License-Identifier: (Apache-2.0 OR GPL-2.0-only)
/* Test fixture for test_xsk: an XDP program that is not ours (another
 * name), attached with `ip link ... xdpgeneric obj` to check that pfs
 * refuses to replace it. Passes everything. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int not_pfs(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
