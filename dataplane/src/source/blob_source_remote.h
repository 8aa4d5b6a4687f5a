/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: what the remote lister (blob_source_remote.c) and the remote
 * reader (blob_source_get.c) share: the source's options, its TLS context
 * and SigV4 key, the counters, and one request on a connection. */
#ifndef PFS_BLOB_SOURCE_REMOTE_H
#define PFS_BLOB_SOURCE_REMOTE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pfs/blob_source.h"
#include "remote/http.h"
#include "remote/oci.h"
#include "remote/sigv4.h"

struct src_remote {
	struct pfs_remote o; /* every string and array copied, owned */
	struct http_url ep; /* S3: the endpoint; HTTP: the source URL's server */
	struct http_tls *tls; /* NULL until an https URL needs it */
	struct sigv4_key key;
	bool anonymous; /* S3 without credentials: unsigned requests */
	atomic_uint_fast64_t requests, retries, resumed, checksums;
	/* OCI (blob_source_oci.c): the reference; the Authorization line the
	 * registry asked for (Bearer token or Basic; "": none yet), sent to
	 * the registry's host only (rm->ep), never where it redirects; the
	 * pull secret's base64(user:pass) for Basic and the token realm; the
	 * digest of the manifest read. Secrets wiped when freed. A token that
	 * expires mid-read is fetched again (oci_reauth) by the first reader
	 * that meets the 401: auth is written and read under auth_lock, and
	 * auth_gen counts the tokens, so readers that failed with the same
	 * one refresh it once. */
	struct oci_ref ref;
	pthread_mutex_t auth_lock;
	atomic_uint auth_gen;
	struct oci_challenge ch; /* the registry's Bearer challenge, if any */
	char auth[8192];
	char basic[2048];
	char manifest_digest[OCI_DIGEST_LEN + 1];
	/* OCI: the image layers unpacked (blob_source_oci_layer.c); NULL:
	 * none. Written by the lister, read by src_unpack's threads. */
	struct oci_image *img;
};

struct src_rconn {
	struct http_conn c;
};

/* One request for @target on @u's host (reconnecting @c when it is not
 * connected there), with the source's headers (S3: signed, @extra signed
 * too; HTTP: the user's), and @range ("bytes=A-B") and @if_match when not
 * NULL. The response head in @r; 0 or -errno with why. */
int src_rq(struct src_remote *rm, struct http_conn *c, const struct http_url *u, const char *method,
	   const char *target, const char *range, const char *if_match, const char *const *extra,
	   size_t nextra, struct http_resp *r, char *why, size_t n);

/* A status that is not a success as -errno, why naming @what, the status
 * and, for S3, its error Code and Message (the body is read and the
 * connection kept usable or closed; a registry's JSON errors likewise): EACCES (401, 403), ENOENT (404),
 * ESTALE (412: the object changed; 416: shorter than listed), EAGAIN (429,
 * 5xx: transient), EIO (anything else). */
int src_status_err(struct http_conn *c, struct http_resp *r, const char *what, char *why, size_t n);

/* src_xml_field - the text of <@tag> inside [@a, @end), its entities and
 * numeric references decoded, into @out; @out, or NULL when absent. */
const char *src_xml_field(const char *a, const char *end, const char *tag, char *out, size_t n);

/* src_add_file - a file @name (@key in messages) of @size bytes at @url
 * into the listing, its name checked against the manifest's rules. 0 or
 * -errno (EILSEQ: a name that breaks them) with why. */
int src_add_file(struct pfs_source *s, const char *name, const char *key, uint64_t size,
		 const char *url, char *why, size_t n);

/* src_probe - where @url's bytes are and how they are served: a HEAD (or,
 * with @get, a GET of its first byte: presigned storage URLs take only
 * GET), following up to five redirects; the final URL into *@final
 * (malloc'd), r->len its size, r->accept_ranges "bytes" when it takes
 * ranges, r->etag. 0 or -errno with why. */
int src_probe(struct src_remote *rm, struct http_conn *c, const char *url, bool get, char **final,
	      struct http_resp *r, char *why, size_t n);

/* src_get - a GET of @url (@range "bytes=N-" when not NULL) following up
 * to five redirects, the response's body left to read from @c (the head
 * in @r: 200 or 206). 0 or -errno with why. */
int src_get(struct src_remote *rm, struct http_conn *c, const char *url, const char *range,
	    struct http_resp *r, char *why, size_t n);

/* src_check_name - @name may be a file name of the manifest (valid
 * UTF-8, relative, no empty, '.' or '..' part, no control character):
 * 0, or -EILSEQ with why naming @key. */
int src_check_name(const char *name, const char *key, char *why, size_t n);

/* src_backoff - sleep before retry @attempt: 100 ms doubling to 5 s, with
 * jitter. */
void src_backoff(int attempt);

/* src_names_unique - no name twice in the (sorted) listing: 0, or -EINVAL
 * naming it. */
int src_names_unique(const struct pfs_source *s, char *why, size_t n);

/* oci_scan - list an OCI source (blob_source_oci.c): 0 or -errno. */
int oci_scan(struct pfs_source *s, char *why, size_t n);

/* An OCI image's layers (blob_source_oci_layer.c). oci_image_list - the
 * members of image layer @d (tar, tar+gzip), streamed once, into rm->img;
 * oci_image_files - after the last layer, the members left (whiteouts
 * applied, later layers winning) as files of the listing. 0 or -errno
 * with why. */
#define OCI_IMAGE_MEMBERS_MAX 200000u /* regular members in all layers */
struct oci_image;
int oci_image_list(struct pfs_source *s, struct http_conn *c, const struct oci_desc *d, char *why,
		   size_t n);
int oci_image_files(struct pfs_source *s, char *why, size_t n);
void oci_image_free(struct oci_image *img);

/* oci_reauth - after a 401 of a Bearer registry to a request that carried
 * its token (src_rq): a new token from the realm, unless another reader
 * already fetched one since token @seen (rm->auth_gen when the failed
 * request was sent). 0, or -errno with why (the realm's refusal). */
int oci_reauth(struct src_remote *rm, unsigned seen, char *why, size_t n);

/* Errors worth another try: the connection or the server's state, not the
 * request. */
bool src_transient(int err);

#endif /* PFS_BLOB_SOURCE_REMOTE_H */
