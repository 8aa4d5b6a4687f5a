// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer harness for everything that parses bytes from the wire: the
 * gram decoder (header, descriptor table, whole gram), control records, and
 * the udp fragment header, the repair records and the handshake's KEY record.
 * Input: le64 blob size, then the record. Built with ASan/UBSan, so any
 * read past the input or any overflow UB aborts the run.
 */
#include <stdint.h>
#include <string.h>

#include "pfs/gram.h"
#include "pfs/udp_wire.h"

static struct pfs_desc out[PFS_GRAM_MAX_DESC];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pfs_gram_hdr h;
	struct pfs_ctl c;
	const uint8_t *pl;
	uint64_t blob = 1ULL << 30;
	int n;

	if (size >= 8) {
		memcpy(&blob, data, 8);
		data += 8;
		size -= 8;
	}
	n = pfs_gram_decode(data, size, blob, &h, out, PFS_GRAM_MAX_DESC, &pl);
	if (n >= 0) {
		uint64_t eff = 0;

		for (int i = 0; i < n; i++) {
			if (out[i].off > blob || out[i].len > blob - out[i].off)
				__builtin_trap();
			eff += out[i].len;
		}
		/* No accepted gram makes a receiver execute more than the cap. */
		if (eff > PFS_GRAM_MAX_EFFECTIVE)
			__builtin_trap();
		if (pl && (pl < data || pl + h.payload_len > data + size))
			__builtin_trap();
	}
	/* The streaming path: header first, then the table from the rest. */
	if (!pfs_gram_decode_hdr(data, size, &h) && size - PFS_GRAM_HDR_LEN >= h.desc_len)
		(void)pfs_gram_decode_desc(&h, data + PFS_GRAM_HDR_LEN, h.desc_len, blob, out,
					   PFS_GRAM_MAX_DESC);
	(void)pfs_ctl_decode(data, size, &c);
	/* udp: the fragment header and the repair records. */
	{
		struct pfs_udp_frag f;
		struct pfs_udp_rec r;
		static struct pfs_udp_range rg[PFS_UDP_MAX_RANGES];

		if (!pfs_udp_frag_decode(data, size, &f) &&
		    (f.frag_len != size - PFS_UDP_FRAG_LEN || f.frag_off >= f.gram_len ||
		     f.frag_len > f.gram_len - f.frag_off))
			__builtin_trap();
		uint8_t pub[PFS_UDP_KEY_PUB], confirm[PFS_UDP_KEY_CONFIRM];

		if (!pfs_udp_rec_decode_hdr(data, size, &r)) {
			(void)pfs_udp_rec_decode_ranges(data, size, &r, rg);
			/* The body a reader of the control stream waits for is bounded. */
			if (pfs_udp_rec_body_len(&r) > 8 * PFS_UDP_MAX_RANGES)
				__builtin_trap();
		}
		/* The handshake's KEY record (public key + key confirmation). */
		if (!pfs_udp_key_decode(data, size, pub, confirm) &&
		    size < PFS_UDP_REC_LEN + PFS_UDP_KEY_BODY)
			__builtin_trap();
	}
	return 0;
}
