// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer harness for the replication stream's control frames
 * (src/wire/blob_repl_wire.h): the header check a reader makes before it
 * trusts body_len, and the whole-frame decoder. Built with ASan/UBSan; a
 * decoded frame must survive an encode/decode round trip unchanged and
 * agree with the header check, or the run aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../src/wire/blob_repl_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct repl_frame f, g;
	uint8_t buf[REPL_FRAME_MAX];
	int bl = repl_frame_body_len(data, size), n;

	if (repl_frame_decode(data, size, &f))
		return 0;
	if (bl != f.body_len || size != REPL_HDR + (size_t)bl)
		abort();
	n = repl_frame_encode(&f, buf);
	if (n != (int)size || memcmp(buf, data, size) || repl_frame_decode(buf, (size_t)n, &g) ||
	    memcmp(&f, &g, sizeof(f)))
		abort();
	return 0;
}
