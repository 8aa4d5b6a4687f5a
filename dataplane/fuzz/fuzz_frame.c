// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer harness for the frame parser (pfs_frame_parse): everything an
 * AF_XDP socket receives goes through it. Input: one byte of flags/port
 * selector, then the frame. ASan/UBSan abort on any read past the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfs/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pfs_frame_info fi;
	uint8_t *f;
	uint8_t sel;
	int rc;

	if (!size)
		return 0;
	sel = data[0];
	data++;
	size--;
	/* An exact-size heap copy so ASan sees any overread. */
	f = malloc(size ? size : 1);
	if (!f)
		return 0;
	memcpy(f, data, size);
	rc = pfs_frame_parse(f, size, (sel & 1) ? 7600 : 0, (sel & 2) ? PFS_FRAME_VERIFY_CSUM : 0,
			     &fi);
	if (!rc && (size_t)fi.payload_off + fi.payload_len > size)
		__builtin_trap();
	free(f);
	return 0;
}
