/*
 * tier3.c - the uploader: committed tier-2 checkpoints go to an object
 * store in the background, whole.
 *
 * COMMIT PROTOCOL on a store that has no rename.  For step N, under
 * PREFIX/step-NNNNNNNN/:
 *   1. every shard file, as one object each: a multipart upload whose
 *      parts (SPOTRUN_OBJSTORE_PART_MB) go out in parallel, each with a
 *      checksum (CRC32C, Content-MD5 on Azure) so the store rejects a
 *      damaged part; the object exists only once CompleteMultipartUpload
 *      (Azure: Put Block List) accepted every part, and a failed upload
 *      is aborted;
 *   2. manifest.json, last, in a single PUT.  This is the commit point: a
 *      single-object PUT is atomic on every store, and it is issued only
 *      after step 1 confirmed every shard.
 *   3. retention, only after that commit: for every committed step beyond
 *      the newest `keep` whose manifest is sound, the manifest is deleted
 *      first, then its shards, so a manifest is never visible without its
 *      shards and a step is deleted only once a newer one is committed.
 *      Objects of steps older than the newest commit that have no
 *      manifest (an upload killed or cancelled between 1 and 2) are
 *      deleted, and the multipart uploads a killed uploader left under
 *      PREFIX/step- are aborted (ListMultipartUploads).
 * A reader (remote.c) lists the prefix, considers only steps with a
 * manifest, and takes the newest whose manifest parses, names its own
 * step, and whose shards exist with the recorded sizes and header
 * checksums; tensor data is checked against the manifest's XXH3.
 *
 * Why a kill -9 at any point is safe: before 2 nothing refers to the new
 * shards, so readers see the previous checkpoint; after 2 every object the
 * manifest names exists whole.  Retention never removes the newest
 * committed step, and removes a manifest before what it names.
 *
 * WHAT IS UPLOADED.  Only steps tier 2 committed: offer(N) is called by
 * the engine after step N's directory was renamed into place, and the
 * uploader only ever takes `local`, the newest offered step.  A flush
 * (remote_wait, a final save) of a step tier 2 has not committed is
 * refused (-SR_ENOTFOUND), never started.  A step whose directory tier-2
 * retention removed meanwhile has a newer one behind it: it is skipped.
 *
 * SCHEDULING.  One uploader thread; training never waits for it.
 *
 *   target = local if local > uploaded, else none
 *   idle      --offer N-->            target = N (an unstarted older
 *                                     target is "superseded")
 *   target    --backoff elapsed-->    busy = target: upload, commit,
 *                                     retention
 *   busy N    --committed-->          uploaded = N; backoff reset
 *   busy N    --failed-->             failed++; backoff (equal jitter,
 *                                     UPLOAD_BACKOFF_*), then the target
 *                                     (N, or a newer one) again
 *   busy N    --flush(M > N)-->       cancelled (no backoff); M goes next
 *   any       --stop-->               in-flight requests cancelled, exit
 *
 * flush(N, deadline) and drain(deadline) clear the backoff (try now) and
 * bound every request's retries by their deadline (objstore_set_deadline)
 * instead of the retry count, so a store answering 503 for a while is
 * waited out up to the caller's deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tier3.h"
#include "common/backoff.h"
#include "common/fsutil.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"

/* Between attempts of a failed upload (the requests inside it have their
 * own, shorter retries). */
#define UPLOAD_BACKOFF_BASE_NS (500 * INT64_C(1000000))
#define UPLOAD_BACKOFF_CAP_NS (30 * SR_NS_PER_SEC)
#define CUT_SLACK_NS (10 * INT64_C(1000000))
/* The listing at start: long enough for a store that is slow to answer,
 * short enough not to hold up training when it is down. */
#define PROBE_NS (5 * SR_NS_PER_SEC)

void (*objstore__tier3_test_point)(const char *what, int64_t step);

#define RECENT 256

struct objstore_tier3 {
	struct objstore *s;
	char *dir;
	int keep;
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	int64_t local;          /* newest step tier 2 committed, -1 */
	int64_t busy;           /* being uploaded, -1 */
	int waiters;            /* flush/drain calls with a deadline */
	int64_t wait_deadline;  /* the latest such deadline (mono ns), 0 */
	int held;               /* put_image in progress: start nothing */
	int dirty;              /* the recovery point file is behind */
	/* the last offers (tier-2 commits), to count how many the store's
	 * newest step is behind: offer k was step recent[k % RECENT] */
	uint64_t offers;
	int64_t recent[RECENT];
	struct sr_backoff bo;   /* after failed uploads */
	atomic_int cancel;      /* the upload in flight stops */
	struct objstore_tier3_stats st;
	objstore_tier3_watch_fn watch; /* told what publish() writes */
	void *watch_ud;
};

static void point(const char *what, int64_t step)
{
	if (objstore__tier3_test_point)
		objstore__tier3_test_point(what, step);
}

/* ---- one upload ------------------------------------------------------------ */
/* The protocol of one step: every shard file of l, from fds[i] (tier 2)
 * or else from its image at image + img_off (staging memory), then the
 * manifest mbuf as the commit point. */
static int put_step(struct objstore_tier3 *t, int64_t step,
		    const struct ckpt_layout *l, const int *fds,
		    const uint8_t *image, const char *mbuf, size_t mlen,
		    uint64_t *bytes, struct sr_err *e)
{
	char key[256];
	int rc;

	for (size_t i = 0; i < l->ns; i++) {
		snprintf(key, sizeof key, "step-%08" PRId64 "/%s", step,
			 l->s[i].file);
		rc = fds ? objstore_put_fd(t->s, key, fds[i],
					   l->s[i].file_bytes, bytes, e) :
			   objstore_put_mem(t->s, key, image + l->s[i].img_off,
					    l->s[i].file_bytes, bytes, e);
		if (rc)
			return rc;
		point("shard", step);
	}
	/* every shard confirmed: commit */
	point("manifest", step);
	snprintf(key, sizeof key, "step-%08" PRId64 "/" CKPT_MANIFEST, step);
	rc = objstore_put(t->s, key, mbuf, mlen, e);
	if (rc == 0)
		*bytes += mlen;
	return rc;
}

/* Upload step from the local directory.  *time_ns gets its save time.
 * -ENOENT when the step's directory is gone (or never was committed). */
static int upload_step(struct objstore_tier3 *t, int64_t step, uint64_t *bytes,
		       int64_t *time_ns, struct sr_err *e)
{
	struct ckpt_manifest m = { 0 };
	char dir[4096], path[4200], *mbuf = NULL;
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
	*time_ns = m.time_ns;
	fds = malloc((m.l->ns + 1) * sizeof *fds);
	if (!fds) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < m.l->ns; i++)
		fds[i] = -1;
	/* open every file first: the descriptors keep the data alive if
	 * tier-2 retention deletes the directory meanwhile */
	for (size_t i = 0; i < m.l->ns; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, m.l->s[i].file);
		fds[i] = open(path, O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0) {
			rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
			goto out;
		}
	}
	rc = put_step(t, step, m.l, fds, NULL, mbuf, mlen, bytes, e);
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

/* Delete every key of step s (manifest first, in its own call).  A listed
 * key no request of ours may name (objstore_key_check) is left alone. */
static int delete_step(struct objstore *s, const struct objstore_list *l,
		       int64_t step, struct sr_err *e)
{
	const char **keys = malloc((l->n + 1) * sizeof *keys);
	size_t n = 0, odd = 0;
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

		if (step_of(l->v[i].key, &k) || k != step ||
		    is_manifest(l->v[i].key))
			continue;
		if (objstore_key_check(l->v[i].key, NULL)) {
			odd++;
			continue;
		}
		keys[n++] = l->v[i].key;
	}
	if (rc == 0)
		rc = objstore_del(s, keys, n, e);
	if (odd)
		sr_warn("objstore", "objects with names no request may carry "
			"were left in place", "uri=%s step=%" PRId64 " n=%zu",
			objstore_uri(s), step, odd);
	free(keys);
	return rc;
}

/* 1 if step's manifest in the store parses (its own checksum included)
 * and names that step; *time_ns gets its save time.  S3 and Azure never
 * show a partial object, but emulators and some S3-compatible stores
 * write a PUT body in place, so a writer killed in the manifest PUT can
 * leave a torn one; it must not count as a keeper. */
static int manifest_ok(struct objstore *s, int64_t step, int64_t *time_ns)
{
	struct ckpt_manifest m = { 0 };
	struct sr_err e = { 0 };
	char key[64], *buf = NULL;
	size_t len = 0;
	int ok;

	snprintf(key, sizeof key, "step-%08" PRId64 "/" CKPT_MANIFEST, step);
	ok = objstore_get(s, key, CKPT_MANIFEST_MAX, &buf, &len, &e) == 0 &&
	     ckpt__manifest_parse(buf, len, key, &m, &e) == 0 && m.step == step;
	if (ok && time_ns)
		*time_ns = m.time_ns;
	ckpt__manifest_free(&m);
	free(buf);
	return ok;
}

static int retention(struct objstore_tier3 *t, int64_t committed,
		     struct sr_err *e)
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
	/* keep the newest `keep` whose manifest is sound (the one just
	 * committed always); a torn manifest newer than all of them is left
	 * for the next round */
	for (size_t i = 0; i < n; i++) {
		int ok = steps[i] == committed ||
			 (kept < (size_t)t->keep && manifest_ok(t->s, steps[i],
								  NULL));

		if (ok && kept < (size_t)t->keep) {
			if (newest < 0)
				newest = steps[i];
			kept++;
			continue;
		}
		if (newest < 0 || steps[i] >= committed)
			continue;
		rc = delete_step(t->s, &l, steps[i], e);
		if (rc)
			goto out;
	}
	/* manifest-less leftovers below the newest commit */
	for (size_t i = 0; newest >= 0 && i < l.n; i++) {
		int64_t k;
		int has_manifest = 0;

		if (step_of(l.v[i].key, &k) || k >= newest || k == prev)
			continue;
		prev = k;
		for (size_t j = 0; j < n; j++)
			has_manifest |= steps[j] == k;
		if (!has_manifest) {
			rc = delete_step(t->s, &l, k, e);
			if (rc)
				goto out;
		}
	}
	rc = objstore_abort_stale(t->s, "step-", sr_time_real_ns(), &na, e);
	if (na)
		sr_info("objstore", "aborted orphaned multipart uploads",
			"uri=%s n=%zu", objstore_uri(t->s), na);
out:
	free(steps);
	objstore_list_free(&l);
	return rc;
}

/* ---- the recovery point, published next to tier 2 ---------------------------------
 * DIR/tier3.json (docs/api.md): what a node lost now would resume from.
 * The node agent reads it (heartbeats, the job's end) without asking
 * the workload; written whole (temp, fsync, rename) after each change.
 * The watcher (lib/ckpt: the progress report) is told the same. */
static void publish(const struct objstore_tier3 *t,
		    const struct objstore_tier3_stats *st)
{
	struct sr_err e = { 0 };
	char path[4200];
	json_t *v;

	snprintf(path, sizeof path, "%s/" OBJSTORE_TIER3_FILE, t->dir);
	v = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I}", "uri",
		      objstore_uri(t->s), "local_step", (json_int_t)st->local_step,
		      "local_time_ns", (json_int_t)st->local_time_ns,
		      "store_step", (json_int_t)st->uploaded_step,
		      "store_time_ns", (json_int_t)st->store_time_ns,
		      "behind", (json_int_t)st->behind,
		      "retries", (json_int_t)st->retries, "last_error",
		      st->last_error ? st->last_msg : "", "updated_ns",
		      (json_int_t)sr_time_real_ns());
	if (v && sr_json_write_file(v, path, &e))
		sr_debug("objstore", "cannot publish the recovery point",
			 "path=%s err=\"%s\"", path, e.msg);
	json_decref(v);
	if (t->watch)
		t->watch(t->watch_ud, st->uploaded_step,
			 st->last_error ? st->last_msg : "");
}

/* ---- the thread ----------------------------------------------------------------- */
static int64_t target(const struct objstore_tier3 *t)
{
	return t->local > t->st.uploaded_step ? t->local : -1;
}

static void wait_until(struct objstore_tier3 *t, int64_t mono_ns)
{
	/* the condvar runs on CLOCK_REALTIME: convert, in slices */
	int64_t left = mono_ns - sr_time_mono_ns();
	struct timespec ts;
	int64_t at;

	if (left > 200 * INT64_C(1000000))
		left = 200 * INT64_C(1000000);
	if (left < 1000000)
		left = 1000000;
	at = sr_time_real_ns() + left;
	ts.tv_sec = at / SR_NS_PER_SEC;
	ts.tv_nsec = at % SR_NS_PER_SEC;
	pthread_cond_timedwait(&t->cv, &t->mu, &ts);
}

/* Tier-2 commits since the one of the store's newest step (mu held): the
 * recovery point's lag in checkpoint intervals.  Older than the window:
 * RECENT. */
static void count_behind(struct objstore_tier3 *t)
{
	uint64_t k = 0;

	while (k < t->offers && k < RECENT &&
	       t->recent[(t->offers - 1 - k) % RECENT] > t->st.uploaded_step)
		k++;
	t->st.behind = (uint32_t)k;
}

/* The attempt that began at start_ns (mono) timed out because a waiter's
 * deadline (objstore_set_deadline) cut it, not because the store stalled
 * (mu held).  The request's time limit is the deadline in whole ms,
 * rounded down (common/http.c): it may end up to a ms before it. */
static bool cut_by_wait(const struct objstore_tier3 *t, int rc,
			int64_t start_ns, int64_t now)
{
	return rc == -SR_ETIMEOUT && t->wait_deadline &&
	       t->wait_deadline >= start_ns &&
	       t->wait_deadline <= now + CUT_SLACK_NS;
}

/* After an attempt at `step`, begun at start_ns (mono) and taking took_ns,
 * ended with rc (mu held). */
static void account(struct objstore_tier3 *t, int64_t step, int rc,
		    uint64_t bytes, int64_t start_ns, int64_t took_ns,
		    int64_t time_ns, const struct sr_err *e)
{
	int64_t now = sr_time_mono_ns();

	t->busy = -1;
	t->st.uploading_step = -1;
	t->st.bytes += bytes;
	if (rc == 0) {
		t->st.committed++;
		t->st.last_upload_ns = took_ns;
		if (step > t->st.uploaded_step) {
			t->st.uploaded_step = step;
			t->st.store_time_ns = time_ns;
		}
		t->st.last_error = 0;
		t->st.last_msg[0] = 0;
		t->st.retries = 0;
		t->st.next_retry_ns = 0;
		sr_backoff_ok(&t->bo);
	} else if (rc == -ECANCELED || (rc == -ENOENT && t->local > step)) {
		/* replaced by a newer step (a flush, or tier-2 retention
		 * removed it after a newer commit): no backoff */
		t->st.superseded++;
	} else {
		t->st.failed++;
		t->st.retries++;
		/* an attempt a waiter's deadline ran out on says nothing of
		 * the store: its last answer (a 503, a refusal) stays the
		 * reason given */
		if (!cut_by_wait(t, rc, start_ns, now) || !t->st.last_msg[0]) {
			t->st.last_error = rc;
			snprintf(t->st.last_msg, sizeof t->st.last_msg, "%s",
				 sr_err_str(e, rc));
		}
		sr_backoff_fail(&t->bo, now);
		t->st.next_retry_ns = t->bo.next_ns;
	}
	t->st.pending_step = target(t) >= 0 && target(t) != t->busy ?
			     target(t) : -1;
	count_behind(t);
}

/* Step committed in the store, uploaded from `from` ("tier2", "memory";
 * no lock held): retention, and the log line. */
static void committed(struct objstore_tier3 *t, int64_t step, uint64_t bytes,
		      const char *from)
{
	struct sr_err re = { 0 };
	int rr = retention(t, step, &re);

	if (rr)
		sr_warn("objstore", "retention failed; retrying after the next "
			"upload", "uri=%s err=\"%s\"", objstore_uri(t->s),
			sr_err_str(&re, rr));
	sr_info("objstore", "checkpoint uploaded", "uri=%s step=%" PRId64
		" bytes=%" PRIu64 " from=%s", objstore_uri(t->s), step, bytes,
		from);
}

static void *uploader(void *arg)
{
	struct objstore_tier3 *t = arg;

	pthread_mutex_lock(&t->mu);
	for (;;) {
		struct sr_err e = { 0 };
		uint64_t bytes = 0;
		int64_t step, start, t0, time_ns = 0;
		int rc, newer;

		if (t->stop)
			break;
		if (t->dirty) {
			/* written by this thread, outside the lock: an offer
			 * (under the engine's lock) never waits for an fsync */
			struct objstore_tier3_stats snap = t->st;

			t->dirty = 0;
			pthread_mutex_unlock(&t->mu);
			publish(t, &snap);
			pthread_mutex_lock(&t->mu);
			continue;
		}
		step = target(t);
		if (step < 0 || t->held) {
			pthread_cond_wait(&t->cv, &t->mu);
			continue;
		}
		if (!sr_backoff_ready(&t->bo, sr_time_mono_ns())) {
			wait_until(t, t->bo.next_ns);
			continue;
		}
		t->busy = step;
		t->st.uploading_step = step;
		t->st.pending_step = -1;
		atomic_store(&t->cancel, 0);
		pthread_mutex_unlock(&t->mu);

		start = sr_time_mono_ns();
		rc = upload_step(t, step, &bytes, &time_ns, &e);
		t0 = sr_time_mono_ns() - start; /* upload until committed */
		pthread_mutex_lock(&t->mu);
		newer = t->local > step;
		pthread_mutex_unlock(&t->mu);
		if (rc == 0) {
			committed(t, step, bytes, "tier2");
		} else if (rc == -ECANCELED) {
			sr_info("objstore", "upload cancelled for a newer "
				"checkpoint", "uri=%s step=%" PRId64,
				objstore_uri(t->s), step);
		} else if (rc != -ENOENT || !newer) {
			sr_error("objstore", "tier-3 upload failed; retrying with "
				 "backoff, training goes on with tier 2", "uri=%s "
				 "step=%" PRId64 " err=\"%s\"", objstore_uri(t->s),
				 step, sr_err_str(&e, rc));
		}
		pthread_mutex_lock(&t->mu);
		account(t, step, rc, bytes, start, t0, time_ns, &e);
		t->dirty = 1;
		pthread_cond_broadcast(&t->cv);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

/* ---- start: open, then one listing ---------------------------------------------- */
static int probe(struct objstore_tier3 *t, struct sr_err *e)
{
	struct objstore_list l = { 0 };
	int64_t *steps = NULL;
	size_t n = 0;
	int rc;

	objstore_set_deadline(t->s, sr_time_mono_ns() + PROBE_NS);
	rc = objstore_list(t->s, "step-", &l, e);
	if (rc == 0)
		rc = objstore_steps(&l, &steps, &n);
	/* the newest whole step already there is the recovery point */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int64_t tn = 0;

		if (manifest_ok(t->s, steps[i], &tn)) {
			t->st.uploaded_step = steps[i];
			t->st.store_time_ns = tn;
			break;
		}
	}
	objstore_set_deadline(t->s, 0);
	free(steps);
	objstore_list_free(&l);
	return rc;
}

int objstore_tier3_start(const char *uri, const char *local_dir, int keep,
			 objstore_tier3_watch_fn watch, void *watch_ud,
			 struct objstore_tier3 **out, struct sr_err *e)
{
	struct objstore_tier3 *t = calloc(1, sizeof *t);
	struct sr_err pe = { 0 };
	int rc;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	t->local = t->busy = -1;
	t->st.uploaded_step = t->st.uploading_step = t->st.pending_step = -1;
	t->st.local_step = -1;
	t->keep = keep < 1 ? 1 : keep;
	t->watch = watch;
	t->watch_ud = watch_ud;
	sr_backoff_init(&t->bo, UPLOAD_BACKOFF_BASE_NS, UPLOAD_BACKOFF_CAP_NS);
	atomic_init(&t->cancel, 0);
	t->dir = strdup(local_dir);
	if (!t->dir) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = objstore_open(uri, NULL, &t->s, e);
	if (rc)
		goto fail;
	rc = probe(t, &pe);
	if (rc && objstore_refused(rc)) {
		rc = sr_err_set(e, rc, "%s: the store refused tier 3: %s", uri,
				sr_err_str(&pe, rc));
		goto fail;
	}
	if (rc) {
		/* not an answer: the uploads will try again */
		sr_warn("objstore", "object store not reachable; checkpoints stay "
			"on local disk until it answers (uploads are retried)",
			"uri=%s err=\"%s\"", uri, sr_err_str(&pe, rc));
		t->st.last_error = rc;
		snprintf(t->st.last_msg, sizeof t->st.last_msg, "%s",
			 sr_err_str(&pe, rc));
	}
	objstore_set_cancel(t->s, &t->cancel);
	publish(t, &t->st);
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
		atomic_store(&t->cancel, 1);
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->th, NULL);
		publish(t, &t->st); /* as the engine closes */
	}
	objstore_close(t->s);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	free(t->dir);
	free(t);
}

void objstore_tier3_offer(struct objstore_tier3 *t, int64_t step,
			  int64_t time_ns)
{
	pthread_mutex_lock(&t->mu);
	if (step > t->local) {
		if (t->st.pending_step >= 0)
			t->st.superseded++; /* never started */
		t->local = step;
		t->st.local_step = step;
		t->st.local_time_ns = time_ns;
		t->recent[t->offers++ % RECENT] = step;
		count_behind(t);
		if (target(t) >= 0 && t->busy != target(t))
			t->st.pending_step = target(t);
		t->dirty = 1;
		pthread_cond_broadcast(&t->cv);
	}
	pthread_mutex_unlock(&t->mu);
}

/* A caller with a deadline waits: every request's retries are bounded by
 * the latest such deadline, and the backoff is cleared (mu held). */
static void waiter_enter(struct objstore_tier3 *t, int64_t deadline)
{
	if (deadline && ++t->waiters == 1) {
		objstore_set_deadline(t->s, deadline);
		t->wait_deadline = deadline;
	}
	t->bo.next_ns = 0;
	t->st.next_retry_ns = 0;
	pthread_cond_broadcast(&t->cv);
}

static void waiter_leave(struct objstore_tier3 *t, int64_t deadline)
{
	if (deadline && --t->waiters == 0)
		objstore_set_deadline(t->s, 0);
}

/* Wait until the store holds `step` or newer (mu held).  With a deadline
 * failures are waited through (the uploader retries); without one the
 * first failure after `failed0` ends the wait. */
static int wait_store(struct objstore_tier3 *t, int64_t step,
		      int64_t deadline, uint64_t failed0, struct sr_err *e)
{
	for (;;) {
		if (t->st.uploaded_step >= step)
			return 0;
		if (!deadline && t->st.failed > failed0)
			return sr_err_set(e, t->st.last_error, "%s", t->st.last_msg);
		if (deadline && sr_time_mono_ns() > deadline)
			return sr_err_set(e, -SR_ETIMEOUT, "%s: step %" PRId64 " not "
					  "in the store by the deadline%s%s",
					  objstore_uri(t->s), step,
					  t->st.last_msg[0] ? "; last error: " : "",
					  t->st.last_msg);
		wait_until(t, deadline ? deadline : sr_time_mono_ns() +
			   SR_NS_PER_SEC);
	}
}

int objstore_tier3_flush(struct objstore_tier3 *t, int64_t step,
			 int64_t deadline_mono_ns, int *met, struct sr_err *e)
{
	int rc;

	if (met)
		*met = 0;
	pthread_mutex_lock(&t->mu);
	if (step > t->local) {
		rc = sr_err_set(e, -SR_ENOTFOUND, "%s: step %" PRId64 " was not "
				"committed to %s (newest there: %" PRId64 "); "
				"nothing to upload", objstore_uri(t->s), step,
				t->dir, t->local);
		goto out;
	}
	if (t->busy >= 0 && t->busy < step)
		atomic_store(&t->cancel, 1); /* the asked-for step goes first */
	waiter_enter(t, deadline_mono_ns);
	rc = wait_store(t, step, deadline_mono_ns, t->st.failed, e);
	waiter_leave(t, deadline_mono_ns);
	if (rc == 0 && met)
		*met = !deadline_mono_ns || sr_time_mono_ns() <= deadline_mono_ns;
out:
	pthread_mutex_unlock(&t->mu);
	return rc;
}

int objstore_tier3_put_image(struct objstore_tier3 *t, int64_t step,
			     const struct ckpt_layout *l, const uint8_t *image,
			     const char *mbuf, size_t mlen, int64_t time_ns,
			     int64_t deadline_mono_ns, atomic_int *cancel,
			     struct sr_err *e)
{
	uint64_t bytes = 0;
	int64_t start, t0;
	int rc;

	pthread_mutex_lock(&t->mu);
	t->held++;
	if (t->busy >= 0)
		atomic_store(&t->cancel, 1); /* this step goes first */
	while (t->busy >= 0)
		pthread_cond_wait(&t->cv, &t->mu);
	t->busy = step;
	t->st.uploading_step = step;
	t->st.pending_step = -1;
	waiter_enter(t, deadline_mono_ns);
	atomic_store(&t->cancel, 0);
	pthread_mutex_unlock(&t->mu);

	/* the uploader is held: this thread alone uses the store */
	if (cancel)
		objstore_set_cancel(t->s, cancel);
	start = sr_time_mono_ns();
	rc = cancel && atomic_load(cancel) ?
	     sr_err_set(e, -ECANCELED, "step %" PRId64 " given up", step) :
	     put_step(t, step, l, NULL, image, mbuf, mlen, &bytes, e);
	t0 = sr_time_mono_ns() - start;
	objstore_set_cancel(t->s, &t->cancel);
	if (rc == 0) {
		committed(t, step, bytes, "memory");
	} else {
		sr_error("objstore", "upload from memory failed", "uri=%s step=%"
			 PRId64 " err=\"%s\"", objstore_uri(t->s), step,
			 sr_err_str(e, rc));
	}
	pthread_mutex_lock(&t->mu);
	waiter_leave(t, deadline_mono_ns);
	account(t, step, rc, bytes, start, t0, time_ns, e);
	t->held--;
	t->dirty = 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	return rc;
}

int objstore_tier3_drain(struct objstore_tier3 *t, int64_t deadline_mono_ns,
			 struct sr_err *e)
{
	int64_t want;
	int rc = 0;

	pthread_mutex_lock(&t->mu);
	want = t->local;
	if (want >= 0 && t->st.uploaded_step < want) {
		waiter_enter(t, deadline_mono_ns);
		rc = wait_store(t, want, deadline_mono_ns, t->st.failed, e);
		waiter_leave(t, deadline_mono_ns);
	}
	if (rc && t->st.uploaded_step < 0)
		sr_err_prefix(e, "checkpoint step %" PRId64 " is in %s only; the "
			      "store %s holds no step", want, t->dir,
			      objstore_uri(t->s));
	else if (rc)
		sr_err_prefix(e, "checkpoint step %" PRId64 " is in %s only; the "
			      "store %s holds step %" PRId64, want, t->dir,
			      objstore_uri(t->s), t->st.uploaded_step);
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

int objstore_tier3_newest(struct objstore_tier3 *t, int64_t max_step,
			  int64_t *step, struct sr_err *e)
{
	/* a store of its own: the uploader's may be cancelled meanwhile */
	return objstore_rd_newest(objstore_uri(t->s), max_step, step, e);
}
