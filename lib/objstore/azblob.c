/*
 * azblob.c - Azure Blob Storage, block blobs, Shared Key authorization.
 *
 * Requests (x-ms-version 2021-08-06):
 *     Put Blob        PUT    /C/KEY  x-ms-blob-type: BlockBlob, Content-MD5
 *     Put Block       PUT    /C/KEY?comp=block&blockid=ID   Content-MD5
 *     Put Block List  PUT    /C/KEY?comp=blocklist   <Latest>ID</Latest>...
 *     Get Blob        GET    /C/KEY  x-ms-range: bytes=A-B
 *     List Blobs      GET    /C?restype=container&comp=list&prefix=P&marker=M
 *     Delete Blob     DELETE /C/KEY
 * A blob committed by Put Block List appears whole at once; blocks that
 * are never committed are discarded by the service after a week, so there
 * is nothing to abort.
 *
 * Shared Key: Authorization: SharedKey ACCOUNT:base64(HMAC-SHA256(key,
 * string-to-sign)), where the string to sign is
 *     VERB \n Content-Encoding \n Content-Language \n Content-Length
 *     (empty when 0) \n Content-MD5 \n Content-Type \n Date \n
 *     If-Modified-Since \n If-Match \n If-None-Match \n
 *     If-Unmodified-Since \n Range \n
 *     x-ms-* headers, lower-case, sorted, "name:value\n" each
 *     /ACCOUNT/URL-PATH, then "\nname:value" per query parameter, sorted
 * (Entra ID tokens are not implemented: a storage key or a connection
 * string is needed.)
 *
 * Endpoint: https://ACCOUNT.blob.core.windows.net, or the BlobEndpoint of
 * AZURE_STORAGE_CONNECTION_STRING / AZURE_STORAGE_BLOB_ENDPOINT, which
 * may carry a path (Azurite: http://127.0.0.1:10000/devstoreaccount1).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "os_int.h"
#include "common/log.h"
#include "common/sigv4.h"
#include "common/url.h"

#define AZ_VERSION "2021-08-06"

struct az {
	char *base;           /* scheme://host[:port] */
	char *path0;          /* URL path of the endpoint ("" or "/acct") */
	char *account;
	unsigned char *key;   /* decoded account key */
	size_t klen;
};

static void az_free(void *p)
{
	struct az *a = p;

	if (!a)
		return;
	free(a->base);
	free(a->path0);
	free(a->account);
	if (a->key)
		memset(a->key, 0, a->klen);
	free(a->key);
	free(a);
}

struct call {
	struct az *az;
	const char *path;       /* URL path, encoded, from '/' */
	const char *qsign;      /* "\nname:value" lines, sorted, decoded */
	size_t clen;            /* Content-Length to sign */
	char md5[25];
	const char *range;      /* x-ms-range value or NULL */
	uint64_t foff;          /* body from this offset of the source */
	objstore_sink_fn sink;  /* response body of a range, or NULL */
	void *sink_ud;
	int blockblob;          /* send x-ms-blob-type: BlockBlob */
};

static int sign(const struct os_req *rq, void *ud, struct sr_http_hdrs *hdrs,
		struct sr_err *e)
{
	struct call *c = ud;
	char date[64], sig[45], clen[32], *sts = NULL;
	time_t now = time(NULL);
	struct tm tm;
	int rc, n;

	gmtime_r(&now, &tm);
	strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	clen[0] = 0;
	if (c->clen)
		snprintf(clen, sizeof clen, "%zu", c->clen);
	/* canonical x-ms-* headers, already in sorted order */
	n = asprintf(&sts, "%s\n\n\n%s\n%s\n\n\n\n\n\n\n\n%s"
		     "x-ms-date:%s\n%s%s%sx-ms-version:" AZ_VERSION "\n"
		     "/%s%s%s",
		     rq->method, clen, c->md5,
		     c->blockblob ? "x-ms-blob-type:BlockBlob\n" : "", date,
		     c->range ? "x-ms-range:" : "", c->range ? c->range : "",
		     c->range ? "\n" : "", c->az->account, c->path,
		     c->qsign ? c->qsign : "");
	if (n < 0)
		return -ENOMEM;
	rc = os_hmac_sha256_b64(c->az->key, c->az->klen, sts, (size_t)n, sig);
	free(sts);
	if (rc)
		return sr_err_set(e, rc, "Azure: signing failed");
	rc = sr_http_hdrs_add(hdrs, "x-ms-date: %s", date);
	if (!rc)
		rc = sr_http_hdrs_add(hdrs, "x-ms-version: " AZ_VERSION);
	if (!rc && c->blockblob)
		rc = sr_http_hdrs_add(hdrs, "x-ms-blob-type: BlockBlob");
	if (!rc && c->range)
		rc = sr_http_hdrs_add(hdrs, "x-ms-range: %s", c->range);
	if (!rc && c->md5[0])
		rc = sr_http_hdrs_add(hdrs, "Content-MD5: %s", c->md5);
	if (!rc)
		rc = sr_http_hdrs_add(hdrs, "Authorization: SharedKey %s:%s",
			    c->az->account, sig);
	/* curl would add a Content-Type to some uploads; none is signed */
	if (!rc)
		rc = sr_http_hdrs_add(hdrs, "Content-Type:");
	return rc;
}

static char *blob_path(struct objstore *s, const char *key)
{
	struct az *az = s->impl;
	char *fk = objstore__full_key(s, key), *enc, *p = NULL;

	if (!fk)
		return NULL;
	enc = sr_sigv4_uri_encode(fk, strlen(fk), 1);
	if (enc && asprintf(&p, "%s/%s/%s", az->path0, s->u.bucket, enc) < 0)
		p = NULL;
	free(enc);
	free(fk);
	return p;
}

static int do_req(struct objstore *s, struct call *c, const char *method,
		  const char *query, const char *what, const void *body,
		  size_t blen, int fd, void *dst, size_t dlen, size_t max,
		  struct os_resp *resp, struct sr_err *e)
{
	struct az *az = s->impl;
	char *url = NULL;
	int rc;

	/* c->path starts with the endpoint's own path (path0) already */
	if (asprintf(&url, "%s%s%s%s", az->base, c->path,
		     query && *query ? "?" : "", query ? query : "") < 0)
		return -ENOMEM;
	c->az = az;
	c->clen = blen;
	struct os_req rq = {
		.method = method, .url = url, .what = what, .body = body,
		.body_len = blen, .body_fd = fd, .body_off = c->foff, .dst = dst,
		.dst_len = dlen,
		.max_resp = max, .sign = sign, .sign_ud = c,
		.sink = c->sink, .sink_ud = c->sink_ud,
	};
	rc = os_http(s, &rq, resp, e);
	if (rc == 0 && resp->status / 100 != 2)
		rc = os_status_err(&rq, resp, e);
	free(url);
	return rc;
}

static int az_put(struct objstore *s, const char *key, const void *buf,
		  size_t len, struct sr_err *e)
{
	struct call c = { .blockblob = 1 };
	struct os_resp resp = { 0 };
	char *path = blob_path(s, key), what[512];
	int rc;

	if (!path)
		return -ENOMEM;
	c.path = path;
	os_md5_b64(buf, len, c.md5);
	snprintf(what, sizeof what, "Put Blob %s", key);
	rc = do_req(s, &c, "PUT", NULL, what, buf ? buf : "", len, -1, NULL, 0, 0,
		    &resp, e);
	os_resp_free(&resp);
	free(path);
	return rc;
}

/* PUT n bytes of the source from c->foff: streamed from the file, or
 * straight from memory. */
static int put_body(struct objstore *s, struct call *c, const char *query,
		    const char *what, const struct os_src *src, uint64_t n,
		    struct os_resp *resp, struct sr_err *e)
{
	if (src->mem)
		return do_req(s, c, "PUT", query, what, src->mem + c->foff, n,
			      -1, NULL, 0, 0, resp, e);
	return do_req(s, c, "PUT", query, what, NULL, n, src->fd, NULL, 0, 0,
		      resp, e);
}

struct blocks {
	struct objstore *s;
	const char *key, *path;
	const struct os_src *src;
	uint64_t size, part;
	atomic_uint_fast64_t sent;
};

/* Block ids must all have the same length: base64 of "spotrun-NNNNNN". */
static void block_id(size_t i, char out[32])
{
	char raw[24];
	int n = snprintf(raw, sizeof raw, "spotrun-%06zu", i);

	char *b = os_b64_enc(raw, (size_t)n);

	snprintf(out, 32, "%s", b ? b : "");
	free(b);
}

static int put_block(void *ud, size_t i, struct sr_err *e)
{
	struct blocks *b = ud;
	uint64_t off = (uint64_t)i * b->part;
	uint64_t n = b->size - off < b->part ? b->size - off : b->part;
	struct os_resp resp = { 0 };
	char id[32], *eid = NULL, query[128], qsign[96], what[512];
	struct call c = { .path = b->path, .qsign = qsign, .foff = off };
	int rc;

	if (b->s->gate)
		b->s->gate(b->s->gate_ud);
	/* MD5 pass, then the body streams from the source */
	rc = os_md5_b64_src(b->src, off, n, c.md5);
	if (rc)
		return sr_err_set(e, rc, "%s: reading block %zu: %s", b->key, i,
				  sr_strerror(rc));
	block_id(i, id);
	eid = sr_sigv4_uri_encode(id, strlen(id), 0);
	if (!eid) {
		rc = -ENOMEM;
		goto out;
	}
	snprintf(query, sizeof query, "comp=block&blockid=%s", eid);
	snprintf(qsign, sizeof qsign, "\nblockid:%s\ncomp:block", id);
	snprintf(what, sizeof what, "Put Block %s #%zu", b->key, i);
	rc = put_body(b->s, &c, query, what, b->src, n, &resp, e);
	if (rc == 0)
		atomic_fetch_add(&b->sent, n);
out:
	os_resp_free(&resp);
	free(eid);
	return rc;
}

static int az_put_src(struct objstore *s, const char *key,
		      const struct os_src *src, uint64_t size, uint64_t *sent,
		      struct sr_err *e)
{
	struct blocks b = { .s = s, .key = key, .src = src, .size = size,
			    .part = s->cfg.part_bytes };
	struct os_resp resp = { 0 };
	struct call c = { .qsign = "\ncomp:blocklist" };
	char *path = NULL, *xml = NULL, what[512];
	size_t nb, xl;
	int rc;

	path = blob_path(s, key);
	if (!path)
		return -ENOMEM;
	if (size <= s->cfg.part_bytes) {
		/* one Put Blob, streamed from the source after its MD5 pass */
		c.path = path;
		c.qsign = NULL;
		c.blockblob = 1;
		rc = os_md5_b64_src(src, 0, size, c.md5);
		if (rc) {
			sr_err_set(e, rc, "%s: read failed: %s", key, sr_strerror(rc));
			goto out;
		}
		snprintf(what, sizeof what, "Put Blob %s", key);
		rc = put_body(s, &c, NULL, what, src, size, &resp, e);
		if (rc == 0 && sent)
			*sent += size;
		goto out;
	}
	b.path = path;
	nb = (size_t)((size + b.part - 1) / b.part);
	if (nb > 50000) {
		rc = sr_err_set(e, -EFBIG, "%s: more than 50,000 blocks; raise "
				"SPOTRUN_OBJSTORE_PART_MB", key);
		goto out;
	}
	rc = os_run_parallel(s->cfg.parallel, nb, put_block, &b, s->cancel, e);
	if (rc)
		goto out;
	if (s->gate)
		s->gate(s->gate_ud);
	xml = malloc(nb * 48 + 96);
	if (!xml) {
		rc = -ENOMEM;
		goto out;
	}
	xl = (size_t)sprintf(xml, "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
			     "<BlockList>");
	for (size_t i = 0; i < nb; i++) {
		char id[32];

		block_id(i, id);
		xl += (size_t)sprintf(xml + xl, "<Latest>%s</Latest>", id);
	}
	xl += (size_t)sprintf(xml + xl, "</BlockList>");
	c.path = path;
	os_md5_b64(xml, xl, c.md5);
	snprintf(what, sizeof what, "Put Block List %s", key);
	rc = do_req(s, &c, "PUT", "comp=blocklist", what, xml, xl, -1, NULL, 0, 0,
		    &resp, e);
	if (rc == 0 && sent)
		*sent += atomic_load(&b.sent);
out:
	os_resp_free(&resp);
	free(xml);
	free(path);
	return rc;
}

static int az_get_range(struct objstore *s, const char *key, uint64_t off,
			uint64_t len, void *dst, objstore_sink_fn sink, void *ud,
			struct sr_err *e)
{
	struct call c = { .sink = sink, .sink_ud = ud };
	struct os_resp resp = { 0 };
	char *path = blob_path(s, key), what[512], range[64];
	int rc;

	if (!path)
		return -ENOMEM;
	c.path = path;
	snprintf(range, sizeof range, "bytes=%" PRIu64 "-%" PRIu64, off,
		 off + len - 1);
	c.range = range;
	snprintf(what, sizeof what, "Get Blob %s [%" PRIu64 ",+%" PRIu64 ")",
		 key, off, len);
	rc = do_req(s, &c, "GET", NULL, what, NULL, 0, -1, dst, len, 0, &resp, e);
	if (rc == 0 && resp.len != len)
		rc = sr_err_set(e, -SR_ECORRUPT, "%s: got %zu bytes", what,
				resp.len);
	os_resp_free(&resp);
	free(path);
	return rc;
}

static int az_get(struct objstore *s, const char *key, size_t max, char **out,
		  size_t *len, struct sr_err *e)
{
	struct call c = { 0 };
	struct os_resp resp = { 0 };
	char *path = blob_path(s, key), what[512];
	int rc;

	if (!path)
		return -ENOMEM;
	c.path = path;
	snprintf(what, sizeof what, "Get Blob %s", key);
	rc = do_req(s, &c, "GET", NULL, what, NULL, 0, -1, NULL, 0, max, &resp, e);
	if (rc == 0) {
		*out = resp.body ? resp.body : strdup("");
		*len = resp.len;
		resp.body = NULL;
		if (!*out)
			rc = -ENOMEM;
	}
	os_resp_free(&resp);
	free(path);
	return rc;
}

struct list_ud {
	struct objstore *s;
	struct objstore_list *out;
	size_t outside;   /* listed names not under the prefix (ignored) */
};

static int list_one(void *ud, const char *name, const char *size)
{
	struct list_ud *l = ud;
	const char *rel = name ? objstore__relative_key(l->s, name) : NULL;

	if (!rel) {
		l->outside++;
		return 0;
	}
	return objstore__list_add(l->out, rel, strlen(rel),
				  size ? strtoull(size, NULL, 10) : 0);
}

static int az_list(struct objstore *s, const char *sub,
		   struct objstore_list *out, struct sr_err *e)
{
	struct az *az = s->impl;
	struct list_ud lu = { .s = s, .out = out };
	char *fk = objstore__full_key(s, sub), *efk = NULL, *marker = NULL;
	char *path = NULL, *query = NULL, *qsign = NULL, what[512];
	int rc = -ENOMEM;

	efk = fk ? sr_sigv4_uri_encode(fk, strlen(fk), 0) : NULL;
	if (!efk || asprintf(&path, "%s/%s", az->path0, s->u.bucket) < 0)
		goto out;
	snprintf(what, sizeof what, "List Blobs %s/%s", s->u.bucket, fk);
	for (;;) {
		struct os_resp resp = { 0 };
		struct call c = { .path = path };
		char *em = marker ? sr_sigv4_uri_encode(marker, strlen(marker), 0)
				  : NULL;

		free(query);
		free(qsign);
		query = qsign = NULL;
		if ((marker && !em) ||
		    asprintf(&query, "restype=container&comp=list&prefix=%s%s%s",
			     efk, em ? "&marker=" : "", em ? em : "") < 0 ||
		    asprintf(&qsign, "\ncomp:list%s%s\nprefix:%s\nrestype:container",
			     marker ? "\nmarker:" : "", marker ? marker : "",
			     fk) < 0) {
			free(em);
			rc = -ENOMEM;
			goto out;
		}
		free(em);
		c.qsign = qsign;
		rc = do_req(s, &c, "GET", query, what, NULL, 0, -1, NULL, 0, 64u << 20,
			    &resp, e);
		if (rc == 0) {
			rc = os_xml_each(resp.body, resp.len, "Blob", "Name",
					 "Content-Length", list_one, &lu);
			if (rc == -SR_EPARSE)
				sr_err_set(e, rc, "%s: answer is not XML", what);
		}
		free(marker);
		marker = NULL;
		if (rc == 0 && resp.body) {
			marker = os_xml_text(resp.body, resp.len, "NextMarker");
			if (marker && !*marker) {
				free(marker);
				marker = NULL;
			}
		}
		os_resp_free(&resp);
		if (rc || !marker)
			break;
	}
	if (lu.outside)
		sr_warn("objstore", "listing returned blobs outside the prefix; "
			"ignored", "uri=%s n=%zu", s->uri_str, lu.outside);
out:
	free(marker);
	free(query);
	free(qsign);
	free(path);
	free(efk);
	free(fk);
	return rc;
}

static int az_del(struct objstore *s, const char *const *keys, size_t n,
		  struct sr_err *e)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct call c = { 0 };
		struct os_resp resp = { 0 };
		char *path = blob_path(s, keys[i]), what[512];

		if (!path)
			return -ENOMEM;
		c.path = path;
		snprintf(what, sizeof what, "Delete Blob %s", keys[i]);
		rc = do_req(s, &c, "DELETE", NULL, what, NULL, 0, -1, NULL, 0, 0,
			    &resp, e);
		if (rc == -SR_ENOTFOUND)
			rc = 0;
		os_resp_free(&resp);
		free(path);
	}
	return rc;
}

static const struct objstore_ops az_ops = {
	.put = az_put, .put_src = az_put_src, .get_range = az_get_range,
	.get = az_get, .list = az_list, .del = az_del, .abort_stale = NULL,
	.free_impl = az_free,
};

/* Value of `name` in a connection string "A=x;B=y" (malloc'd) or NULL. */
static char *conn_get(const char *cs, const char *name)
{
	size_t nl = strlen(name);

	for (const char *p = cs; p && *p;) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len > nl && !strncmp(p, name, nl) && p[nl] == '=')
			return strndup(p + nl + 1, len - nl - 1);
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

int objstore__az_open(struct objstore *s, struct sr_err *e)
{
	struct az *az = calloc(1, sizeof *az);
	const char *cs = getenv("AZURE_STORAGE_CONNECTION_STRING");
	char *key = NULL, *ep = NULL, *name = NULL;
	struct sr_url url = { .port = -1 };
	int rc = -ENOMEM;

	if (!az)
		return -ENOMEM;
	if (cs && *cs) {
		key = conn_get(cs, "AccountKey");
		ep = conn_get(cs, "BlobEndpoint");
		name = conn_get(cs, "AccountName");
		if (name && strcmp(name, s->u.account)) {
			rc = sr_err_set(e, -EINVAL, "%s: AZURE_STORAGE_CONNECTION_"
					"STRING is for account %s", s->uri_str,
					name);
			goto fail;
		}
	}
	if (!key && getenv("AZURE_STORAGE_KEY"))
		key = strdup(getenv("AZURE_STORAGE_KEY"));
	if (!ep && getenv("AZURE_STORAGE_BLOB_ENDPOINT"))
		ep = strdup(getenv("AZURE_STORAGE_BLOB_ENDPOINT"));
	if (!key || !*key) {
		rc = sr_err_set(e, -EACCES, "%s: no storage key: set "
				"AZURE_STORAGE_CONNECTION_STRING (with "
				"AccountKey=) or AZURE_STORAGE_KEY", s->uri_str);
		goto fail;
	}
	sr_log_secret(key);
	az->key = os_b64_dec(key, &az->klen);
	if (!az->key) {
		rc = sr_err_set(e, -EINVAL, "%s: the storage key is not base64",
				s->uri_str);
		goto fail;
	}
	if (!ep && asprintf(&ep, "https://%s.blob.core.windows.net",
			    s->u.account) < 0) {
		ep = NULL;
		goto fail;
	}
	while (ep[0] && ep[strlen(ep) - 1] == '/')
		ep[strlen(ep) - 1] = 0;
	rc = sr_url_parse_http(ep, "Azure endpoint", &url, e);
	if (rc)
		goto fail;
	if (url.user || url.query || url.fragment) {
		rc = sr_err_set(e, -EINVAL, "Azure endpoint: expected "
				"http(s)://host[:port][/path] (the storage key "
				"signs; no user:password@, query or fragment)");
		goto fail;
	}
	rc = -ENOMEM;
	az->path0 = strdup(strcmp(url.path, "/") ? url.path : "");
	az->base = sr_url_origin(&url);
	az->account = strdup(s->u.account);
	if (!az->path0 || !az->base || !az->account)
		goto fail;
	s->ops = &az_ops;
	s->impl = az;
	az = NULL;
	rc = 0;
fail:
	if (key)
		memset(key, 0, strlen(key));
	free(key);
	free(ep);
	free(name);
	sr_url_free(&url);
	az_free(az);
	return rc;
}
