// SPDX-License-Identifier: Apache-2.0
/*
 * Registry authentication parsers (oci.h): the WWW-Authenticate challenge
 * of a 401 (RFC 7235 auth-params: token or quoted-string values), the
 * token server's answer, and the credentials of a pull secret's docker
 * config. No secret is ever copied into a message: errors name the key
 * of "auths" and the field, never its value.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "remote/json.h"
#include "remote/oci.h"

/* ---- WWW-Authenticate ---- */

static const char *sp(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* One auth-param at @p: name into @k, value (unquoted) into @v; the
 * position after it, or NULL when malformed. */
static const char *param(const char *p, char *k, size_t kn, char *v, size_t vn)
{
	size_t l = strcspn(p, "= \t,"), o = 0;

	if (!l || l >= kn)
		return NULL;
	memcpy(k, p, l);
	k[l] = '\0';
	p = sp(p + l);
	if (*p++ != '=')
		return NULL;
	p = sp(p);
	if (*p == '"') {
		for (p++; *p && *p != '"'; p++) {
			if (*p == '\\' && p[1])
				p++;
			if (o + 1 >= vn)
				return NULL;
			v[o++] = *p;
		}
		if (*p++ != '"')
			return NULL;
	} else {
		l = strcspn(p, " \t,");
		if (!l || l >= vn)
			return NULL;
		memcpy(v, p, l);
		o = l;
		p += l;
	}
	v[o] = '\0';
	return sp(p);
}

int oci_challenge_parse(const char *v, struct oci_challenge *c)
{
	const char *p = sp(v);

	memset(c, 0, sizeof(*c));
	if (!strncasecmp(p, "Bearer ", 7))
		c->bearer = true;
	else if (!strncasecmp(p, "Basic", 5) && (!p[5] || p[5] == ' '))
		c->basic = true;
	else
		return -EPROTO;
	p = sp(p + (c->bearer ? 7 : 5));
	while (*p) {
		char k[32], val[1024];

		p = param(p, k, sizeof(k), val, sizeof(val));
		if (!p)
			return -EPROTO;
		if (!strcasecmp(k, "realm"))
			snprintf(c->realm, sizeof(c->realm), "%s", val);
		else if (!strcasecmp(k, "service"))
			snprintf(c->service, sizeof(c->service), "%s", val);
		else if (!strcasecmp(k, "scope"))
			snprintf(c->scope, sizeof(c->scope), "%s", val);
		if (*p == ',')
			p = sp(p + 1);
		else if (*p)
			return -EPROTO;
	}
	return c->bearer && !c->realm[0] ? -EPROTO : 0;
}

/* ---- token answers ---- */

int oci_token_parse(const char *text, size_t len, char *out, size_t n)
{
	struct json_doc d;
	char why[160];
	int v, err;

	if (json_parse(&d, text, len, 4096, why, sizeof(why)))
		return -EBADMSG;
	v = d.t[0].type == JSON_OBJ ? json_get(&d, 0, "token") : -ENOENT;
	if (v == -ENOENT)
		v = json_get(&d, 0, "access_token");
	err = v < 0 ? -EBADMSG : (int)json_str(&d, v, out, n);
	json_free(&d);
	if (err == -ENAMETOOLONG)
		return err;
	/* A token goes into a header line: printable ASCII only. */
	for (const char *p = out; err >= 0 && *p; p++)
		if (*p <= ' ' || *p > '~')
			err = -EBADMSG;
	return err < 0 || !*out ? (err == -ENAMETOOLONG ? err : -EBADMSG) : 0;
}

/* ---- docker config ---- */

/* An "auths" key's registry: "https://host:port/v1/" -> "host:port". */
static void key_host(const char *k, char *out, size_t n)
{
	const char *s = strstr(k, "://");

	s = s ? s + 3 : k;
	snprintf(out, n, "%.*s", (int)strcspn(s, "/"), s);
}

static bool is_docker_hub(const char *h)
{
	return !strcasecmp(h, "docker.io") || !strcasecmp(h, "index.docker.io") ||
	       !strcasecmp(h, "registry-1.docker.io");
}

static bool same_registry(const char *a, const char *b)
{
	return !strcasecmp(a, b) || (is_docker_hub(a) && is_docker_hub(b));
}

static bool base64_valid(const char *s)
{
	size_t l = strlen(s);

	if (!l || l % 4)
		return false;
	for (size_t i = 0; i < l; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '+' || s[i] == '/' ||
		      (s[i] == '=' && i >= l - 2)))
			return false;
	return true;
}

/* The entry @e's credentials as base64(user:pass) into @out. */
static int entry_auth(const struct json_doc *d, int e, const char *key, char *out, size_t n,
		      char *why, size_t wn)
{
	int a = json_get(d, e, "auth"), u = json_get(d, e, "username"),
	    p = json_get(d, e, "password");
	char user[512], pass[2048], plain[2600];
	int err = 0;

	if (a >= 0) {
		long l = json_str(d, a, out, n);

		if (l == -ENAMETOOLONG)
			return l;
		if (l < 0 || !base64_valid(out)) {
			snprintf(why, wn, "docker config: auths[\"%.100s\"].auth is not base64",
				 key);
			return -EBADMSG;
		}
		return 0;
	}
	if (u < 0 || p < 0 || json_str(d, u, user, sizeof(user)) < 0 ||
	    json_str(d, p, pass, sizeof(pass)) < 0) {
		snprintf(why, wn,
			 "docker config: auths[\"%.100s\"] has neither \"auth\" nor a "
			 "\"username\" and \"password\" (an identitytoken is not supported)",
			 key);
		err = -EBADMSG;
		goto out_wipe;
	}
	snprintf(plain, sizeof(plain), "%s:%s", user, pass);
	if (4 * ((strlen(plain) + 2) / 3) + 1 > n)
		err = -ENAMETOOLONG;
	else
		EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)plain,
				(int)strlen(plain));
out_wipe:
	OPENSSL_cleanse(user, sizeof(user));
	OPENSSL_cleanse(pass, sizeof(pass));
	OPENSSL_cleanse(plain, sizeof(plain));
	return err;
}

int oci_auth_lookup(const char *text, size_t len, const char *host, char *out, size_t n, char *why,
		    size_t wn)
{
	struct json_doc d;
	int auths, err = -ENOENT;

	if (json_parse(&d, text, len, 1u << 16, why, wn)) {
		char j[160];

		/* The parser's message names a byte offset, not the text. */
		snprintf(j, sizeof(j), "%s", why);
		snprintf(why, wn, "docker config: %s", j);
		return -EBADMSG;
	}
	auths = d.t[0].type == JSON_OBJ ? json_get(&d, 0, "auths") : -ENOENT;
	if (auths < 0 || d.t[auths].type != JSON_OBJ) {
		snprintf(why, wn,
			 "docker config: no \"auths\" object (want the content of a "
			 "kubernetes.io/dockerconfigjson Secret's .dockerconfigjson)");
		err = -EBADMSG;
		goto out;
	}
	for (int k = json_first(&d, auths); k >= 0; k = json_next(&d, auths, k + 1)) {
		char key[512], kh[300];

		if (json_str(&d, k, key, sizeof(key)) < 0)
			continue;
		key_host(key, kh, sizeof(kh));
		if (!same_registry(kh, host))
			continue;
		if (d.t[k + 1].type != JSON_OBJ) {
			snprintf(why, wn, "docker config: auths[\"%.100s\"] is not an object", key);
			err = -EBADMSG;
			break;
		}
		/* An exact match wins over another spelling of Docker Hub. */
		err = entry_auth(&d, k + 1, key, out, n, why, wn);
		if (err || !strcasecmp(kh, host))
			break;
	}
	if (err == -ENOENT)
		snprintf(why, wn, "docker config: no credentials for %.200s", host);
out:
	json_free(&d);
	return err;
}
