/*
 * ckpt_bench_remote.c - the tier-3 figures of `spotrun ckpt bench
 * --remote s3://BUCKET/PREFIX`, each against a plain peer on the same
 * server in the same run:
 *
 *   upload_vs_raw          tier-3 upload of a committed checkpoint (its
 *                          shards as multipart uploads with Content-MD5,
 *                          then the manifest, then retention) / plain
 *                          parallel libcurl PUTs of the same bytes, read
 *                          from the same tier-2 files, as part-sized
 *                          objects (signed, unsigned payload; no MD5,
 *                          no multipart protocol, no retries).
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
#include <time.h>
#include <unistd.h>

#include "ckpt_bench.h"
#include "common/awscred.h"
#include "common/sigv4.h"
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
	uint8_t *dst;          /* GET destination */
	char key[256];
	uint64_t off, len;     /* file / object range */
	uint64_t done;
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
	if (n > j->len - j->done)
		return 0;
	memcpy(j->dst + j->done, b, n);
	j->done += n;
	return n;
}

static int run_one(struct job *j)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	struct sr_sigv4_creds cr = sr_awscred_view(&j->p->cred);
	char url[2500], path[1400], rh[80], **add = NULL;
	const char *extra[2] = { NULL, NULL };
	long st = 0;
	CURLcode cc;

	if (!c)
		return -ENOMEM;
	snprintf(path, sizeof path, "%s/%s", j->p->path, j->key);
	snprintf(url, sizeof url, "%s%s", j->p->base, path);
	if (j->fd < 0) {
		snprintf(rh, sizeof rh, "Range: bytes=%" PRIu64 "-%" PRIu64,
			 j->off, j->off + j->len - 1);
		extra[0] = rh;
	}
	{
		struct sr_sigv4_req r = {
			.method = j->fd >= 0 ? "PUT" : "GET", .host = j->p->host,
			.path = path, .headers = extra,
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
	j->done = 0;
	if (j->fd >= 0) {
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
	return cc == CURLE_OK && st / 100 == 2 && j->done == j->len ? 0 : -EIO;
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

static int peer_init(const char *uri, struct peer *p, char *why, size_t wn)
{
	struct objstore_uri u;
	struct sr_err e = { 0 };
	const char *hs;
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
	if (sr_aws_region(&region, &e))
		region = NULL;
	hs = strstr(ep, "://");
	snprintf(p->base, sizeof p->base, "%s", ep);
	snprintf(p->host, sizeof p->host, "%s", hs ? hs + 3 : ep);
	if (strchr(p->host, '/'))
		*strchr(p->host, '/') = 0;
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
	double up[100], upr[100], rest[100], restr[100];
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
				j->fd = fds[nf];
				j->off = off;
				j->len = (uint64_t)sz - off < cfg.part_bytes
					 ? (uint64_t)sz - off : cfg.part_bytes;
				snprintf(j->key, sizeof j->key, "s%d-%" PRIu64, s, off);
			}
			nf++;
		}
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
		if (have_peer && (upr[r] < 0 || restr[r] < 0)) {
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
			double ur = med(upr, reps), rrr = med(restr, reps);

			json_object_set_new(root, "upload_vs_raw", json_pack(
				"{s:f,s:f,s:f,s:I,s:s,s:f}", "ratio", ur / u,
				"upload_s", u, "raw_put_s", ur, "bytes",
				(json_int_t)bytes, "uri", uri, "goal_min", 0.9));
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
