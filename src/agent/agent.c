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
 * Preemption (a notice from a source of notice.c: the IMDS's
 * instance-action, or a scheduler's signal; its time is the deadline):
 *   1. SIGTERM (or the job's preempt_signal) to the workload's process
 *      group (SPOTRUN_PREEMPT_SIGNAL=TERM,
 *      the spotrun.preemption contract: final checkpoint at the next step
 *      boundary, then exit 0);
 *   2. report the notice;
 *   3. wait for the group to exit, up to the notice time minus a margin
 *      left for step 4 (then SIGKILL);
 *   4. report the final checkpoint (newest committed step in ckpt_dir, if
 *      it is newer than before the signal) and the exit, then exit 0.
 *
 * A scheduler's signal reaches the workload too: a workload that exits
 * before the agent has taken the signal as the notice (the agent was in
 * a call to spotrund) is reaped after it, and that exit is the notice's
 * stop (cause preempted), never a run that completed (workrun.c,
 * exit_in_notice).
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
#include <unistd.h>

#include "agent.h"
#include "agent/ckscan.h"
#include "agent/gpustat.h"
#include "common/fsutil.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"

volatile sig_atomic_t agent_quit_signal; /* set by main.c's handler */

/* ---- small helpers ---------------------------------------------------- */

/* A line from the agent itself into the job's log (stream "agent"). */
void agent__line(struct agent *ag, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	sr_info("agent", "job log", "line=\"%s\"", line);
	/* the workload's output read so far goes first, so the job's log
	 * keeps the order in which things happened */
	agent__drain_pipe(ag, &ag->w.out_fd, LOGBATCH_STDOUT);
	agent__drain_pipe(ag, &ag->w.err_fd, LOGBATCH_STDERR);
	n = strlen(line);
	line[n < sizeof line - 1 ? n : sizeof line - 2] = '\n';
	logbatch_feed(ag->logs, LOGBATCH_AGENT, ag->w_attempt, line,
		      (n < sizeof line - 1 ? n : sizeof line - 2) + 1,
		      sr_time_real_ns());
}

void agent__push(struct agent *ag, json_t *ev, int urgent)
{
	if (!ev)
		return;
	if (json_array_size(ag->events) >= MAX_PENDING_EVENTS) {
		json_decref(ev);
		return;
	}
	json_array_append_new(ag->events, ev);
	if (urgent)
		ag->urgent = ag->urgent_now = 1;
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
static void take_notice(struct agent *ag, int64_t t_ns, const char *action,
			const char *source, bool now);

int agent__post(struct agent *ag, const char *what, json_t *body,
		json_t **reply)
{
	char path[128];
	struct sr_err e;
	long status = 0, held = 0;
	int64_t now;
	int rc;

	sr_err_clear(&e);
	snprintf(path, sizeof path, "%s/%s", ag->path_prefix, what);
	atomic_store(&ag->watch.talking, 1);
	rc = ctlc_call(ag->cli, "POST", path, body, reply, &status, &e);
	atomic_store(&ag->watch.talking, 0);
	now = sr_time_mono_ns();
	if (status != 0)
		ag->last_ok_ns = now; /* it answered */
	if (rc == 0)
		sr_backoff_ok(&ag->retry);
	else
		sr_backoff_fail(&ag->retry, now);
	if (rc < 0) {
		if (status == 409 || status == 401 || status == 403) {
			/* terminated, lost, or its token revoked: either way
			 * this node has no business running the workload */
			if (!ag->node_gone)
				sr_warn("agent", "spotrund says this node is gone",
					"status=%ld error=\"%s\"", status,
					sr_err_str(&e, rc));
			ag->node_gone = 1;
		} else if (sr_ratelimit_allow(&ag->fail_log, now, &held)) {
			sr_warn("agent", "request failed", "path=%s error=\"%s\" "
				"failures=%d retry_in_ms=%lld suppressed=%ld", path,
				sr_err_str(&e, rc), ag->retry.fails,
				(long long)((ag->retry.next_ns - now) / MS), held);
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
	/* the workload's own progress: spotrund's idle signal where there
	 * is no GPU utilisation (lib/agent/stepstat.h) */
	if (ag->kind == W_RUN) {
		double sps = stepstat_rate(&ag->steps, ag->last_status.step,
					   sr_time_mono_ns());

		if (sps >= 0)
			json_object_set_new(b, "steps_per_s", json_real(sps));
	}
	if (ag->kind == W_RUN || ag->w_attempt > 0) {
		const struct status_info *s = &ag->last_status;

		if (s->step >= 0)
			json_object_set_new(b, "step", json_integer(s->step));
		if (s->total_steps >= 0)
			json_object_set_new(b, "total_steps",
					    json_integer(s->total_steps));
		if (ag->a.ckpt_uri) {
			/* the recovery point: newest on this node's disk, newest
			 * in the store and when that one was saved */
			int64_t durable = agent__durable_step(ag);

			if (durable >= 0)
				json_object_set_new(b, "ckpt_step",
						    json_integer(durable));
			if (ag->rp.local_step >= 0)
				json_object_set_new(b, "ckpt_local_step",
						    json_integer(ag->rp.local_step));
			if (ag->rp.store_step >= 0 && ag->rp.store_time_ns > 0)
				json_object_set_new(b, "ckpt_store_ns",
						    json_integer(ag->rp.store_time_ns));
		} else if (s->ckpt_step >= 0) {
			json_object_set_new(b, "ckpt_step", json_integer(s->ckpt_step));
		}
		/* when that step was committed, as this agent saw it (with
		 * tier 3 the store's own save time, ckpt_store_ns) */
		if (!ag->a.ckpt_uri && s->ckpt_step >= 0 && ag->ckpt_at_ns > 0)
			json_object_set_new(b, "ckpt_at_ns",
					    json_integer(ag->ckpt_at_ns));
		if (s->restored_step >= 0)
			json_object_set_new(b, "restored_step",
					    json_integer(s->restored_step));
	}
	if (ag->kind == W_RUN && ag->stopping == STOP_NONE)
		ag->ckpt_hb = agent__durable_step(ag);
	agent__watch_beat(ag, wstate_name(ag), ag->w_attempt,
			  ag->kind != W_NONE ? (int)ag->w.pid : 0, true);
	if (agent__post(ag, "heartbeat", b, &reply) == 0)
		handle_directive(ag, reply);
	json_decref(reply);
	json_decref(b);
}

/* Send pending events and up to the per-report limit of log lines.  A
 * report refused as malformed (400, or 413 too large) would fail the same
 * way again, so it is not retried whole - nor dropped whole: one bad item
 * took every other with it, a run's exit among them, and the job waited
 * for an exit that never came.  Its items are sent one to a report
 * (split_left), and only one refused alone is dropped. */
static int report(struct agent *ag)
{
	size_t nev = json_array_size(ag->events),
	       max = ag->split_left ? 1 : MAX_EVENTS_PER_REPORT;
	json_t *all = NULL, *b = NULL, *reply = NULL;
	int nlog, rc;

	if (nev == 0 && logbatch_queued(ag->logs) == 0)
		return 0;
	all = json_array();
	if (!all)
		return -ENOMEM;
	if (nev > max)
		nev = max;
	for (size_t i = 0; i < nev; i++)
		json_array_append(all, json_array_get(ag->events, i));
	nlog = logbatch_peek_json(ag->logs, max - nev, all);
	if (nlog < 0) {
		rc = nlog;
		goto out;
	}
	b = json_pack("{s:O}", "events", all);
	if (!b) {
		rc = -ENOMEM;
		goto out;
	}
	ag->urgent_now = 0; /* this attempt is the one that skipped the wait */
	rc = agent__post(ag, "report", b, &reply);
	if ((rc == -EINVAL || rc == -E2BIG) && nev + (size_t)nlog > 1) {
		ag->split_left = nev + (size_t)nlog;
		sr_warn("agent", "report refused: its items go one at a time",
			"items=%zu", ag->split_left);
		ag->urgent = ag->urgent_now = 1; /* at once, not after the backoff */
		goto out;
	}
	if (rc == 0 || rc == -EINVAL || rc == -E2BIG) {
		/* sent, or one item refused as malformed: retrying it would
		 * fail forever, so it is dropped (the warning names why) */
		const char *t = nev ? json_string_value(json_object_get(
			json_array_get(ag->events, 0), "type")) : "log";

		if (rc)
			sr_warn("agent", "report item refused: dropped", "type=%s",
				t ? t : "?");
		for (size_t i = 0; i < nev; i++)
			json_array_remove(ag->events, 0);
		logbatch_ack(ag->logs, (size_t)nlog);
		ag->split_left -= ag->split_left ? 1 : 0;
	}
	if (rc == 0) {
		ag->urgent = ag->split_left > 0; /* a split's next item at once */
		handle_directive(ag, reply);
	}
out:
	json_decref(reply);
	json_decref(b);
	json_decref(all);
	return rc;
}

/* ---- directives and notices ------------------------------------------ */

/* A `run` directive names the gang's addresses for its attempt: rank
 * 0's is MASTER_ADDR, which a recovery may have moved to a new node. */
static void gang_addrs_take(struct agent *ag, json_t *d)
{
	const char *m = json_string_value(json_object_get(d, "master_addr"));
	json_t *ips = json_object_get(d, "node_ips"), *v;
	size_t i, len = 1;
	char *s, *p;
	const char *ip;

	json_int_t port = json_integer_value(json_object_get(d, "master_port"));

	if (m && *m) {
		s = strdup(m);
		if (s) {
			free(ag->a.master_addr);
			ag->a.master_addr = s;
		}
	}
	/* the attempt's port from spotrund (0: the agent derives it) */
	ag->a.master_port = port > 0 && port < 65536 ? (int)port : 0;
	if (!json_is_array(ips) || json_array_size(ips) == 0)
		return;
	/* a rank not registered yet (never in a `run`): the master's */
#define GANG_IP(v) (json_string_value(v) && *json_string_value(v) ? \
		    json_string_value(v) : ag->a.master_addr ? \
		    ag->a.master_addr : "127.0.0.1")
	json_array_foreach(ips, i, v)
		len += strlen(GANG_IP(v)) + 1;
	s = malloc(len);
	if (!s)
		return;
	p = s;
	json_array_foreach(ips, i, v) {
		ip = GANG_IP(v);
		p += snprintf(p, len - (size_t)(p - s), "%s%s", i ? "\n" : "", ip);
	}
#undef GANG_IP
	free(ag->a.node_ips);
	ag->a.node_ips = s;
}

/* A `run` of a newer attempt while the old one is still stopping (its
 * final checkpoint under way): spotrund starts the next attempt only once
 * the gang's notice deadline and the stop grace have passed, and that
 * attempt restores the step committed by then, so what the old one still
 * writes can never be used; it only delays the new run.  Kill it now
 * (a checkpoint write is crash-safe: nothing half-written is visible). */
static void abandon_old_attempt(struct agent *ag, int attempt)
{
	agent__line(ag, "attempt %d starts while attempt %d is still stopping: "
		    "its final checkpoint can no longer count (SIGKILL)",
		    attempt, ag->w_attempt);
	workload_signal(&ag->w, SIGKILL);
	ag->stop_deadline_ns = INT64_MAX;
}

/* A warm spare learns its rank from its first `run` (false: none yet,
 * nothing runs); a rank's node keeps its own. */
static bool take_rank(struct agent *ag, json_t *d)
{
	json_t *r = json_object_get(d, "rank");
	json_int_t rank = json_integer_value(r);

	if (!ag->a.spare)
		return true;
	if (!json_is_integer(r) || rank < 0 || rank >= ag->a.num_nodes)
		return false;
	ag->a.rank = rank;
	ag->a.spare = 0;
	agent__line(ag, "warm spare takes rank %lld", (long long)rank);
	return true;
}

static void handle_directive(struct agent *ag, json_t *reply)
{
	json_t *d = reply ? json_object_get(reply, "directive") : NULL;
	const char *action, *nt;
	json_int_t attempt;
	int64_t t_ns = 0;

	if (!json_is_object(d) || ag->notice_handled)
		return;
	action = json_string_value(json_object_get(d, "action"));
	attempt = json_integer_value(json_object_get(d, "attempt"));
	if (!action)
		return;
	/* the control plane learnt of the cloud's notice first (a cloud
	 * that announces it through its API): its time is the deadline */
	nt = json_string_value(json_object_get(d, "notice_time"));
	if (nt && sr_time_parse_rfc3339(nt, &t_ns, NULL) == 0 && t_ns > 0) {
		take_notice(ag, t_ns, imds_action_name(IMDS_TERMINATE),
			    "control-plane", true);
		return;
	}
	if (!strcmp(action, "run")) {
		if (attempt <= 0 || attempt > INT32_MAX)
			return;
		if ((int)attempt == ag->w_attempt &&
		    (ag->kind == W_RUN || ag->want_attempt == 0))
			return; /* running or already ran this attempt */
		if ((int)attempt < ag->w_attempt)
			return; /* a stale directive */
		if ((int)attempt == ag->files_failed)
			return; /* its files failed: reported, not retried */
		if (!take_rank(ag, d))
			return;
		ag->want_attempt = (int)attempt;
		gang_addrs_take(ag, d);
		if (ag->kind == W_RUN && ag->stopping != STOP_NONE)
			abandon_old_attempt(ag, (int)attempt);
		else if (ag->kind == W_RUN) /* an older attempt still runs */
			agent__begin_stop(ag, STOP_DIRECTIVE,
				   sr_time_mono_ns() + STOP_GRACE_NS);
		agent__advance(ag);
	} else if (!strcmp(action, "stop")) {
		/* a setup run ahead (a spare's, a replacement's) belongs to no
		 * attempt: the gang's stop is not for it */
		if (ag->kind == W_SETUP && ag->w_attempt == 0)
			return;
		ag->want_attempt = 0;
		agent__begin_stop(ag, STOP_DIRECTIVE, sr_time_mono_ns() + STOP_GRACE_NS);
	} else if (!strcmp(action, "exit")) {
		ag->want_attempt = 0;
		ag->exit_after = 1;
		agent__begin_stop(ag, STOP_DIRECTIVE, sr_time_mono_ns() + STOP_GRACE_NS);
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
		agent__line(ag, "cannot write the notice file: %s", sr_err_str(&e, rc));
}

/* A rebalance recommendation (the IMDS source): reported once, as an
 * early warning; the workload goes on. */
static void check_rebalance(struct agent *ag)
{
	int64_t t_ns = atomic_load(&ag->nw.rebalance_ns);
	char ts[40];

	if (!t_ns || ag->rebalance_sent)
		return;
	ag->rebalance_sent = 1;
	sr_time_format_rfc3339(t_ns, 3, ts, sizeof ts);
	agent__push(ag, json_pack("{s:s, s:s}", "type", "rebalance", "time", ts),
		    1);
	agent__line(ag, "rebalance recommendation at %s: the cloud may take "
		    "this node soon", ts);
}

/* A job that trains through a notice (assignment.train_through), its
 * workload running: the notice is reported now but held back from the
 * workload - no notice file, no signal - until spotrund's `exit` (its
 * replacement is ready: lib/ctl/recon_through.c) or the last safe
 * moment, the deadline less a quarter of the lead (the rule spotrund
 * uses).  true: held back (still); false: act on it now. */
static bool hold_notice(struct agent *ag, int64_t t_ns, const char *action,
			const char *source)
{
	int64_t now_real = sr_time_real_ns(), mono = sr_time_mono_ns();
	char ts[40];

	if (!ag->a.train_through || ag->kind != W_RUN || ag->w.exited ||
	    ag->stopping != STOP_NONE || t_ns <= now_real)
		return false;
	if (!ag->through_ns) {
		int64_t kill = imds_kill_deadline_mono(t_ns, now_real, mono);

		ag->through_ns = t_ns;
		ag->through_safe_ns = kill - (kill - mono) / 4;
		sr_time_format_rfc3339(t_ns, 3, ts, sizeof ts);
		agent__push(ag, json_pack("{s:s, s:s, s:s, s:s}", "type",
					 "notice", "action", action, "time", ts,
					 "source", source), 1);
		agent__line(ag, "spot interruption notice: %s at %s (%.1f s from "
			    "now); training through it until the replacement is "
			    "ready (%.1f s at the latest)", action, ts,
			    (double)(t_ns - now_real) / 1e9,
			    (double)(ag->through_safe_ns - mono) / 1e9);
	}
	return mono < ag->through_safe_ns;
}

/* Act on a notice whose deadline is t_ns (the cloud's time, wall clock)
 * from `source`: the notice file, the workload's stop by that deadline,
 * the report.  Not `now`: a job that trains through it may hold it back
 * (hold_notice). */
static void take_notice(struct agent *ag, int64_t t_ns, const char *action,
			const char *source, bool now)
{
	char ts[40];
	int64_t now_real = sr_time_real_ns(), lead, deadline;
	bool reported = ag->through_ns != 0;

	if (!now && hold_notice(ag, t_ns, action, source))
		return;
	ag->notice_handled = 1;
	ag->exit_after = 1;
	ag->want_attempt = 0;
	lead = t_ns - now_real;
	deadline = imds_kill_deadline_mono(t_ns, now_real, sr_time_mono_ns());
	write_notice_file(ag, t_ns);
	if (ag->stopping != STOP_NONE) {
		/* already stopping on a directive: the notice sets the pace */
		ag->stopping = STOP_NOTICE;
		if (deadline < ag->stop_deadline_ns)
			ag->stop_deadline_ns = deadline;
	}
	ag->notice_kill_ns = deadline;
	/* the workload has the lead less what the bucket mounts' final
	 * round needs (at most half of it) */
	if (ag->nmounts) {
		int64_t reserve = agent_mounts_reserve_ns(ag),
			half = (deadline - sr_time_mono_ns()) / 2;

		deadline -= reserve < half ? reserve : half > 0 ? half : 0;
		if (ag->stopping != STOP_NONE && deadline < ag->stop_deadline_ns)
			ag->stop_deadline_ns = deadline;
	}
	agent__begin_stop(ag, STOP_NOTICE, deadline);
	sr_time_format_rfc3339(t_ns, 3, ts, sizeof ts);
	if (!reported) /* a notice held back was reported then */
		agent__push(ag, json_pack("{s:s, s:s, s:s, s:s}", "type", "notice",
					 "action", action,
					 "time", ts, "source", source), 1);
	agent__line(ag, "%s notice: %s at %s (%.1f s from now)",
		    strcmp(source, "signal") ? "spot interruption" :
		    "scheduler's signal", action, ts, (double)lead / 1e9);
}

static void check_notice(struct agent *ag)
{
	char buf[16], msg[SR_ERR_MSG_MAX];

	while (read(ag->nw.wake_fd[0], buf, sizeof buf) > 0)
		;
	if (notice_watch_error(&ag->nw, &ag->nw_err_gen, msg, sizeof msg) &&
	    msg[0])
		agent__line(ag, "preemption endpoint: %s", msg);
	check_rebalance(ag);
	if (ag->notice_handled)
		return;
	if (atomic_load(&ag->nw.have) && atomic_load(&ag->nw.se_type))
		take_notice(ag, atomic_load(&ag->nw.time_ns),
			    schedev_type_name(atomic_load(&ag->nw.se_type)),
			    "scheduled-events", false);
	else if (atomic_load(&ag->nw.have))
		take_notice(ag, atomic_load(&ag->nw.time_ns),
			    imds_action_name(atomic_load(&ag->nw.action)),
			    ag->o->notice_sources & NOTICE_SRC_GCE ? "gce" : "imds",
			    false);
	else if (notice_signal_seen()) /* its kill comes --notice-lead later */
		take_notice(ag, sr_time_real_ns() + ag->o->notice_lead_ns,
			    imds_action_name(IMDS_TERMINATE), "signal", false);
}

/* A Scheduled Events notice, as soon as the final checkpoint and the exit
 * are reported (the logs still flushing do not hold it: the control plane
 * may delete the VM once it has the exit, and the event goes with it):
 * StartRequests lets Azure take the VM now instead of at NotBefore
 * (notice.c).  Once. */
static void ack_notice(struct agent *ag)
{
	char id[sizeof ag->nw.se_event];
	struct sr_err e;
	int rc;

	if (!ag->notice_handled || ag->notice_acked ||
	    !atomic_load(&ag->nw.se_type))
		return;
	ag->notice_acked = 1;
	agent__phase(ag, "notice ack");
	pthread_mutex_lock(&ag->nw.mu);
	snprintf(id, sizeof id, "%s", ag->nw.se_event);
	pthread_mutex_unlock(&ag->nw.mu);
	sr_err_clear(&e);
	rc = schedev_ack(ag->o->imds, id, 2000, &e);
	if (rc < 0)
		sr_warn("agent", "scheduled event not acknowledged", "event=%s "
			"error=\"%s\"", id, sr_err_str(&e, rc));
	else
		sr_info("agent", "scheduled event acknowledged", "event=%s", id);
}

/* ---- setup and the loop ------------------------------------------------ */

int agent__post_first(struct agent *ag, const char *what, json_t *body,
		      json_t **reply)
{
	int64_t give_up = sr_time_mono_ns() + REGISTER_GIVE_UP_NS;
	int rc;

	for (;;) {
		rc = agent__post(ag, what, body, reply);
		if (rc == 0 || rc == -EACCES || rc == -EINVAL || ag->node_gone ||
		    rc == -SR_ENOTFOUND || agent_quit_signal)
			break;
		if (sr_time_mono_ns() > give_up) /* a minute without a daemon */
			break;
		while (!sr_backoff_ready(&ag->retry, sr_time_mono_ns()) &&
		       !agent_quit_signal)
			usleep(20000);
	}
	return rc;
}

static int do_register(struct agent *ag)
{
	char host[256] = "";
	const char *addr;
	json_t *b, *reply = NULL;
	struct sr_err e;
	int rc;

	gethostname(host, sizeof host - 1);
	b = json_pack("{s:i, s:s, s:s}", "pid", (int)getpid(), "hostname", host,
		      "agent_version", AGENT_VERSION);
	if (!b)
		return -ENOMEM;
	/* the address gang peers reach this node at (MASTER_ADDR when it is
	 * rank 0); without it spotrund takes the request's source address */
	addr = getenv("SPOTRUN_NODE_ADDR");
	if (addr && *addr)
		json_object_set_new(b, "addr", json_string(addr));
	rc = agent__post_first(ag, "register", b, &reply);
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
	/* A control plane whose disk the node does not share (a cloud
	 * provider) names no checkpoint directory: tier 2 is the node's
	 * own disk. */
	if (!ag->a.ckpt_dir) {
		char dir[sizeof ag->node_dir + 8];

		snprintf(dir, sizeof dir, "%s/ckpt", ag->node_dir);
		rc = sr_fs_mkdir_p(dir, 0700);
		ag->a.ckpt_dir = rc ? NULL : strdup(dir);
		if (!ag->a.ckpt_dir) {
			sr_error("agent", "no checkpoint directory", "dir=%s err=\"%s\"",
				 dir, sr_strerror(rc ? rc : -ENOMEM));
			json_decref(reply);
			return rc ? rc : -ENOMEM;
		}
	}
	/* from here on the node is alive to spotrund: what follows can
	 * block (the files, a setup ahead), the keep-alive speaks for it */
	rc = agent__watch_start(ag, ag->a.heartbeat_ms * MS, &e);
	if (rc < 0) {
		sr_error("agent", "cannot start the watchdog", "error=\"%s\"",
			 sr_err_str(&e, rc));
		json_decref(reply);
		return rc;
	}
	agent__watch_beat(ag, "idle", 0, 0, true);
	agent__phase(ag, "register directive");
	handle_directive(ag, reply);
	json_decref(reply);
	return 0;
}

/* The main loop wakes at least this often: children are reaped and the
 * notice is looked for at this pace. */
#define LOOP_PACE_MS 100

static void loop_once(struct agent *ag)
{
	struct pollfd pfd[3];
	int64_t now = sr_time_mono_ns(), wake;
	int n = 0, timeout_ms;

	agent__phase(ag, "poll");
	/* only the timers that will fire: after a notice no heartbeat goes
	 * out (next_hb_ns stays behind), once the node is gone no report
	 * either; a stale one here made every poll return at once, a spin
	 * beside the workload's final checkpoint until the agent exited */
	wake = now + LOOP_PACE_MS * MS;
	if (!ag->node_gone && ag->next_report_ns < wake)
		wake = ag->next_report_ns;
	if (!ag->notice_handled && !ag->node_gone && ag->next_hb_ns < wake)
		wake = ag->next_hb_ns;
	if (ag->urgent && !ag->node_gone && wake > now)
		wake = now;
	if (wake < ag->retry.next_ns && !ag->urgent_now)
		wake = ag->retry.next_ns; /* spotrund failing: not before */
	timeout_ms = (int)((wake - now) / MS);
	if (timeout_ms < 0)
		timeout_ms = 0;
	if (timeout_ms > LOOP_PACE_MS)
		timeout_ms = LOOP_PACE_MS;
	pfd[n++] = (struct pollfd){ ag->nw.wake_fd[0], POLLIN, 0 };
	if (ag->w.out_fd >= 0)
		pfd[n++] = (struct pollfd){ ag->w.out_fd, POLLIN, 0 };
	if (ag->w.err_fd >= 0)
		pfd[n++] = (struct pollfd){ ag->w.err_fd, POLLIN, 0 };
	if (poll(pfd, (nfds_t)n, timeout_ms) < 0 && errno != EINTR)
		sr_warn("agent", "poll failed", "errno=%d", errno);
	agent__phase(ag, "notice");
	agent__drain_pipe(ag, &ag->w.out_fd, LOGBATCH_STDOUT);
	agent__drain_pipe(ag, &ag->w.err_fd, LOGBATCH_STDERR);
	check_notice(ag);
	now = sr_time_mono_ns();
	if (agent_quit_signal && !ag->exit_after) {
		ag->exit_after = 1;
		ag->want_attempt = 0;
		agent__line(ag, "agent received signal %d: stopping the workload",
			   (int)agent_quit_signal);
		agent__begin_stop(ag, STOP_DIRECTIVE, now + SIGNAL_GRACE_NS);
		ag->give_up_ns = now + 2 * SIGNAL_GRACE_NS;
	}
	if (!ag->exit_after && ag->o->orphan_timeout_ns > 0 &&
	    now - ag->last_ok_ns > ag->o->orphan_timeout_ns) {
		/* spotrund has been gone for long: do not run unsupervised
		 * (and unbilled) forever; checkpoint and leave */
		agent__line(ag, "spotrund unreachable for %lld s: stopping the "
			   "workload and exiting",
			   (long long)(ag->o->orphan_timeout_ns / SR_NS_PER_SEC));
		ag->exit_after = 1;
		ag->want_attempt = 0;
		agent__begin_stop(ag, STOP_DIRECTIVE, now + SIGNAL_GRACE_NS);
		ag->give_up_ns = now + 2 * SIGNAL_GRACE_NS;
	}
	if (ag->node_gone && ag->kind != W_NONE && ag->stopping == STOP_NONE) {
		ag->exit_after = 1;
		agent__begin_stop(ag, STOP_DIRECTIVE, now + SIGNAL_GRACE_NS);
	}
	agent__phase(ag, "workload");
	agent__check_workload(ag, now);
	agent__phase(ag, "mounts");
	if (ag->nmounts) {
		if (agent_mounts_poll(ag, sr_time_mono_ns()))
			agent__advance(ag); /* restored: setup and run go on */
		/* leaving with no run: the syncers' final round still */
		if (ag->exit_after && ag->kind == W_NONE)
			agent_mounts_final(ag, agent_mounts_final_deadline(ag));
	}
	agent__phase(ag, "status");
	agent__check_status(ag);
	now = sr_time_mono_ns();
	agent__watch_beat(ag, NULL, 0, 0, !ag->notice_handled && !ag->node_gone);
	if (now >= ag->next_hb_ns && !ag->notice_handled && !ag->node_gone &&
	    sr_backoff_ready(&ag->retry, now)) {
		agent__phase(ag, "heartbeat");
		heartbeat(ag);
		ag->next_hb_ns = sr_time_mono_ns() + ag->a.heartbeat_ms * MS;
	}
	now = sr_time_mono_ns();
	/* the first attempt after an urgent event (an exit, a notice, a
	 * final checkpoint) does not wait for the backoff: spotrund may be
	 * back since its last failure, and the run's end should not wait up
	 * to RETRY_CAP_NS behind it.  One attempt per urgent event, so a
	 * spotrund that is down still sees the backoff's pace. */
	if ((ag->urgent || now >= ag->next_report_ns) && !ag->node_gone &&
	    (ag->urgent_now || sr_backoff_ready(&ag->retry, now))) {
		agent__phase(ag, "report");
		report(ag);
		ag->next_report_ns = sr_time_mono_ns() + REPORT_EVERY_NS;
	}
}

const struct ctlc_opts agent__client_opts = { .timeout_ms = 3000,
					      .max_retries = 0 };

/* token: the node token, or the bootstrap secret to trade for it */
static int agent_init(struct agent *ag, const struct agent_opts *o,
		      const char *token)
{
	struct sr_err e;
	int rc;

	memset(ag, 0, sizeof *ag);
	ag->o = o;
	ag->wlog_fd = -1;
	ag->w.pid = -1;
	ag->w.out_fd = ag->w.err_fd = -1;
	ag->nw.wake_fd[0] = ag->nw.wake_fd[1] = -1;
	ag->watch.wake[0] = ag->watch.wake[1] = -1;
	sr_backoff_init(&ag->retry, o->retry_base_ns ? o->retry_base_ns :
			RETRY_BASE_NS, o->retry_cap_ns ? o->retry_cap_ns :
			RETRY_CAP_NS);
	sr_ratelimit_init(&ag->fail_log, FAIL_LOG_EVERY_NS);
	ag->iso_mode = o->isolation == AGENT_ISO_OFF ? ISO_NONE
						       : iso_mode_for_self();
	snprintf(ag->node_dir, sizeof ag->node_dir, "%s", o->workdir);
	snprintf(ag->status_path, sizeof ag->status_path, "%s/status.json",
		 o->workdir);
	snprintf(ag->wlog_path, sizeof ag->wlog_path, "%s/workload.log",
		 o->workdir);
	snprintf(ag->notice_path, sizeof ag->notice_path, "%s/notice",
		 o->workdir);
	snprintf(ag->progress_path, sizeof ag->progress_path, "%s/progress.json",
		 o->workdir);
	ag->python_dir = agent_python_dir();
	snprintf(ag->path_prefix, sizeof ag->path_prefix, "/v1/nodes/%lld",
		 (long long)o->node_id);
	ag->cli = ctlc_create(o->api, token, &agent__client_opts);
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
	agent__watch_stop(ag);
	notice_watch_stop(&ag->nw);
	workload_close_fds(&ag->w);
	if (ag->wlog_fd >= 0)
		close(ag->wlog_fd);
	gpustat_close(ag->gpu);
	json_decref(ag->events);
	logbatch_destroy(ag->logs);
	ctlc_destroy(ag->cli);
	agent_mounts_free(ag);
	assignment_free(&ag->a);
}

int agent_run(const struct agent_opts *o, const char *token,
	      const char *bootstrap)
{
	struct agent ag;
	struct sr_err e;
	int rc;

	rc = agent_init(&ag, o, token ? token : bootstrap);
	if (rc < 0)
		goto out;
	if (!token) {
		rc = agent__exchange(&ag);
		if (rc < 0)
			goto out;
	}
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
	rc = notice_watch_start(&ag.nw, o, ag.a.imds_poll_ms, &e);
	if (rc < 0) {
		sr_error("agent", "cannot watch for notices", "error=\"%s\"",
			 sr_err_str(&e, rc));
		goto out;
	}
	ag.next_hb_ns = sr_time_mono_ns();
	ag.last_ok_ns = ag.next_hb_ns;
	ag.next_report_ns = ag.next_hb_ns + REPORT_EVERY_NS;
	agent__phase(&ag, "setup ahead");
	agent__spare_setup(&ag);
	agent__advance(&ag);
	for (;;) {
		loop_once(&ag);
		if (ag.kind != W_NONE)
			continue;
		if (ag.exit_after && json_array_size(ag.events) == 0 &&
		    !ag.held_exit && !ag.node_gone)
			ack_notice(&ag); /* the exit is reported */
		if (ag.node_gone)
			break;
		if (ag.exit_after && json_array_size(ag.events) == 0 &&
		    logbatch_queued(ag.logs) == 0 && !ag.held_exit &&
		    !agent_mounts_busy(&ag))
			break;
		if (ag.give_up_ns && sr_time_mono_ns() > ag.give_up_ns)
			break; /* told to quit and spotrund is not answering */
	}
	agent__phase(&ag, "exit");
	agent__watch_stop(&ag); /* the node leaves: no keep-alive */
	if (ag.exit_after && !ag.node_gone)
		report(&ag); /* anything left */
	ack_notice(&ag);
	sr_info("agent", "exiting", "node=%lld", (long long)o->node_id);
	rc = 0;
out:
	if (ag.kind != W_NONE)
		workload_signal(&ag.w, SIGKILL);
	agent_mounts_kill(&ag);
	agent_fini(&ag);
	return rc;
}
