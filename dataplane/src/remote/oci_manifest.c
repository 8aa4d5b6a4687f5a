// SPDX-License-Identifier: Apache-2.0
/*
 * References, manifests and indexes of an OCI registry (oci.h): strict,
 * because a manifest decides which bytes become the blob. Every
 * descriptor needs its mediaType, a sha256 digest and a size; a manifest
 * its config and layers; an index its manifests; anything of the wrong
 * type, or a second copy of a key, refuses the whole text. Fields the
 * loader does not use (config's content, annotations other than the
 * title, urls, artifactType) are read only for their shape.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/json.h"
#include "remote/oci.h"

#define TOKENS_MAX (1u << 20)

/* ---- references ---- */

bool oci_digest_valid(const char *d)
{
	if (strncmp(d, "sha256:", 7) || strlen(d) != OCI_DIGEST_LEN)
		return false;
	for (d += 7; *d; d++)
		if (!((*d >= '0' && *d <= '9') || (*d >= 'a' && *d <= 'f')))
			return false;
	return true;
}

/* The distribution spec's repository name: lowercase components of
 * [a-z0-9] joined by '.', '_', '__', '-'s, separated by '/'. Checked
 * loosely (the charset and no empty component): the registry is the
 * judge, but nothing odd may reach a request path. */
static bool repo_valid(const char *r)
{
	if (!*r || *r == '/' || r[strlen(r) - 1] == '/' || strstr(r, "//"))
		return false;
	for (; *r; r++)
		if (!((*r >= 'a' && *r <= 'z') || (*r >= '0' && *r <= '9') || strchr("._-/", *r)))
			return false;
	return true;
}

static bool tag_valid(const char *t)
{
	if (!*t || strlen(t) > 128 || *t == '.' || *t == '-')
		return false;
	for (; *t; t++)
		if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') ||
		      (*t >= '0' && *t <= '9') || strchr("._-", *t)))
			return false;
	return true;
}

int oci_ref_parse(const char *s, struct oci_ref *r, char *why, size_t n)
{
	const char *slash = strchr(s, '/'), *at, *rest, *colon;
	size_t hl, rl;

	memset(r, 0, sizeof(*r));
	if (!slash || slash == s || (hl = (size_t)(slash - s)) >= sizeof(r->host)) {
		snprintf(why, n, "'%.200s': want REGISTRY/REPO[:TAG|@sha256:DIGEST]", s);
		return -EINVAL;
	}
	memcpy(r->host, s, hl);
	if (!memchr(r->host, '.', hl) && !memchr(r->host, ':', hl) &&
	    strcmp(r->host, "localhost")) {
		snprintf(why, n,
			 "'%.200s': the first part is not a registry host (no '.' or ':'): "
			 "name the registry, e.g. docker.io/%.150s",
			 s, s);
		return -EINVAL;
	}
	rest = slash + 1;
	at = strchr(rest, '@');
	/* A tag's colon comes after the last '/' (a port's is in the host). */
	colon = strrchr(rest, ':');
	if (at) {
		colon = NULL;
		rl = (size_t)(at - rest);
		if (!oci_digest_valid(at + 1)) {
			snprintf(why, n, "'%.200s': the digest is not sha256:<64 hex digits>", s);
			return -EINVAL;
		}
		snprintf(r->digest, sizeof(r->digest), "%s", at + 1);
	} else if (colon && !strchr(colon, '/')) {
		rl = (size_t)(colon - rest);
		snprintf(r->tag, sizeof(r->tag), "%.128s", colon + 1);
		if (strlen(colon + 1) > 128 || !tag_valid(r->tag)) {
			snprintf(why, n, "'%.200s': a bad tag", s);
			return -EINVAL;
		}
	} else {
		rl = strlen(rest);
		snprintf(r->tag, sizeof(r->tag), "latest");
	}
	if (rl >= sizeof(r->repo)) {
		snprintf(why, n, "'%.200s': the repository name is too long", s);
		return -EINVAL;
	}
	memcpy(r->repo, rest, rl);
	if (!repo_valid(r->repo)) {
		snprintf(why, n,
			 "'%.200s': a bad repository name (lowercase letters, digits, '.', '_', "
			 "'-', '/')",
			 s);
		return -EINVAL;
	}
	return 0;
}

/* ---- manifests ---- */

struct mp {
	struct json_doc d;
	char *why;
	size_t n;
};

static int bad(struct mp *p, const char *fmt, const char *a)
{
	char m[300];

	snprintf(m, sizeof(m), fmt, a);
	snprintf(p->why, p->n, "malformed manifest: %s", m);
	return -EBADMSG;
}

/* A string member @key of @obj into @out: 0, -ENOENT (absent and
 * @optional), or -EBADMSG. */
static int str_member(struct mp *p, int obj, const char *key, char *out, size_t n, bool optional)
{
	int v = json_get(&p->d, obj, key);

	if (v == -ENOENT && optional)
		return -ENOENT;
	if (v == -EEXIST)
		return bad(p, "the key \"%s\" twice", key);
	if (v < 0 || json_str(&p->d, v, out, n) < 0)
		return bad(p, "\"%s\" missing, not a string, or too long", key);
	return 0;
}

static int annotations(struct mp *p, int obj, struct oci_desc *o)
{
	int a = json_get(&p->d, obj, "annotations"), v;
	char unpack[8];

	if (a == -ENOENT)
		return 0;
	if (a < 0 || p->d.t[a].type != JSON_OBJ)
		return bad(p, "%s", "\"annotations\" is not an object");
	for (int k = json_first(&p->d, a); k >= 0; k = json_next(&p->d, a, k + 1))
		if (p->d.t[k + 1].type != JSON_STR)
			return bad(p, "%s", "an annotation that is not a string");
	v = json_get(&p->d, a, OCI_TITLE);
	if (v == -EEXIST)
		return bad(p, "%s", "two titles");
	if (v >= 0) {
		o->title = json_strdup(&p->d, v);
		if (!o->title)
			return bad(p, "%s", "a title holding \\u0000, or no memory");
	}
	if (!str_member(p, a, "io.deis.oras.content.unpack", unpack, sizeof(unpack), true))
		o->unpack = !strcmp(unpack, "true");
	return 0;
}

static int platform(struct mp *p, int obj, struct oci_desc *o)
{
	int pl = json_get(&p->d, obj, "platform");
	char os[40] = "", arch[40] = "", var[40] = "";

	if (pl == -ENOENT)
		return 0;
	if (pl < 0 || p->d.t[pl].type != JSON_OBJ)
		return bad(p, "%s", "\"platform\" is not an object");
	if (str_member(p, pl, "os", os, sizeof(os), false) ||
	    str_member(p, pl, "architecture", arch, sizeof(arch), false))
		return -EBADMSG;
	if (str_member(p, pl, "variant", var, sizeof(var), true) == -EBADMSG)
		return -EBADMSG;
	snprintf(o->platform, sizeof(o->platform), "%s/%s%s%s", os, arch, var[0] ? "/" : "", var);
	return 0;
}

static int descriptor(struct mp *p, int obj, struct oci_desc *o)
{
	int v;

	if (p->d.t[obj].type != JSON_OBJ)
		return bad(p, "%s", "a descriptor that is not an object");
	if (str_member(p, obj, "mediaType", o->media_type, sizeof(o->media_type), false) ||
	    str_member(p, obj, "digest", o->digest, sizeof(o->digest), false))
		return -EBADMSG;
	if (!oci_digest_valid(o->digest))
		return bad(p, "the digest '%.80s' is not sha256:<64 lowercase hex digits>",
			   o->digest);
	v = json_get(&p->d, obj, "size");
	if (v < 0 || json_u64(&p->d, v, &o->size) || o->size > (1ULL << 50))
		return bad(p, "the size of %s is missing, not a whole number, or absurd",
			   o->digest);
	return 0;
}

/* The descriptors of array @key into m->d. */
static int descriptors(struct mp *p, int root, const char *key, struct oci_manifest *m, bool layers)
{
	int a = json_get(&p->d, root, key), err = 0;

	if (a < 0 || p->d.t[a].type != JSON_ARR)
		return bad(p, "\"%s\" is missing, twice, or not an array", key);
	m->d = calloc(p->d.t[a].count ? p->d.t[a].count : 1, sizeof(*m->d));
	if (!m->d)
		return bad(p, "%s", "no memory");
	for (int k = json_first(&p->d, a); k >= 0 && !err; k = json_next(&p->d, a, k)) {
		struct oci_desc *o = &m->d[m->n++];

		err = descriptor(p, k, o);
		if (!err)
			err = layers ? annotations(p, k, o) : platform(p, k, o);
	}
	return err;
}

static bool known(const char *mt)
{
	return !strcmp(mt, OCI_MT_MANIFEST) || !strcmp(mt, OCI_MT_INDEX) ||
	       !strcmp(mt, OCI_MT_DOCKER) || !strcmp(mt, OCI_MT_DOCKER_LIST);
}

static bool is_index(const char *mt)
{
	return !strcmp(mt, OCI_MT_INDEX) || !strcmp(mt, OCI_MT_DOCKER_LIST);
}

int oci_manifest_parse(const char *text, size_t len, const char *content_type,
		       struct oci_manifest *m, char *why, size_t n)
{
	struct mp p = { .why = why, .n = n };
	char ct[256];
	uint64_t sv;
	int err, v, cfg;

	memset(m, 0, sizeof(*m));
	snprintf(ct, sizeof(ct), "%.*s", (int)strcspn(content_type ? content_type : "", "; "),
		 content_type ? content_type : "");
	err = json_parse(&p.d, text, len, TOKENS_MAX, why, n);
	if (err) {
		char j[200];

		snprintf(j, sizeof(j), "%s", why);
		snprintf(why, n, "malformed manifest: %s", j);
		return err;
	}
	if (p.d.t[0].type != JSON_OBJ) {
		err = bad(&p, "%s", "not an object");
		goto out;
	}
	v = json_get(&p.d, 0, "schemaVersion");
	if (v < 0 || json_u64(&p.d, v, &sv) || sv != 2) {
		err = bad(&p, "%s", "schemaVersion is not 2 (Docker schema 1 is not read)");
		goto out;
	}
	err = str_member(&p, 0, "mediaType", m->media_type, sizeof(m->media_type), true);
	if (err == -EBADMSG)
		goto out;
	if (err == -ENOENT) {
		/* OCI allows no mediaType: the response's, else the shape. */
		snprintf(m->media_type, sizeof(m->media_type), "%s",
			 known(ct)			     ? ct :
			 json_get(&p.d, 0, "manifests") >= 0 ? OCI_MT_INDEX :
							       OCI_MT_MANIFEST);
	} else if (known(ct) && strcmp(ct, m->media_type)) {
		err = bad(&p, "its mediaType is not its Content-Type %s", ct);
		goto out;
	}
	if (!known(m->media_type)) {
		err = bad(&p, "the media type '%.100s' is not a manifest or an index",
			  m->media_type);
		goto out;
	}
	m->index = is_index(m->media_type);
	if (m->index) {
		err = descriptors(&p, 0, "manifests", m, false);
		goto out;
	}
	cfg = json_get(&p.d, 0, "config");
	if (cfg < 0) {
		err = bad(&p, "%s", "no \"config\" (or two)");
		goto out;
	}
	{
		struct oci_desc c = { 0 };

		err = descriptor(&p, cfg, &c);
	}
	if (!err)
		err = descriptors(&p, 0, "layers", m, true);
out:
	json_free(&p.d);
	if (err)
		oci_manifest_free(m);
	return err;
}

void oci_manifest_free(struct oci_manifest *m)
{
	for (size_t i = 0; m->d && i < m->n; i++)
		free(m->d[i].title);
	free(m->d);
	m->d = NULL;
	m->n = 0;
}

int oci_index_pick(const struct oci_manifest *m, char *why, size_t n)
{
	size_t o;

	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->d[i].platform, "linux/amd64"))
			return (int)i;
	if (m->n == 1)
		return 0;
	o = (size_t)snprintf(why, n, "the index has no linux/amd64 manifest%s",
			     m->n ? " among its platforms:" : " (it is empty)");
	for (size_t i = 0; i < m->n && o < n; i++)
		o += (size_t)snprintf(why + o, n - o, " %s",
				      m->d[i].platform[0] ? m->d[i].platform : "(none)");
	return -ENOENT;
}
