/*
 * s3_mpu.c - S3's multipart calls: an object uploaded in parts
 * (CreateMultipartUpload, UploadPart in parallel, CompleteMultipartUpload;
 * a failed upload is aborted), a completion whose answer was lost told
 * apart by the upload's own token, and the cleanup of uploads a killed
 * uploader left (ListMultipartUploads under the prefix, each key checked
 * to be under it before its abort is sent).  The rest of S3 is s3.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3_int.h"
#include "common/log.h"
#include "common/random.h"
#include "common/sigv4.h"

/* The checksum header of bytes [off, off+n) of the source into c. */
static int src_checksum(const struct s3 *s3, const struct os_src *src,
			uint64_t off, uint64_t n, struct call *c)
{
	if (s3->crc32c)
		return os_crc32c_b64_src(src, off, n, c->crc);
	return os_md5_b64_src(src, off, n, c->md5);
}

/* PUT bytes [off, off+n) of the source: streamed from the file, or
 * straight from memory. */
static int put_body(struct objstore *s, struct call *c, const char *what,
		    const struct os_src *src, uint64_t off, uint64_t n,
		    struct os_resp *resp, struct sr_err *e)
{
	if (src->mem)
		return objstore__s3_do_req(s, c, "PUT", what, src->mem + off, n,
					   -1, 0, NULL, 0, 0, resp, e);
	return objstore__s3_do_req(s, c, "PUT", what, NULL, n, src->fd, off,
				   NULL, 0, 0, resp, e);
}

struct mpu {
	struct objstore *s;
	const char *fk, *path, *upload_id;
	const struct os_src *src;
	uint64_t size, part;
	size_t nparts;
	char (*etags)[160];
	char (*crcs)[9];      /* per part, with s3->crc32c */
	atomic_uint_fast64_t sent;
};

/* Read part i into memory so its MD5 can be sent ahead of the body, then
 * PUT it from that buffer (one part per thread in flight). */
static int upload_part(void *ud, size_t i, struct sr_err *e)
{
	struct mpu *m = ud;
	struct s3 *s3 = m->s->impl;
	uint64_t off = (uint64_t)i * m->part;
	uint64_t n = m->size - off < m->part ? m->size - off : m->part;
	struct os_resp resp = { 0 };
	char query[1200], what[512];
	struct call c = { .s3 = s3, .path = m->path, .query = query };
	int rc;

	if (m->s->gate)
		m->s->gate(m->s->gate_ud);
	/* the checksum first (one pass over the file range), then the body
	 * streams from the file: no part is held in memory */
	rc = src_checksum(s3, m->src, off, n, &c);
	if (rc)
		return sr_err_set(e, rc, "%s: reading part %zu: %s", m->fk, i + 1,
				  sr_strerror(rc));
	snprintf(query, sizeof query, "partNumber=%zu&uploadId=%s", i + 1,
		 m->upload_id);
	snprintf(what, sizeof what, "UploadPart %s #%zu", m->fk, i + 1);
	rc = put_body(m->s, &c, what, m->src, off, n, &resp, e);
	if (rc)
		goto out;
	if (!resp.etag[0]) {
		rc = sr_err_set(e, -SR_EHTTP, "%s: no ETag in the answer", what);
		goto out;
	}
	memcpy(m->etags[i], resp.etag, sizeof m->etags[i]);
	memcpy(m->crcs[i], c.crc, sizeof m->crcs[i]);
	atomic_fetch_add(&m->sent, n);
out:
	os_resp_free(&resp);
	return rc;
}

static int abort_upload(struct objstore *s, const char *fk, const char *path,
			const char *uid)
{
	struct call c = { .s3 = s->impl, .path = path };
	struct os_resp resp = { 0 };
	struct sr_err e = { 0 };
	char query[1100], what[512];
	atomic_int *saved = s->cancel;
	int rc;

	snprintf(query, sizeof query, "uploadId=%s", uid);
	c.query = query;
	snprintf(what, sizeof what, "AbortMultipartUpload %s", fk);
	s->cancel = NULL; /* an abort must go out even when cancelled */
	rc = objstore__s3_do_req(s, &c, "DELETE", what, NULL, 0, -1, 0, NULL, 0,
				 0, &resp, &e);
	s->cancel = saved;
	if (rc && rc != -SR_ENOTFOUND)
		sr_warn("objstore", "abort failed; retention will retry",
			"what=\"%s\" err=\"%s\"", what, sr_err_str(&e, rc));
	os_resp_free(&resp);
	return rc;
}

/* Upload ids are opaque but end up in query strings: encode them. */
static char *enc_id(const char *id)
{
	return sr_sigv4_uri_encode(id, strlen(id), 0);
}

struct done_check {
	struct objstore *s;
	const char *fk, *path, *token;
};

/* before_retry of a CompleteMultipartUpload: an earlier attempt whose
 * answer was lost may have completed it (a repeat then finds no upload:
 * S3 answers NoSuchUpload, some stores 500).  HEAD the key: carrying
 * this upload's token, it is done (-EALREADY ends the retries). */
static int completed_before(struct call *cc)
{
	const struct done_check *d = cc->retry_ud;
	struct call c = { .s3 = d->s->impl, .path = d->path, .query = "" };
	struct os_resp resp = { 0 };
	struct sr_err e = { 0 };
	char what[512];
	int rc;

	snprintf(what, sizeof what, "HeadObject %s", d->fk);
	rc = objstore__s3_do_req(d->s, &c, "HEAD", what, NULL, 0, -1, 0, NULL,
				 0, 0, &resp, &e);
	rc = rc == 0 && !strcmp(resp.token, d->token) ? -EALREADY : 0;
	os_resp_free(&resp);
	return rc;
}

int objstore__s3_put_src(struct objstore *s, const char *key,
			 const struct os_src *src, uint64_t size, uint64_t *sent,
			 struct sr_err *e)
{
	struct s3 *s3 = s->impl;
	struct mpu m;
	struct os_resp resp = { 0 };
	char *fk = NULL, *path = NULL, *uid = NULL, *euid = NULL, *xml = NULL;
	char what[512], query[1100];
	struct call c = { .s3 = s3, .query = "uploads" };
	char token[32];
	struct done_check dc = { .s = s, .token = token };
	size_t xl = 0;
	int rc = -ENOMEM;

	memset(&m, 0, sizeof m);
	fk = objstore__full_key(s, key);
	if (fk && size <= s->cfg.part_bytes) {
		/* one PutObject, streamed from the source after its
		 * checksum pass */
		path = objstore__s3_obj_path(s3, fk);
		if (!path)
			goto out;
		c.path = path;
		c.query = "";
		rc = src_checksum(s3, src, 0, size, &c);
		if (rc) {
			sr_err_set(e, rc, "%s: read failed: %s", key, sr_strerror(rc));
			goto out;
		}
		snprintf(what, sizeof what, "PutObject %s", fk);
		rc = put_body(s, &c, what, src, 0, size, &resp, e);
		if (rc == 0 && sent)
			*sent += size;
		goto out;
	}
	path = fk ? objstore__s3_obj_path(s3, fk) : NULL;
	if (!path)
		goto out;
	c.path = path;
	c.crc_algo = s3->crc32c;
	rc = sr_random_hex(token, 12);
	if (rc) {
		sr_err_set(e, rc, "%s: no random token: %s", fk, sr_strerror(rc));
		goto out;
	}
	c.token = token;
	snprintf(what, sizeof what, "CreateMultipartUpload %s", fk);
	rc = objstore__s3_do_req(s, &c, "POST", what, "", 0, -1, 0, NULL, 0, 0,
				 &resp, e);
	c.token = NULL;
	if (rc)
		goto out;
	uid = os_xml_text(resp.body, resp.len, "UploadId");
	if (!uid || !*uid) {
		rc = sr_err_set(e, -SR_EHTTP, "%s: no UploadId in the answer",
				what);
		goto out;
	}
	euid = enc_id(uid);
	if (!euid) {
		rc = -ENOMEM;
		goto out;
	}
	dc.fk = fk;
	dc.path = path;
	m.s = s;
	m.fk = fk;
	m.path = path;
	m.upload_id = euid;
	m.src = src;
	m.size = size;
	m.part = s->cfg.part_bytes;
	m.nparts = (size_t)((size + m.part - 1) / m.part);
	if (m.nparts > 10000) {
		rc = sr_err_set(e, -EFBIG, "%s: %" PRIu64 " bytes need more than "
				"10,000 parts of %" PRIu64 " bytes; raise "
				"SPOTRUN_OBJSTORE_PART_MB", fk, size, m.part);
		goto abort;
	}
	m.etags = calloc(m.nparts, sizeof *m.etags);
	m.crcs = calloc(m.nparts, sizeof *m.crcs);
	if (!m.etags || !m.crcs) {
		rc = -ENOMEM;
		goto abort;
	}
	rc = os_run_parallel(s->cfg.parallel, m.nparts, upload_part, &m,
			     s->cancel, e);
	if (rc)
		goto abort;
	if (s->gate)
		s->gate(s->gate_ud); /* the store joins the parts: heavy work */
	/* every part confirmed: the object becomes visible now, whole */
	{
		size_t cap = m.nparts * 270 + 128;
		char *p;

		xml = malloc(cap);
		if (!xml) {
			rc = -ENOMEM;
			goto abort;
		}
		p = xml;
		p += sprintf(p, "<CompleteMultipartUpload>");
		for (size_t i = 0; i < m.nparts; i++) {
			p += sprintf(p, "<Part><PartNumber>%zu</PartNumber>"
				     "<ETag>%s</ETag>", i + 1, m.etags[i]);
			if (m.crcs[i][0] && !s3->gcs)
				p += sprintf(p, "<ChecksumCRC32C>%s</ChecksumCRC32C>",
					     m.crcs[i]);
			p += sprintf(p, "</Part>");
		}
		p += sprintf(p, "</CompleteMultipartUpload>");
		xl = (size_t)(p - xml);
	}
	os_resp_free(&resp);
	snprintf(query, sizeof query, "uploadId=%s", euid);
	c.query = query;
	c.crc_algo = 0;
	c.ctype = "application/xml";
	c.attempts = 0;
	c.before_retry = completed_before;
	c.retry_ud = &dc;
	os_md5_b64(xml, xl, c.md5);
	snprintf(what, sizeof what, "CompleteMultipartUpload %s", fk);
	rc = objstore__s3_do_req(s, &c, "POST", what, xml, xl, -1, 0, NULL, 0,
				 0, &resp, e);
	/* S3 may answer 200 with an <Error> body when completion fails late */
	if (rc == 0 && resp.body && strstr(resp.body, "<Error>")) {
		char *code = os_xml_text(resp.body, resp.len, "Code");

		rc = sr_err_set(e, -SR_EHTTP, "%s: %s", what, code ? code : "error");
		free(code);
	}
	if (rc == -EALREADY) {
		sr_err_clear(e);
		rc = 0; /* completed by an attempt whose answer was lost */
	}
	if (rc)
		goto abort;
	if (sent)
		*sent += atomic_load(&m.sent);
	goto out;
abort:
	abort_upload(s, fk, path, euid);
out:
	os_resp_free(&resp);
	free(m.etags);
	free(m.crcs);
	free(xml);
	free(euid);
	free(uid);
	free(path);
	free(fk);
	return rc;
}

struct stale_ud {
	struct objstore *s;
	const char *under;    /* full-key prefix every aborted key starts with */
	int64_t older_ns;
	size_t n, outside;
};

static int abort_one(void *ud, const char *key, const char *uid)
{
	struct stale_ud *st = ud;
	const char *rel;
	char *path, *euid;

	if (!key || !uid)
		return 0;
	/* checked before anything is sent: under our prefix and `sub`, and
	 * a key our own calls would accept */
	rel = objstore__relative_key(st->s, key);
	if (!rel || strncmp(key, st->under, strlen(st->under)) ||
	    objstore_key_check(rel, NULL)) {
		st->outside++;
		return 0;
	}
	path = objstore__s3_obj_path(st->s->impl, key);
	euid = enc_id(uid);
	if (path && euid && abort_upload(st->s, key, path, euid) == 0)
		st->n++;
	free(path);
	free(euid);
	return 0;
}

int objstore__s3_abort_stale(struct objstore *s, const char *sub,
			     int64_t older_ns, size_t *n, struct sr_err *e)
{
	struct s3 *s3 = s->impl;
	struct stale_ud st = { .s = s, .older_ns = older_ns };
	struct call c = { .s3 = s3 };
	char *path = NULL, *query = NULL, *efk = NULL, *fk = NULL;
	char *kmark = NULL, *umark = NULL;
	int rc = -ENOMEM;

	(void)older_ns; /* see below */
	fk = objstore__full_key(s, sub ? sub : "");
	efk = fk ? sr_sigv4_uri_encode(fk, strlen(fk), 0) : NULL;
	if (!efk || asprintf(&path, "%s", objstore__s3_bucket_path(s3)) < 0) {
		path = NULL;
		goto out;
	}
	st.under = fk;
	c.path = path;
	/* Only one uploader writes a prefix, and it calls this before its
	 * first upload and after each commit, when none of its own is in
	 * flight; so every upload listed under it is an orphan of a killed
	 * process, whatever its age.  older_ns is kept for stores shared by
	 * writers. */
	for (;;) {
		struct os_resp resp = { 0 };
		char *ek = kmark ? sr_sigv4_uri_encode(kmark, strlen(kmark), 0)
				 : NULL;
		char *eu = umark ? sr_sigv4_uri_encode(umark, strlen(umark), 0)
				 : NULL;
		int more;

		free(query);
		query = NULL;
		if ((kmark && !ek) || (umark && !eu) ||
		    asprintf(&query, "%s%s%sprefix=%s%s%s%suploads=",
			     ek ? "key-marker=" : "", ek ? ek : "", ek ? "&" : "",
			     efk, eu ? "&upload-id-marker=" : "", eu ? eu : "",
			     "&") < 0) {
			free(ek);
			free(eu);
			query = NULL;
			rc = -ENOMEM;
			goto out;
		}
		free(ek);
		free(eu);
		c.query = query;
		rc = objstore__s3_do_req(s, &c, "GET", "ListMultipartUploads",
					 NULL, 0, -1, 0, NULL, 0, 16u << 20,
					 &resp, e);
		if (rc == -SR_EHTTP && resp.status == 501) {
			/* a store without the call (s3rver): nothing to list */
			os_resp_free(&resp);
			rc = 0;
			break;
		}
		if (rc == 0)
			rc = os_xml_each(resp.body, resp.len, "Upload", "Key",
					 "UploadId", abort_one, &st);
		free(kmark);
		free(umark);
		kmark = umark = NULL;
		more = 0;
		if (rc == 0 && resp.body) {
			char *t = os_xml_text(resp.body, resp.len, "IsTruncated");

			more = t && !strcmp(t, "true");
			free(t);
			if (more) {
				kmark = os_xml_text(resp.body, resp.len,
						    "NextKeyMarker");
				umark = os_xml_text(resp.body, resp.len,
						    "NextUploadIdMarker");
			}
		}
		os_resp_free(&resp);
		if (rc || !more || !kmark || !*kmark)
			break;
	}
	if (st.outside)
		sr_warn("objstore", "multipart uploads outside the prefix were "
			"listed; left alone", "uri=%s n=%zu", s->uri_str,
			st.outside);
	if (n)
		*n = st.n;
out:
	free(kmark);
	free(umark);
	free(efk);
	free(fk);
	free(query);
	free(path);
	return rc;
}
