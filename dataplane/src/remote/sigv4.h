/* SPDX-License-Identifier: Apache-2.0 */
/* AWS Signature Version 4 for the GET and HEAD requests of an S3 reader:
 * the signed headers are host, x-amz-content-sha256 (the empty body's
 * digest) and x-amz-date, plus x-amz-security-token with temporary
 * credentials. HMAC-SHA256 and SHA-256 from libcrypto. */
#ifndef PFS_REMOTE_SIGV4_H
#define PFS_REMOTE_SIGV4_H

#include <stddef.h>
#include <time.h>

struct sigv4_key {
	const char *access_key, *secret_key;
	const char *session_token; /* NULL: none */
	const char *region; /* e.g. us-east-1 */
	const char *service; /* "s3" */
};

#define SIGV4_HDRS 4
#define SIGV4_HDR_LEN 2048
#define SIGV4_EXTRA_MAX 4

/* sigv4_sign - the header lines ("Name: value") to add to a request of
 * @method for @target (path, then '?' and the query, both already
 * percent-encoded as S3 wants them) on @host (the Host header's value),
 * signed at @now: x-amz-date, x-amz-content-sha256, [x-amz-security-token,]
 * Authorization. @extra (@nextra, at most SIGV4_EXTRA_MAX) are further
 * headers the request sends that must be signed, as "name:value" with the
 * name in lower case (S3 wants every x-amz-* header signed, e.g.
 * "x-amz-checksum-mode:ENABLED"). Returns how many lines were written into
 * @hdrs, or -errno (E2BIG: a value too long, EINVAL). */
int sigv4_sign(const struct sigv4_key *k, const char *method, const char *host, const char *target,
	       const char *const *extra, size_t nextra, time_t now,
	       char hdrs[SIGV4_HDRS][SIGV4_HDR_LEN]);

/* sigv4_uri_encode - @s percent-encoded as SigV4 wants (unreserved
 * A-Z a-z 0-9 - . _ ~ kept; '/' kept when @keep_slash), into @out. The
 * length, or -E2BIG. */
int sigv4_uri_encode(const char *s, int keep_slash, char *out, size_t n);

#endif /* PFS_REMOTE_SIGV4_H */
