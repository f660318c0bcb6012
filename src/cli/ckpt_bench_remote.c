/*
 * ckpt_bench_remote.c - the tier-3 figures of `spotrun ckpt bench
 * --remote s3://BUCKET/PREFIX`, each against a plain peer on the same
 * server in the same run:
 *
 *   upload_vs_raw          tier-3 upload of a committed checkpoint (its
 *                          shards as multipart uploads with a checksum
 *                          per part, then the manifest, then retention)
 *                          / a plain multipart upload of the same bytes
 *                          from the same tier-2 files into one object per
 *                          shard: CreateMultipartUpload, the parts as
 *                          parallel libcurl PUTs, CompleteMultipartUpload
 *                          (signed, unsigned payload; no checksum, no
 *                          retries, no manifest, no retention).  The
 *                          peer makes the same objects as ours: on a
 *                          store that assembles parts by copying them
 *                          (s3rver) a multipart upload costs the server
 *                          a second pass over the bytes, which a peer of
 *                          part-sized single PUTs would not pay; that
 *                          peer's time is reported too (raw_put_objects_s,
 *                          ratio_vs_objects).
 *   remote_restore_vs_raw  spotckpt_restore_cb from the URI (list, manifest,
 *                          headers, parallel ranged GETs into the
 *                          destination, XXH3 of every tensor) / plain
 *                          parallel ranged GETs of the same bytes into
 *                          the same buffer (the mean of one run right
 *                          before and one right after ours).
 * Ratios are throughput ours / peer (goal >= 0.9).  Both sides use
 * SPOTRUN_OBJSTORE_PARALLEL requests in flight and SPOTRUN_OBJSTORE_PART_MB
 * parts.  The peer speaks S3 only (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL
 * path-style, else the AWS endpoint); other schemes report no peer.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ckpt_bench.h"
#include "common/awscred.h"
#include "common/sigv4.h"
#include "common/url.h"
#include "objstore/objstore.h"

struct peer {
	char base[1024];       /* endpoint, no trailing '/' */
	char host[256];        /* its host[:port] */
	char path[1024];       /* /bucket/prefix/bench-raw, encoded */
	char region[64];
	struct sr_awscred cred;
};

struct job {
	const struct peer *p;
	int fd;                /* PUT source, or -1 */
	uint8_t *dst;          /* GET destination, or a POST's answer */
	char key[256];
	int shard;             /* index of the shard file */
	char query[640];       /* "" or partNumber=N&uploadId=U */
	const char *method;    /* NULL: PUT with fd, else GET */
	const char *body;      /* a POST's body */
	uint64_t off, len;     /* file / object range; answer capacity */
	uint64_t done, bsent;
	char etag[160];        /* a PUT's ETag */
};

struct jobs {
	struct job *v;
	size_t n;
	size_t next;
	int failed;
	pthread_mutex_t mu;
};

static size_t rd(char *b, size_t sz, size_t nm, void *ud)
{
	struct job *j = ud;
	size_t want = sz * nm;
	ssize_t got;

	if (j->body) {
		size_t left = strlen(j->body) - (size_t)j->bsent;

		want = want < left ? want : left;
		memcpy(b, j->body + j->bsent, want);
		j->bsent += want;
		return want;
	}
	if (want > j->len - j->done)
		want = (size_t)(j->len - j->done);
	if (!want)
		return 0;
	got = pread(j->fd, b, want, (off_t)(j->off + j->done));
	if (got <= 0)
		return CURL_READFUNC_ABORT;
	j->done += (uint64_t)got;
	return (size_t)got;
}

static size_t wr(char *b, size_t sz, size_t nm, void *ud)
{
	struct job *j = ud;
	size_t n = sz * nm;

	if (j->fd >= 0)
		return n; /* a PUT's answer body */
	if (j->method && n >= j->len - j->done)
		return 0; /* a POST's answer larger than its buffer */
	if (n > j->len - j->done)
		return 0;
	memcpy(j->dst + j->done, b, n);
	j->done += n;
	return n;
}

static size_t hdr(char *b, size_t sz, size_t nm, void *ud)
{
	struct job *j = ud;
	size_t n = sz * nm, k = n;

	while (k && (b[k - 1] == '\r' || b[k - 1] == '\n'))
		k--;
	if (k > 6 && !strncasecmp(b, "ETag: ", 6) && k - 6 < sizeof j->etag) {
		memcpy(j->etag, b + 6, k - 6);
		j->etag[k - 6] = 0;
	}
	return n;
}

static int run_one(struct job *j)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	struct sr_sigv4_creds cr = sr_awscred_view(&j->p->cred);
	char url[3200], path[1400], rh[80], **add = NULL;
	const char *extra[2] = { NULL, NULL };
	const char *method = j->method ? j->method : j->fd >= 0 ? "PUT" : "GET";
	long st = 0;
	CURLcode cc;

	if (!c)
		return -ENOMEM;
	snprintf(path, sizeof path, "%s/%s", j->p->path, j->key);
	snprintf(url, sizeof url, "%s%s%s%s", j->p->base, path,
		 j->query[0] ? "?" : "", j->query);
	if (j->fd < 0 && !j->method) {
		snprintf(rh, sizeof rh, "Range: bytes=%" PRIu64 "-%" PRIu64,
			 j->off, j->off + j->len - 1);
		extra[0] = rh;
	}
	{
		struct sr_sigv4_req r = {
			.method = method, .host = j->p->host,
			.path = path, .query = j->query, .headers = extra,
			.payload_hash = SR_SIGV4_UNSIGNED_PAYLOAD,
			.region = j->p->region, .service = "s3",
			.when = time(NULL), .s3_path = 1,
			.add_content_sha256 = 1,
		};

		if (sr_sigv4_sign(&r, &cr, &add, NULL)) {
			curl_easy_cleanup(c);
			return -EINVAL;
		}
	}
	for (int i = 0; add[i]; i++)
		h = curl_slist_append(h, add[i]);
	sr_sigv4_headers_free(add);
	if (extra[0])
		h = curl_slist_append(h, extra[0]);
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wr);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, hdr);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, j);
	j->done = j->bsent = 0;
	j->etag[0] = 0;
	if (j->method) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, rd);
		curl_easy_setopt(c, CURLOPT_READDATA, j);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)strlen(j->body));
	} else if (j->fd >= 0) {
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, rd);
		curl_easy_setopt(c, CURLOPT_READDATA, j);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)j->len);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (j->method && j->done < j->len)
		j->dst[j->done] = 0;
	return cc == CURLE_OK && st / 100 == 2 &&
	       (j->method || j->done == j->len) ? 0 : -EIO;
}

static void *worker(void *arg)
{
	struct jobs *js = arg;

	for (;;) {
		size_t i;

		pthread_mutex_lock(&js->mu);
		i = js->failed ? js->n : js->next++;
		pthread_mutex_unlock(&js->mu);
		if (i >= js->n)
			return NULL;
		if (run_one(&js->v[i])) {
			pthread_mutex_lock(&js->mu);
			js->failed = 1;
			pthread_mutex_unlock(&js->mu);
		}
	}
}

/* Run every job over `par` threads; seconds, or -1 on a failure. */
static double run_jobs(struct job *v, size_t n, int par)
{
	struct jobs js = { .v = v, .n = n };
	pthread_t th[64];
	double t0 = bench_now();
	int nth = 0;

	pthread_mutex_init(&js.mu, NULL);
	for (int i = 0; i < par && i < 64; i++)
		if (pthread_create(&th[nth], NULL, worker, &js) == 0)
			nth++;
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&js.mu);
	return js.failed || nth == 0 ? -1 : bench_now() - t0;
}

/* The text of <name> in doc, into out (cap bytes); 0, or -1 if absent. */
static int xml_field(const char *doc, const char *name, char *out, size_t cap)
{
	char open[64], close[64];
	const char *a, *b;

	snprintf(open, sizeof open, "<%s>", name);
	snprintf(close, sizeof close, "</%s>", name);
	a = strstr(doc, open);
	b = a ? strstr(a, close) : NULL;
	if (!b || (size_t)(b - a) - strlen(open) >= cap)
		return -1;
	a += strlen(open);
	memcpy(out, a, (size_t)(b - a));
	out[b - a] = 0;
	return 0;
}

/* One POST (CreateMultipartUpload, CompleteMultipartUpload) of key with
 * body; the answer goes to ans (cap bytes). */
static int post(const struct peer *p, const char *key, const char *query,
		const char *body, char *ans, size_t cap)
{
	struct job j = { .p = p, .fd = -1, .dst = (uint8_t *)ans, .len = cap,
			 .method = "POST", .body = body };

	snprintf(j.key, sizeof j.key, "%s", key);
	snprintf(j.query, sizeof j.query, "%s", query);
	return run_one(&j);
}

/* The plain multipart peer: per shard, CreateMultipartUpload, its parts
 * (jobs[first..first+n) of the same key) over `par` threads, then
 * CompleteMultipartUpload.  Shards one after another, as ours go.
 * Seconds, or -1 on a failure. */
static double run_multipart(const struct peer *p, struct job *v, size_t nj,
			    int par)
{
	static char ans[1 << 16];
	double t0 = bench_now();

	for (size_t first = 0; first < nj;) {
		size_t n = 1;
		char uid[512], *euid, *xml, *x, key[64];

		while (first + n < nj && v[first + n].shard == v[first].shard)
			n++;
		snprintf(key, sizeof key, "s%d", v[first].shard);
		if (post(p, key, "uploads", "", ans, sizeof ans) ||
		    xml_field(ans, "UploadId", uid, sizeof uid))
			return -1;
		euid = sr_sigv4_uri_encode(uid, strlen(uid), 0);
		if (!euid)
			return -1;
		snprintf(uid, sizeof uid, "%s", euid);
		free(euid);
		for (size_t i = 0; i < n; i++) {
			snprintf(v[first + i].query, sizeof v[first + i].query,
				 "partNumber=%zu&uploadId=%s", i + 1, uid);
			snprintf(v[first + i].key, sizeof v[first + i].key, "%s",
				 key);
		}
		if (run_jobs(v + first, n, par) < 0)
			return -1;
		xml = malloc(n * 240 + 64);
		if (!xml)
			return -1;
		x = xml + sprintf(xml, "<CompleteMultipartUpload>");
		for (size_t i = 0; i < n; i++)
			x += sprintf(x, "<Part><PartNumber>%zu</PartNumber><ETag>"
				     "%s</ETag></Part>", i + 1, v[first + i].etag);
		sprintf(x, "</CompleteMultipartUpload>");
		{
			char q[600];
			int rc;

			snprintf(q, sizeof q, "uploadId=%s", uid);
			rc = post(p, key, q, xml, ans, sizeof ans);
			free(xml);
			if (rc || strstr(ans, "<Error>"))
				return -1;
		}
		for (size_t i = 0; i < n; i++) {
			v[first + i].query[0] = 0;
			snprintf(v[first + i].key, sizeof v[first + i].key,
				 "s%d-%" PRIu64, v[first + i].shard, v[first + i].off);
		}
		first += n;
	}
	return bench_now() - t0;
}

static int peer_init(const char *uri, struct peer *p, char *why, size_t wn)
{
	struct objstore_uri u;
	struct sr_err e = { 0 };
	struct sr_url url;
	char *auth, *origin;
	const char *ep = getenv("AWS_ENDPOINT_URL_S3");
	char *region = NULL;
	int rc;

	if (!ep || !*ep)
		ep = getenv("AWS_ENDPOINT_URL");
	rc = objstore_uri_parse(uri, &u, &e);
	if (rc || u.kind != OBJSTORE_S3 || !ep || !*ep) {
		snprintf(why, wn, "the raw peer needs an s3:// URI and "
			 "AWS_ENDPOINT_URL_S3 (a path-style endpoint)");
		objstore_uri_free(&u);
		return -1;
	}
	rc = sr_awscred_resolve(&p->cred, &e);
	if (rc) {
		snprintf(why, wn, "%s", sr_err_str(&e, rc));
		objstore_uri_free(&u);
		return -1;
	}
	rc = sr_url_parse_http(ep, "AWS_ENDPOINT_URL_S3", &url, &e);
	auth = rc ? NULL : sr_url_authority(&url);
	origin = rc ? NULL : sr_url_origin(&url);
	sr_url_free(&url);
	if (!auth || !origin) {
		snprintf(why, wn, "%s", rc ? sr_err_str(&e, rc) : "out of memory");
		free(auth);
		free(origin);
		objstore_uri_free(&u);
		return -1;
	}
	if (sr_aws_region(&region, &e))
		region = NULL;
	snprintf(p->base, sizeof p->base, "%s", origin);
	snprintf(p->host, sizeof p->host, "%s", auth);
	free(auth);
	free(origin);
	snprintf(p->path, sizeof p->path, "/%s/%s%sbench-raw", u.bucket,
		 u.prefix, u.prefix[0] ? "/" : "");
	snprintf(p->region, sizeof p->region, "%s", region ? region : "us-east-1");
	free(region);
	objstore_uri_free(&u);
	return 0;
}

struct lk {
	uint8_t *buf;
	const struct bench_state *st;
};

/* Tensor i of the bench state goes to its packed offset in buf. */
static int lookup(void *ud, const struct spotckpt_tensor_info *info,
		  struct spotckpt_dest *d)
{
	struct lk *l = ud;
	uint64_t off = 0;

	for (size_t i = 0; i < l->st->n; i++) {
		if (!strcmp(l->st->name[i], info->name)) {
			d->ptr = l->buf + off;
			d->len = l->st->nbytes[i];
			d->device = SPOTCKPT_DEV_CPU;
			return 0;
		}
		off += l->st->nbytes[i];
	}
	return 1;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double med(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return v[n / 2];
}

/* An engine on tier2 holding st, with tier 3 to uri. */
static int open_t3(const struct bench_state *st, const char *tier2,
		   const char *uri, struct spotckpt **out)
{
	struct spotckpt_opts eo;
	int rc;

	spotckpt_opts_init(&eo);
	eo.dir = tier2;
	rc = spotckpt_open(&eo, out);
	for (size_t i = 0; rc == 0 && i < st->n; i++) {
		int64_t shape[1] = { (int64_t)(st->nbytes[i] / 4) };

		rc = spotckpt_register(*out, st->name[i], st->ptr[i], SPOTCKPT_F32,
				       1, shape, SPOTCKPT_DEV_CPU);
	}
	if (rc == 0)
		rc = spotckpt_set_remote(*out, uri);
	return rc;
}

int bench_remote(const struct bench_state *st, const char *uri,
		 const char *wdir, int reps, uint8_t *buf, uint64_t cap,
		 json_t *root)
{
	struct spotckpt *e = NULL;
	char tier2[4200];
	struct objstore_cfg cfg;
	struct spotckpt_remote_stats rs;
	struct spotckpt_stats es;
	struct peer p;
	struct job *jobs = NULL;
	struct lk l = { .buf = buf, .st = st };
	double up[100], upr[100], upm[100], rest[100], restr[100];
	char why[512] = "", msg[512];
	int fds[64], nf = 0, rc = 0, have_peer;
	size_t nj = 0;
	int64_t step;

	memset(&p, 0, sizeof p);
	objstore_cfg_default(&cfg);
	have_peer = peer_init(uri, &p, why, sizeof why) == 0;
	snprintf(tier2, sizeof tier2, "%s/tier3-bench", wdir);
	rc = open_t3(st, tier2, uri, &e);
	if (reps > 100)
		reps = 100;
	for (int r = 0; r < reps && rc == 0; r++) {
		char dir[4300];
		int64_t got = -1;

		/* ours: the upload of one committed checkpoint */
		step = 1000 + r;
		rc = spotckpt_save(e, step, NULL, 0, NULL);
		if (rc == 0)
			rc = spotckpt_wait(e);
		if (rc == 0)
			rc = spotckpt_remote_wait(e, step, 0, NULL);
		if (rc)
			break;
		spotckpt_remote_stats(e, &rs, msg, sizeof msg);
		spotckpt_stats(e, &es);
		up[r] = (double)rs.last_upload_ns / 1e9;
		/* peer: the same bytes from the same files */
		snprintf(dir, sizeof dir, "%s/step-%08" PRId64, tier2, step);
		nf = 0;
		nj = 0;
		free(jobs);
		jobs = calloc(4096, sizeof *jobs);
		for (int s = 0; jobs && s < 64; s++) {
			char path[4400];
			off_t sz;

			snprintf(path, sizeof path, "%s/shard-%05d.safetensors", dir, s);
			fds[nf] = open(path, O_RDONLY | O_CLOEXEC);
			if (fds[nf] < 0)
				break;
			sz = lseek(fds[nf], 0, SEEK_END);
			for (uint64_t off = 0; off < (uint64_t)sz && nj < 4096;
			     off += cfg.part_bytes) {
				struct job *j = &jobs[nj++];

				j->p = &p;
				j->shard = s;
				j->fd = fds[nf];
				j->off = off;
				j->len = (uint64_t)sz - off < cfg.part_bytes
					 ? (uint64_t)sz - off : cfg.part_bytes;
				snprintf(j->key, sizeof j->key, "s%d-%" PRIu64, s, off);
			}
			nf++;
		}
		/* tier 2 wrote the shards with O_DIRECT, so ours read them
		 * from the disk; each peer does too */
		bench_drop_cache(dir);
		upm[r] = have_peer && nj ? run_multipart(&p, jobs, nj,
							 cfg.parallel) : NAN;
		bench_drop_cache(dir);
		upr[r] = have_peer && nj ? run_jobs(jobs, nj, cfg.parallel) : NAN;
		/* peer GETs before and after ours (same load, same cache
		 * state on average): ranged GETs of the raw objects into buf */
		for (size_t i = 0, at = 0; i < nj; i++) {
			jobs[i].fd = -1;
			jobs[i].dst = at + jobs[i].len <= cap ? buf + at : buf;
			at += jobs[i].len;
			jobs[i].off = 0;
		}
		restr[r] = have_peer && nj ? run_jobs(jobs, nj, cfg.parallel) : NAN;
		/* ours: restore from the store into buf */
		{
			double t0 = bench_now();

			rc = spotckpt_restore_cb(uri, step, lookup, &l, &got);
			rest[r] = bench_now() - t0;
			if (rc == 0 && got != step)
				rc = -EIO;
		}
		if (have_peer && nj && restr[r] >= 0) {
			double again = run_jobs(jobs, nj, cfg.parallel);

			restr[r] = again < 0 ? -1 : (restr[r] + again) / 2;
		}
		for (int i = 0; i < nf; i++)
			close(fds[i]);
		if (have_peer && (upm[r] < 0 || upr[r] < 0 || restr[r] < 0)) {
			snprintf(why, sizeof why, "a raw PUT or GET failed");
			have_peer = 0;
		}
	}
	free(jobs);
	sr_awscred_free(&p.cred);
	if (rc) {
		fprintf(stderr, "spotrun ckpt: bench: tier 3 (%s): %s: %s\n", uri,
			spotckpt_strerror(rc), spotckpt_errmsg());
		spotckpt_close(e);
		return rc;
	}
	spotckpt_close(e);
	{
		double u = med(up, reps), rr = med(rest, reps);
		uint64_t bytes = es.last_write_bytes;

		if (have_peer) {
			double um = med(upm, reps), ur = med(upr, reps);
			double rrr = med(restr, reps);

			json_object_set_new(root, "upload_vs_raw", json_pack(
				"{s:f,s:f,s:f,s:f,s:f,s:I,s:s,s:f,s:s}", "ratio",
				um / u, "upload_s", u, "raw_put_s", um,
				"raw_put_objects_s", ur, "ratio_vs_objects", ur / u,
				"bytes", (json_int_t)bytes, "uri", uri, "goal_min",
				0.9, "peer", "plain multipart upload of each "
				"shard (parallel curl PUTs of its parts); "
				"raw_put_objects_s: the parts as separate objects"));
			json_object_set_new(root, "remote_restore_vs_raw", json_pack(
				"{s:f,s:f,s:f,s:I,s:s,s:f}", "ratio", rrr / rr,
				"restore_s", rr, "raw_get_s", rrr, "bytes",
				(json_int_t)bytes, "uri", uri, "goal_min", 0.9));
		} else {
			json_object_set_new(root, "upload_vs_raw", json_pack(
				"{s:f,s:s}", "upload_s", u, "reason", why));
			json_object_set_new(root, "remote_restore_vs_raw", json_pack(
				"{s:f,s:s}", "restore_s", rr, "reason", why));
		}
	}
	return 0;
}

double bench_raw_put_files(const char *uri, const char *const *paths,
			   size_t n, char *why, size_t wn)
{
	struct objstore_cfg cfg;
	struct peer p;
	struct job *jobs = calloc(16384, sizeof *jobs);
	int *fds = calloc(n ? n : 1, sizeof *fds);
	size_t nj = 0;
	double t = -1;

	memset(&p, 0, sizeof p);
	objstore_cfg_default(&cfg);
	if (!jobs || !fds) {
		snprintf(why, wn, "out of memory");
		goto out;
	}
	if (peer_init(uri, &p, why, wn))
		goto out;
	for (size_t f = 0; f < n; f++) {
		off_t sz;

		fds[f] = open(paths[f], O_RDONLY | O_CLOEXEC);
		if (fds[f] < 0) {
			snprintf(why, wn, "%s: %s", paths[f], strerror(errno));
			goto out;
		}
		sz = lseek(fds[f], 0, SEEK_END);
		for (uint64_t off = 0; off < (uint64_t)sz && nj < 16384;
		     off += cfg.part_bytes) {
			struct job *j = &jobs[nj++];

			j->p = &p;
			j->shard = (int)f;
			j->fd = fds[f];
			j->off = off;
			j->len = (uint64_t)sz - off < cfg.part_bytes ?
				 (uint64_t)sz - off : cfg.part_bytes;
		}
	}
	t = nj ? run_multipart(&p, jobs, nj, cfg.parallel) : 0;
	if (t < 0)
		snprintf(why, wn, "a raw PUT failed");
out:
	for (size_t f = 0; fds && f < n; f++) {
		if (fds[f] > 0)
			close(fds[f]);
	}
	free(fds);
	free(jobs);
	sr_awscred_free(&p.cred);
	return t;
}
