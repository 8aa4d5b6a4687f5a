// SPDX-License-Identifier: Apache-2.0
/*
 * The per-chunk digest candidates of the relays (docs/design/fanout.md,
 * "Chunk digests"), timed over real bytes: SHA-256 (OpenSSL's EVP: SHA
 * extensions when the CPU has them, unless OPENSSL_ia32cap masks them),
 * BLAKE3 (the BLAKE3 team's C library, hack/blake3.sh: its own CPUID
 * dispatch) and, as the floor, CRC32C (pfs_crc32c: not a cryptographic
 * digest). Built and run by bench/hash.sh; not a test.
 *
 *   hash FILE ALGO CHUNK_BYTES THREADS SECONDS
 *
 * FILE is read whole (repeated up to 256 MiB); THREADS workers hash
 * disjoint chunks of it, one digest per chunk, round after round for at
 * least SECONDS. Prints one line:
 *   ALGO CHUNK THREADS MB/s CPU-s/GiB PATH MB SECONDS
 * where CPU-s/GiB is user+sys (getrusage) per GiB hashed, PATH what the
 * library chose (BLAKE3's SIMD degree; OpenSSL's SHA extensions), MB and
 * SECONDS what was hashed in how long.
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "blake3.h"
#include "pfs/integrity.h"

/* Not in blake3.h: the library's own answer to "which kernel", 16 lanes
 * AVX-512, 8 AVX2, 4 SSE4.1/SSE2, 1 portable. */
size_t blake3_simd_degree(void);

enum algo { SHA256, BLAKE3, CRC32C };

static const uint8_t *buf;
static size_t len, chunk;
static enum algo algo;
static double seconds;
static _Atomic uint64_t hashed;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void digest(const uint8_t *p, size_t n, EVP_MD_CTX *ctx)
{
	uint8_t out[32];
	unsigned int ol;
	blake3_hasher h;

	switch (algo) {
	case SHA256:
		EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
		EVP_DigestUpdate(ctx, p, n);
		EVP_DigestFinal_ex(ctx, out, &ol);
		break;
	case BLAKE3:
		blake3_hasher_init(&h);
		blake3_hasher_update(&h, p, n);
		blake3_hasher_finalize(&h, out, 32);
		break;
	case CRC32C:
		out[0] = (uint8_t)pfs_crc32c(0, p, n);
		break;
	}
	/* keep the result alive */
	__asm__ volatile("" : : "r"(out) : "memory");
}

struct worker {
	pthread_t tid;
	unsigned idx, n;
};

/* Worker i of n hashes chunks i, i+n, i+2n ... until the time is up. */
static void *run(void *arg)
{
	struct worker *w = arg;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t nchunks = len / chunk;
	double end = now() + seconds;
	uint64_t mine = 0;

	do {
		for (size_t c = w->idx; c < nchunks; c += w->n) {
			digest(buf + c * chunk, chunk, ctx);
			mine += chunk;
		}
	} while (now() < end);
	atomic_fetch_add(&hashed, mine);
	EVP_MD_CTX_free(ctx);
	return NULL;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static uint8_t *load(const char *path, size_t want, size_t *got)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = malloc(want);
	size_t n = 0, r;

	if (!f || !b)
		return NULL;
	while (n < want && (r = fread(b + n, 1, want - n, f)) > 0)
		n += r;
	fclose(f);
	if (!n)
		return NULL;
	/* a smaller file is repeated: the bytes stay real, the size fixed */
	for (size_t i = n; i < want; i++)
		b[i] = b[i - n];
	*got = want;
	return b;
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "sha256", "blake3", "crc32c" };
	struct worker *w;
	unsigned threads;
	double t0, c0, wall, cpu;
	char path[64];

	if (argc != 6) {
		fprintf(stderr, "usage: hash FILE sha256|blake3|crc32c CHUNK_BYTES THREADS SECONDS\n");
		return 2;
	}
	for (algo = SHA256; algo <= CRC32C && strcmp(argv[2], names[algo]); algo++)
		;
	chunk = strtoull(argv[3], NULL, 0);
	threads = (unsigned)atoi(argv[4]);
	seconds = atof(argv[5]);
	if (algo > CRC32C || chunk < 4096 || chunk > (256u << 20) || threads < 1 || threads > 64 ||
	    seconds <= 0) {
		fprintf(stderr, "hash: bad arguments\n");
		return 2;
	}
	OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
	buf = load(argv[1], 256u << 20, &len);
	if (!buf) {
		fprintf(stderr, "hash: cannot read %s\n", argv[1]);
		return 1;
	}
	w = calloc(threads, sizeof(*w));
	t0 = now();
	c0 = cpu_s();
	for (unsigned i = 0; i < threads; i++) {
		w[i] = (struct worker){ .idx = i, .n = threads };
		pthread_create(&w[i].tid, NULL, run, &w[i]);
	}
	for (unsigned i = 0; i < threads; i++)
		pthread_join(w[i].tid, NULL);
	wall = now() - t0;
	cpu = cpu_s() - c0;
	switch (algo) {
	case BLAKE3:
		snprintf(path, sizeof(path), "simd-degree-%zu", blake3_simd_degree());
		break;
	case SHA256:
		snprintf(path, sizeof(path), "openssl-%s",
			 getenv("OPENSSL_ia32cap") ? "sha-ext-masked" : "default");
		break;
	default:
		snprintf(path, sizeof(path), "%s", pfs_crc32c_impl());
	}
	printf("%s %zu %u %.0f %.4f %s %.2f %.4f\n", names[algo], chunk, threads,
	       (double)atomic_load(&hashed) / 1e6 / wall,
	       cpu / ((double)atomic_load(&hashed) / (double)(1u << 30)), path,
	       (double)atomic_load(&hashed) / 1e6, wall);
	free(w);
	return 0;
}
