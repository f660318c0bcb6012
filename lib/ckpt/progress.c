/*
 * progress.c - the library tells the node agent how training goes, so a
 * trainer that only calls the checkpoint API shows its steps, its
 * checkpoints and what it restored in `spotrun status`, with no status
 * file of its own (docs/api.md, "SPOTRUN_PROGRESS_FILE").
 *
 * One record per process, fed by every engine of the process and by
 * spotckpt_progress_step(), written to $SPOTRUN_PROGRESS_FILE when the
 * agent set it (nothing happens otherwise):
 *
 *   {"seq": 12,             +1 per write
 *    "source": "libspotckpt",
 *    "step": 1200,          the newest step reported or saved   (optional)
 *    "total_steps": 3000,   as reported by the loop             (optional)
 *    "ckpt_step": 1100,     newest step committed to tier 2; with tier 3,
 *                           the newest whole step in the object store (the
 *                           least over the process's tier-3 engines): a
 *                           node lost now resumes from it    (optional)
 *    "ckpt_error": "...",   with tier 3, why uploads fail now   (optional)
 *    "restored_step": 1000, what this process restored, 0 for a fresh
 *                           start                               (optional)
 *    "restored_from": "...", where each part of it was read (a multi-rank
 *                           restore: "rank-00001=peer rank 0, ...")
 *                                                               (optional)
 *    "saves": 7,            saves accepted so far
 *    "stall_ms": [..]}      the newest (<= CKPT_PROGRESS_STALLS) stalls,
 *                           oldest first: a reader that saw saves = k
 *                           before takes the last saves - k of them, so no
 *                           stall is counted twice and none is lost unless
 *                           more than CKPT_PROGRESS_STALLS saves came
 *                           between two reads
 *
 * Absent = unknown; never -1.  Written as a temp file renamed over the
 * record, so a reader sees the old record or the new one, never part of
 * one.  Not fsynced: it is a report, not data (a crash loses the newest
 * report, never a checkpoint).  A commit, a restore and a save are
 * written at once; a step alone at most once per second.  A write that
 * fails is dropped, logged once: progress never stops training.
 *
 * Thread-safety: one mutex; callable from any thread (the writer thread
 * reports commits).  Lock order: an engine's mutexes, then this one.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "internal.h"

#define CKPT_PROGRESS_STALLS 16
#define CKPT_PROGRESS_REMOTES 16 /* tier-3 engines a process reports on */
#define CKPT_PROGRESS_ERR 240    /* bytes of an upload error reported */
#define CKPT_PROGRESS_FROM 240   /* bytes of restored_from reported */
#define STEP_EVERY_NS (1000 * INT64_C(1000000))

/* One tier-3 engine's recovery point. */
struct remote {
	const void *who;        /* the engine; NULL = a free slot */
	int64_t stored;         /* the store's newest whole step, -1 */
	char err[CKPT_PROGRESS_ERR + 1];
};

static struct {
	pthread_mutex_t mu;
	int64_t seq, step, total, committed, restored, saves;
	char from[CKPT_PROGRESS_FROM + 1]; /* restored_from, "" none */
	double stall_ms[CKPT_PROGRESS_STALLS]; /* ring, newest at saves-1 */
	int64_t next_step_ns;   /* monotonic: the next step-only write */
	bool dirty;             /* a step not written yet */
	bool warned;
	/* tier 3: the live engines' recovery points, and the last one's
	 * once every engine closed (remote: tier 3 was ever reported) */
	struct remote r[CKPT_PROGRESS_REMOTES];
	struct remote last;
	bool remote;
} P = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.step = -1, .total = -1, .committed = -1, .restored = -1,
	.last = { .stored = -1 },
};

static int put(char *buf, size_t n, size_t *k, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int put(char *buf, size_t n, size_t *k, const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(buf + *k, n - *k, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= n - *k)
		return -ENOBUFS;
	*k += (size_t)w;
	return 0;
}

/* s as a JSON string (quotes, backslashes and control bytes escaped;
 * UTF-8 passes as it is). */
static int put_str(char *buf, size_t n, size_t *k, const char *s)
{
	int rc = put(buf, n, k, "\"");

	for (; !rc && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			rc = put(buf, n, k, "\\%c", c);
		else if (c < 0x20)
			rc = put(buf, n, k, "\\u%04x", c);
		else
			rc = put(buf, n, k, "%c", c);
	}
	return rc ? rc : put(buf, n, k, "\"");
}

/* With tier 3: the process's recovery point - the least of its engines'
 * store steps (a node lost now resumes from it) and the first upload
 * error (P.mu held). */
static void remote_point(int64_t *stored, const char **err)
{
	bool any = false;

	*stored = -1;
	*err = "";
	for (int i = 0; i < CKPT_PROGRESS_REMOTES; i++) {
		const struct remote *r = &P.r[i];

		if (!r->who)
			continue;
		if (!any || r->stored < *stored)
			*stored = r->stored;
		if (!**err)
			*err = r->err;
		any = true;
	}
	if (!any) {
		*stored = P.last.stored;
		*err = P.last.err;
	}
}

/* The record as JSON into buf (P.mu held). */
static int render(char *buf, size_t n)
{
	size_t k = 0;
	int64_t first = P.saves > CKPT_PROGRESS_STALLS ?
			P.saves - CKPT_PROGRESS_STALLS : 0;
	int64_t durable = P.committed;
	const char *err = "";
	int rc = put(buf, n, &k, "{\"seq\":%" PRId64 ",\"source\":\"libspotckpt\","
		     "\"saves\":%" PRId64, P.seq, P.saves);

	if (P.remote)
		remote_point(&durable, &err);
	if (!rc && P.step >= 0)
		rc = put(buf, n, &k, ",\"step\":%" PRId64, P.step);
	if (!rc && P.total > 0)
		rc = put(buf, n, &k, ",\"total_steps\":%" PRId64, P.total);
	if (!rc && durable >= 0)
		rc = put(buf, n, &k, ",\"ckpt_step\":%" PRId64, durable);
	if (!rc && err[0]) {
		rc = put(buf, n, &k, ",\"ckpt_error\":");
		if (!rc)
			rc = put_str(buf, n, &k, err);
	}
	if (!rc && P.restored >= 0)
		rc = put(buf, n, &k, ",\"restored_step\":%" PRId64, P.restored);
	if (!rc && P.from[0]) {
		rc = put(buf, n, &k, ",\"restored_from\":");
		if (!rc)
			rc = put_str(buf, n, &k, P.from);
	}
	if (!rc)
		rc = put(buf, n, &k, ",\"stall_ms\":[");
	for (int64_t i = first; !rc && i < P.saves; i++)
		rc = put(buf, n, &k, "%s%.3f", i > first ? "," : "",
			 P.stall_ms[i % CKPT_PROGRESS_STALLS]);
	if (!rc)
		rc = put(buf, n, &k, "]}\n");
	return rc ? rc : (int)k;
}

/* Replace the record (P.mu held).  temp + rename, no fsync (see above). */
static void write_record(void)
{
	const char *path = getenv("SPOTRUN_PROGRESS_FILE");
	char buf[2560], tmp[4200];
	int fd = -1, len;
	ssize_t w;

	if (!path || !*path)
		return;
	P.seq++;
	P.dirty = false;
	P.next_step_ns = sr_time_mono_ns() + STEP_EVERY_NS;
	len = render(buf, sizeof buf);
	if (len < 0 ||
	    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >=
	    (int)sizeof tmp)
		goto fail;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	w = write(fd, buf, (size_t)len);
	if (close(fd) < 0 || w != len || rename(tmp, path) < 0) {
		unlink(tmp);
		goto fail;
	}
	return;
fail:
	if (!P.warned) {
		P.warned = true;
		sr_warn("ckpt", "cannot write the progress report; training goes "
			"on", "path=%s err=\"%s\"", path, strerror(errno));
	}
}

void ckpt__progress_saved(int64_t step, double stall_ms)
{
	pthread_mutex_lock(&P.mu);
	P.stall_ms[P.saves % CKPT_PROGRESS_STALLS] = stall_ms >= 0 ? stall_ms : 0;
	P.saves++;
	if (step > P.step)
		P.step = step;
	write_record();
	pthread_mutex_unlock(&P.mu);
}

void ckpt__progress_committed(int64_t step)
{
	pthread_mutex_lock(&P.mu);
	if (step > P.committed) {
		P.committed = step;
		if (!P.remote) /* with tier 3, ckpt_step is the store's */
			write_record();
	}
	pthread_mutex_unlock(&P.mu);
}

/* err cut to CKPT_PROGRESS_ERR bytes, at a UTF-8 character's start. */
static void set_err(struct remote *r, const char *err)
{
	size_t n = strlen(err);

	if (n > CKPT_PROGRESS_ERR) {
		n = CKPT_PROGRESS_ERR;
		while (n > 0 && ((unsigned char)err[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(r->err, err, n);
	r->err[n] = 0;
}

void ckpt__progress_remote(void *who, int64_t store_step, const char *err)
{
	struct remote *r = NULL, *free_slot = NULL;

	if (!who)
		return;
	if (!err)
		err = "";
	pthread_mutex_lock(&P.mu);
	for (int i = 0; i < CKPT_PROGRESS_REMOTES && !r; i++) {
		if (P.r[i].who == who)
			r = &P.r[i];
		else if (!P.r[i].who && !free_slot)
			free_slot = &P.r[i];
	}
	if (!r && free_slot) {
		r = free_slot;
		r->who = who;
		r->stored = -2; /* differs from any report: written below */
		r->err[0] = 0;
	}
	/* more engines than slots: the rest are not reported (never a
	 * step that is not in the store: each slot is one engine's own) */
	if (r && (r->stored != store_step || strncmp(r->err, err,
						     CKPT_PROGRESS_ERR))) {
		r->stored = store_step < 0 ? -1 : store_step;
		set_err(r, err);
		P.remote = true;
		write_record();
	}
	pthread_mutex_unlock(&P.mu);
}

void ckpt__progress_remote_end(const void *who, int failed)
{
	pthread_mutex_lock(&P.mu);
	for (int i = 0; i < CKPT_PROGRESS_REMOTES; i++) {
		if (P.r[i].who != who)
			continue;
		if (!failed)
			P.last = P.r[i]; /* still the store's step after close */
		P.r[i].who = NULL;
	}
	if (failed) {
		/* tier 3 never started: the report is what it was before */
		bool any = false;

		for (int i = 0; i < CKPT_PROGRESS_REMOTES; i++)
			any |= P.r[i].who != NULL;
		P.remote = any || P.last.who;
	}
	write_record();
	pthread_mutex_unlock(&P.mu);
}

/* The restore's report; from "" = not said (P.mu not held). */
static void restored(int64_t step, const char *from)
{
	pthread_mutex_lock(&P.mu);
	P.restored = step;
	if (step > P.step)
		P.step = step;
	snprintf(P.from, sizeof P.from, "%s", from);
	write_record();
	pthread_mutex_unlock(&P.mu);
}

SPOTCKPT_API int spotckpt_progress_restored(int64_t step)
{
	if (step < 0)
		return ckpt__fail(-EINVAL, "progress_restored: negative step");
	restored(step, "");
	return 0;
}

SPOTCKPT_API int spotckpt_progress_restored_from(int64_t step,
						 const char *from)
{
	if (step < 0 || !from)
		return ckpt__fail(-EINVAL, "progress_restored_from: negative "
				  "step or no text");
	restored(step, from);
	return 0;
}

SPOTCKPT_API int spotckpt_progress_step(int64_t step, int64_t total_steps)
{
	if (step < 0)
		return ckpt__fail(-EINVAL, "progress_step: negative step");
	pthread_mutex_lock(&P.mu);
	if (step != P.step || (total_steps > 0 && total_steps != P.total)) {
		P.step = step;
		if (total_steps > 0)
			P.total = total_steps;
		P.dirty = true;
	}
	if (P.dirty && sr_time_mono_ns() >= P.next_step_ns)
		write_record();
	pthread_mutex_unlock(&P.mu);
	return 0;
}

void ckpt__progress_flush(void)
{
	pthread_mutex_lock(&P.mu);
	if (P.dirty)
		write_record();
	pthread_mutex_unlock(&P.mu);
}
