/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The watermarks a load's progress hook reported (blob_source.h), for the
 * tests that check how the watermark moves: set nmarks = 0, pass
 * record_mark as the hook, read marks[0..nmarks).
 */
#ifndef PFS_TEST_MARKS_H
#define PFS_TEST_MARKS_H

#include <stddef.h>
#include <stdint.h>

static uint64_t marks[8192];
static size_t nmarks;

/* From the loader's hashing thread, which the test joins before it reads. */
__attribute__((unused)) static void record_mark(void *ctx, uint64_t mark)
{
	(void)ctx;
	if (nmarks < sizeof(marks) / sizeof(marks[0]))
		marks[nmarks++] = mark;
}

#endif
