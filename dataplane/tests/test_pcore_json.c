// SPDX-License-Identifier: Apache-2.0
/*
 * The pcore result must fit a Kubernetes termination message (4 KiB) at any
 * pcore count. Fewer than 256 CPUs are on the test machine, so this test
 * builds the result of a 256-pcore run with a baseline and 9 rounds (the
 * widest the CLI allows) and feeds it to the CLI's own JSON writer: the
 * per-core arrays must give way to min/max and the object must stay valid
 * and complete. (The writer is tools/pfs/pcore_json.c, linked from
 * libpfs-cli.a.)
 */
#include <string.h>

#include "pcore_json.h"
#include "tap.h"

static struct pfs_pcore_result pc, bl;
static int cpus[PFS_PCORE_MAX];

static int t_widest_result_fits(void)
{
	struct pfs_pcore_args a = { 0 };
	struct pfs_pcore_outcome oc = { 0 };
	char buf[PFS_PCORE_JSON_MAX];
	struct pfs_pcore_jbuf j = { .p = buf, .cap = sizeof(buf) };
	struct pfs_blob_opts bo = {
		.sz = sizeof(bo), .size = 1 << 20, .page = PFS_PAGE_4K, .numa_node = -1
	};
	struct pfs_blob *blob;

	a.o.op = PFS_OP_CRC32C;
	a.o.pcores = PFS_PCORE_MAX;
	a.o.passes = 1000000;
	a.o.kernels = pfs_ops__kernels(PFS_ISA_PORTABLE);
	for (int i = 0; i < PFS_PCORE_MAX; i++)
		cpus[i] = 1000 + i;
	pc.ncores = bl.ncores = PFS_PCORE_MAX;
	pc.seconds = bl.seconds = 123.456789;
	pc.bytes = bl.bytes = 1ULL << 50;
	pc.complete = bl.complete = pc.value_valid = bl.value_valid = pc.passes_agree = true;
	pc.value = bl.value = 0xdeadbeef;
	for (int i = 0; i < PFS_PCORE_MAX; i++) {
		pc.core[i].bytes = (1ULL << 42) + i;
		pc.core[i].cpu_s = 123.456;
		pc.core[i].empty_waits = 123456789;
		pc.core[i].wait_s = 1.2345;
	}
	blob = pfs_blob__create(&bo);
	CHECK(blob, "blob");
	oc.blob = blob;
	oc.a = &a;
	oc.cpus = cpus;
	oc.numa_note = "memory bound to node 3";
	oc.pc = &pc;
	oc.bl = &bl;
	oc.rounds = oc.bl_rounds = PFS_PCORE_MAX_ROUNDS;
	for (int i = 0; i < PFS_PCORE_MAX_ROUNDS; i++)
		oc.pc_mbps[i] = oc.bl_mbps[i] = 123456.7;

	pfs_pcore_json(&j, &oc, true);
	CHECK(j.overflow, "the per-core form of 256 pcores should not fit (%zu bytes)", j.len);
	j = (struct pfs_pcore_jbuf){ .p = buf, .cap = sizeof(buf) };
	pfs_pcore_json(&j, &oc, false);
	CHECK(!j.overflow && j.len < PFS_PCORE_JSON_MAX,
	      "summarised result: %zu bytes, overflow %d", j.len, j.overflow);
	buf[j.len] = '\0';
	CHECK(strstr(buf, "\"per_core_MBps\":{\"min\":") && strstr(buf, "\"CPUpwn\":") &&
		      strstr(buf, "\"cpus\":[1000,") && strstr(buf, "1255]") &&
		      buf[j.len - 2] == '}',
	      "summarised result lacks fields: %s", buf);
	tap_diag("256 pcores, baseline, 9 rounds: %zu bytes", j.len);
	pfs_blob__close(blob);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "256-pcore result with baseline and 9 rounds fits in 4 KiB (summarised)",
	  t_widest_result_fits },
};

TAP_MAIN(tests)
