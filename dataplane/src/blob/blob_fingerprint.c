// SPDX-License-Identifier: Apache-2.0
/*
 * Content fingerprints (definition in blob.h): CRC32C of 1 MiB chunks,
 * computed by up to 4 short-lived threads that each own a contiguous range
 * of chunks and their slots of the chunk-CRC array; the caller joins them
 * before combining, so nothing is shared while they run.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "pfs/blob.h"
#include "pfs/integrity.h"

struct fp_work {
	const uint8_t *data;
	uint64_t size;
	uint32_t *crc; /* one per chunk; this worker owns [first, last) */
	uint64_t first, last;
};

static void *fp_worker(void *arg)
{
	struct fp_work *w = arg;

	for (uint64_t j = w->first; j < w->last; j++) {
		uint64_t off = j * PFS_BLOB_FP_CHUNK;
		uint64_t n = w->size - off < PFS_BLOB_FP_CHUNK ? w->size - off : PFS_BLOB_FP_CHUNK;

		w->crc[j] = pfs_crc32c(0, w->data + off, n);
	}
	return NULL;
}

uint64_t pfs_fingerprint_mem(const uint8_t *data, uint64_t size)
{
	uint64_t nchunks = (size + PFS_BLOB_FP_CHUNK - 1) / PFS_BLOB_FP_CHUNK;
	struct fp_work w[4];
	pthread_t th[4];
	bool started[4] = { false };
	uint32_t *crc, whole, hi;
	uint8_t le[8];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nw = nchunks >= 256 ? (ncpu > 4 ? 4 : ncpu < 1 ? 1 : (int)ncpu) : 1;

	if (!nchunks)
		return 0;
	crc = malloc(nchunks * sizeof(*crc));
	if (!crc) {
		/* Same value, computed serially without the array. */
		nw = 0;
	}
	for (int t = 0; t < nw; t++) {
		w[t] = (struct fp_work){ data, size, crc, nchunks * t / nw,
					 nchunks * (t + 1) / nw };
		if (t > 0 && !pthread_create(&th[t], NULL, fp_worker, &w[t]))
			started[t] = true;
	}
	if (nw) {
		fp_worker(&w[0]);
		for (int t = 1; t < nw; t++) {
			if (started[t])
				pthread_join(th[t], NULL);
			else
				fp_worker(&w[t]);
		}
	}
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(size >> (8 * i));
	hi = pfs_crc32c(0, le, 8);
	whole = 0;
	for (uint64_t j = 0; j < nchunks; j++) {
		uint64_t off = j * PFS_BLOB_FP_CHUNK;
		uint64_t n = size - off < PFS_BLOB_FP_CHUNK ? size - off : PFS_BLOB_FP_CHUNK;
		uint32_t c = crc ? crc[j] : pfs_crc32c(0, data + off, n);
		uint8_t c4[4] = { (uint8_t)c, (uint8_t)(c >> 8), (uint8_t)(c >> 16),
				  (uint8_t)(c >> 24) };

		whole = j ? pfs_crc32c_combine(whole, c, n) : c;
		hi = pfs_crc32c(hi, c4, 4);
	}
	free(crc);
	return (uint64_t)hi << 32 | whole;
}
