/*
 * s3.c - Amazon S3 and S3-compatible stores (MinIO, Ceph RGW, R2, and the
 * Google Cloud Storage XML API with HMAC keys), over libcurl.
 *
 * Requests (REST API 2006-03-01), all signed with SigV4
 * (lib/common/sigv4.c) with an UNSIGNED-PAYLOAD body hash; the body's
 * integrity is carried by a checksum header the service checks: CRC32C
 * of shard data, as x-amz-checksum-crc32c on S3 and x-goog-hash:
 * crc32c= on GCS (the form Google's own Node.js SDK sends for XML API
 * parts).  CRC32C runs on the CPU's crc32 instruction, a small fraction
 * of MD5's cost per byte: the shard is read twice, once for the checksum
 * and once to send, and with MD5 the checksum pass was most of the
 * upload's CPU.  Content-MD5 for the small bodies, or everywhere with
 * SPOTRUN_OBJSTORE_CHECKSUM=md5 (a store without the newer headers):
 *     PutObject                PUT    /KEY                    checksum
 *     CreateMultipartUpload    POST   /KEY?uploads            x-amz-checksum-algorithm (S3)
 *     UploadPart               PUT    /KEY?partNumber=N&uploadId=U  checksum
 *     CompleteMultipartUpload  POST   /KEY?uploadId=U         <part ETags, CRCs (S3)>
 *     AbortMultipartUpload     DELETE /KEY?uploadId=U
 *     ListMultipartUploads     GET    /?uploads&prefix=P
 *     GetObject                GET    /KEY  Range: bytes=A-B
 *     ListObjectsV2            GET    /?list-type=2&prefix=P&continuation-token=T
 *     DeleteObjects            POST   /?delete                Content-MD5
 * (GCS has no DeleteObjects: objects are deleted one DELETE each.)
 *
 * Addressing: virtual-hosted (https://BUCKET.s3.REGION.amazonaws.com/KEY)
 * on AWS's own endpoint, path-style (ENDPOINT/BUCKET/KEY) when the
 * endpoint is overridden (AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, usual
 * for MinIO and friends), or as SPOTRUN_S3_ADDRESSING says.
 *
 * GCS reuses this code because its XML API is S3's protocol: same paths,
 * the same multipart calls, SigV4 with service "s3" and region "auto",
 * HMAC keys in place of AWS keys.  Where GCS differs (no DeleteObjects)
 * the code says so.
 *
 * The multipart calls and the cleanup of orphaned uploads are in
 * s3_mpu.c; what the two files share, in s3_int.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "s3_int.h"
#include "common/awscred.h"
#include "common/log.h"
#include "common/sigv4.h"
#include "common/url.h"

static void s3_free(void *p)
{
	struct s3 *s3 = p;

	if (!s3)
		return;
	free(s3->base);
	free(s3->host);
	free(s3->path0);
	free(s3->region);
	sr_awscred_free(&s3->cred);
	sr_awscred_cache_close(s3->aws);
	free(s3);
}

/* ---- one request --------------------------------------------------------------- */
static int sign(const struct os_req *rq, void *ud, struct sr_http_hdrs *hdrs,
		struct sr_err *e)
{
	struct call *c = ud;
	struct sr_sigv4_creds cr = sr_awscred_view(&c->s3->cred);
	const char *extra[7] = { 0 };
	char b1[64], b2[160], b3[160], b4[64], b5[96];
	char **add = NULL;
	int n = 0, rc;

	if (c->attempts++ > 0 && c->before_retry) {
		rc = c->before_retry(c);
		if (rc)
			return rc;
	}
	if (c->token) {
		snprintf(b5, sizeof b5, "%s: %s", c->s3->gcs ? GCS_TOKEN_HDR :
			 S3_TOKEN_HDR, c->token);
		extra[n++] = b5;
	}
	if (c->md5[0]) {
		snprintf(b1, sizeof b1, "Content-MD5: %s", c->md5);
		extra[n++] = b1;
	}
	if (c->crc[0]) {
		snprintf(b4, sizeof b4, c->s3->gcs ? "x-goog-hash: crc32c=%s"
			 : "x-amz-checksum-crc32c: %s", c->crc);
		extra[n++] = b4;
	} else if (c->crc_algo && !c->s3->gcs) {
		extra[n++] = "x-amz-checksum-algorithm: CRC32C";
	}
	if (c->range) {
		snprintf(b2, sizeof b2, "Range: %s", c->range);
		extra[n++] = b2;
	}
	if (c->ctype) {
		snprintf(b3, sizeof b3, "Content-Type: %s", c->ctype);
		extra[n++] = b3;
	}
	struct sr_sigv4_req r = {
		.method = rq->method, .host = c->s3->host, .path = c->path,
		.query = c->query, .headers = extra,
		.payload_hash = SR_SIGV4_UNSIGNED_PAYLOAD,
		.region = c->s3->region, .service = "s3", .when = time(NULL),
		.s3_path = 1, .add_content_sha256 = 1,
	};
	rc = c->s3->aws != NULL ? sr_awscred_cache_sign(c->s3->aws, &r, &add, e)
				: sr_sigv4_sign(&r, &cr, &add, e);
	if (rc)
		return rc;
	for (int i = 0; rc == 0 && i < n; i++)
		rc = sr_http_hdrs_add(hdrs, "%s", extra[i]);
	for (int i = 0; rc == 0 && add[i]; i++)
		rc = sr_http_hdrs_add(hdrs, "%s", add[i]);
	sr_sigv4_headers_free(add);
	return rc;
}

/* Path of a bucket-level request: "/BUCKET" path-style (no trailing
 * slash, as the SDKs send it), "/" virtual-hosted. */
const char *objstore__s3_bucket_path(const struct s3 *s3)
{
	return s3->path0[0] ? s3->path0 : "/";
}

/* Encoded path of an object key (full key, prefix included). */
char *objstore__s3_obj_path(const struct s3 *s3, const char *fullkey)
{
	char *enc = sr_sigv4_uri_encode(fullkey, strlen(fullkey), 1);
	char *p = NULL;

	if (enc && asprintf(&p, "%s/%s", s3->path0, enc) < 0)
		p = NULL;
	free(enc);
	return p;
}

/* Full key (*fk) and encoded path (*path) of key, both malloc'd (caller
 * frees); -ENOMEM. */
static int key_path(struct objstore *s, const char *key, char **fk,
		    char **path)
{
	*fk = objstore__full_key(s, key);
	*path = *fk ? objstore__s3_obj_path(s->impl, *fk) : NULL;
	return *path ? 0 : -ENOMEM;
}

/* Perform method on path?query; *resp must be freed by the caller.
 * Returns 0 with a 2xx, else the error (also for other statuses). */
int objstore__s3_do_req(struct objstore *s, struct call *c, const char *method,
			const char *what, const void *body, size_t blen, int fd,
			uint64_t foff, void *dst, size_t dlen, size_t max,
			struct os_resp *resp, struct sr_err *e)
{
	char *url = NULL;
	int rc;

	if (asprintf(&url, "%s%s%s%s", c->s3->base,
		     c->path[0] ? c->path : "/", c->query[0] ? "?" : "",
		     c->query) < 0)
		return -ENOMEM;
	struct os_req rq = {
		.method = method, .url = url, .what = what, .body = body,
		.body_len = blen, .body_fd = fd, .body_off = foff, .dst = dst,
		.dst_len = dlen, .max_resp = max, .sign = sign, .sign_ud = c,
		.sink = c->sink, .sink_ud = c->sink_ud,
	};
	rc = os_http(s, &rq, resp, e);
	if (rc == 0 && resp->status / 100 != 2)
		rc = os_status_err(&rq, resp, e);
	free(url);
	return rc;
}

/* ---- objects --------------------------------------------------------------------- */
static int s3_put(struct objstore *s, const char *key, const void *buf,
		  size_t len, struct sr_err *e)
{
	struct call c = { .s3 = s->impl, .query = "" };
	struct os_resp resp = { 0 };
	char *fk = NULL, *path = NULL, what[512];
	int rc = -ENOMEM;

	rc = key_path(s, key, &fk, &path);
	if (rc)
		goto out;
	c.path = path;
	os_md5_b64(buf, len, c.md5);
	snprintf(what, sizeof what, "PutObject %s", fk);
	rc = objstore__s3_do_req(s, &c, "PUT", what, buf ? buf : "", len, -1, 0,
				 NULL, 0, 0, &resp, e);
out:
	os_resp_free(&resp);
	free(path);
	free(fk);
	return rc;
}

static int s3_get_range(struct objstore *s, const char *key, uint64_t off,
			uint64_t len, void *dst, objstore_sink_fn sink, void *ud,
			struct sr_err *e)
{
	struct call c = { .s3 = s->impl, .query = "", .sink = sink,
			  .sink_ud = ud };
	struct os_resp resp = { 0 };
	char *fk = NULL, *path = NULL, what[512], range[64];
	int rc = -ENOMEM;

	rc = key_path(s, key, &fk, &path);
	if (rc)
		goto out;
	c.path = path;
	snprintf(range, sizeof range, "bytes=%" PRIu64 "-%" PRIu64, off,
		 off + len - 1);
	c.range = range;
	snprintf(what, sizeof what, "GetObject %s [%" PRIu64 ",+%" PRIu64 ")",
		 fk, off, len);
	rc = objstore__s3_do_req(s, &c, "GET", what, NULL, 0, -1, 0, dst, len,
				 0, &resp, e);
	if (rc == 0 && resp.len != len)
		rc = sr_err_set(e, -SR_ECORRUPT, "%s: got %zu bytes", what,
				resp.len);
out:
	os_resp_free(&resp);
	free(path);
	free(fk);
	return rc;
}

static int s3_get(struct objstore *s, const char *key, size_t max, char **out,
		  size_t *len, struct sr_err *e)
{
	struct call c = { .s3 = s->impl, .query = "" };
	struct os_resp resp = { 0 };
	char *fk = NULL, *path = NULL, what[512];
	int rc = -ENOMEM;

	rc = key_path(s, key, &fk, &path);
	if (rc)
		goto out;
	c.path = path;
	snprintf(what, sizeof what, "GetObject %s", fk);
	rc = objstore__s3_do_req(s, &c, "GET", what, NULL, 0, -1, 0, NULL, 0,
				 max, &resp, e);
	if (rc)
		goto out;
	if (!resp.body) {
		resp.body = strdup("");
		if (!resp.body) {
			rc = -ENOMEM;
			goto out;
		}
	}
	*out = resp.body;
	*len = resp.len;
	resp.body = NULL;
out:
	os_resp_free(&resp);
	free(path);
	free(fk);
	return rc;
}

struct list_ud {
	struct objstore *s;
	struct objstore_list *out;
	size_t outside;   /* listed keys not under the prefix (ignored) */
};

static int list_one(void *ud, const char *key, const char *size)
{
	struct list_ud *l = ud;
	const char *rel = key ? objstore__relative_key(l->s, key) : NULL;

	if (!rel) {
		l->outside++;
		return 0;
	}
	return objstore__list_add(l->out, rel, strlen(rel),
				  size ? strtoull(size, NULL, 10) : 0);
}

static int s3_list(struct objstore *s, const char *sub,
		   struct objstore_list *out, struct sr_err *e)
{
	struct s3 *s3 = s->impl;
	struct call c = { .s3 = s3 };
	struct list_ud lu = { .s = s, .out = out };
	char *fk = objstore__full_key(s, sub), *efk = NULL, *token = NULL;
	char *path = NULL, *query = NULL, what[512];
	int rc = -ENOMEM;

	if (!fk)
		goto out;
	efk = sr_sigv4_uri_encode(fk, strlen(fk), 0);
	if (asprintf(&path, "%s", objstore__s3_bucket_path(s3)) < 0)
		path = NULL;
	if (!efk || !path)
		goto out;
	c.path = path;
	snprintf(what, sizeof what, "ListObjectsV2 %s", fk);
	for (;;) {
		struct os_resp resp = { 0 };
		char *etok = token ? sr_sigv4_uri_encode(token, strlen(token), 0)
				   : NULL;

		free(query);
		query = NULL;
		if (token && !etok) {
			rc = -ENOMEM;
			goto out;
		}
		if (asprintf(&query, "%s%s%slist-type=2&prefix=%s",
			     etok ? "continuation-token=" : "", etok ? etok : "",
			     etok ? "&" : "", efk) < 0)
			query = NULL;
		free(etok);
		if (!query) {
			rc = -ENOMEM;
			goto out;
		}
		c.query = query;
		rc = objstore__s3_do_req(s, &c, "GET", what, NULL, 0, -1, 0,
					 NULL, 0, 64u << 20, &resp, e);
		if (rc == 0) {
			rc = os_xml_each(resp.body, resp.len, "Contents", "Key",
					 "Size", list_one, &lu);
			if (rc == -SR_EPARSE)
				sr_err_set(e, rc, "%s: answer is not XML", what);
		}
		free(token);
		token = NULL;
		if (rc == 0 && resp.body) {
			char *trunc = os_xml_text(resp.body, resp.len, "IsTruncated");

			if (trunc && !strcmp(trunc, "true"))
				token = os_xml_text(resp.body, resp.len,
						    "NextContinuationToken");
			free(trunc);
		}
		os_resp_free(&resp);
		if (rc || !token)
			break;
	}
	if (lu.outside)
		sr_warn("objstore", "listing returned keys outside the prefix; "
			"ignored", "uri=%s n=%zu", s->uri_str, lu.outside);
out:
	free(token);
	free(query);
	free(path);
	free(efk);
	free(fk);
	return rc;
}

static int s3_del(struct objstore *s, const char *const *keys, size_t n,
		  struct sr_err *e)
{
	struct s3 *s3 = s->impl;
	int rc = 0;

	for (size_t at = 0; rc == 0 && at < n;) {
		size_t batch = n - at > 1000 ? 1000 : n - at;
		struct os_resp resp = { 0 };
		struct call c = { .s3 = s3, .query = "delete",
				  .ctype = "application/xml" };
		char *xml = NULL, *path = NULL, what[256];
		size_t cap = 64, xl;

		if (s3->gcs) {
			/* GCS's XML API has no multi-object delete */
			char *fk = objstore__full_key(s, keys[at]);

			path = fk ? objstore__s3_obj_path(s3, fk) : NULL;
			if (!path) {
				free(fk);
				return -ENOMEM;
			}
			c.path = path;
			c.query = "";
			c.ctype = NULL;
			snprintf(what, sizeof what, "DeleteObject %s", fk);
			rc = objstore__s3_do_req(s, &c, "DELETE", what, NULL, 0,
						 -1, 0, NULL, 0, 0, &resp, e);
			if (rc == -SR_ENOTFOUND)
				rc = 0;
			os_resp_free(&resp);
			free(path);
			free(fk);
			at++;
			continue;
		}
		for (size_t i = 0; i < batch; i++)
			cap += (strlen(s->u.prefix) + strlen(keys[at + i])) * 6 + 40;
		xml = malloc(cap);
		if (asprintf(&path, "%s", objstore__s3_bucket_path(s3)) < 0)
			path = NULL;
		if (!xml || !path) {
			free(xml);
			free(path);
			return -ENOMEM;
		}
		xl = (size_t)sprintf(xml, "<Delete><Quiet>true</Quiet>");
		for (size_t i = 0; i < batch; i++) {
			char *fk = objstore__full_key(s, keys[at + i]);
			char *x = fk ? os_xml_escape(fk) : NULL;

			if (!x) {
				free(fk);
				free(xml);
				free(path);
				return -ENOMEM;
			}
			/* a key is text of the body: escaped, so that no key
			 * can close its element and name another object */
			xl += (size_t)sprintf(xml + xl, "<Object><Key>%s</Key>"
					      "</Object>", x);
			free(x);
			free(fk);
		}
		xl += (size_t)sprintf(xml + xl, "</Delete>");
		c.path = path;
		os_md5_b64(xml, xl, c.md5);
		snprintf(what, sizeof what, "DeleteObjects (%zu keys)", batch);
		rc = objstore__s3_do_req(s, &c, "POST", what, xml, xl, -1, 0,
					 NULL, 0, 0, &resp, e);
		if (rc == 0 && resp.body && strstr(resp.body, "<Error>")) {
			char *code = os_xml_text(resp.body, resp.len, "Code");
			char *key = os_xml_text(resp.body, resp.len, "Key");

			rc = sr_err_set(e, -SR_EHTTP, "%s: %s: %s", what,
					key ? key : "?", code ? code : "error");
			free(code);
			free(key);
		}
		os_resp_free(&resp);
		free(xml);
		free(path);
		at += batch;
	}
	return rc;
}

static const struct objstore_ops s3_ops = {
	.put = s3_put, .put_src = objstore__s3_put_src, .get_range = s3_get_range,
	.get = s3_get, .list = s3_list, .del = s3_del,
	.abort_stale = objstore__s3_abort_stale, .free_impl = s3_free,
};

/* ---- opening ------------------------------------------------------------------------ */
static int load_gcs(struct s3 *s3, struct sr_err *e)
{
	const char *ak = getenv("SPOTRUN_GCS_HMAC_ACCESS_KEY_ID");
	const char *sk = getenv("SPOTRUN_GCS_HMAC_SECRET");

	if (!ak || !*ak || !sk || !*sk)
		return sr_err_set(e, -EACCES, "gs://: no HMAC key: set "
				  "SPOTRUN_GCS_HMAC_ACCESS_KEY_ID and "
				  "SPOTRUN_GCS_HMAC_SECRET (Cloud Storage > "
				  "Settings > Interoperability)");
	s3->cred.access_key_id = strdup(ak);
	s3->cred.secret_access_key = strdup(sk);
	snprintf(s3->cred.source, sizeof s3->cred.source, "environment");
	sr_log_secret(sk);
	s3->region = strdup("auto");
	if (!s3->cred.access_key_id || !s3->cred.secret_access_key || !s3->region)
		return -ENOMEM;
	return 0;
}

/* The endpoint: http(s)://host[:port], nothing more (a path would have
 * to be signed; user:password@ has no use: the keys sign). */
static int endpoint_split(const char *endpoint, struct sr_url *url,
			  struct sr_err *e)
{
	int rc = sr_url_parse_http(endpoint, "S3 endpoint", url, e);

	if (rc)
		return rc;
	if (url->user)
		rc = sr_err_set(e, -EINVAL, "S3 endpoint: user:password@ is not "
				"used (the access keys sign each request); "
				"remove it");
	else if (strcmp(url->path, "/") || url->query || url->fragment)
		rc = sr_err_set(e, -EINVAL, "S3 endpoint %s: a path is not "
				"supported", endpoint);
	if (rc)
		sr_url_free(url);
	return rc;
}

int objstore__s3_open(struct objstore *s, struct sr_err *e)
{
	struct s3 *s3 = calloc(1, sizeof *s3);
	const char *addr = getenv("SPOTRUN_S3_ADDRESSING");
	struct sr_url url = { .port = -1 };
	struct in_addr a4;
	char *endpoint = NULL;
	int custom = 0, virt, rc;

	if (!s3)
		return -ENOMEM;
	s3->gcs = s->u.kind == OBJSTORE_GCS;
	{
		const char *ck = getenv("SPOTRUN_OBJSTORE_CHECKSUM");

		if (ck && *ck && strcmp(ck, "crc32c") && strcmp(ck, "md5")) {
			rc = sr_err_set(e, -EINVAL, "SPOTRUN_OBJSTORE_CHECKSUM="
					"'%.40s': expected crc32c or md5", ck);
			goto fail;
		}
		s3->crc32c = !(ck && !strcmp(ck, "md5"));
	}
	if (s3->gcs) {
		const char *ep = getenv("SPOTRUN_GCS_ENDPOINT");

		rc = load_gcs(s3, e);
		if (rc)
			goto fail;
		custom = ep && *ep;
		endpoint = strdup(custom ? ep : "https://storage.googleapis.com");
		if (!endpoint) {
			rc = -ENOMEM;
			goto fail;
		}
	} else {
		struct sr_err re = { 0 };

		rc = sr_awscred_cache_open(&s3->aws, e);
		if (rc) {
			sr_err_prefix(e, "%s: no AWS credentials", s->uri_str);
			rc = rc == -ENOMEM ? rc : -EACCES;
			goto fail;
		}
		if (sr_aws_region(&s3->region, &re)) {
			s3->region = strdup("us-east-1");
			if (!s3->region) {
				rc = -ENOMEM;
				goto fail;
			}
		}
		rc = sr_aws_endpoint("S3", "s3", s3->region, &endpoint, &custom, e);
		if (rc)
			goto fail;
	}
	while (endpoint[0] && endpoint[strlen(endpoint) - 1] == '/')
		endpoint[strlen(endpoint) - 1] = 0;
	rc = endpoint_split(endpoint, &url, e);
	if (rc)
		goto fail;
	virt = !custom;
	if (addr && !strcmp(addr, "path"))
		virt = 0;
	else if (addr && !strcmp(addr, "virtual"))
		virt = 1;
	if (virt && strchr(s->u.bucket, '.') && !strcmp(url.scheme, "https"))
		virt = 0; /* a dotted bucket breaks the TLS wildcard */
	if (url.host[0] == '[' || inet_pton(AF_INET, url.host, &a4) == 1)
		virt = 0; /* no BUCKET.<IP address> */
	if (virt) {
		struct sr_url vh = url;

		vh.host = NULL;
		if (asprintf(&vh.host, "%s.%s", s->u.bucket, url.host) < 0)
			vh.host = NULL;
		s3->host = vh.host ? sr_url_authority(&vh) : NULL;
		s3->base = vh.host ? sr_url_origin(&vh) : NULL;
		free(vh.host);
		if (!s3->host || !s3->base || !(s3->path0 = strdup(""))) {
			rc = -ENOMEM;
			goto fail;
		}
	} else {
		char *eb = sr_sigv4_uri_encode(s->u.bucket, strlen(s->u.bucket), 0);

		s3->host = sr_url_authority(&url);
		s3->base = sr_url_origin(&url);
		if (!eb || asprintf(&s3->path0, "/%s", eb) < 0)
			s3->path0 = NULL;
		free(eb);
		if (!s3->host || !s3->base || !s3->path0) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	sr_url_free(&url);
	free(endpoint);
	s->ops = &s3_ops;
	s->impl = s3;
	return 0;
fail:
	sr_url_free(&url);
	free(endpoint);
	s3_free(s3);
	return rc;
}
