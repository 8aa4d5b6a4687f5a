// SPDX-License-Identifier: Apache-2.0
/*
 * The registry parsers on bytes (src/remote/json.c, oci_manifest.c,
 * oci_auth.c): the strict JSON reader accepts RFC 8259 and refuses each
 * thing it must (trailing commas, leading zeros, NaN, comments, lone
 * surrogates, raw control bytes, bad UTF-8, bytes after the value, depth),
 * reads strings, numbers and members (a key twice is reported); then
 * references, WWW-Authenticate challenges, token answers, docker configs
 * (the secret never in a message) and the index picker. The HTTP side is
 * test_blob_source_oci's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/json.h"
#include "remote/oci.h"
#include "tap.h"

#define E3 "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static int parse(const char *s, struct json_doc *d, char *why, size_t n)
{
	return json_parse(d, s, strlen(s), 1000, why, n);
}

static int t_accepts(void)
{
	static const char *const ok[] = {
		"{}",
		"[]",
		" 0 ",
		"-0",
		"1.5e-3",
		"-12E+2",
		"true",
		"null",
		"\"\"",
		"\"\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
		"\"\xc3\xa9\xf0\x9f\x98\x80\"",
		"{\"a\":[1,{\"b\":null}],\"c\":\"d\"}",
		"\r\n\t[ [ ] , { } ]\n",
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct json_doc d;
		char why[200];

		CHECK(!parse(ok[i], &d, why, sizeof(why)), "'%s' refused: %s", ok[i], why);
		json_free(&d);
	}
	return TAP_PASS;
}

static int t_refuses(void)
{
	static const struct {
		const char *text;
		int err;
		const char *msg;
	} bad[] = {
		{ "", -EBADMSG, "byte 0: a value is missing" },
		{ "[1,]", -EBADMSG, "byte 3: not a value" },
		{ "{\"a\":1,}", -EBADMSG, "a key must be a string" },
		{ "01", -EBADMSG, "leading zero" },
		{ "1.", -EBADMSG, "no digit after the decimal point" },
		{ ".5", -EBADMSG, "not a value" },
		{ "1e", -EBADMSG, "no digit in the exponent" },
		{ "NaN", -EBADMSG, "not a value" },
		{ "[1] // c", -EBADMSG, "bytes after the value" },
		{ "{'a':1}", -EBADMSG, "a key must be a string" },
		{ "\"\\ud800\"", -EBADMSG, "bad escape" },
		{ "\"\\udc00\\ud800\"", -EBADMSG, "bad escape" },
		{ "\"\\u0000\"", -EBADMSG, "bad escape" },
		{ "\"\\x41\"", -EBADMSG, "bad escape" },
		{ "\"a\tb\"", -EBADMSG, "a control byte" },
		{ "\"\xc0\x80\"", -EBADMSG, "bad UTF-8" },
		{ "\"\xed\xa0\x80\"", -EBADMSG, "bad UTF-8" },
		{ "\"abc", -EBADMSG, "unterminated" },
		{ "{\"a\" 1}", -EBADMSG, "expected ':'" },
		{ "[1 2]", -EBADMSG, "expected ',' or ']'" },
		{ "tru", -EBADMSG, "not a value" },
	};
	char deep[200];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json_doc d;
		char why[200] = "";
		int err = parse(bad[i].text, &d, why, sizeof(why));

		CHECK(err == bad[i].err && strstr(why, bad[i].msg), "'%s': %d '%s', want %d '%s'",
		      bad[i].text, err, why, bad[i].err, bad[i].msg);
	}
	memset(deep, '[', JSON_DEPTH_MAX + 1);
	memset(deep + JSON_DEPTH_MAX + 1, ']', JSON_DEPTH_MAX + 1);
	deep[2 * (JSON_DEPTH_MAX + 1)] = '\0';
	{
		struct json_doc d;
		char why[200];

		CHECK(parse(deep, &d, why, sizeof(why)) == -E2BIG && strstr(why, "nested too deep"),
		      "depth %d: %s", JSON_DEPTH_MAX + 1, why);
		CHECK(json_parse(&d, "[1,2,3]", 7, 3, why, sizeof(why)) == -E2BIG,
		      "4 values with room for 3");
		deep[JSON_DEPTH_MAX] = '\0';
		memset(deep + JSON_DEPTH_MAX / 2, ']', JSON_DEPTH_MAX / 2);
		CHECK(!parse(deep, &d, why, sizeof(why)), "depth %d refused: %s",
		      JSON_DEPTH_MAX / 2, why);
		json_free(&d);
	}
	return TAP_PASS;
}

static int t_reads(void)
{
	const char *text = "{\"s\":\"a\\u00e9\\ud83d\\ude00\",\"n\":18446744073709551615,"
			   "\"big\":18446744073709551616,\"neg\":-1,\"f\":1.0,\"e\":1e3,"
			   "\"arr\":[1,[2,3],{\"x\":4},5],\"dup\":1,\"d\\u0075p\":2}";
	struct json_doc d;
	char why[200], s[16], small[4];
	uint64_t v = 0;
	int arr, k, items = 0;

	CHECK(!parse(text, &d, why, sizeof(why)), "%s", why);
	CHECK(json_str(&d, json_get(&d, 0, "s"), s, sizeof(s)) == 7 &&
		      !strcmp(s, "a\xc3\xa9\xf0\x9f\x98\x80"),
	      "the string decoded: '%s'", s);
	CHECK(json_str(&d, json_get(&d, 0, "s"), small, sizeof(small)) == -ENAMETOOLONG,
	      "a string that does not fit");
	CHECK(!json_u64(&d, json_get(&d, 0, "n"), &v) && v == UINT64_MAX, "UINT64_MAX");
	CHECK(json_u64(&d, json_get(&d, 0, "big"), &v) == -ERANGE, "2^64");
	CHECK(json_u64(&d, json_get(&d, 0, "neg"), &v) == -EINVAL &&
		      json_u64(&d, json_get(&d, 0, "f"), &v) == -EINVAL &&
		      json_u64(&d, json_get(&d, 0, "e"), &v) == -EINVAL,
	      "negative, fraction, exponent");
	CHECK(json_get(&d, 0, "dup") == -EEXIST, "a key twice (once escaped)");
	CHECK(json_get(&d, 0, "none") == -ENOENT, "a missing key");
	arr = json_get(&d, 0, "arr");
	CHECK(arr > 0 && d.t[arr].count == 4, "the array");
	for (k = json_first(&d, arr); k >= 0; k = json_next(&d, arr, k))
		items++;
	CHECK(items == 4, "walked %d items of 4", items);
	CHECK(json_get(&d, arr, "x") == -ENOENT, "json_get of an array");
	json_free(&d);
	return TAP_PASS;
}

static int t_refs(void)
{
	static const struct {
		const char *s, *host, *repo, *tag, *digest;
	} ok[] = {
		{ "registry.example/models/minilm:v1", "registry.example", "models/minilm", "v1",
		  "" },
		{ "127.0.0.1:5000/m@" E3, "127.0.0.1:5000", "m", "", E3 },
		{ "localhost/a.b/c_d-e", "localhost", "a.b/c_d-e", "latest", "" },
		{ "docker.io/library/ubuntu:22.04", "docker.io", "library/ubuntu", "22.04", "" },
	};
	static const char *const bad[] = {
		"ubuntu:22.04",
		"library/ubuntu",
		"reg.io/Models",
		"reg.io/m@sha256:abc",
		"reg.io/m:",
		"reg.io//m",
		"reg.io/m:-x",
		"/m",
		"reg.io/m@md5:" E3 + 7,
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct oci_ref r;
		char why[300];

		CHECK(!oci_ref_parse(ok[i].s, &r, why, sizeof(why)), "'%s': %s", ok[i].s, why);
		CHECK(!strcmp(r.host, ok[i].host) && !strcmp(r.repo, ok[i].repo) &&
			      !strcmp(r.tag, ok[i].tag) && !strcmp(r.digest, ok[i].digest),
		      "'%s': %s %s %s %s", ok[i].s, r.host, r.repo, r.tag, r.digest);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct oci_ref r;
		char why[300] = "";

		CHECK(oci_ref_parse(bad[i], &r, why, sizeof(why)) == -EINVAL && why[0],
		      "'%s' accepted", bad[i]);
	}
	return TAP_PASS;
}

static int t_challenge(void)
{
	struct oci_challenge c;

	CHECK(!oci_challenge_parse("Bearer realm=\"https://auth.example/token\", "
				   "service=\"reg \\\"x\\\"\",scope=\"repository:m:pull\"",
				   &c) &&
		      c.bearer && !strcmp(c.realm, "https://auth.example/token") &&
		      !strcmp(c.service, "reg \"x\"") && !strcmp(c.scope, "repository:m:pull"),
	      "bearer: %s | %s | %s", c.realm, c.service, c.scope);
	CHECK(!oci_challenge_parse("Basic realm=pfs", &c) && c.basic && !c.bearer, "basic");
	CHECK(oci_challenge_parse("Bearer service=\"x\"", &c) == -EPROTO, "bearer without realm");
	CHECK(oci_challenge_parse("Digest realm=\"x\"", &c) == -EPROTO, "another scheme");
	CHECK(oci_challenge_parse("Bearer realm=\"x", &c) == -EPROTO, "an open quote");
	CHECK(oci_challenge_parse("Bearer realm=\"x\" junk", &c) == -EPROTO, "no comma");
	return TAP_PASS;
}

static int t_token(void)
{
	char t[64];

	CHECK(!oci_token_parse("{\"token\":\"abc.def\",\"expires_in\":300}", 36, t, sizeof(t)) &&
		      !strcmp(t, "abc.def"),
	      "token: %s", t);
	CHECK(!oci_token_parse("{\"access_token\":\"xyz\"}", 22, t, sizeof(t)) && !strcmp(t, "xyz"),
	      "access_token");
	CHECK(oci_token_parse("{\"nothing\":1}", 13, t, sizeof(t)) == -EBADMSG, "no token");
	CHECK(oci_token_parse("{\"token\":\"a\\nb\"}", 16, t, sizeof(t)) == -EBADMSG,
	      "a token that would break the header line");
	CHECK(oci_token_parse("{\"token\":\"\"}", 12, t, sizeof(t)) == -EBADMSG, "empty");
	return TAP_PASS;
}

static int lookup(const char *cfg, const char *host, char *out, char *why)
{
	return oci_auth_lookup(cfg, strlen(cfg), host, out, 256, why, 300);
}

static int t_auth(void)
{
	const char *cfg = "{\"auths\":{\"127.0.0.1:5000\":{\"auth\":\"cGZzOnNFY1JlVA==\"},"
			  "\"https://index.docker.io/v1/\":{\"username\":\"u\",\"password\":"
			  "\"sEcReT\"},\"bad.example\":{\"auth\":\"sEcReT!!\"}}}";
	char out[256], why[300] = "";

	CHECK(!lookup(cfg, "127.0.0.1:5000", out, why) && !strcmp(out, "cGZzOnNFY1JlVA=="),
	      "exact host: %s", why);
	/* base64("u:sEcReT") */
	CHECK(!lookup(cfg, "docker.io", out, why) && !strcmp(out, "dTpzRWNSZVQ="),
	      "Docker Hub by another spelling, username and password: %s %s", out, why);
	CHECK(lookup(cfg, "127.0.0.1:5001", out, why) == -ENOENT && strstr(why, "no credentials"),
	      "another port");
	CHECK(lookup(cfg, "bad.example", out, why) == -EBADMSG && strstr(why, "is not base64") &&
		      !strstr(why, "sEcReT"),
	      "a bad auth, not shown: %s", why);
	CHECK(lookup("{\"credsStore\":\"x\"}", "a.b", out, why) == -EBADMSG &&
		      strstr(why, "no \"auths\" object"),
	      "no auths: %s", why);
	CHECK(lookup("{\"auths\":{\"a.b\":{\"identitytoken\":\"sEcReT\"}}}", "a.b", out, why) ==
			      -EBADMSG &&
		      strstr(why, "identitytoken is not supported") && !strstr(why, "sEcReT"),
	      "an identity token: %s", why);
	CHECK(lookup("{\"auths\":{\"a.b\":{\"auth\":\"sEcReT\"", "a.b", out, why) == -EBADMSG &&
		      !strstr(why, "sEcReT"),
	      "not JSON, not shown: %s", why);
	return TAP_PASS;
}

static int t_manifest(void)
{
	const char *idx =
		"{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/vnd.oci.image."
		"manifest.v1+json\",\"digest\":\"" E3 "\",\"size\":1,\"platform\":{\"os\":"
		"\"linux\",\"architecture\":\"arm\",\"variant\":\"v7\"}},{\"mediaType\":\"appli"
		"cation/vnd.oci.image.manifest.v1+json\",\"digest\":\"" E3 "\",\"size\":2,"
		"\"platform\":{\"os\":\"windows\",\"architecture\":\"amd64\"}}]}";
	const char *man = "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"a\",\"digest\":"
			  "\"" E3 "\",\"size\":0},\"layers\":[]}";
	struct oci_manifest m;
	char why[300];

	/* No mediaType: the shape decides. */
	CHECK(!oci_manifest_parse(idx, strlen(idx), "", &m, why, sizeof(why)) && m.index &&
		      m.n == 2,
	      "an index without mediaType: %s", why);
	CHECK(oci_index_pick(&m, why, sizeof(why)) == -ENOENT &&
		      strstr(why, "linux/arm/v7 windows/amd64"),
	      "no linux/amd64: %s", why);
	oci_manifest_free(&m);
	CHECK(!oci_manifest_parse(man, strlen(man), "application/vnd.oci.image.manifest.v1+json",
				  &m, why, sizeof(why)) &&
		      !m.index && !m.n,
	      "a manifest without mediaType: %s", why);
	oci_manifest_free(&m);
	CHECK(oci_manifest_parse(man, strlen(man), "text/plain", &m, why, sizeof(why)) == 0,
	      "an unknown Content-Type does not decide: %s", why);
	oci_manifest_free(&m);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "JSON: RFC 8259 texts accepted", t_accepts },
	{ "JSON: each non-strict text refused with where and why; depth and size bounded",
	  t_refuses },
	{ "JSON: strings, u64 bounds, members, a key twice, walking items", t_reads },
	{ "references: host, repository, tag or digest; the malformed refused", t_refs },
	{ "WWW-Authenticate: Bearer parameters, Basic, refusals", t_challenge },
	{ "token answers: token, access_token, refusals", t_token },
	{ "docker config: by host, Docker Hub spellings, both forms, secrets never shown", t_auth },
	{ "manifests without mediaType; the index picker lists platforms", t_manifest },
};

TAP_MAIN(tests)
