/*
 * test_objstore_tier3.c - the uploader's rules (issue 23), on a file://
 * store and on a store that does not answer:
 *
 *   - the race: tier 2's commit of step N is held while the uploader is
 *     asked for N (remote_wait); nothing is uploaded before the commit,
 *     and N gets there whole after it (the code before uploaded N's
 *     directory before it existed, failed, and never tried again);
 *   - a failed upload is retried (with backoff) until it commits; the
 *     progress report ($SPOTRUN_PROGRESS_FILE) says the store's step as
 *     ckpt_step (none while only tier 2 holds one) and the failure as
 *     ckpt_error, and drops the error once the upload commits;
 *   - a step tier 2 never committed is refused, not started;
 *   - close() returns 0 only once the newest step is in the store, and
 *     says which step is where when the store never answered;
 *   - an attempt a waiter's deadline cuts short (the store answering
 *     503, then slowly) leaves the store's answer as the reason given,
 *     not "timed out after 2 milliseconds";
 *   - object keys that could reach outside the prefix are refused;
 *   - a final save with SPOTCKPT_FINAL_STORE_ONLY puts its step into the
 *     store from memory, racing a background upload, and writes nothing
 *     of it under the engine's directory; without tier 3 the flag writes
 *     tier 2 as a plain final save does; spotckpt_final_keep copies that
 *     step byte for byte to a directory, and refuses once a later save
 *     took the staging memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/internal.h"
#include "common/fsutil.h"
#include "common/testsrv.h"
#include "common/timeutil.h"
#include "objstore/os_int.h"
#include "spotrun/ckpt.h"

static char g_dir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof g_dir, "/tmp/spotrun-tier3-XXXXXX");
	return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[400];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct spotckpt *open_engine(const char *sub, float *w, size_t n,
				    int64_t commit_timeout_ms)
{
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;
	char dir[300];
	int64_t shape[1] = { (int64_t)n };

	snprintf(dir, sizeof dir, "%s/%s", g_dir, sub);
	spotckpt_opts_init(&o);
	o.dir = dir;
	o.keep = 2;
	o.backpressure = SPOTCKPT_BP_BLOCK;
	o.commit_timeout_ms = commit_timeout_ms;
	assert_int_equal(spotckpt_open(&o, &e), 0);
	assert_int_equal(spotckpt_register(e, "w", w, SPOTCKPT_F32, 1, shape,
					   SPOTCKPT_DEV_CPU), 0);
	return e;
}

static int store_has(const char *sub, int64_t step)
{
	char p[600];
	struct stat st;

	snprintf(p, sizeof p, "%s/%s/step-%08lld/manifest.json", g_dir, sub,
		 (long long)step);
	return stat(p, &st) == 0;
}

/* ---- the race ---------------------------------------------------------------- */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_holding, g_release;

static void hold_commit(int64_t step)
{
	if (step != 2)
		return;
	pthread_mutex_lock(&g_mu);
	g_holding = 1;
	pthread_cond_broadcast(&g_cv);
	while (!g_release)
		pthread_cond_wait(&g_cv, &g_mu);
	pthread_mutex_unlock(&g_mu);
}

struct waiter {
	struct spotckpt *e;
	int rc;
	int32_t met;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->rc = spotckpt_remote_wait(w->e, 2, sr_time_mono_ns() +
				     120 * SR_NS_PER_SEC, &w->met);
	return NULL;
}

static void test_race_commit_held(void **state)
{
	static float w[65536];
	struct spotckpt *e;
	struct spotckpt_remote_stats rs;
	struct waiter wt = { 0 };
	pthread_t th;
	char uri[300], msg[512];
	int64_t t0;

	(void)state;
	e = open_engine("race2", w, 65536, 0);
	snprintf(uri, sizeof uri, "file://%s/race3", g_dir);
	assert_int_equal(spotckpt_set_remote(e, uri), 0);
	w[0] = 1;
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_remote_wait(e, 1, 0, NULL), 0);
	/* step 2: staged, its commit held by the hook */
	ckpt__test_before_commit = hold_commit;
	w[0] = 2;
	assert_int_equal(spotckpt_save(e, 2, NULL, 0, NULL), 0);
	pthread_mutex_lock(&g_mu);
	while (!g_holding)
		pthread_cond_wait(&g_cv, &g_mu);
	pthread_mutex_unlock(&g_mu);
	/* the uploader is asked for step 2 while tier 2 has not committed
	 * it; before the fix it started at once, failed, never retried */
	wt.e = e;
	assert_int_equal(pthread_create(&th, NULL, wait_thread, &wt), 0);
	t0 = sr_time_mono_ns();
	for (;;) {
		assert_int_equal(spotckpt_remote_stats(e, &rs, msg, sizeof msg), 0);
		if (rs.uploads_failed || sr_time_mono_ns() - t0 > SR_NS_PER_SEC)
			break;
		usleep(10000);
	}
	assert_int_equal(rs.uploads_failed, 0);
	assert_false(store_has("race3", 2));
	pthread_mutex_lock(&g_mu);
	g_release = 1;
	pthread_cond_broadcast(&g_cv);
	pthread_mutex_unlock(&g_mu);
	pthread_join(th, NULL);
	ckpt__test_before_commit = NULL;
	assert_int_equal(wt.rc, 0);
	assert_int_equal(wt.met, 1);
	assert_true(store_has("race3", 2));
	assert_int_equal(spotckpt_remote_stats(e, &rs, msg, sizeof msg), 0);
	assert_int_equal(rs.uploaded_step, 2);
	assert_int_equal(rs.local_step, 2);
	assert_int_equal(rs.uploads_failed, 0);
	assert_true(rs.store_time_ns > 0);
	assert_int_equal(spotckpt_close(e), 0);
}

/* ---- a failed upload is retried ------------------------------------------------ */
/* Wait (60 s at most) until the progress report at path holds `want`
 * and not `unwanted` (NULL: anything); returns the report. */
static const char *progress_until(const char *path, const char *want,
				  const char *unwanted)
{
	static char buf[4096];
	int64_t t0 = sr_time_mono_ns();

	for (;;) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = 0;
		if (strstr(buf, want) && (!unwanted || !strstr(buf, unwanted)))
			return buf;
		if (sr_time_mono_ns() - t0 > 60 * SR_NS_PER_SEC)
			fail_msg("progress report %s: no %s in: %s", path, want, buf);
		usleep(10000);
	}
}

/* Polls the remote stats (60 s at most) until more than `failed` uploads
 * have failed. */
static void failed_past(struct spotckpt *e, uint64_t failed,
			struct spotckpt_remote_stats *rs, char *msg, size_t n)
{
	int64_t t0 = sr_time_mono_ns();

	do {
		assert_int_equal(spotckpt_remote_stats(e, rs, msg, n), 0);
		usleep(10000);
	} while (rs->uploads_failed <= failed &&
		 sr_time_mono_ns() - t0 < 60 * SR_NS_PER_SEC);
}

static void test_failed_upload_retried(void **state)
{
	static float w[4096];
	struct spotckpt *e;
	struct spotckpt_remote_stats rs;
	char uri[300], block[400], msg[512], progress[300];
	const char *rep;
	int32_t met = 0;
	FILE *f;

	(void)state;
	snprintf(progress, sizeof progress, "%s/progress.json", g_dir);
	setenv("SPOTRUN_PROGRESS_FILE", progress, 1);
	e = open_engine("retry2", w, 4096, 0);
	snprintf(uri, sizeof uri, "file://%s/retry3", g_dir);
	assert_int_equal(spotckpt_set_remote(e, uri), 0);
	/* a file where step 1's directory goes: its upload fails */
	snprintf(block, sizeof block, "%s/retry3/step-00000001", g_dir);
	f = fopen(block, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	failed_past(e, 0, &rs, msg, sizeof msg);
	assert_true(rs.uploads_failed >= 1);
	assert_int_equal(rs.uploaded_step, -1);
	assert_true(rs.last_error != 0);
	assert_true(msg[0] != 0);
	/* the report: step 1 is on tier 2 only - no ckpt_step, the error */
	rep = progress_until(progress, "\"ckpt_error\":\"", NULL);
	assert_null(strstr(rep, "\"ckpt_step\""));
	assert_non_null(strstr(rep, "step-00000001"));
	/* the store comes back: the same step goes up without a new save */
	assert_int_equal(unlink(block), 0);
	assert_int_equal(spotckpt_remote_wait(e, 1, sr_time_mono_ns() +
					      120 * SR_NS_PER_SEC, &met), 0);
	assert_int_equal(met, 1);
	assert_int_equal(spotckpt_remote_stats(e, &rs, msg, sizeof msg), 0);
	assert_int_equal(rs.uploaded_step, 1);
	assert_int_equal(rs.retries, 0);
	assert_int_equal(rs.last_error, 0);
	progress_until(progress, "\"ckpt_step\":1,", "ckpt_error");
	assert_int_equal(spotckpt_close(e), 0);
	/* after close the report still names the store's step */
	progress_until(progress, "\"ckpt_step\":1,", "ckpt_error");
	unsetenv("SPOTRUN_PROGRESS_FILE");
}

/* ---- only committed steps ------------------------------------------------------ */
static void test_uncommitted_step_refused(void **state)
{
	static float w[256];
	struct spotckpt *e;
	struct spotckpt_remote_stats rs;
	char uri[300];

	(void)state;
	e = open_engine("unc2", w, 256, 0);
	snprintf(uri, sizeof uri, "file://%s/unc3", g_dir);
	assert_int_equal(spotckpt_set_remote(e, uri), 0);
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_remote_wait(e, 1, 0, NULL), 0);
	assert_int_equal(spotckpt_remote_wait(e, 7, 0, NULL), -SPOTCKPT_ENOTFOUND);
	assert_non_null(strstr(spotckpt_errmsg(), "step 7 was not committed"));
	assert_int_equal(spotckpt_remote_stats(e, &rs, NULL, 0), 0);
	assert_int_equal(rs.uploads_failed, 0);
	assert_int_equal(spotckpt_close(e), 0);
}

/* ---- close --------------------------------------------------------------------- */
static void test_close_waits_for_the_store(void **state)
{
	static float w[65536];
	struct spotckpt *e;
	char uri[300];

	(void)state;
	e = open_engine("close2", w, 65536, 0);
	snprintf(uri, sizeof uri, "file://%s/close3", g_dir);
	assert_int_equal(spotckpt_set_remote(e, uri), 0);
	for (int s = 1; s <= 3; s++) {
		w[0] = (float)s;
		assert_int_equal(spotckpt_save(e, s, NULL, 0, NULL), 0);
	}
	assert_int_equal(spotckpt_close(e), 0);
	assert_true(store_has("close3", 3));
}

/* An engine of 256 floats in `sub` with tier 3 at `uri` on the S3
 * endpoint given (test credentials, SPOTRUN_OBJSTORE_RETRIES `retries`),
 * step 4 saved and committed to tier 2; s3_env_clear() undoes the
 * environment. */
static struct spotckpt *step4_on_s3(const char *sub, float *w,
				    const char *endpoint, const char *retries,
				    const char *uri)
{
	struct spotckpt *e;

	setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
	setenv("AWS_ENDPOINT_URL_S3", endpoint, 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	setenv("SPOTRUN_OBJSTORE_RETRIES", retries, 1);
	e = open_engine(sub, w, 256, 1500);
	assert_int_equal(spotckpt_set_remote(e, uri), 0);
	assert_int_equal(spotckpt_save(e, 4, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	return e;
}

static void s3_env_clear(void)
{
	unsetenv("AWS_ENDPOINT_URL_S3");
	unsetenv("SPOTRUN_OBJSTORE_RETRIES");
}

static void test_close_says_where_the_step_is(void **state)
{
	static float w[256];
	struct spotckpt *e;
	struct spotckpt_remote_stats rs;

	(void)state;
	/* a store that is not there: port 9 (discard) refuses; the start
	 * only warns: a store that does not answer is retried */
	e = step4_on_s3("down2", w, "http://127.0.0.1:9", "1",
			"s3://bucket/jobs/down");
	assert_int_equal(spotckpt_remote_stats(e, &rs, NULL, 0), 0);
	assert_int_equal(rs.local_step, 4);
	assert_int_equal(rs.uploaded_step, -1);
	assert_int_equal(spotckpt_close(e), -SPOTCKPT_ETIMEOUT);
	assert_non_null(strstr(spotckpt_errmsg(), "step 4 is in "));
	assert_non_null(strstr(spotckpt_errmsg(), "holds no step"));
	s3_env_clear();
}

/* ---- a deadline that cuts an attempt short ------------------------------------ */
static atomic_int g_slow; /* 0: answer 503 at once; 1: after 3 s */

static int busy_store(void *ud, const struct sr_testsrv_req *req, int *status,
		      char **ctype, char **body, size_t *body_len)
{
	(void)ud;
	(void)req;
	if (atomic_load(&g_slow))
		sleep(3);
	*status = 503;
	*ctype = strdup("application/xml");
	*body = strdup("<Error><Code>SlowDown</Code><Message>busy</Message>"
		       "</Error>");
	*body_len = strlen(*body);
	return 0;
}

static void test_deadline_keeps_the_stores_answer(void **state)
{
	static float w[256];
	struct sr_testsrv *srv = sr_testsrv_start(0);
	struct spotckpt *e;
	struct spotckpt_remote_stats rs;
	char msg[512];
	uint64_t failed;

	(void)state;
	assert_non_null(srv);
	atomic_store(&g_slow, 0);
	sr_testsrv_set_handler(srv, busy_store, NULL);
	e = step4_on_s3("busy2", w, sr_testsrv_url(srv), "0",
			"s3://bucket/jobs/busy");
	failed_past(e, 0, &rs, msg, sizeof msg);
	assert_non_null(strstr(msg, "503"));
	/* the store now answers slower than the wait's deadline: the wait
	 * starts an attempt at once, and the deadline ends it */
	failed = rs.uploads_failed;
	atomic_store(&g_slow, 1);
	assert_int_equal(spotckpt_remote_wait(e, 4, sr_time_mono_ns() +
					      SR_NS_PER_SEC / 2, NULL),
			 -SPOTCKPT_ETIMEOUT);
	failed_past(e, failed, &rs, msg, sizeof msg);
	assert_true(rs.uploads_failed > failed);
	assert_int_equal(rs.uploaded_step, -1);
	if (!strstr(msg, "503"))
		fail_msg("the reason given is '%s', not the store's 503", msg);
	atomic_store(&g_slow, 0);
	assert_int_equal(spotckpt_close(e), -SPOTCKPT_ETIMEOUT);
	sr_testsrv_stop(srv);
	s3_env_clear();
}

/* ---- a final save straight into the store ----------------------------------------- */
static int local_has(const char *sub, int64_t step)
{
	char p[600];
	struct stat st;

	snprintf(p, sizeof p, "%s/%s/step-%08lld", g_dir, sub, (long long)step);
	return stat(p, &st) == 0;
}

static void test_final_store_only(void **state)
{
	static float w[1 << 18];
	struct spotckpt *e;
	struct spotckpt_remote_stats rs;
	struct spotckpt_reader *r = NULL;
	char uri[300], *m = NULL, p[600], *disk = NULL;
	size_t mlen = 0, dlen = 0;
	int32_t met = 0;
	FILE *f;

	(void)state;
	e = open_engine("fin2", w, 1 << 18, 0);
	snprintf(uri, sizeof uri, "file://%s/fin3", g_dir);
	assert_int_equal(spotckpt_set_remote(e, uri), 0);
	w[0] = 1.0f;
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	/* step 1's upload may still be running: the final one goes first */
	w[0] = 2.0f;
	assert_int_equal(spotckpt_save_final_ex(e, 2, "{\"k\":1}", 0,
						SPOTCKPT_FINAL_STORE_ONLY,
						&met), 0);
	assert_int_equal(met, 1);
	assert_true(store_has("fin3", 2));
	assert_false(local_has("fin2", 2));
	assert_int_equal(spotckpt_last_saved_step(e), 1); /* tier 2's */
	assert_int_equal(spotckpt_remote_wait(e, 2, 0, &met), 0);
	assert_int_equal(met, 1);
	assert_int_equal(spotckpt_remote_stats(e, &rs, NULL, 0), 0);
	assert_int_equal(rs.uploaded_step, 2);
	/* the manifest kept is the one the store holds */
	assert_int_equal(spotckpt_final_manifest(e, 2, &m, &mlen), 0);
	snprintf(p, sizeof p, "%s/fin3/step-00000002/manifest.json", g_dir);
	f = fopen(p, "rb");
	assert_non_null(f);
	disk = calloc(1, mlen + 1);
	dlen = fread(disk, 1, mlen + 1, f);
	fclose(f);
	assert_int_equal(dlen, mlen);
	assert_memory_equal(disk, m, mlen);
	free(disk);
	spotckpt_free(m);
	assert_int_equal(spotckpt_final_manifest(e, 1, &m, &mlen),
			 -SPOTCKPT_ENOTFOUND);
	assert_int_equal(spotckpt_save_final_ex(e, 3, NULL, 0, 0x80, NULL),
			 -EINVAL);
	assert_int_equal(spotckpt_close(e), 0);
	/* the store's step 2 reads back whole, with its metadata */
	assert_int_equal(spotckpt_reader_open(uri, SPOTCKPT_NEWEST,
					      SPOTCKPT_NEWEST,
					      SPOTCKPT_OPEN_VERIFY, &r), 0);
	assert_int_equal(spotckpt_reader_step(r), 2);
	assert_string_equal(spotckpt_reader_meta(r), "{\"k\":1}");
	spotckpt_reader_close(r);

	/* without tier 3 the flag does nothing: tier 2 is the only copy */
	e = open_engine("fin4", w, 1 << 18, 0);
	assert_int_equal(spotckpt_save_final_ex(e, 5, NULL, 0,
						SPOTCKPT_FINAL_STORE_ONLY,
						NULL), 0);
	assert_true(local_has("fin4", 5));
	assert_int_equal(spotckpt_last_saved_step(e), 5);
	assert_int_equal(spotckpt_close(e), 0);
}

/* Whether two files hold the same bytes. */
static int same_file(const char *a, const char *b)
{
	char *x = NULL, *y = NULL;
	size_t nx = 0, ny = 0;
	struct sr_err err = { 0 };
	int same;

	if (sr_fs_read_file(a, 64u << 20, &x, &nx, &err) ||
	    sr_fs_read_file(b, 64u << 20, &y, &ny, &err)) {
		free(x);
		return 0;
	}
	same = nx == ny && memcmp(x, y, nx) == 0;
	free(x);
	free(y);
	return same;
}

/* spotckpt_final_keep: the step put straight into the store, copied to a
 * directory byte for byte (shard and manifest), readable and verified
 * there; another step, or the same once a later save took the staging
 * memory, is refused and writes nothing. */
static void test_final_keep(void **state)
{
	static float w[1 << 18];
	static const char *files[] = { "shard-00000.safetensors",
				       "manifest.json" };
	struct spotckpt *e;
	struct spotckpt_reader *r = NULL;
	char uri[300], keep[300], a[600], b[600];
	int32_t met = 0;

	(void)state;
	e = open_engine("keep2", w, 1 << 18, 0);
	snprintf(uri, sizeof uri, "file://%s/keep3", g_dir);
	snprintf(keep, sizeof keep, "%s/keepmem", g_dir);
	assert_int_equal(sr_fs_mkdir_p(keep, 0755), 0);
	assert_int_equal(spotckpt_set_remote(e, uri), 0);
	w[7] = 2.0f;
	assert_int_equal(spotckpt_save_final_ex(e, 2, "{\"k\":2}", 0,
						SPOTCKPT_FINAL_STORE_ONLY,
						&met), 0);
	assert_int_equal(spotckpt_final_keep(e, 1, keep), -SPOTCKPT_ENOTFOUND);
	assert_int_equal(spotckpt_final_keep(e, 2, keep), 0);
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		snprintf(a, sizeof a, "%s/step-00000002/%s", keep, files[i]);
		snprintf(b, sizeof b, "%s/keep3/step-00000002/%s", g_dir,
			 files[i]);
		assert_true(same_file(a, b));
	}
	/* a second copy replaces the first */
	assert_int_equal(spotckpt_final_keep(e, 2, keep), 0);
	assert_int_equal(spotckpt_reader_open(keep, SPOTCKPT_NEWEST,
					      SPOTCKPT_NEWEST,
					      SPOTCKPT_OPEN_VERIFY, &r), 0);
	assert_int_equal(spotckpt_reader_step(r), 2);
	assert_string_equal(spotckpt_reader_meta(r), "{\"k\":2}");
	spotckpt_reader_close(r);
	/* a later save takes the staging memory: no copy of step 2 then */
	w[7] = 3.0f;
	assert_int_equal(spotckpt_save(e, 3, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	snprintf(a, sizeof a, "%s/step-00000002", keep);
	sr_fs_rm_tree(a);
	assert_int_equal(spotckpt_final_keep(e, 2, keep), -SPOTCKPT_ENOTFOUND);
	assert_false(local_has("keepmem", 2));
	assert_int_equal(spotckpt_final_keep(NULL, 2, keep), -EINVAL);
	assert_int_equal(spotckpt_close(e), 0);
}

/* ---- keys ------------------------------------------------------------------------ */
static void test_keys_stay_in_the_prefix(void **state)
{
	static const char *bad[] = { "", "/abs", "a//b", "..", "../x", "a/../b",
				     "a/..", ".", "./a", "a/./b", "a/", "a\nb",
				     "a\x7f" };
	static const char *good[] = { "a<b", "c&d", "q\"t", "sp ace",
				      "n\xc3\xb6n", "x</Key></Object>", "a..b",
				      ".hidden", "step-00000001/shard" };
	struct objstore *s = NULL;
	struct sr_err e = { 0 };
	char uri[300];

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_int_equal(objstore_key_check(bad[i], &e), -EINVAL);
	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		assert_int_equal(objstore_key_check(good[i], &e), 0);
	snprintf(uri, sizeof uri, "file://%s/keys", g_dir);
	assert_int_equal(objstore_open(uri, NULL, &s, &e), 0);
	{
		const char *del[2] = { "ok", "../../etc/passwd" };

		assert_int_equal(objstore_del(s, del, 2, &e), -EINVAL);
		assert_non_null(strstr(e.msg, "segment"));
	}
	assert_int_equal(objstore_put(s, "a/../../x", "1", 1, &e), -EINVAL);
	/* a listed key is taken only under the prefix */
	{
		char full[400];

		snprintf(full, sizeof full, "%s/keys/step-1/a", g_dir);
		assert_string_equal(objstore__relative_key(s, full), "step-1/a");
		snprintf(full, sizeof full, "%s/keysX/step-1/a", g_dir);
		assert_null(objstore__relative_key(s, full));
	}
	/* XML text is escaped once */
	{
		char *x = os_xml_escape("a<b&c>\"d'");

		assert_string_equal(x, "a&lt;b&amp;c&gt;&quot;d&apos;");
		free(x);
	}
	objstore_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_race_commit_held, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_failed_upload_retried, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_uncommitted_step_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_waits_for_the_store,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_says_where_the_step_is,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_deadline_keeps_the_stores_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keys_stay_in_the_prefix,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_final_store_only, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_final_keep, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
