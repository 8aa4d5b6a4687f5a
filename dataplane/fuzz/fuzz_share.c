// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer harness for the blob-share wire decoders: the request a holder
 * reads from any local client and the reply a consumer reads from the
 * holder. Input: one selector byte (even: request, odd: reply), then the
 * message. Built with ASan/UBSan; a decoded reply must also survive an
 * encode/decode round trip unchanged, or the run aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../src/wire/blob_share_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pfs_share_meta m, m2;
	uint8_t buf[SHARE_REPLY_MAX];
	struct share_req r;
	size_t n;

	if (!size)
		return 0;
	if (!(data[0] & 1)) {
		if (!share_req_decode(data + 1, size - 1, &r)) {
			volatile uint8_t sum = 0;

			/* Every token byte must lie inside the input. */
			for (size_t i = 0; i < r.token_len; i++)
				sum ^= r.token[i];
			(void)sum;
		}
		return 0;
	}
	if (share_reply_decode(data + 1, size - 1, &m))
		return 0;
	n = share_reply_encode(buf, &m);
	if (share_reply_decode(buf, n, &m2) || memcmp(&m, &m2, sizeof(m)))
		abort();
	return 0;
}
