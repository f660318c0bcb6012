/*
 * tier3.c - the uploader: committed tier-2 checkpoints go to an object
 * store in the background.
 *
 * COMMIT PROTOCOL on a store that has no rename.  For step N, under
 * PREFIX/step-NNNNNNNN/:
 *   1. every shard file, as one object each: a multipart upload whose
 *      parts (SPOTRUN_OBJSTORE_PART_MB) go out in parallel, each with a
 *      checksum (CRC32C, Content-MD5 on Azure) so the store rejects a
 *      damaged part; the object exists
 *      only once CompleteMultipartUpload (Azure: Put Block List) accepted
 *      every part, and a failed upload is aborted;
 *   2. manifest.json, last, in a single PUT.  This is the commit point: a
 *      single-object PUT is atomic on every store, and it is issued only
 *      after step 1 confirmed every shard.
 *   3. retention: for every committed step beyond the newest `keep` whose
 *      manifest is sound, the manifest is deleted first, then its shards,
 *      so a manifest is never visible without its shards.  Shards of steps older than the newest
 *      committed one that have no manifest (an upload killed between 1
 *      and 2) are deleted, and multipart uploads left by a killed
 *      uploader are aborted (ListMultipartUploads).
 * A reader (remote.c) lists the prefix, considers only steps with a
 * manifest, and takes the newest whose manifest parses and whose shards
 * exist with the recorded sizes and header checksums; tensor data is
 * checked against the manifest's XXH3 as it is read.
 *
 * Why a kill -9 at any point is safe: before 2 nothing refers to the new
 * shards, so readers see the previous checkpoint; after 2 every object the
 * manifest names exists whole.  Retention never removes the newest
 * committed step, and removes a manifest before what it names.
 *
 * SCHEDULING.  One uploader thread.  offer(N) records N as pending
 * (replacing an older pending step: "superseded") and returns at once, so
 * training never waits.  The thread takes the pending step, opens its
 * manifest and shard files (the open descriptors keep the data alive if
 * tier-2 retention deletes the directory meanwhile), uploads, commits,
 * applies retention.  flush(N, deadline) is the preemption path: it
 * cancels an upload of an older step, makes N pending, and waits.
 *
 *   state    pending=-1,busy=-1 --offer--> pending=N --thread--> busy=N
 *   busy=N   --done--> uploaded=max(uploaded,N) or failed; busy=-1
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tier3.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"

void (*objstore__tier3_test_point)(const char *what, int64_t step);

struct objstore_tier3 {
	struct objstore *s;
	char *dir;
	int keep;
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	int64_t pending, busy;
	atomic_int cancel;
	struct objstore_tier3_stats st;
};

static void point(const char *what, int64_t step)
{
	if (objstore__tier3_test_point)
		objstore__tier3_test_point(what, step);
}

/* ---- one upload ------------------------------------------------------------ */
static int upload_step(struct objstore_tier3 *t, int64_t step, uint64_t *bytes,
		       struct sr_err *e)
{
	struct ckpt_manifest m = { 0 };
	char dir[4096], path[4200], key[256], *mbuf = NULL;
	size_t mlen = 0;
	int *fds = NULL, rc;

	memset(&m, 0, sizeof m);
	snprintf(dir, sizeof dir, "%s/step-%08" PRId64, t->dir, step);
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	rc = sr_fs_read_file(path, CKPT_MANIFEST_MAX, &mbuf, &mlen, e);
	if (rc)
		goto out;
	rc = ckpt__manifest_parse(mbuf, mlen, path, &m, e);
	if (rc)
		goto out;
	fds = malloc((m.l->ns + 1) * sizeof *fds);
	if (!fds) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < m.l->ns; i++)
		fds[i] = -1;
	for (size_t i = 0; i < m.l->ns; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, m.l->s[i].file);
		fds[i] = open(path, O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0) {
			rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
			goto out;
		}
	}
	for (size_t i = 0; i < m.l->ns; i++) {
		snprintf(key, sizeof key, "step-%08" PRId64 "/%s", step,
			 m.l->s[i].file);
		rc = objstore_put_fd(t->s, key, fds[i], m.l->s[i].file_bytes,
				     bytes, e);
		if (rc)
			goto out;
		point("shard", step);
	}
	/* every shard confirmed: commit */
	point("manifest", step);
	snprintf(key, sizeof key, "step-%08" PRId64 "/" CKPT_MANIFEST, step);
	rc = objstore_put(t->s, key, mbuf, mlen, e);
	if (rc == 0)
		*bytes += mlen;
out:
	for (size_t i = 0; fds && i < m.l->ns; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	free(fds);
	free(mbuf);
	ckpt__manifest_free(&m);
	return rc;
}

/* ---- retention ----------------------------------------------------------------- */
static int step_of(const char *key, int64_t *step)
{
	int tmp = 0;
	char name[64];
	const char *sl = strchr(key, '/');

	if (!sl || (size_t)(sl - key) >= sizeof name)
		return -1;
	memcpy(name, key, (size_t)(sl - key));
	name[sl - key] = 0;
	if (ckpt__parse_dirname(name, step, &tmp) != 0 || tmp)
		return -1;
	return 0;
}

static int is_manifest(const char *key)
{
	const char *sl = strchr(key, '/');

	return sl && !strcmp(sl + 1, CKPT_MANIFEST);
}

/* Delete every key of step s (manifest first, in its own call). */
static int delete_step(struct objstore *s, const struct objstore_list *l,
		       int64_t step, struct sr_err *e)
{
	const char **keys = malloc((l->n + 1) * sizeof *keys);
	size_t n = 0;
	int rc = 0;

	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++) {
		int64_t k;

		if (step_of(l->v[i].key, &k) == 0 && k == step &&
		    is_manifest(l->v[i].key))
			rc = objstore_del(s, (const char *const *)&l->v[i].key, 1, e);
	}
	point("retention", step);
	for (size_t i = 0; rc == 0 && i < l->n; i++) {
		int64_t k;

		if (step_of(l->v[i].key, &k) == 0 && k == step &&
		    !is_manifest(l->v[i].key))
			keys[n++] = l->v[i].key;
	}
	if (rc == 0)
		rc = objstore_del(s, keys, n, e);
	free(keys);
	return rc;
}

/* 1 if step's manifest in the store parses (its own checksum included).
 * S3 and Azure never show a partial object, but emulators and some
 * S3-compatible stores write a PUT body in place, so a writer killed in
 * the manifest PUT can leave a torn one; it must not count as a keeper. */
static int manifest_ok(struct objstore *s, int64_t step)
{
	struct ckpt_manifest m = { 0 };
	struct sr_err e = { 0 };
	char key[64], *buf = NULL;
	size_t len = 0;
	int ok;

	snprintf(key, sizeof key, "step-%08" PRId64 "/" CKPT_MANIFEST, step);
	ok = objstore_get(s, key, CKPT_MANIFEST_MAX, &buf, &len, &e) == 0 &&
	     ckpt__manifest_parse(buf, len, key, &m, &e) == 0;
	ckpt__manifest_free(&m);
	free(buf);
	return ok;
}

static int retention(struct objstore_tier3 *t, struct sr_err *e)
{
	struct objstore_list l = { 0 };
	int64_t *steps = NULL, newest = -1, prev = -2;
	size_t n = 0, na = 0, kept = 0;
	int rc;

	rc = objstore_list(t->s, "step-", &l, e);
	if (rc)
		goto out;
	rc = objstore_steps(&l, &steps, &n);
	if (rc)
		goto out;
	/* keep the newest `keep` whose manifest is sound; a torn manifest
	 * newer than all of them is left for the next round */
	for (size_t i = 0; i < n; i++) {
		int ok = kept < (size_t)t->keep ? manifest_ok(t->s, steps[i]) : 0;

		if (ok) {
			if (newest < 0)
				newest = steps[i];
			kept++;
			continue;
		}
		if (newest < 0)
			continue;
		rc = delete_step(t->s, &l, steps[i], e);
		if (rc)
			goto out;
	}
	/* manifest-less leftovers below the newest commit */
	for (size_t i = 0; newest >= 0 && i < l.n; i++) {
		int64_t k;
		int committed = 0;

		if (step_of(l.v[i].key, &k) || k >= newest || k == prev)
			continue;
		prev = k;
		for (size_t j = 0; j < n; j++)
			committed |= steps[j] == k;
		if (!committed) {
			rc = delete_step(t->s, &l, k, e);
			if (rc)
				goto out;
		}
	}
	rc = objstore_abort_stale(t->s, sr_time_real_ns(), &na, e);
	if (na)
		sr_info("objstore", "aborted orphaned multipart uploads",
			"uri=%s n=%zu", objstore_uri(t->s), na);
out:
	free(steps);
	objstore_list_free(&l);
	return rc;
}

/* ---- the thread ----------------------------------------------------------------- */
static void *uploader(void *arg)
{
	struct objstore_tier3 *t = arg;

	pthread_mutex_lock(&t->mu);
	for (;;) {
		struct sr_err e = { 0 };
		uint64_t bytes = 0;
		int64_t step, t0;
		int rc;

		while (!t->stop && t->pending < 0)
			pthread_cond_wait(&t->cv, &t->mu);
		if (t->pending < 0)
			break;
		step = t->pending;
		t->pending = -1;
		t->busy = step;
		t->st.pending_step = -1;
		t->st.uploading_step = step;
		atomic_store(&t->cancel, 0);
		pthread_mutex_unlock(&t->mu);

		t0 = sr_time_mono_ns();
		rc = upload_step(t, step, &bytes, &e);
		t0 = sr_time_mono_ns() - t0; /* upload until committed */
		if (rc == 0) {
			struct sr_err re = { 0 };
			int rr = retention(t, &re);

			if (rr)
				sr_warn("objstore", "retention failed; retrying "
					"after the next upload", "uri=%s err=\"%s\"",
					objstore_uri(t->s), sr_err_str(&re, rr));
		}
		if (rc == -ECANCELED)
			sr_info("objstore", "upload cancelled for a newer (final) "
				"checkpoint", "uri=%s step=%" PRId64,
				objstore_uri(t->s), step);
		else if (rc)
			sr_error("objstore", "tier-3 upload failed; training goes "
				 "on with tier 2", "uri=%s step=%" PRId64
				 " err=\"%s\"", objstore_uri(t->s), step,
				 sr_err_str(&e, rc));
		else
			sr_info("objstore", "checkpoint uploaded", "uri=%s step=%"
				PRId64 " bytes=%" PRIu64, objstore_uri(t->s),
				step, bytes);

		pthread_mutex_lock(&t->mu);
		t->busy = -1;
		t->st.uploading_step = -1;
		t->st.bytes += bytes;
		t->st.last_error = rc;
		snprintf(t->st.last_msg, sizeof t->st.last_msg, "%s",
			 rc ? sr_err_str(&e, rc) : "");
		if (rc == 0) {
			t->st.committed++;
			t->st.last_upload_ns = t0;
			if (step > t->st.uploaded_step)
				t->st.uploaded_step = step;
		} else if (rc == -ECANCELED) {
			t->st.superseded++;
		} else {
			t->st.failed++;
		}
		pthread_cond_broadcast(&t->cv);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

int objstore_tier3_start(const char *uri, const char *local_dir, int keep,
			 struct objstore_tier3 **out, struct sr_err *e)
{
	struct objstore_tier3 *t = calloc(1, sizeof *t);
	int rc;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	t->pending = t->busy = -1;
	t->st.uploaded_step = t->st.uploading_step = t->st.pending_step = -1;
	t->keep = keep < 1 ? 1 : keep;
	t->dir = strdup(local_dir);
	if (!t->dir) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = objstore_open(uri, NULL, &t->s, e);
	if (rc)
		goto fail;
	objstore_set_cancel(t->s, &t->cancel);
	rc = pthread_create(&t->th, NULL, uploader, t);
	if (rc) {
		rc = sr_err_set(e, -rc, "tier 3: cannot start the uploader thread");
		goto fail;
	}
	t->started = 1;
	*out = t;
	return 0;
fail:
	objstore_tier3_stop(t);
	return rc;
}

void objstore_tier3_stop(struct objstore_tier3 *t)
{
	if (!t)
		return;
	if (t->started) {
		pthread_mutex_lock(&t->mu);
		t->stop = 1;
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->th, NULL);
	}
	objstore_close(t->s);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	free(t->dir);
	free(t);
}

void objstore_tier3_offer(struct objstore_tier3 *t, int64_t step)
{
	pthread_mutex_lock(&t->mu);
	if (step > t->pending && step > t->busy &&
	    step > t->st.uploaded_step) {
		if (t->pending >= 0)
			t->st.superseded++;
		t->pending = step;
		t->st.pending_step = step;
		pthread_cond_broadcast(&t->cv);
	}
	pthread_mutex_unlock(&t->mu);
}

int objstore_tier3_flush(struct objstore_tier3 *t, int64_t step,
			 int64_t deadline_mono_ns, int *met, struct sr_err *e)
{
	uint64_t failed0;
	int rc = 0;

	if (met)
		*met = 0;
	pthread_mutex_lock(&t->mu);
	failed0 = t->st.failed;
	if (t->busy >= 0 && t->busy < step)
		atomic_store(&t->cancel, 1); /* the final step goes first */
	if (step > t->pending && step > t->busy &&
	    step > t->st.uploaded_step) {
		if (t->pending >= 0)
			t->st.superseded++;
		t->pending = step;
		t->st.pending_step = step;
		pthread_cond_broadcast(&t->cv);
	}
	for (;;) {
		if (t->st.uploaded_step >= step) {
			rc = 0;
			if (met)
				*met = deadline_mono_ns == 0 ||
				       sr_time_mono_ns() <= deadline_mono_ns;
			break;
		}
		if (t->pending < step && t->busy != step &&
		    t->st.failed > failed0 && t->st.last_error != -ECANCELED) {
			rc = sr_err_set(e, t->st.last_error, "%s", t->st.last_msg);
			break;
		}
		if (deadline_mono_ns && sr_time_mono_ns() > deadline_mono_ns) {
			rc = sr_err_set(e, -SR_ETIMEOUT, "%s: step %" PRId64 " not "
					"uploaded by the deadline",
					objstore_uri(t->s), step);
			break;
		}
		{
			struct timespec ts;
			int64_t now = sr_time_real_ns() + 50000000;

			ts.tv_sec = now / SR_NS_PER_SEC;
			ts.tv_nsec = now % SR_NS_PER_SEC;
			pthread_cond_timedwait(&t->cv, &t->mu, &ts);
		}
	}
	pthread_mutex_unlock(&t->mu);
	return rc;
}

void objstore_tier3_stats(struct objstore_tier3 *t,
			  struct objstore_tier3_stats *out)
{
	pthread_mutex_lock(&t->mu);
	*out = t->st;
	pthread_mutex_unlock(&t->mu);
}

const char *objstore_tier3_uri(const struct objstore_tier3 *t)
{
	return objstore_uri(t->s);
}
