/*
 * mounts.c - a job's bucket mounts on the node (issue 30; docs/jobs.md
 * "Bucket mounts"): one syncer per mount, `spotrun-agent --dirsync` (this
 * binary, lib/dirsync), run in the workload's isolation as its user, in
 * NODE_DIR/<dst> (a "~/" dst: under $HOME).
 *
 *   per mount:  OFF --start--> RESTORING --"restored"/"copied"--> WATCHING
 *               (COPY and ranks other than 0 exit after it: DONE)
 *               WATCHING --final (workload over)--> FINAL --exit 0--> DONE
 *               FINAL --deadline--> SIGKILL, "sync_error" with what is
 *                                   left and where --> FAILED
 *               any --unexpected exit--> FAILED ("sync_error")
 *
 * The workload starts (setup, then run) only once every mount is past
 * RESTORING.  When a run ends - completed, crashed, stopped or preempted -
 * the final round starts and the run's exit is reported only when every
 * mount is DONE or FAILED, so spotrund ends or moves the job only after
 * the upload is durable (or says what was not uploaded).  On a notice the
 * workload's deadline is the cloud's, less what the upload of the rest
 * needs (agent_mounts_reserve_ns); the final round has until the cloud's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "common/log.h"
#include "common/text.h"
#include "common/timeutil.h"
#include "dirsync/dirsync.h"

#define FINAL_LIMIT_NS (600 * SR_NS_PER_SEC)   /* a run's end, no notice */
#define RESERVE_MIN_NS (2 * SR_NS_PER_SEC)
#define PROGRESS_EVERY_NS (10 * SR_NS_PER_SEC)

enum { MS_OFF, MS_RESTORING, MS_WATCHING, MS_FINAL, MS_DONE, MS_FAILED };

struct agent_mount {
	const struct bucket_mount *b;  /* the assignment's */
	char dir[4200];
	struct workload w;             /* the syncer */
	int cmd_fd;                    /* its stdin, -1 */
	int state, uploads;            /* uploads: 0 for COPY/restore-only */
	int64_t round;                 /* newest committed (or restored) */
	uint64_t files, bytes, uploaded, pending;
	double rate;                   /* bytes/s of the last rounds, 0 */
	int64_t round_ns;              /* monotonic of the last round event */
	char out[8192], err[2048];
	size_t nout, nerr;
	char last_error[256];
};

static const char *mode_name(enum bucket_mode m)
{
	return m == BUCKET_COPY ? "COPY" : m == BUCKET_MOUNT_CACHED ?
	       "MOUNT_CACHED" : "MOUNT";
}

static void push_sync(struct agent *ag, const char *what, int64_t round,
		      const char *msg)
{
	agent__line(ag, "%s", msg);
	agent__push(ag, json_pack("{s:s, s:i, s:s, s:I, s:s}", "type", "sync",
				  "attempt", ag->w_attempt, "what", what, "round",
				  (json_int_t)round, "message", msg), 1);
}

/* The mount's local directory: NODE_DIR/<dst without '/'>, or under
 * the workload's home for "~/..." (sync.c's a.home: the node's own on a
 * disk shared with spotrund, else $HOME).  0 or -EINVAL for a dst the
 * node cannot hold. */
static int mount_dir(struct agent *ag, const char *dst, char *out, size_t n,
		     struct sr_err *e)
{
	const char *home = ag->a.home ? ag->a.home : getenv("HOME");
	const char *rel = dst, *base = ag->node_dir;
	size_t k;

	if (!strncmp(dst, "~/", 2) && home && *home) {
		rel = dst + 2;
		base = home;
	}
	while (*rel == '/')
		rel++;
	k = strlen(rel);
	while (k && rel[k - 1] == '/')
		k--;
	if (k == 0 || k >= n || snprintf(out, n, "%s/%.*s", base, (int)k, rel) >=
	    (int)n)
		return sr_err_set(e, -EINVAL, "bucket mount '%.200s': not a "
				  "directory the node can hold", dst);
	{
		char tmp[DIRSYNC_PATH_MAX + 1];

		snprintf(tmp, sizeof tmp, "%.*s", (int)k, rel);
		if (dirsync_path_check(tmp, e) < 0)
			return sr_err_prefix(e, "bucket mount '%.200s'", dst);
	}
	return 0;
}

static int start_one(struct agent *ag, struct agent_mount *m, struct sr_err *e)
{
	char quiet[32], *argv[16];
	char **envp;
	int p[2], k = 0, rc;

	m->uploads = m->b->mode != BUCKET_COPY && ag->a.rank == 0;
	snprintf(quiet, sizeof quiet, "%lldms", (long long)ag->a.sync_quiet_ms);
	argv[k++] = "/proc/self/exe";
	argv[k++] = "--dirsync";
	argv[k++] = m->dir;
	argv[k++] = "--uri";
	argv[k++] = m->b->uri;
	argv[k++] = "--quiet";
	argv[k++] = quiet;
	if (m->b->mode == BUCKET_COPY)
		argv[k++] = "--copy";
	else if (!m->uploads)
		argv[k++] = "--restore-only";
	else {
		argv[k++] = "--request";
		argv[k++] = ag->sync_request;
		argv[k++] = "--answer";
		argv[k++] = ag->sync_answer[m - ag->mounts];
	}
	argv[k] = NULL;
	envp = envp_build(&ag->a, ag->o->node_id, ag->w_attempt,
			  &(struct envp_files){ .node_dir = ag->node_dir,
						.status_file = ag->status_path,
						.notice_file = ag->notice_path,
						.home = ag->a.home }, e);
	if (!envp)
		return e->code ? e->code : -ENOMEM;
	if (pipe2(p, O_CLOEXEC) < 0) {
		envp_free(envp);
		return sr_err_set(e, -errno, "bucket mount: pipe: %s", strerror(errno));
	}
	rc = agent__start_isolated_w(ag, &m->w, argv, p[0], ag->node_dir, envp, e);
	envp_free(envp);
	close(p[0]);
	if (rc < 0) {
		close(p[1]);
		return sr_err_prefix(e, "bucket mount %s", m->b->dst);
	}
	m->cmd_fd = p[1];
	m->state = MS_RESTORING;
	m->nout = m->nerr = 0;
	agent__line(ag, "bucket mount %s (%s): %s %s into %s (syncer pid %d)",
		    m->b->dst, mode_name(m->b->mode), m->b->mode == BUCKET_COPY ?
		    "copying" : "restoring", m->b->uri, m->dir, (int)m->w.pid);
	return 0;
}

int agent_mounts_start(struct agent *ag, struct sr_err *e)
{
	if (!ag->a.nbuckets)
		return 0;
	if (!ag->mounts) {
		ag->mounts = calloc(ag->a.nbuckets, sizeof *ag->mounts);
		ag->sync_answer = calloc(ag->a.nbuckets, sizeof *ag->sync_answer);
		if (!ag->mounts || !ag->sync_answer)
			return sr_err_set(e, -ENOMEM, "out of memory");
		ag->nmounts = ag->a.nbuckets;
		snprintf(ag->sync_request, sizeof ag->sync_request,
			 "%s/.spotrun-sync-request", ag->node_dir);
		for (size_t i = 0; i < ag->nmounts; i++) {
			struct agent_mount *m = &ag->mounts[i];
			int rc;

			m->b = &ag->a.buckets[i];
			m->cmd_fd = -1;
			m->w.pid = -1;
			m->w.out_fd = m->w.err_fd = -1;
			m->round = -1;
			if (asprintf(&ag->sync_answer[i], "%s/.spotrun-sync-answer-%zu",
				     ag->node_dir, i) < 0) {
				ag->sync_answer[i] = NULL;
				return sr_err_set(e, -ENOMEM, "out of memory");
			}
			rc = mount_dir(ag, m->b->dst, m->dir, sizeof m->dir, e);
			if (rc < 0)
				return rc;
		}
	}
	for (size_t i = 0; i < ag->nmounts; i++) {
		struct agent_mount *m = &ag->mounts[i];
		int rc;

		if (m->state != MS_OFF && m->state != MS_DONE &&
		    m->state != MS_FAILED)
			continue; /* still running from the last attempt */
		if (m->b->mode == BUCKET_COPY && m->state == MS_DONE)
			continue; /* copied once per node */
		rc = start_one(ag, m, e);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int agent_mounts_ready(struct agent *ag)
{
	int ready = 1;

	for (size_t i = 0; i < ag->nmounts; i++) {
		int s = ag->mounts[i].state;

		if (s == MS_FAILED)
			return -1;
		if (s == MS_RESTORING)
			ready = 0;
	}
	return ready;
}

/* The ':'-separated answer files of the uploading mounts (for the
 * workload's SPOTRUN_SYNC_ANSWERS), in buf; NULL when none. */
const char *agent_mounts_answers(struct agent *ag, char *buf, size_t n)
{
	size_t k = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ag->nmounts; i++) {
		int w;

		if (!ag->mounts[i].uploads)
			continue;
		w = snprintf(buf + k, n - k, "%s%s", k ? ":" : "", ag->sync_answer[i]);
		if (w < 0 || (size_t)w >= n - k)
			return NULL;
		k += (size_t)w;
	}
	return k ? buf : NULL;
}

const char *agent_mounts_pids(struct agent *ag, char *buf, size_t n)
{
	size_t k = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ag->nmounts; i++) {
		const struct agent_mount *m = &ag->mounts[i];
		int w;

		if (!m->uploads || m->w.pid <= 0 || m->state != MS_WATCHING)
			continue;
		w = snprintf(buf + k, n - k, "%s%d", k ? " " : "", (int)m->w.pid);
		if (w < 0 || (size_t)w >= n - k)
			return NULL;
		k += (size_t)w;
	}
	return k ? buf : NULL;
}

static void on_event(struct agent *ag, struct agent_mount *m, json_t *ev)
{
	const char *what = json_string_value(json_object_get(ev, "event"));
	json_int_t round = json_integer_value(json_object_get(ev, "round"));
	char msg[900], size[32];
	uint64_t up;

	if (!what)
		return;
	m->files = (uint64_t)json_integer_value(json_object_get(ev, "files"));
	m->bytes = (uint64_t)json_integer_value(json_object_get(ev, "bytes"));
	m->pending = (uint64_t)json_integer_value(json_object_get(ev,
								   "pending_bytes"));
	up = (uint64_t)json_integer_value(json_object_get(ev, "uploaded_bytes"));
	sr_text_bytes(m->bytes, size, sizeof size);
	if (!strcmp(what, "restored")) {
		m->round = round;
		m->uploaded = up;
		m->round_ns = sr_time_mono_ns();
		if (round > 0)
			snprintf(msg, sizeof msg, "bucket mount %s: restored round "
				 "%lld (%llu files, %s) from %s", m->b->dst,
				 (long long)round, (unsigned long long)m->files,
				 size, m->b->uri);
		else
			snprintf(msg, sizeof msg, "bucket mount %s: %s holds no "
				 "round yet: starting with an empty directory",
				 m->b->dst, m->b->uri);
		push_sync(ag, "restored", round, msg);
		m->state = m->uploads ? MS_WATCHING : MS_RESTORING;
	} else if (!strcmp(what, "copied")) {
		sr_text_bytes((uint64_t)json_integer_value(json_object_get(ev, "bytes")),
		      size, sizeof size);
		snprintf(msg, sizeof msg, "bucket mount %s: copied %lld files (%s) "
			 "from %s", m->b->dst, (long long)json_integer_value(
			 json_object_get(ev, "files")), size, m->b->uri);
		push_sync(ag, "copied", -1, msg);
	} else if (!strcmp(what, "round") || !strcmp(what, "final")) {
		int64_t now = sr_time_mono_ns();

		if (up > m->uploaded && now > m->round_ns)
			m->rate = (double)(up - m->uploaded) * 1e9 /
				  (double)(now - m->round_ns);
		m->uploaded = up;
		m->round_ns = now;
		m->round = round;
		m->last_error[0] = '\0';
		if (!strcmp(what, "round")) {
			agent__line(ag, "bucket mount %s: round %lld committed "
				    "(%llu files, %s)", m->b->dst, (long long)round,
				    (unsigned long long)m->files, size);
			return;
		}
		snprintf(msg, sizeof msg, "bucket mount %s: final round %lld is "
			 "durable in %s (%llu files, %s)", m->b->dst,
			 (long long)round, m->b->uri, (unsigned long long)m->files,
			 size);
		push_sync(ag, "final", round, msg);
	} else if (!strcmp(what, "error") || !strcmp(what, "failed")) {
		const char *t = json_string_value(json_object_get(ev, "message"));

		if (!t || !strcmp(t, m->last_error))
			return;
		snprintf(m->last_error, sizeof m->last_error, "%s", t);
		snprintf(msg, sizeof msg, "bucket mount %s: uploading to %s "
			 "failed (retrying; the newest committed round is %lld): "
			 "%.400s", m->b->dst, m->b->uri, (long long)m->round, t);
		push_sync(ag, "error", m->round, msg);
	} else if (!strcmp(what, "warning")) {
		/* the syncer goes on (say, without yielding to the writes) */
		const char *t = json_string_value(json_object_get(ev, "message"));

		agent__line(ag, "bucket mount %s: %.400s", m->b->dst, t ? t : "?");
	}
}

/* Read what a syncer printed: events from stdout, its stderr as lines of
 * the job's log. */
static void drain(struct agent *ag, struct agent_mount *m)
{
	for (int s = 0; s < 2; s++) {
		int *fd = s ? &m->w.err_fd : &m->w.out_fd;
		char *buf = s ? m->err : m->out;
		size_t cap = s ? sizeof m->err : sizeof m->out;
		size_t *have = s ? &m->nerr : &m->nout;

		while (*fd >= 0) {
			ssize_t n = read(*fd, buf + *have, cap - 1 - *have);
			char *nl;

			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (n <= 0) {
				close(*fd);
				*fd = -1;
				break;
			}
			*have += (size_t)n;
			buf[*have] = '\0';
			while ((nl = strchr(buf, '\n'))) {
				*nl = '\0';
				if (s) {
					agent__line(ag, "bucket mount %s: %s",
						    m->b->dst, buf);
				} else {
					json_t *ev = json_loads(buf, 0, NULL);

					if (ev)
						on_event(ag, m, ev);
					json_decref(ev);
				}
				*have -= (size_t)(nl + 1 - buf);
				memmove(buf, nl + 1, *have + 1);
			}
			if (*have >= cap - 1)
				*have = 0; /* a line too long: dropped */
		}
	}
}

int agent_mounts_note_exit(struct agent *ag, pid_t pid, int status)
{
	for (size_t i = 0; i < ag->nmounts; i++) {
		struct agent_mount *m = &ag->mounts[i];
		char msg[900];
		int ok;

		if (m->w.pid != pid || m->w.exited)
			continue;
		workload_note_exit(&m->w, pid, status);
		drain(ag, m);
		workload_close_fds(&m->w);
		if (m->cmd_fd >= 0)
			close(m->cmd_fd);
		m->cmd_fd = -1;
		ok = !m->w.signal && m->w.exit_code == 0;
		if (ok && (m->state == MS_FINAL || !m->uploads)) {
			m->state = MS_DONE;
		} else if (m->state != MS_FAILED) {
			m->state = MS_FAILED;
			snprintf(msg, sizeof msg, "bucket mount %s: the syncer for "
				 "%s ended (%s %d)%s; the newest committed round "
				 "is %lld", m->b->dst, m->b->uri, m->w.signal ?
				 "signal" : "exit", m->w.signal ? m->w.signal :
				 m->w.exit_code, m->last_error[0] ? ", see the "
				 "error above" : "", (long long)m->round);
			push_sync(ag, "error", m->round, msg);
		}
		m->w.pid = -1;
		return 1;
	}
	return 0;
}

int agent_mounts_busy(const struct agent *ag)
{
	for (size_t i = 0; i < ag->nmounts; i++) {
		if (ag->mounts[i].w.pid > 0)
			return 1;
	}
	return 0;
}

int64_t agent_mounts_reserve_ns(const struct agent *ag)
{
	int64_t total = 0;

	for (size_t i = 0; i < ag->nmounts; i++) {
		const struct agent_mount *m = &ag->mounts[i];
		/* what a final round sends: what is pending, or about one
		 * checkpoint's worth (the last round's bytes) */
		uint64_t left = m->pending > m->bytes ? m->pending : m->bytes;
		double rate = m->rate > 1e6 ? m->rate : 50e6;

		if (m->state != MS_WATCHING)
			continue;
		total += (int64_t)((double)left / rate * 1e9);
	}
	return total + (ag->nmounts ? RESERVE_MIN_NS : 0);
}

void agent_mounts_final(struct agent *ag, int64_t deadline_ns)
{
	int any = 0;

	for (size_t i = 0; i < ag->nmounts; i++) {
		struct agent_mount *m = &ag->mounts[i];

		if (m->state != MS_WATCHING || m->cmd_fd < 0)
			continue;
		if (write(m->cmd_fd, "final\n", 6) < 0)
			(void)0; /* its end of input says the same */
		close(m->cmd_fd);
		m->cmd_fd = -1;
		m->state = MS_FINAL;
		any = 1;
	}
	if (!any)
		return;
	if (!ag->mounts_deadline_ns || deadline_ns < ag->mounts_deadline_ns)
		ag->mounts_deadline_ns = deadline_ns;
	ag->mounts_progress_ns = sr_time_mono_ns() + PROGRESS_EVERY_NS;
	agent__line(ag, "bucket mounts: final round (every file), %.0f s left",
		    (double)(deadline_ns - sr_time_mono_ns()) / 1e9);
}

int64_t agent_mounts_final_deadline(struct agent *ag)
{
	return ag->notice_kill_ns ? ag->notice_kill_ns - RESERVE_MIN_NS / 2
				  : sr_time_mono_ns() + FINAL_LIMIT_NS;
}

/* Every loop: read the syncers, enforce the final round's deadline,
 * report the run's exit once the uploads are over.  Returns 1 when the
 * mounts became ready for the workload. */
int agent_mounts_poll(struct agent *ag, int64_t now)
{
	int was = ag->mounts_ready, busy = 0;

	for (size_t i = 0; i < ag->nmounts; i++) {
		struct agent_mount *m = &ag->mounts[i];
		char msg[900], left[32];

		if (m->w.pid <= 0)
			continue;
		drain(ag, m);
		{
			/* reaped here too: the workload's loop reaps only while
			 * a workload runs */
			int st;
			pid_t p = waitpid(m->w.pid, &st, WNOHANG);

			if (p == m->w.pid) {
				agent_mounts_note_exit(ag, p, st);
				continue;
			}
		}
		if (m->state != MS_FINAL)
			continue;
		busy = 1;
		if (ag->mounts_deadline_ns && now >= ag->mounts_deadline_ns) {
			sr_text_bytes(m->pending > m->bytes ? m->pending : m->bytes, left,
			      sizeof left);
			snprintf(msg, sizeof msg, "bucket mount %s: the final round "
				 "did not finish by the deadline (up to %s not "
				 "uploaded from %.300s); the newest committed round "
				 "in %.300s is %lld", m->b->dst, left, m->dir, m->b->uri,
				 (long long)m->round);
			m->state = MS_FAILED;
			push_sync(ag, "error", m->round, msg);
			workload_signal(&m->w, SIGKILL);
		} else if (now >= ag->mounts_progress_ns) {
			agent__line(ag, "bucket mount %s: final round to %s: "
				    "%.0f s left", m->b->dst, m->b->uri,
				    (double)(ag->mounts_deadline_ns - now) / 1e9);
		}
	}
	if (now >= ag->mounts_progress_ns)
		ag->mounts_progress_ns = now + PROGRESS_EVERY_NS;
	if (!busy && ag->held_exit) {
		/* the run's end is reported once what it wrote is durable */
		agent__push(ag, ag->held_exit, 1);
		ag->held_exit = NULL;
		ag->mounts_deadline_ns = 0;
	}
	ag->mounts_ready = agent_mounts_ready(ag) == 1;
	return !was && ag->mounts_ready;
}

int agent_mounts_finishing(const struct agent *ag)
{
	return ag->held_exit != NULL;
}

void agent_mounts_kill(struct agent *ag)
{
	for (size_t i = 0; i < ag->nmounts; i++) {
		struct agent_mount *m = &ag->mounts[i];

		if (m->w.pid > 0 && !m->w.exited)
			workload_signal(&m->w, SIGKILL);
		workload_close_fds(&m->w);
		if (m->cmd_fd >= 0)
			close(m->cmd_fd);
		m->cmd_fd = -1;
	}
}

void agent_mounts_free(struct agent *ag)
{
	for (size_t i = 0; ag->sync_answer && i < ag->nmounts; i++)
		free(ag->sync_answer[i]);
	free(ag->sync_answer);
	free(ag->mounts);
	json_decref(ag->held_exit);
	ag->mounts = NULL;
	ag->sync_answer = NULL;
	ag->held_exit = NULL;
	ag->nmounts = 0;
}
