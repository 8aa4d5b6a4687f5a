// SPDX-License-Identifier: Apache-2.0
/*
 * AWS Signature Version 4 (sigv4.h), the header-based form, for requests
 * without a body. The canonical request is built from the target exactly
 * as it is sent: S3 signs the path as encoded once (no second encoding,
 * no dot-segment normalisation), and the query's parameters sorted by
 * name. The signing key is derived per request (four HMACs): cheap next
 * to the ranged GET it signs, and no key material outlives the call.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/sigv4.h"

/* SHA-256 of the empty string: every request here has no body. */
static const char empty_sha256[] =
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

static void hex(const unsigned char *b, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[2 * n] = '\0';
}

int sigv4_uri_encode(const char *s, int keep_slash, char *out, size_t n)
{
	static const char d[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
			     c == '~' || (keep_slash && c == '/');

		if (o + (plain ? 1 : 3) >= n)
			return -E2BIG;
		if (plain) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = d[c >> 4];
			out[o++] = d[c & 15];
		}
	}
	out[o] = '\0';
	return (int)o;
}

static int cmp_param(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The canonical query string of @q (no leading '?'): "k=v" pairs sorted,
 * a bare "k" as "k=". */
static int canonical_query(const char *q, char *out, size_t n)
{
	char *copy = strdup(q), *save = NULL, *tok;
	char *params[64];
	size_t np = 0, o = 0;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, "&", &save); tok; tok = strtok_r(NULL, "&", &save)) {
		if (np == sizeof(params) / sizeof(params[0])) {
			err = -E2BIG;
			goto out;
		}
		params[np++] = tok;
	}
	qsort(params, np, sizeof(params[0]), cmp_param);
	out[0] = '\0';
	for (size_t i = 0; i < np; i++) {
		int w = snprintf(out + o, n - o, "%s%s%s", i ? "&" : "", params[i],
				 strchr(params[i], '=') ? "" : "=");

		if (w < 0 || (size_t)w >= n - o) {
			err = -E2BIG;
			goto out;
		}
		o += (size_t)w;
	}
out:
	free(copy);
	return err;
}

static int hmac(const void *key, size_t kl, const char *msg, unsigned char out[32])
{
	unsigned int ol = 32;

	return HMAC(EVP_sha256(), key, (int)kl, (const unsigned char *)msg, strlen(msg), out, &ol) ?
		       0 :
		       -EIO;
}

/* The canonical headers ("name:value\n" each, sorted) and the signed
 * header list ("a;b;c") of host, x-amz-content-sha256, x-amz-date, the
 * session token and @extra. */
static int canonical_headers(const struct sigv4_key *k, const char *host, const char *amz_date,
			     const char *const *extra, size_t nextra, char *ch, size_t chn,
			     char *sh, size_t shn)
{
	char lines[SIGV4_EXTRA_MAX + 4][SIGV4_HDR_LEN];
	const char *sorted[SIGV4_EXTRA_MAX + 4];
	size_t nl = 0, co = 0, so = 0;

	if (nextra > SIGV4_EXTRA_MAX)
		return -E2BIG;
	snprintf(lines[nl++], SIGV4_HDR_LEN, "host:%s", host);
	snprintf(lines[nl++], SIGV4_HDR_LEN, "x-amz-content-sha256:%s", empty_sha256);
	snprintf(lines[nl++], SIGV4_HDR_LEN, "x-amz-date:%s", amz_date);
	if (k->session_token && snprintf(lines[nl++], SIGV4_HDR_LEN, "x-amz-security-token:%s",
					 k->session_token) >= SIGV4_HDR_LEN)
		return -E2BIG;
	for (size_t i = 0; i < nextra; i++)
		if (!strchr(extra[i], ':') ||
		    snprintf(lines[nl++], SIGV4_HDR_LEN, "%s", extra[i]) >= SIGV4_HDR_LEN)
			return -EINVAL;
	for (size_t i = 0; i < nl; i++)
		sorted[i] = lines[i];
	qsort(sorted, nl, sizeof(sorted[0]), cmp_param);
	for (size_t i = 0; i < nl; i++) {
		size_t name = strcspn(sorted[i], ":");
		int w = snprintf(ch + co, chn - co, "%s\n", sorted[i]);
		int v = snprintf(sh + so, shn - so, "%s%.*s", i ? ";" : "", (int)name, sorted[i]);

		if (w < 0 || (size_t)w >= chn - co || v < 0 || (size_t)v >= shn - so)
			return -E2BIG;
		co += (size_t)w;
		so += (size_t)v;
	}
	return 0;
}

int sigv4_sign(const struct sigv4_key *k, const char *method, const char *host, const char *target,
	       const char *const *extra, size_t nextra, time_t now,
	       char hdrs[SIGV4_HDRS][SIGV4_HDR_LEN])
{
	char amz_date[17], day[9], scope[160], path[SIGV4_HDR_LEN], query[SIGV4_HDR_LEN];
	char creq[4 * SIGV4_HDR_LEN], ch[2 * SIGV4_HDR_LEN], signed_hdrs[512], sts[512];
	char hash_hex[65], sig_hex[65], secret[256];
	unsigned char h[32], kd[32];
	const char *qm = strchr(target, '?');
	size_t pl = qm ? (size_t)(qm - target) : strlen(target);
	struct tm tm;
	int nh = 0, w;

	if (!k->access_key || !k->secret_key || !k->region || !k->service || !gmtime_r(&now, &tm))
		return -EINVAL;
	if (pl >= sizeof(path) || strlen(k->secret_key) + 5 > sizeof(secret))
		return -E2BIG;
	memcpy(path, target, pl);
	path[pl] = '\0';
	if (canonical_query(qm ? qm + 1 : "", query, sizeof(query)))
		return -E2BIG;
	strftime(amz_date, sizeof(amz_date), "%Y%m%dT%H%M%SZ", &tm);
	strftime(day, sizeof(day), "%Y%m%d", &tm);
	snprintf(scope, sizeof(scope), "%s/%s/%s/aws4_request", day, k->region, k->service);
	w = canonical_headers(k, host, amz_date, extra, nextra, ch, sizeof(ch), signed_hdrs,
			      sizeof(signed_hdrs));
	if (w)
		return w;
	w = snprintf(creq, sizeof(creq), "%s\n%s\n%s\n%s\n%s\n%s", method, path, query, ch,
		     signed_hdrs, empty_sha256);
	if (w < 0 || (size_t)w >= sizeof(creq))
		return -E2BIG;
	if (EVP_Digest(creq, (size_t)w, h, NULL, EVP_sha256(), NULL) != 1)
		return -EIO;
	hex(h, 32, hash_hex);
	snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s\n%s", amz_date, scope, hash_hex);
	snprintf(secret, sizeof(secret), "AWS4%s", k->secret_key);
	if (hmac(secret, strlen(secret), day, kd) || hmac(kd, 32, k->region, kd) ||
	    hmac(kd, 32, k->service, kd) || hmac(kd, 32, "aws4_request", kd) ||
	    hmac(kd, 32, sts, h))
		w = -EIO;
	OPENSSL_cleanse(secret, sizeof(secret));
	OPENSSL_cleanse(kd, sizeof(kd));
	if (w < 0)
		return w;
	hex(h, 32, sig_hex);
	snprintf(hdrs[nh++], SIGV4_HDR_LEN, "x-amz-date: %s", amz_date);
	snprintf(hdrs[nh++], SIGV4_HDR_LEN, "x-amz-content-sha256: %s", empty_sha256);
	if (k->session_token)
		snprintf(hdrs[nh++], SIGV4_HDR_LEN, "x-amz-security-token: %s", k->session_token);
	w = snprintf(hdrs[nh++], SIGV4_HDR_LEN,
		     "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
		     "Signature=%s",
		     k->access_key, scope, signed_hdrs, sig_hex);
	return w < 0 || w >= SIGV4_HDR_LEN ? -E2BIG : nh;
}
