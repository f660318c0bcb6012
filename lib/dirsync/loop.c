/*
 * loop.c - the syncer's life (`spotrun-agent --dirsync`, run by the agent
 * in the workload's isolation; docs/jobs.md "The signal contract"):
 *
 *   start --restore--> restored (event "restored", round or -1)
 *     COPY mode: copy the bucket's objects, event "copied", exit 0
 *   watching (uploads yield while the workload writes into the
 *            directory: watch.c; a forced round does not yield; a watch
 *            that cannot start is event "warning", and nothing yields)
 *            --every poll: scan; stable changes--> round (event "round",
 *                        with yield_ms: the uploads' total wait so far)
 *            --"sync" on the command fd, SIGUSR2 (the workload's "my
 *                        files are stable now"), or a new sync_now
 *                        request--> forced round (every file stable),
 *                        request answered
 *            --round failed--> event "error", backoff (1 s doubling to
 *                        30 s), watching
 *            --"final", EOF on the command fd, SIGTERM-->
 *   final: forced rounds until one succeeds (the agent bounds it by
 *          killing), event "final" (round, pending) --> exit 0
 *
 * Events are JSON lines on the events stream; the agent reads them (its
 * job log and events).  The sync_now request file (`request`, written by
 * spotrun.sync_now(): {"request": N}) is read with O_NOFOLLOW as a
 * regular file only; the answer ({"request": N, "round": R, "error": ...})
 * is written durably to `answer`.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "dirsync.h"
#include "dirsync_loop.h"
#include "common/fsutil.h"
#include "common/timeutil.h"

#define BACKOFF_BASE_NS (1 * SR_NS_PER_SEC)
#define BACKOFF_CAP_NS (30 * SR_NS_PER_SEC)

static volatile sig_atomic_t term_seen, usr2_seen;

/* Behind the training: nice +10, and the lowest best-effort I/O level
 * (ioprio_set has no libc wrapper).  Best effort: a refusal changes
 * nothing else. */
static void background(void)
{
	errno = 0;
	if (nice(10) == -1 && errno)
		(void)0;
	syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0,
		(2 /* IOPRIO_CLASS_BE */ << 13) | 7);
}

static void on_term(int sig)
{
	if (sig == SIGUSR2)
		usr2_seen = 1;
	else
		term_seen = 1;
}

static void emit(FILE *f, json_t *ev)
{
	char *s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;

	if (s) {
		fprintf(f, "%s\n", s);
		fflush(f);
	}
	free(s);
	json_decref(ev);
}

static void emit_round(FILE *f, const char *what, struct dirsync *d,
		       int64_t round, const struct dirsync_watch *w)
{
	struct dirsync_stats st;

	dirsync_stats(d, &st);
	emit(f, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "event",
			  what, "round", (json_int_t)(round ? round : st.round),
			  "files", (json_int_t)st.files, "bytes",
			  (json_int_t)st.bytes, "uploaded_bytes",
			  (json_int_t)st.uploaded_bytes, "pending_files",
			  (json_int_t)st.pending_files, "pending_bytes",
			  (json_int_t)st.pending_bytes, "yield_ms",
			  (json_int_t)(dirsync_watch_yielded_ns(w) / 1000000)));
}

/* A new sync_now request number, or 0. */
static int64_t request_seen(const struct dirsync_loop_opts *o, int64_t last)
{
	char *buf = NULL;
	json_t *j;
	json_int_t n = 0;

	if (!o->request)
		return 0;
	if (sr_fs_read_regular_at(AT_FDCWD, o->request, o->request, 4096, &buf,
				  NULL, NULL) < 0)
		return 0;
	j = json_loads(buf, 0, NULL);
	free(buf);
	if (j && json_unpack(j, "{s:I}", "request", &n) == 0 && n > last) {
		json_decref(j);
		return n;
	}
	json_decref(j);
	return 0;
}

static void answer(const struct dirsync_loop_opts *o, int64_t req,
		   int64_t round, const char *err)
{
	json_t *j = json_pack("{s:I, s:I, s:s?}", "request", (json_int_t)req,
			      "round", (json_int_t)round, "error", err);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	if (s && o->answer)
		sr_fs_write_atomic(o->answer, s, strlen(s), 0644, NULL);
	free(s);
	json_decref(j);
}

/* One command line from the fd: 1 sync, 2 final (or EOF), 0 none. */
static int command(int fd, char *buf, size_t *have, size_t cap)
{
	ssize_t n;
	char *nl;

	if (fd < 0)
		return 0;
	n = read(fd, buf + *have, cap - 1 - *have);
	if (n == 0)
		return 2;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : 2;
	*have += (size_t)n;
	buf[*have] = '\0';
	while ((nl = strchr(buf, '\n'))) {
		int final = !strncmp(buf, "final", 5);
		int sync = !strncmp(buf, "sync", 4);

		*have -= (size_t)(nl + 1 - buf);
		memmove(buf, nl + 1, *have + 1);
		if (final)
			return 2;
		if (sync)
			return 1;
	}
	if (*have >= cap - 1)
		*have = 0; /* a line too long: dropped */
	return 0;
}

int dirsync_loop(const struct dirsync_loop_opts *o, struct sr_err *e)
{
	struct dirsync_opts dopts = { .uri = o->uri, .keep = o->keep,
				      .workers = o->workers };
	struct dirsync *d = NULL;
	struct dirsync_watch *w = NULL;
	struct sigaction sa = { .sa_handler = on_term };
	int64_t round, next_try = 0, backoff = BACKOFF_BASE_NS, req = 0;
	int64_t poll_ns = o->poll_ns > 0 ? o->poll_ns : 500 * 1000000LL;
	char cmd[256];
	size_t have = 0;
	int fd, rc, final = 0, forced = 0;

	fd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && sr_fs_mkdir_p(o->dir, 0755) == 0)
		fd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sr_err_set(e, -errno, "%s: %s", o->dir, strerror(errno));
	dopts.dirfd = fd;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	if (o->background)
		background();
	if (o->cmd_fd >= 0)
		fcntl(o->cmd_fd, F_SETFL, fcntl(o->cmd_fd, F_GETFL) | O_NONBLOCK);
	rc = dirsync_open(&dopts, &d, e);
	if (rc < 0)
		goto out;
	if (o->copy) {
		uint64_t files = 0, bytes = 0;

		rc = dirsync_copy(dirsync_store(d), fd, &files, &bytes, e);
		if (rc == 0)
			emit(o->events, json_pack("{s:s, s:I, s:I}", "event",
						  "copied", "files",
						  (json_int_t)files, "bytes",
						  (json_int_t)bytes));
		goto out;
	}
	rc = dirsync_restore(d, &round, e);
	if (rc < 0)
		goto out;
	next_try = sr_time_mono_ns() + poll_ns; /* nothing changed yet */
	emit_round(o->events, "restored", d, round, NULL);
	if (!o->upload)
		goto out; /* a rank that only restores */
	if (o->yield_max_ns > 0) {
		struct sr_err we;

		/* after the restore: its own writes are not the workload's */
		sr_err_clear(&we);
		if (dirsync_watch_start(fd, DIRSYNC_YIELD_QUIET_NS,
					o->yield_max_ns, &w, &we) < 0)
			emit(o->events, json_pack("{s:s, s:s}", "event",
						  "warning", "message", we.msg));
		if (w)
			dirsync_set_gate(d, dirsync_watch_gate,
					 dirsync_watch_pace, w);
	}
	for (;;) {
		int64_t now = sr_time_mono_ns(), r;
		struct sr_err re;
		int c = command(o->cmd_fd, cmd, &have, sizeof cmd), more;

		if (c == 2 || term_seen)
			final = 1;
		if (c == 1)
			forced = 1;
		if (usr2_seen) {
			usr2_seen = 0;
			forced = 1;
		}
		if ((r = request_seen(o, req)) > 0) {
			req = r;
			forced = 1;
		}
		if (now >= next_try || final || forced) {
			sr_err_clear(&re);
			dirsync_watch_hold(w, final || forced);
			rc = dirsync_sync(d, final || forced ? -1 : o->quiet_ns, &r,
					  &re);
			if (rc < 0) {
				emit(o->events, json_pack("{s:s, s:s}", "event",
							  "error", "message", re.msg));
				if (forced && req)
					answer(o, req, -1, re.msg);
				next_try = now + backoff;
				backoff = backoff * 2 > BACKOFF_CAP_NS ? BACKOFF_CAP_NS
								      : backoff * 2;
				if (final) {
					/* the agent bounds the final round */
					struct timespec ts = { 0, 500000000 };

					nanosleep(&ts, NULL);
					continue;
				}
			} else {
				backoff = BACKOFF_BASE_NS;
				next_try = 0;
				if (r > 0)
					emit_round(o->events, "round", d, r, w);
				if (forced && req) {
					struct dirsync_stats st;

					dirsync_stats(d, &st);
					answer(o, req, st.round, NULL);
				}
				if (final) {
					emit_round(o->events, "final", d, 0, w);
					break;
				}
			}
			forced = 0;
		}
		{
			struct pollfd p = { o->cmd_fd, POLLIN, 0 };

			more = poll(&p, o->cmd_fd >= 0 ? 1 : 0,
				    (int)(poll_ns / 1000000));
			(void)more;
		}
	}
	rc = 0;
out:
	dirsync_close(d);
	dirsync_watch_stop(w);
	close(fd);
	return rc;
}
