/*
 * agent.c - spotrun-agent's main loop.
 *
 * The node's life (docs/api.md, "Node API"):
 *
 *   register --> loop { heartbeat -> directive; report events + logs }
 *
 * What runs on the node is decided by spotrund's directive, never by the
 * agent alone, except for a preemption notice, which the agent acts on at
 * once because the node is about to disappear:
 *
 *   workload:  NONE --run(N)--> SETUP (if any, once per node) --> RUN(N)
 *                                  |                               |
 *              stop / exit / notice: SIGTERM to the group -> STOPPING
 *                                  |                               |
 *              leader exits and group empty (or deadline: SIGKILL) -> NONE
 *
 * Preemption (IMDS notice seen by notice.c):
 *   1. SIGTERM the workload's process group (SPOTRUN_PREEMPT_SIGNAL=TERM,
 *      the spotrun.preemption contract: final checkpoint at the next step
 *      boundary, then exit 0);
 *   2. report the notice;
 *   3. wait for the group to exit, up to the notice time minus a margin
 *      left for step 4 (then SIGKILL);
 *   4. report the final checkpoint (newest committed step in ckpt_dir, if
 *      it is newer than before the signal) and the exit, then exit 0.
 *
 * A directive `stop` is the same without the exit: a healthy gang member
 * checkpoints and keeps heart-beating while a lost peer is replaced.
 *
 * Every child of the agent is reaped here (the agent is a subreaper, so a
 * workload whose /bin/sh died still has its grandchildren reaped).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "agent/ckscan.h"
#include "agent/gpustat.h"
#include "common/fsutil.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"

#define MS (INT64_C(1000000))
#define STOP_GRACE_NS (60 * SR_NS_PER_SEC)   /* stop/exit directive */
#define SIGNAL_GRACE_NS (3 * SR_NS_PER_SEC)  /* agent itself told to quit */
#define REPORT_EVERY_NS (500 * MS)
#define MAX_EVENTS_PER_REPORT 1000
#define MAX_PENDING_EVENTS 5000

enum wkind { W_NONE, W_SETUP, W_RUN };
enum stop_why { STOP_NONE, STOP_NOTICE, STOP_DIRECTIVE };

volatile sig_atomic_t agent_quit_signal; /* set by main.c's handler */

struct agent {
	const struct agent_opts *o;
	struct ctlc *cli;
	struct assignment a;
	char node_dir[4096], status_path[4200], wlog_path[4200];
	char notice_path[4200];
	char path_prefix[64]; /* "/v1/nodes/<id>" */
	int wlog_fd;

	struct notice_watch nw;
	int nw_err_gen;
	struct logbatch *logs;
	struct status_reader st;
	struct status_info last_status;
	json_t *events; /* pending report events other than workload logs */
	struct gpustat *gpu;
	struct procstat_sample cpu_prev;

	struct workload w;
	enum wkind kind;
	int w_attempt;      /* attempt of the current/last RUN */
	int setup_ok;
	int want_attempt;   /* a run directive not yet acted on, 0 none */
	enum stop_why stopping;
	int64_t stop_deadline_ns; /* monotonic */
	int64_t ckpt_before;

	int notice_handled;
	int exit_after;     /* exit once the workload is gone and reported */
	int node_gone;      /* spotrund answered 409: stop everything */
	int64_t next_hb_ns, next_report_ns;
	int64_t give_up_ns; /* when quitting on a signal: stop flushing then */
	int64_t last_ok_ns; /* last call spotrund answered (monotonic) */
	int urgent;
};

/* ---- small helpers ---------------------------------------------------- */

static void agent_line(struct agent *ag, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A line from the agent itself into the job's log (stream "agent"). */
static void agent_line(struct agent *ag, const char *fmt, ...)
{
	char ts[40], line[1024];
	va_list ap;
	json_t *ev;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	sr_info("agent", "job log", "line=\"%s\"", line);
	if (json_array_size(ag->events) >= MAX_PENDING_EVENTS)
		return;
	sr_time_format_rfc3339(sr_time_real_ns(), 3, ts, sizeof ts);
	ev = json_pack("{s:s, s:i, s:s, s:s, s:s}", "type", "log", "attempt",
		       ag->w_attempt, "stream", "agent", "ts", ts, "line", line);
	if (ev)
		json_array_append_new(ag->events, ev);
}

static void push_event(struct agent *ag, json_t *ev, int urgent)
{
	if (!ev)
		return;
	if (json_array_size(ag->events) >= MAX_PENDING_EVENTS) {
		json_decref(ev);
		return;
	}
	json_array_append_new(ag->events, ev);
	if (urgent)
		ag->urgent = 1;
}

static const char *wstate_name(const struct agent *ag)
{
	if (ag->kind == W_NONE)
		return ag->w_attempt > 0 ? "exited" : "idle";
	if (ag->stopping != STOP_NONE)
		return "stopping";
	return ag->kind == W_SETUP ? "setup" : "running";
}

/* ---- talking to spotrund ---------------------------------------------- */

static void handle_directive(struct agent *ag, json_t *reply);

/* POST to /v1/nodes/<id>/<what>.  Returns 0, or a negative code; sets
 * node_gone on 409 (the node was terminated or declared lost). */
static int post(struct agent *ag, const char *what, json_t *body,
		json_t **reply)
{
	char path[128];
	struct sr_err e;
	long status = 0;
	int rc;

	sr_err_clear(&e);
	snprintf(path, sizeof path, "%s/%s", ag->path_prefix, what);
	rc = ctlc_call(ag->cli, "POST", path, body, reply, &status, &e);
	if (status != 0)
		ag->last_ok_ns = sr_time_mono_ns(); /* it answered */
	if (rc < 0) {
		if (status == 409) {
			if (!ag->node_gone)
				sr_warn("agent", "spotrund says this node is gone",
					"error=\"%s\"", sr_err_str(&e, rc));
			ag->node_gone = 1;
		} else {
			sr_warn("agent", "request failed", "path=%s error=\"%s\"",
				path, sr_err_str(&e, rc));
		}
	}
	return rc;
}

static void heartbeat(struct agent *ag)
{
	struct procstat_sample now;
	struct gpustat_sample gs;
	json_t *b, *reply = NULL;
	int pm = -1, gpm;

	b = json_pack("{s:s, s:i}", "workload", wstate_name(ag), "attempt",
		      ag->w_attempt);
	if (!b)
		return;
	if (ag->kind != W_NONE) {
		if (procstat_sample(NULL, ag->w.pid, &now) == 0) {
			if (ag->cpu_prev.mono_ns)
				pm = procstat_cpu_permille(&ag->cpu_prev, &now);
			ag->cpu_prev = now;
		}
		json_object_set_new(b, "workload_pgid", json_integer(ag->w.pid));
	}
	json_object_set_new(b, "cpu_util", pm >= 0 ? json_real(pm / 1000.0)
						   : json_null());
	gpm = -1;
	if (ag->gpu && gpustat_sample(ag->gpu, &gs, NULL) == 0)
		gpm = gpustat_mean_permille(&gs);
	json_object_set_new(b, "gpu_util", gpm >= 0 ? json_real(gpm / 1000.0)
						    : json_null());
	if (ag->kind == W_RUN || ag->w_attempt > 0) {
		const struct status_info *s = &ag->last_status;

		if (s->step >= 0)
			json_object_set_new(b, "step", json_integer(s->step));
		if (s->total_steps >= 0)
			json_object_set_new(b, "total_steps",
					    json_integer(s->total_steps));
		if (s->ckpt_step >= 0)
			json_object_set_new(b, "ckpt_step", json_integer(s->ckpt_step));
		if (s->restored_step >= 0)
			json_object_set_new(b, "restored_step",
					    json_integer(s->restored_step));
	}
	if (post(ag, "heartbeat", b, &reply) == 0)
		handle_directive(ag, reply);
	json_decref(reply);
	json_decref(b);
}

/* Send pending events and up to the per-report limit of log lines. */
static int report(struct agent *ag)
{
	size_t nev = json_array_size(ag->events);
	json_t *all = NULL, *b = NULL, *reply = NULL;
	int nlog, rc;

	if (nev == 0 && logbatch_queued(ag->logs) == 0)
		return 0;
	all = json_array();
	if (!all)
		return -ENOMEM;
	if (nev > MAX_EVENTS_PER_REPORT)
		nev = MAX_EVENTS_PER_REPORT;
	for (size_t i = 0; i < nev; i++)
		json_array_append(all, json_array_get(ag->events, i));
	nlog = logbatch_peek_json(ag->logs, MAX_EVENTS_PER_REPORT - nev, all);
	if (nlog < 0) {
		rc = nlog;
		goto out;
	}
	b = json_pack("{s:O}", "events", all);
	if (!b) {
		rc = -ENOMEM;
		goto out;
	}
	rc = post(ag, "report", b, &reply);
	if (rc == 0 || rc == -EINVAL || rc == -E2BIG) {
		/* sent, or refused as malformed: retrying the same batch would
		 * fail forever, so it is dropped (the warning names why) */
		for (size_t i = 0; i < nev; i++)
			json_array_remove(ag->events, 0);
		logbatch_ack(ag->logs, (size_t)nlog);
	}
	if (rc == 0) {
		ag->urgent = 0;
		handle_directive(ag, reply);
	}
out:
	json_decref(reply);
	json_decref(b);
	json_decref(all);
	return rc;
}

/* ---- the workload ----------------------------------------------------- */

static int start_child(struct agent *ag, enum wkind kind, int attempt)
{
	const char *script = kind == W_SETUP ? ag->a.setup : ag->a.run;
	const char *cwd = ag->a.workdir ? ag->a.workdir : ag->node_dir;
	struct sr_err e;
	char **envp;
	int rc;

	sr_err_clear(&e);
	if (kind == W_RUN) {
		unlink(ag->status_path); /* a new attempt writes its own */
		unlink(ag->notice_path);
		status_reader_init(&ag->st, ag->status_path);
		ag->w_attempt = attempt;
	}
	envp = envp_build(&ag->a, ag->o->node_id, attempt, ag->node_dir,
			  ag->status_path, ag->notice_path, &e);
	if (!envp) {
		rc = e.code ? e.code : -ENOMEM;
		goto fail;
	}
	rc = workload_start(&ag->w, script, cwd, envp, &e);
	envp_free(envp);
	if (rc < 0)
		goto fail;
	ag->kind = kind;
	ag->stopping = STOP_NONE;
	memset(&ag->cpu_prev, 0, sizeof ag->cpu_prev);
	agent_line(ag, "started %s of attempt %d (pid %d)",
		   kind == W_SETUP ? "setup" : "run", attempt, (int)ag->w.pid);
	return 0;
fail:
	agent_line(ag, "cannot start %s: %s", kind == W_SETUP ? "setup" : "run",
		   sr_err_str(&e, rc));
	/* report it as the workload failing, so the job's restart policy
	 * applies rather than the job hanging */
	if (kind == W_SETUP)
		push_event(ag, json_pack("{s:s, s:i}", "type", "setup_done",
					 "exit_code", 127), 1);
	else
		push_event(ag, json_pack("{s:s, s:i, s:i, s:n, s:s}", "type",
					 "exit", "attempt", attempt, "exit_code",
					 127, "signal", "cause", "crashed"), 1);
	return rc;
}

/* Start what the wanted attempt needs next: setup first, then run. */
static void advance(struct agent *ag)
{
	int want = ag->want_attempt;

	if (ag->kind != W_NONE || want == 0 || ag->notice_handled || ag->exit_after)
		return;
	ag->want_attempt = 0;
	if (!ag->setup_ok && ag->a.setup && *ag->a.setup) {
		ag->want_attempt = want; /* run after setup */
		ag->w_attempt = want;
		start_child(ag, W_SETUP, want);
		return;
	}
	ag->setup_ok = 1;
	start_child(ag, W_RUN, want);
}

static void begin_stop(struct agent *ag, enum stop_why why, int64_t deadline)
{
	if (ag->kind == W_NONE || ag->stopping != STOP_NONE)
		return;
	ag->stopping = why;
	ag->stop_deadline_ns = deadline;
	ag->ckpt_before = ckscan_newest_step(ag->a.ckpt_dir);
	if (workload_signal(&ag->w, SIGTERM) < 0 && !ag->w.exited)
		sr_warn("agent", "SIGTERM to workload failed", "pgid=%d",
			(int)ag->w.pid);
}

static void drain_pipe(struct agent *ag, int *fd, enum logbatch_stream s)
{
	char buf[16384];

	while (*fd >= 0) {
		ssize_t n = read(*fd, buf, sizeof buf);

		if (n > 0) {
			logbatch_feed(ag->logs, s, ag->w_attempt, buf, (size_t)n,
				      sr_time_real_ns());
			if (ag->wlog_fd >= 0 && write(ag->wlog_fd, buf, (size_t)n) < 0)
				(void)0; /* the local copy is best effort */
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		close(*fd); /* EOF or error */
		*fd = -1;
	}
}

static void reap_children(struct agent *ag)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p <= 0)
			return;
		workload_note_exit(&ag->w, p, st);
	}
}

/* Read the status file one last time after a stop: earlier stalls are
 * reported as periodic checkpoints, the last one is returned as the final
 * save's duration (-1 if none). */
static double final_stall(struct agent *ag)
{
	struct status_info si;
	double last;

	if (status_read(&ag->st, &si, NULL) != 1 || si.nstalls == 0)
		return -1;
	ag->last_status = si;
	last = si.stall_ms[si.nstalls - 1];
	for (int i = 0; i + 1 < si.nstalls; i++) {
		json_t *ev = json_pack("{s:s, s:i, s:f, s:b, s:b}", "type",
				       "checkpoint", "attempt", ag->w_attempt,
				       "stall_ms", si.stall_ms[i], "final", 0,
				       "durable", 0);

		push_event(ag, ev, 0);
	}
	return last;
}

/* The workload is over: the leader exited and the group is empty, or
 * stragglers were killed.  Report it. */
static void workload_finished(struct agent *ag)
{
	char how[64];
	const char *cause;
	enum wkind kind = ag->kind;

	drain_pipe(ag, &ag->w.out_fd, LOGBATCH_STDOUT);
	drain_pipe(ag, &ag->w.err_fd, LOGBATCH_STDERR);
	workload_close_fds(&ag->w);
	logbatch_flush_partial(ag->logs, sr_time_real_ns());
	workload_status_str(&ag->w, how, sizeof how);
	if (kind == W_SETUP) {
		agent_line(ag, "setup ended: %s", how);
		push_event(ag, json_pack("{s:s, s:i}", "type", "setup_done",
					 "exit_code", ag->w.exit_code), 1);
		ag->setup_ok = ag->w.exit_code == 0 && !ag->w.signal;
		if (!ag->setup_ok)
			ag->want_attempt = 0; /* counted as a crash upstream */
	} else {
		if (ag->stopping != STOP_NONE) {
			int64_t now_step = ckscan_newest_step(ag->a.ckpt_dir);
			double final_ms = -1;

			/* the workload's last status write carries the final
			 * save's duration: take it for the final event */
			final_ms = final_stall(ag);
			/* a stop for any reason asks for a final checkpoint */
			cause = ag->notice_handled ? "preempted" : "stopped";
			if (now_step >= 0 && now_step > ag->ckpt_before) {
				json_t *ev = json_pack(
					"{s:s, s:i, s:I, s:b, s:b}", "type",
					"checkpoint", "attempt", ag->w_attempt,
					"step", (json_int_t)now_step, "final", 1,
					"durable", 1);

				if (ev && final_ms >= 0)
					json_object_set_new(ev, "stall_ms",
							    json_real(final_ms));
				push_event(ag, ev, 1);
				agent_line(ag, "final checkpoint at step %lld is "
					   "durable", (long long)now_step);
			} else {
				agent_line(ag, "no final checkpoint before the "
					   "deadline (newest committed: %lld)",
					   (long long)now_step);
			}
		} else {
			cause = ag->w.exit_code == 0 ? "completed" : "crashed";
		}
		agent_line(ag, "run of attempt %d ended: %s (%s)", ag->w_attempt,
			   how, cause);
		push_event(ag, json_pack("{s:s, s:i, s:i, s:o, s:s}", "type",
					 "exit", "attempt", ag->w_attempt,
					 "exit_code", ag->w.exit_code, "signal",
					 ag->w.signal ? json_integer(ag->w.signal)
						      : json_null(),
					 "cause", cause), 1);
	}
	ag->kind = W_NONE;
	ag->stopping = STOP_NONE;
	memset(&ag->w, 0, sizeof ag->w);
	ag->w.pid = -1;
	ag->w.out_fd = ag->w.err_fd = -1;
}

/* Move the workload along: reap, kill stragglers, detect the end. */
static void check_workload(struct agent *ag, int64_t now)
{
	if (ag->kind == W_NONE)
		return;
	reap_children(ag);
	if (ag->stopping != STOP_NONE && now >= ag->stop_deadline_ns &&
	    workload_group_alive(&ag->w)) {
		agent_line(ag, "workload did not exit by the deadline: SIGKILL");
		workload_signal(&ag->w, SIGKILL);
		ag->stop_deadline_ns = INT64_MAX;
	}
	if (!ag->w.exited)
		return;
	if (workload_group_alive(&ag->w)) {
		if (ag->stopping == STOP_NONE) {
			/* the script is done; leftovers do not outlive it */
			workload_signal(&ag->w, SIGKILL);
		}
		return;
	}
	/* group empty: wait for the pipes' EOF, which is immediate now */
	drain_pipe(ag, &ag->w.out_fd, LOGBATCH_STDOUT);
	drain_pipe(ag, &ag->w.err_fd, LOGBATCH_STDERR);
	workload_finished(ag);
	advance(ag);
}

static void check_status(struct agent *ag)
{
	struct status_info si;
	struct sr_err e;
	int rc;

	if (ag->w_attempt == 0 || ag->stopping != STOP_NONE)
		return; /* while stopping, final_stall() reads it at the end */
	sr_err_clear(&e);
	rc = status_read(&ag->st, &si, &e);
	if (rc < 0) {
		agent_line(ag, "ignoring status file: %s", sr_err_str(&e, rc));
		return;
	}
	if (rc == 0)
		return;
	ag->last_status = si;
	if (si.nstalls > 0) {
		/* the workload writes the file right after a save, so the
		 * stalls belong to the saves at `step` (status.h) */
		int64_t committed = ckscan_newest_step(ag->a.ckpt_dir);

		for (int i = 0; i < si.nstalls; i++) {
			json_t *ev = json_pack("{s:s, s:i, s:f, s:b, s:b}", "type",
					       "checkpoint", "attempt",
					       ag->w_attempt, "stall_ms",
					       si.stall_ms[i], "final", 0,
					       "durable",
					       si.step >= 0 && committed >= si.step);

			if (ev && si.step >= 0)
				json_object_set_new(ev, "step", json_integer(si.step));
			push_event(ag, ev, 0);
		}
	}
}

/* ---- directives and notices ------------------------------------------ */

static void handle_directive(struct agent *ag, json_t *reply)
{
	json_t *d = reply ? json_object_get(reply, "directive") : NULL;
	const char *action;
	json_int_t attempt;

	if (!json_is_object(d) || ag->notice_handled)
		return;
	action = json_string_value(json_object_get(d, "action"));
	attempt = json_integer_value(json_object_get(d, "attempt"));
	if (!action)
		return;
	if (!strcmp(action, "run")) {
		if (attempt <= 0 || attempt > INT32_MAX)
			return;
		if ((int)attempt == ag->w_attempt &&
		    (ag->kind == W_RUN || ag->want_attempt == 0))
			return; /* running or already ran this attempt */
		if ((int)attempt < ag->w_attempt)
			return; /* a stale directive */
		ag->want_attempt = (int)attempt;
		if (ag->kind == W_RUN) /* an older attempt still runs */
			begin_stop(ag, STOP_DIRECTIVE,
				   sr_time_mono_ns() + STOP_GRACE_NS);
		advance(ag);
	} else if (!strcmp(action, "stop")) {
		ag->want_attempt = 0;
		begin_stop(ag, STOP_DIRECTIVE, sr_time_mono_ns() + STOP_GRACE_NS);
	} else if (!strcmp(action, "exit")) {
		ag->want_attempt = 0;
		ag->exit_after = 1;
		begin_stop(ag, STOP_DIRECTIVE, sr_time_mono_ns() + STOP_GRACE_NS);
	}
	/* "idle" and unknown actions: nothing to do */
}

/* The notice file of the spotrun.preemption contract (docs/python.md):
 * the deadline as Unix seconds, for a trainer that cannot be signalled
 * (and so that save_final() knows the real deadline, not a default). */
static void write_notice_file(struct agent *ag, int64_t t_ns)
{
	char buf[64];
	struct sr_err e;
	int rc;

	snprintf(buf, sizeof buf, "%lld.%03lld\n", (long long)(t_ns / SR_NS_PER_SEC),
		 (long long)(t_ns % SR_NS_PER_SEC / 1000000));
	sr_err_clear(&e);
	rc = sr_fs_write_atomic(ag->notice_path, buf, strlen(buf), 0644, &e);
	if (rc < 0)
		agent_line(ag, "cannot write the notice file: %s", sr_err_str(&e, rc));
}

static void check_notice(struct agent *ag)
{
	char buf[16], msg[SR_ERR_MSG_MAX], ts[40];
	int64_t t_ns, now_real, lead, margin, deadline;
	int action;

	while (read(ag->nw.wake_fd[0], buf, sizeof buf) > 0)
		;
	if (notice_watch_error(&ag->nw, &ag->nw_err_gen, msg, sizeof msg) &&
	    msg[0])
		agent_line(ag, "preemption endpoint: %s", msg);
	if (ag->notice_handled || !atomic_load(&ag->nw.have))
		return;
	ag->notice_handled = 1;
	ag->exit_after = 1;
	ag->want_attempt = 0;
	t_ns = atomic_load(&ag->nw.time_ns);
	action = atomic_load(&ag->nw.action);
	now_real = sr_time_real_ns();
	lead = t_ns - now_real;
	/* keep a fifth of the lead (at most 1 s) to report before the kill */
	margin = lead / 5 < SR_NS_PER_SEC ? lead / 5 : SR_NS_PER_SEC;
	deadline = sr_time_mono_ns() + (lead > 0 ? lead - margin : 0);
	write_notice_file(ag, t_ns);
	if (ag->stopping != STOP_NONE) {
		/* already stopping on a directive: the notice sets the pace */
		ag->stopping = STOP_NOTICE;
		if (deadline < ag->stop_deadline_ns)
			ag->stop_deadline_ns = deadline;
	}
	begin_stop(ag, STOP_NOTICE, deadline);
	sr_time_format_rfc3339(t_ns, 3, ts, sizeof ts);
	push_event(ag, json_pack("{s:s, s:s, s:s}", "type", "notice", "action",
				 imds_action_name((enum imds_action)action),
				 "time", ts), 1);
	agent_line(ag, "spot interruption notice: %s at %s (%.1f s from now)",
		   imds_action_name((enum imds_action)action), ts,
		   (double)lead / 1e9);
}

/* ---- setup and the loop ------------------------------------------------ */

static int do_register(struct agent *ag)
{
	char host[256] = "";
	json_t *b, *reply = NULL;
	struct sr_err e;
	int rc, tries = 0;

	gethostname(host, sizeof host - 1);
	b = json_pack("{s:i, s:s, s:s}", "pid", (int)getpid(), "hostname", host,
		      "agent_version", AGENT_VERSION);
	if (!b)
		return -ENOMEM;
	for (;;) {
		rc = post(ag, "register", b, &reply);
		if (rc == 0 || rc == -EACCES || rc == -EINVAL || ag->node_gone ||
		    rc == -SR_ENOTFOUND || agent_quit_signal)
			break;
		if (++tries > 120) /* ~1 min without a daemon */
			break;
		usleep(500000);
	}
	json_decref(b);
	if (rc < 0)
		return rc;
	sr_err_clear(&e);
	rc = assignment_parse(reply, &ag->a, &e);
	if (rc < 0) {
		sr_error("agent", "bad register reply", "error=\"%s\"",
			 sr_err_str(&e, rc));
		json_decref(reply);
		return rc;
	}
	handle_directive(ag, reply);
	json_decref(reply);
	return 0;
}

static void loop_once(struct agent *ag)
{
	struct pollfd pfd[3];
	int64_t now = sr_time_mono_ns(), wake;
	int n = 0, timeout_ms;

	wake = ag->next_hb_ns < ag->next_report_ns ? ag->next_hb_ns
						    : ag->next_report_ns;
	timeout_ms = (int)((wake - now) / MS);
	if (timeout_ms < 0)
		timeout_ms = 0;
	if (timeout_ms > 100)
		timeout_ms = 100; /* children are reaped at this pace */
	pfd[n++] = (struct pollfd){ ag->nw.wake_fd[0], POLLIN, 0 };
	if (ag->w.out_fd >= 0)
		pfd[n++] = (struct pollfd){ ag->w.out_fd, POLLIN, 0 };
	if (ag->w.err_fd >= 0)
		pfd[n++] = (struct pollfd){ ag->w.err_fd, POLLIN, 0 };
	if (poll(pfd, (nfds_t)n, timeout_ms) < 0 && errno != EINTR)
		sr_warn("agent", "poll failed", "errno=%d", errno);
	drain_pipe(ag, &ag->w.out_fd, LOGBATCH_STDOUT);
	drain_pipe(ag, &ag->w.err_fd, LOGBATCH_STDERR);
	check_notice(ag);
	now = sr_time_mono_ns();
	if (agent_quit_signal && !ag->exit_after) {
		ag->exit_after = 1;
		ag->want_attempt = 0;
		agent_line(ag, "agent received signal %d: stopping the workload",
			   (int)agent_quit_signal);
		begin_stop(ag, STOP_DIRECTIVE, now + SIGNAL_GRACE_NS);
		ag->give_up_ns = now + 2 * SIGNAL_GRACE_NS;
	}
	if (!ag->exit_after && ag->o->orphan_timeout_ns > 0 &&
	    now - ag->last_ok_ns > ag->o->orphan_timeout_ns) {
		/* spotrund has been gone for long: do not run unsupervised
		 * (and unbilled) forever; checkpoint and leave */
		agent_line(ag, "spotrund unreachable for %lld s: stopping the "
			   "workload and exiting",
			   (long long)(ag->o->orphan_timeout_ns / SR_NS_PER_SEC));
		ag->exit_after = 1;
		ag->want_attempt = 0;
		begin_stop(ag, STOP_DIRECTIVE, now + SIGNAL_GRACE_NS);
		ag->give_up_ns = now + 2 * SIGNAL_GRACE_NS;
	}
	if (ag->node_gone && ag->kind != W_NONE && ag->stopping == STOP_NONE) {
		ag->exit_after = 1;
		begin_stop(ag, STOP_DIRECTIVE, now + SIGNAL_GRACE_NS);
	}
	check_workload(ag, now);
	check_status(ag);
	now = sr_time_mono_ns();
	if (now >= ag->next_hb_ns && !ag->notice_handled && !ag->node_gone) {
		heartbeat(ag);
		ag->next_hb_ns = sr_time_mono_ns() + ag->a.heartbeat_ms * MS;
	}
	if ((ag->urgent || now >= ag->next_report_ns) && !ag->node_gone) {
		report(ag);
		ag->next_report_ns = sr_time_mono_ns() + REPORT_EVERY_NS;
	}
}

static int agent_init(struct agent *ag, const struct agent_opts *o,
		      const char *token)
{
	struct ctlc_opts co = { .timeout_ms = 3000, .max_retries = 0 };
	struct sr_err e;
	int rc;

	memset(ag, 0, sizeof *ag);
	ag->o = o;
	ag->wlog_fd = -1;
	ag->w.pid = -1;
	ag->w.out_fd = ag->w.err_fd = -1;
	ag->nw.wake_fd[0] = ag->nw.wake_fd[1] = -1;
	snprintf(ag->node_dir, sizeof ag->node_dir, "%s", o->workdir);
	snprintf(ag->status_path, sizeof ag->status_path, "%s/status.json",
		 o->workdir);
	snprintf(ag->wlog_path, sizeof ag->wlog_path, "%s/workload.log",
		 o->workdir);
	snprintf(ag->notice_path, sizeof ag->notice_path, "%s/notice",
		 o->workdir);
	snprintf(ag->path_prefix, sizeof ag->path_prefix, "/v1/nodes/%lld",
		 (long long)o->node_id);
	ag->cli = ctlc_create(o->api, token, &co);
	ag->logs = logbatch_create();
	ag->events = json_array();
	if (!ag->cli || !ag->logs || !ag->events)
		return -ENOMEM;
	ag->wlog_fd = open(ag->wlog_path, O_WRONLY | O_CREAT | O_APPEND |
					  O_CLOEXEC, 0600);
	sr_err_clear(&e);
	rc = gpustat_open(NULL, &ag->gpu, &e);
	if (rc < 0)
		sr_info("agent", "no GPU utilisation", "reason=\"%s\"",
			sr_err_str(&e, rc));
	return 0;
}

static void agent_fini(struct agent *ag)
{
	notice_watch_stop(&ag->nw);
	workload_close_fds(&ag->w);
	if (ag->wlog_fd >= 0)
		close(ag->wlog_fd);
	gpustat_close(ag->gpu);
	json_decref(ag->events);
	logbatch_destroy(ag->logs);
	ctlc_destroy(ag->cli);
	assignment_free(&ag->a);
}

int agent_run(const struct agent_opts *o, const char *token)
{
	struct agent ag;
	struct sr_err e;
	int rc;

	rc = agent_init(&ag, o, token);
	if (rc < 0)
		goto out;
	rc = do_register(&ag);
	if (rc < 0) {
		sr_error("agent", "registration failed", "node=%lld rc=%d",
			 (long long)o->node_id, rc);
		goto out;
	}
	sr_info("agent", "registered", "node=%lld job=%lld rank=%lld/%lld",
		(long long)o->node_id, (long long)ag.a.job_id,
		(long long)ag.a.rank, (long long)ag.a.num_nodes);
	sr_err_clear(&e);
	rc = notice_watch_start(&ag.nw, o->imds, ag.a.imds_poll_ms, &e);
	if (rc < 0) {
		sr_error("agent", "cannot watch for notices", "error=\"%s\"",
			 sr_err_str(&e, rc));
		goto out;
	}
	ag.next_hb_ns = sr_time_mono_ns();
	ag.last_ok_ns = ag.next_hb_ns;
	ag.next_report_ns = ag.next_hb_ns + REPORT_EVERY_NS;
	advance(&ag);
	for (;;) {
		loop_once(&ag);
		if (ag.kind != W_NONE)
			continue;
		if (ag.node_gone)
			break;
		if (ag.exit_after && json_array_size(ag.events) == 0 &&
		    logbatch_queued(ag.logs) == 0)
			break;
		if (ag.give_up_ns && sr_time_mono_ns() > ag.give_up_ns)
			break; /* told to quit and spotrund is not answering */
	}
	if (ag.exit_after && !ag.node_gone)
		report(&ag); /* anything left */
	sr_info("agent", "exiting", "node=%lld", (long long)o->node_id);
	rc = 0;
out:
	if (ag.kind != W_NONE)
		workload_signal(&ag.w, SIGKILL);
	agent_fini(&ag);
	return rc;
}
