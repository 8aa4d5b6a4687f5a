/* SPDX-License-Identifier: Apache-2.0 */
/* What a source in an OCI registry needs parsed (distribution spec v1.1,
 * image spec v1.1): the reference the user gives, the manifests and
 * indexes the registry sends (OCI and Docker v2 schema 2), the
 * WWW-Authenticate challenge of a 401, the token answer, and the docker
 * config of a pull secret. Parsers only: oci_manifest.c and oci_auth.c
 * speak no HTTP (src/source/blob_source_oci.c does), so each is fuzzed
 * and tested on bytes. */
#ifndef PFS_REMOTE_OCI_H
#define PFS_REMOTE_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OCI_MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_MT_INDEX "application/vnd.oci.image.index.v1+json"
#define OCI_MT_DOCKER "application/vnd.docker.distribution.manifest.v2+json"
#define OCI_MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
/* What a manifest GET accepts, in one Accept header. */
#define OCI_ACCEPT \
	"Accept: " OCI_MT_MANIFEST ", " OCI_MT_INDEX ", " OCI_MT_DOCKER ", " OCI_MT_DOCKER_LIST
#define OCI_TITLE "org.opencontainers.image.title"
#define OCI_MANIFEST_MAX (4u << 20) /* bytes of a manifest, as containerd allows */
#define OCI_DIGEST_LEN 71 /* "sha256:" and 64 hex digits */

/* REGISTRY/REPO[:TAG|@sha256:DIGEST] */
struct oci_ref {
	char host[256]; /* host[:port] as written; "docker.io" is registry-1.docker.io */
	char repo[256];
	char tag[129]; /* "" with a digest */
	char digest[OCI_DIGEST_LEN + 1]; /* "" with a tag */
};

/* oci_ref_parse - 0 or -EINVAL with why. A reference without a tag or
 * digest means the tag "latest"; one without a registry host (no '.' or
 * ':' in its first part, and not localhost) is refused: name it. */
int oci_ref_parse(const char *s, struct oci_ref *r, char *why, size_t n);

/* oci_digest_valid - "sha256:" and 64 lowercase hex digits (the only
 * algorithm read: the loader computes sha256). */
bool oci_digest_valid(const char *d);

/* One descriptor: a layer of a manifest, or a manifest of an index. */
struct oci_desc {
	char media_type[256];
	char digest[OCI_DIGEST_LEN + 1];
	uint64_t size;
	char *title; /* the org.opencontainers.image.title annotation, or NULL */
	bool unpack; /* oras' io.deis.oras.content.unpack: a packed directory */
	char platform[128]; /* an index entry's "os/architecture[/variant]" */
};

struct oci_manifest {
	bool index; /* an index (manifest list): d[] are manifests */
	char media_type[256];
	struct oci_desc *d; /* the layers, or the index's manifests */
	size_t n;
};

/* oci_manifest_parse - @len bytes of a manifest or index. @content_type
 * (the response's, may be "") decides when the text has no mediaType;
 * when both are given they must agree. 0, or -errno with why: EBADMSG
 * (not strict JSON, not schemaVersion 2, a field missing or of the wrong
 * type, a digest that is not sha256, an unknown media type), E2BIG. */
int oci_manifest_parse(const char *text, size_t len, const char *content_type,
		       struct oci_manifest *m, char *why, size_t n);
void oci_manifest_free(struct oci_manifest *m);

/* oci_index_pick - the entry of index @m to read: linux/amd64, else the
 * only entry. Its index, or -ENOENT with why listing the platforms. */
int oci_index_pick(const struct oci_manifest *m, char *why, size_t n);

/* A WWW-Authenticate challenge: Bearer realm="...",service="...",scope="..."
 * or Basic realm="...". */
struct oci_challenge {
	bool bearer, basic;
	char realm[1024], service[1024], scope[1024];
};

/* oci_challenge_parse - 0 or -EPROTO (neither scheme, a Bearer without a
 * realm, a malformed parameter list). */
int oci_challenge_parse(const char *v, struct oci_challenge *c);

/* oci_token_parse - the "token" (or "access_token") of a token answer into
 * @out; 0, -EBADMSG, -ENAMETOOLONG. */
int oci_token_parse(const char *text, size_t len, char *out, size_t n);

/* oci_auth_lookup - the credentials for registry @host (host[:port]) in a
 * dockerconfigjson text ({"auths": {KEY: {"auth": base64(user:pass)} or
 * {"username", "password"}}}; KEY may carry a scheme and a path, as
 * "https://index.docker.io/v1/" does), as base64(user:pass) into @out for
 * a Basic header. 0, -ENOENT (none for @host), -EBADMSG (malformed: why
 * says where, never the secret), -ENAMETOOLONG. */
int oci_auth_lookup(const char *text, size_t len, const char *host, char *out, size_t n, char *why,
		    size_t wn);

/* ---- image layers (oci_layer.c) ----
 * A layer of an image (tar, tar+gzip) streamed through once: its
 * compressed bytes hashed against its digest, inflated when gzip, its tar
 * headers read (ustar name and prefix, pax "path" and "size", GNU 'L'
 * long names; base-256 sizes). Regular members are handed to the caller,
 * which says where their bytes go; directories are implied; links,
 * devices and FIFOs are counted and skipped; any other type is refused. */
#define OCI_MT_LAYER_TAR "application/vnd.oci.image.layer.v1.tar"
#define OCI_MT_LAYER_GZIP "application/vnd.oci.image.layer.v1.tar+gzip"
#define OCI_MT_DOCKER_LAYER "application/vnd.docker.image.rootfs.diff.tar.gzip"
#define OCI_LAYER_EXT_MAX (64u << 10) /* a pax header's or GNU long name's bytes */
#define OCI_LAYER_HEADERS_MAX 1000000u /* tar headers in one layer */
#define OCI_NAME_MAX 4095

enum oci_layer_kind { OCI_LAYER_NONE, OCI_LAYER_TAR, OCI_LAYER_GZIP };

/* oci_layer_kind - what a layer of @media_type is: OCI_LAYER_TAR,
 * OCI_LAYER_GZIP, or OCI_LAYER_NONE (not an image layer read here: zstd,
 * an artifact's blob). */
enum oci_layer_kind oci_layer_kind(const char *media_type);

/* Called for each regular member: @name with any leading "./" and "/"
 * removed (not otherwise checked), @size bytes. Set *@dst to where its
 * bytes go (@size bytes of room), or leave it NULL to skip them. 0, or
 * -errno with why to stop the stream. */
typedef int (*oci_member_fn)(void *ctx, const char *name, uint64_t size, uint8_t **dst, char *why,
			     size_t n);

struct oci_untar;

/* oci_untar_new - a parser of one layer of @kind whose compressed bytes
 * must have @digest ("sha256:..."); NULL and errno (ENOMEM, EINVAL). */
struct oci_untar *oci_untar_new(enum oci_layer_kind kind, const char *digest, oci_member_fn fn,
				void *ctx);

/* oci_untar_feed - the next @len bytes of the layer as served. 0, or
 * -errno with why naming the digest and the offset: EBADMSG (malformed
 * gzip or tar header, a pax record or name over its bound, too many
 * headers), ENOTSUP (a member type not read: sparse, ...), or the
 * callback's error. After an error the parser takes nothing more. */
int oci_untar_feed(struct oci_untar *u, const uint8_t *p, size_t len, char *why, size_t n);

/* oci_untar_end - the layer's bytes ended: the gzip stream complete, the
 * tar not inside a header or member, and their sha256 the digest. 0 or
 * -EBADMSG with why. */
int oci_untar_end(struct oci_untar *u, char *why, size_t n);

/* The bytes fed so far and the members skipped (links, devices, FIFOs). */
uint64_t oci_untar_fed(const struct oci_untar *u);
uint64_t oci_untar_skipped(const struct oci_untar *u);
void oci_untar_free(struct oci_untar *u);

#endif /* PFS_REMOTE_OCI_H */
