/*
 * workrun.c - the workload's life on a node: setup once, then `run` for
 * each attempt spotrund asks for; stopping it (notice, stop/exit
 * directive, agent signal) and reporting how it ended, with the final
 * checkpoint.  The state diagram is at the top of agent.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "agent/ckscan.h"
#include "common/log.h"
#include "common/timeutil.h"

static int start_child(struct agent *ag, enum wkind kind, int attempt)
{
	const char *script = kind == W_SETUP ? ag->a.setup : ag->a.run;
	const char *cwd = ag->a.workdir ? ag->a.workdir : ag->node_dir;
	const char *answers, *pids;
	char abuf[8192], pbuf[512];
	struct sr_err e;
	char **envp;
	int rc;

	sr_err_clear(&e);
	if (kind == W_RUN) {
		unlink(ag->status_path); /* a new attempt writes its own */
		unlink(ag->progress_path);
		unlink(ag->notice_path);
		status_reader_init(&ag->st, ag->status_path);
		status_reader_init(&ag->pg, ag->progress_path);
		/* nothing reported yet by this attempt: a zeroed or stale value
		 * would read as "restored step 0" or as the last attempt's step */
		ag->last_status.step = -1;
		ag->last_status.total_steps = -1;
		ag->last_status.ckpt_step = -1;
		ag->last_status.restored_step = -1;
		ag->restored_sent = 0;
		ag->ckpt_at_ns = 0;
		stepstat_reset(&ag->steps);
		ag->w_attempt = attempt;
	}
	answers = agent_mounts_answers(ag, abuf, sizeof abuf);
	pids = agent_mounts_pids(ag, pbuf, sizeof pbuf);
	envp = envp_build(&ag->a, ag->o->node_id, attempt, &(struct envp_files){
				  .node_dir = ag->node_dir,
				  .status_file = ag->status_path,
				  .progress_file = ag->progress_path,
				  .notice_file = ag->notice_path,
				  .python_dir = ag->python_dir,
				  .home = ag->a.home,
				  .sync_request = answers ? ag->sync_request : NULL,
				  .sync_answers = answers,
				  .sync_pids = pids }, &e);
	if (!envp) {
		rc = e.code ? e.code : -ENOMEM;
		goto fail;
	}
	{
		const char *was = agent__phase(ag, "workload start");

		rc = agent__start_isolated(ag, script, cwd, envp, &e);
		agent__phase(ag, was);
	}
	envp_free(envp);
	if (rc < 0)
		goto fail;
	ag->kind = kind;
	ag->stopping = STOP_NONE;
	ag->orphan_status = -1;
	ag->exit_in_notice = 0;
	ag->leader_sig_ns = 0;
	ag->ckpt_hb = -1;
	memset(&ag->cpu_prev, 0, sizeof ag->cpu_prev);
	agent__line(ag, "started %s of attempt %d (pid %d)",
		   kind == W_SETUP ? "setup" : "run", attempt, (int)ag->w.pid);
	return 0;
fail:
	agent__line(ag, "cannot start %s: %s", kind == W_SETUP ? "setup" : "run",
		   sr_err_str(&e, rc));
	/* report it as the workload failing, so the job's restart policy
	 * applies rather than the job hanging */
	if (kind == W_SETUP)
		agent__push(ag, json_pack("{s:s, s:i}", "type", "setup_done",
					 "exit_code", 127), 1);
	else
		agent__push(ag, json_pack("{s:s, s:i, s:i, s:n, s:s}", "type",
					 "exit", "attempt", attempt, "exit_code",
					 127, "signal", "cause", "crashed"), 1);
	return rc;
}

/* Start what the wanted attempt needs next: setup first, then run. */
void agent__advance(struct agent *ag)
{
	int want = ag->want_attempt;

	if (ag->kind != W_NONE || want == 0 || ag->notice_handled || ag->exit_after)
		return;
	ag->want_attempt = 0;
	if (!ag->synced) {
		struct sr_err e;

		sr_err_clear(&e);
		if (agent_sync_files(ag, &e) < 0) {
			const char *why = sr_err_str(&e, e.code);

			agent__line(ag, "cannot put the job's files in place: %s", why);
			ag->files_failed = want;
			/* its own event: setup never ran (issue 30) */
			agent__push(ag, json_pack("{s:s, s:s}", "type", "file_mounts",
						 "message", why), 1);
			return;
		}
	}
	if (ag->a.nbuckets && !ag->mounts_ready) {
		/* bucket mounts restored (or copied) before setup and run */
		const char *was = agent__phase(ag, "mounts start");
		struct sr_err e;
		int r;

		sr_err_clear(&e);
		r = agent_mounts_start(ag, &e);
		agent__phase(ag, was);
		if (r < 0) {
			agent__line(ag, "cannot start the bucket mounts: %s",
				    sr_err_str(&e, e.code));
			agent__push(ag, json_pack("{s:s, s:i}", "type", "setup_done",
						 "exit_code", 126), 1);
			return;
		}
		r = agent_mounts_ready(ag);
		if (r < 0) {
			agent__line(ag, "a bucket mount could not be restored: the "
				    "run does not start");
			agent__push(ag, json_pack("{s:s, s:i}", "type", "setup_done",
						 "exit_code", 126), 1);
			return;
		}
		if (r == 0) {
			ag->want_attempt = want; /* agent_mounts_poll says when */
			return;
		}
		ag->mounts_ready = 1;
	}
	if (!ag->setup_ok && ag->a.setup && *ag->a.setup) {
		ag->want_attempt = want; /* run after setup */
		ag->w_attempt = want;
		start_child(ag, W_SETUP, want);
		return;
	}
	ag->setup_ok = 1;
	start_child(ag, W_RUN, want);
}

void agent__spare_setup(struct agent *ag)
{
	struct sr_err e;

	if (!ag->a.setup_ahead || ag->kind != W_NONE || ag->setup_ok ||
	    ag->a.nbuckets || !ag->a.setup || !*ag->a.setup)
		return;
	if (!ag->synced) {
		sr_err_clear(&e);
		if (agent_sync_files(ag, &e) < 0) {
			/* the first `run` tries again and reports it */
			agent__line(ag, "cannot put the job's files in place "
				    "ahead of the run: %s", sr_err_str(&e, e.code));
			return;
		}
	}
	agent__line(ag, "setup runs now, ahead of the run (%s)", ag->a.spare ?
		    "a warm spare" : "a replacement while the gang trains on");
	start_child(ag, W_SETUP, 0);
}

/* Newest checkpoint that survives this node.  With a checkpoint URI: the
 * newest in the object store - the engine's recovery point (tier3.json in
 * ckpt_dir, issue 23) when it publishes one, else what the workload
 * reports in its status file ("ckpt_step"); the node's disk goes with
 * the node.  Without: the newest committed in ckpt_dir or the newest the
 * library reports committed (a trainer may checkpoint elsewhere than
 * $SPOTRUN_CKPT_DIR). */
static int64_t durable_step(struct agent *ag)
{
	int64_t s;

	if (ag->a.ckpt_uri) {
		ckscan_tier3(ag->a.ckpt_dir, &ag->rp);
		return ag->rp.found ? ag->rp.store_step : ag->last_status.ckpt_step;
	}
	s = ckscan_newest_step(ag->a.ckpt_dir);
	return s > ag->last_status.ckpt_step ? s : ag->last_status.ckpt_step;
}

/* Read the workload's status file and the library's progress report
 * into ag->last_status: the status file's values win where it gives
 * them (the script knows best), the report fills the rest.  The new
 * stalls come from the status file once it has carried any (a script
 * that reports its own and also saves through the library must not have
 * each save counted twice), else from the report.  Returns 1 when
 * either changed (*out: the merged values and the new stalls), 0 when
 * neither did, < 0 for a malformed status file (*e; the report is still
 * read). */
static int read_progress(struct agent *ag, struct status_info *out,
			 struct sr_err *e)
{
	struct status_info s, p;
	int rs = status_read(&ag->st, &s, e);
	int rp = status_read(&ag->pg, &p, NULL);

	if (rs < 0) {
		s = ag->st.last;
		s.nstalls = 0;
	}
	*out = s;
	if (out->step < 0)
		out->step = p.step;
	if (out->total_steps < 0)
		out->total_steps = p.total_steps;
	if (out->ckpt_step < 0)
		out->ckpt_step = p.ckpt_step;
	if (out->restored_step < 0)
		out->restored_step = p.restored_step;
	if (!out->ckpt_error[0])
		memcpy(out->ckpt_error, p.ckpt_error, sizeof out->ckpt_error);
	if (!out->restored_from[0])
		memcpy(out->restored_from, p.restored_from,
		       sizeof out->restored_from);
	/* where a multi-rank restore read each part (peer copies, issue
	 * 33): the job's `restored` event, once per attempt */
	if (out->restored_from[0] && out->restored_step >= 0 &&
	    !ag->restored_sent) {
		ag->restored_sent = 1;
		agent__push(ag, json_pack("{s:s, s:i, s:I, s:s}", "type",
					  "restored", "attempt", ag->w_attempt,
					  "step", (json_int_t)out->restored_step,
					  "message", out->restored_from), 1);
	}
	if (!ag->st.stalls_seen) {
		out->nstalls = p.nstalls;
		memcpy(out->stall_ms, p.stall_ms, sizeof out->stall_ms);
	}
	if (out->ckpt_step > ag->last_status.ckpt_step)
		ag->ckpt_at_ns = sr_time_real_ns(); /* when it was committed */
	if (rs == 1 || rp == 1)
		ag->last_status = *out;
	return rs < 0 ? rs : (rs == 1 || rp == 1);
}

int64_t agent__durable_step(struct agent *ag)
{
	return durable_step(ag);
}

/* A tier-3 failure: a ckpt_error event once per new message (spotrund
 * records checkpoint_failed and raises the "checkpoint" alert). */
static void report_ckpt_error(struct agent *ag, const char *msg)
{
	if (!msg[0] || !strcmp(msg, ag->ckpt_error_sent))
		return;
	snprintf(ag->ckpt_error_sent, sizeof ag->ckpt_error_sent, "%s", msg);
	agent__push(ag, json_pack("{s:s, s:i, s:s}", "type", "ckpt_error",
				  "attempt", ag->w_attempt, "message", msg), 1);
}

/* The engine's own word on tier 3 (tier3.json), no workload code needed:
 * a failed upload, and a store whose copy lags more checkpoints than the
 * job allows (spotrun.checkpoint.alert_intervals), each a ckpt_error
 * event (the "checkpoint" alert).  The lag is reported once until the
 * store has caught up again. */
static void check_recovery_point(struct agent *ag)
{
	char msg[256];

	ckscan_tier3(ag->a.ckpt_dir, &ag->rp);
	if (!ag->rp.found)
		return;
	if (ag->rp.retries > 0)
		report_ckpt_error(ag, ag->rp.last_error);
	if (ag->rp.behind <= ag->a.ckpt_alert_intervals) {
		ag->behind_sent = 0;
		return;
	}
	if (ag->behind_sent)
		return;
	ag->behind_sent = 1;
	if (ag->rp.store_step < 0)
		snprintf(msg, sizeof msg, "the object store holds no checkpoint; "
			 "this node's disk holds %lld of them, up to step %lld "
			 "(more than %lld)", (long long)ag->rp.behind,
			 (long long)ag->rp.local_step,
			 (long long)ag->a.ckpt_alert_intervals);
	else
		snprintf(msg, sizeof msg, "the object store's newest checkpoint "
			 "(step %lld) lags %lld behind this node's (step %lld; "
			 "more than %lld)", (long long)ag->rp.store_step,
			 (long long)ag->rp.behind, (long long)ag->rp.local_step,
			 (long long)ag->a.ckpt_alert_intervals);
	agent__line(ag, "%s", msg);
	agent__push(ag, json_pack("{s:s, s:i, s:s}", "type", "ckpt_error",
				  "attempt", ag->w_attempt, "message", msg), 1);
}

/* The job's end under tier 3: a run that completed with its newest
 * checkpoint on this node's disk only is not a silent success - the
 * failure is a ckpt_error event (issue 23). */
static void check_last_checkpoint(struct agent *ag)
{
	char msg[512];
	int n;

	if (!ag->a.ckpt_uri)
		return;
	ckscan_tier3(ag->a.ckpt_dir, &ag->rp);
	if (!ag->rp.found || ag->rp.local_step <= ag->rp.store_step)
		return;
	if (ag->rp.store_step < 0)
		n = snprintf(msg, sizeof msg, "the run ended with checkpoint step "
			     "%lld on this node's disk only; the object store "
			     "holds no step", (long long)ag->rp.local_step);
	else
		n = snprintf(msg, sizeof msg, "the run ended with checkpoint step "
			     "%lld on this node's disk only; the object store "
			     "holds step %lld", (long long)ag->rp.local_step,
			     (long long)ag->rp.store_step);
	if (ag->rp.last_error[0] && n > 0 && (size_t)n < sizeof msg)
		snprintf(msg + n, sizeof msg - (size_t)n, ": %s",
			 ag->rp.last_error);
	agent__line(ag, "%s", msg);
	report_ckpt_error(ag, msg);
}

static void reap_children(struct agent *ag)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p <= 0)
			return;
		/* the agent has no children but the workload's leader and,
		 * being a subreaper, the leader's orphans */
		if (agent_mounts_note_exit(ag, p, st))
			continue; /* a bucket mount's syncer */
		if (!workload_note_exit(&ag->w, p, st))
			ag->orphan_status = st;
		else if (notice_signal_seen())
			ag->exit_in_notice = 1; /* the signal came first */
	}
}

void agent__begin_stop(struct agent *ag, enum stop_why why, int64_t deadline)
{
	if (ag->kind == W_NONE || ag->stopping != STOP_NONE)
		return;
	/* Children are reaped once per loop, after the notice check: a
	 * workload that ended on its own since then ended before this stop,
	 * and its exit is what it is (completed, crashed), never a stop -
	 * else a job that finished as the notice came is run once more. */
	reap_children(ag);
	/* ... unless a signal ended only its leader and the rest of its
	 * group runs on: a batch scheduler (Slurm) signals every process of
	 * the job at once, so the `sh -c` wrapper may die of the notice
	 * signal before this stop while the trainer it started takes its
	 * final checkpoint - that is this stop, not a crash (whose
	 * stragglers would be SIGKILLed).  And the same signal may have
	 * ended the whole workload (its final checkpoint taken, exit 0)
	 * before the agent took it as the notice: reaped after the signal
	 * came (exit_in_notice), that exit is this notice's stop too, never
	 * a run that completed - else the job ends SUCCEEDED, undone. */
	if (ag->w.exited && !(ag->w.signal && workload_group_alive(&ag->w)) &&
	    !(why == STOP_NOTICE && ag->exit_in_notice))
		return;
	ag->stopping = why;
	ag->stop_deadline_ns = deadline;
	ag->ckpt_before = durable_step(ag);
	/* a workload that is over on the notice signal took its final
	 * checkpoint already: what is newer than spotrund last heard of is
	 * that final one */
	if (ag->w.exited && ag->exit_in_notice && ag->ckpt_hb < ag->ckpt_before &&
	    !workload_group_alive(&ag->w))
		ag->ckpt_before = ag->ckpt_hb;
	/* the job's own "checkpoint and exit" signal (preempt_signal) */
	if (ag->a.stop_signal <= 0)
		ag->a.stop_signal = SIGTERM;
	if (workload_signal(&ag->w, ag->a.stop_signal) < 0 && !ag->w.exited)
		sr_warn("agent", "stop signal to workload failed", "pgid=%d "
			"signal=%d", (int)ag->w.pid, ag->a.stop_signal);
}

void agent__drain_pipe(struct agent *ag, int *fd, enum logbatch_stream s)
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

/* Read the status file one last time after a stop: earlier stalls are
 * reported as periodic checkpoints, the last one is returned as the final
 * save's duration (-1 if none). */
static double final_stall(struct agent *ag)
{
	struct status_info si;
	double last;

	if (read_progress(ag, &si, NULL) != 1 || si.nstalls == 0)
		return -1;
	last = si.stall_ms[si.nstalls - 1];
	for (int i = 0; i + 1 < si.nstalls; i++) {
		json_t *ev = json_pack("{s:s, s:i, s:f, s:b, s:b}", "type",
				       "checkpoint", "attempt", ag->w_attempt,
				       "stall_ms", si.stall_ms[i], "final", 0,
				       "durable", 0);

		agent__push(ag, ev, 0);
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
	json_t *xev;

	agent__drain_pipe(ag, &ag->w.out_fd, LOGBATCH_STDOUT);
	agent__drain_pipe(ag, &ag->w.err_fd, LOGBATCH_STDERR);
	workload_close_fds(&ag->w);
	logbatch_flush_partial(ag->logs, sr_time_real_ns());
	/* Stopping signals the whole group, so a `/bin/sh -c` leader dies
	 * of the stop signal (or of a scheduler's SIGTERM to every process)
	 * while the trainer it started checkpoints and exits on its own: its
	 * exit status is the workload's (0, or 75 when the final checkpoint
	 * failed - docs/python.md). */
	if (ag->stopping != STOP_NONE &&
	    (ag->w.signal == SIGTERM || ag->w.signal == ag->a.stop_signal) &&
	    ag->orphan_status >= 0 && WIFEXITED(ag->orphan_status)) {
		ag->w.signal = 0;
		ag->w.exit_code = WEXITSTATUS(ag->orphan_status);
	}
	workload_status_str(&ag->w, how, sizeof how);
	if (kind == W_SETUP) {
		agent__line(ag, "setup ended: %s", how);
		agent__push(ag, json_pack("{s:s, s:i}", "type", "setup_done",
					 "exit_code", ag->w.exit_code), 1);
		ag->setup_ok = ag->w.exit_code == 0 && !ag->w.signal;
		if (!ag->setup_ok)
			ag->want_attempt = 0; /* counted as a crash upstream */
	} else {
		if (ag->stopping != STOP_NONE) {
			double final_ms = -1;
			int64_t now_step;

			/* the workload's last status write carries the final
			 * save's duration: take it for the final event */
			final_ms = final_stall(ag);
			now_step = durable_step(ag);
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
				agent__push(ag, ev, 1);
				agent__line(ag, "final checkpoint at step %lld is "
					   "committed", (long long)now_step);
			} else if (now_step >= 0) {
				agent__line(ag, "no final checkpoint before the "
					   "deadline (newest committed: step %lld)",
					   (long long)now_step);
			} else {
				agent__line(ag, "no final checkpoint before the "
					   "deadline (no committed checkpoint "
					   "reported)");
			}
		} else {
			cause = ag->w.exit_code == 0 ? "completed" : "crashed";
			if (ag->w.exit_code == 0 && !ag->w.signal)
				check_last_checkpoint(ag);
		}
		agent__line(ag, "run of attempt %d ended: %s (%s)", ag->w_attempt,
			   how, cause);
		xev = json_pack("{s:s, s:i, s:i, s:o, s:s}", "type", "exit",
			       "attempt", ag->w_attempt, "exit_code",
			       ag->w.exit_code, "signal", ag->w.signal ?
			       json_integer(ag->w.signal) : json_null(),
			       "cause", cause);
		if (ag->nmounts && xev) {
			/* reported once the bucket mounts' final round is
			 * durable (agent_mounts_poll), so the job ends or moves
			 * only then; the syncers restart with the next run */
			json_decref(ag->held_exit);
			ag->held_exit = xev;
			ag->mounts_ready = 0;
			agent_mounts_final(ag, agent_mounts_final_deadline(ag));
		} else {
			agent__push(ag, xev, 1);
		}
	}
	ag->kind = W_NONE;
	ag->stopping = STOP_NONE;
	memset(&ag->w, 0, sizeof ag->w);
	ag->w.pid = -1;
	ag->w.out_fd = ag->w.err_fd = -1;
}

/* A batch scheduler (Slurm) signals every process of the job, in no set
 * order: the run script's `sh -c` may die of the notice signal before the
 * agent's own copy of it arrives.  The trainer it started is then taking
 * its final checkpoint, and is the notice's stop, not a leftover of a
 * script that is done: killed as one, the rank vanished mid-collective
 * and the gang lost its final step (test_slurm_provider's gang, stop
 * 42's CI).  Such leftovers wait up to NOTICE_SIGNAL_WAIT_NS (monotonic)
 * for the agent's signal, which agent__begin_stop takes as this stop;
 * past it they are killed as before. */
static bool awaiting_notice_signal(struct agent *ag, int64_t now)
{
	/* notice_signal is always a real signal: a leader that exited
	 * (signal 0) never matches */
	if (!(ag->o->notice_sources & NOTICE_SRC_SIGNAL) ||
	    ag->w.signal != ag->o->notice_signal)
		return false;
	if (ag->leader_sig_ns == 0) {
		ag->leader_sig_ns = now;
		agent__line(ag, "the run script died of signal %d with its "
			   "processes alive: waiting for the scheduler's notice",
			   ag->w.signal);
	}
	return now - ag->leader_sig_ns < NOTICE_SIGNAL_WAIT_NS;
}

/* Move the workload along: reap, kill stragglers, detect the end. */
void agent__check_workload(struct agent *ag, int64_t now)
{
	if (ag->kind == W_NONE)
		return;
	reap_children(ag);
	if (ag->stopping != STOP_NONE && now >= ag->stop_deadline_ns &&
	    workload_group_alive(&ag->w)) {
		agent__line(ag, "workload did not exit by the deadline: SIGKILL");
		workload_signal(&ag->w, SIGKILL);
		ag->stop_deadline_ns = INT64_MAX;
	}
	if (!ag->w.exited)
		return;
	/* it exited after a notice signal the agent has not taken yet: the
	 * loop's notice check takes it first (agent__begin_stop), then the
	 * exit is that stop's - not classified (nor its group killed) now */
	if (ag->stopping == STOP_NONE && ag->exit_in_notice &&
	    !ag->notice_handled)
		return;
	if (workload_group_alive(&ag->w)) {
		if (ag->stopping == STOP_NONE &&
		    !awaiting_notice_signal(ag, now)) {
			/* the script is done; leftovers do not outlive it */
			workload_signal(&ag->w, SIGKILL);
		}
		return;
	}
	/* group empty: wait for the pipes' EOF, which is immediate now */
	agent__drain_pipe(ag, &ag->w.out_fd, LOGBATCH_STDOUT);
	agent__drain_pipe(ag, &ag->w.err_fd, LOGBATCH_STDERR);
	workload_finished(ag);
	agent__advance(ag);
}

void agent__check_status(struct agent *ag)
{
	struct status_info si;
	struct sr_err e;
	int rc;

	if (ag->w_attempt == 0 || ag->stopping != STOP_NONE)
		return; /* while stopping, final_stall() reads it at the end */
	if (ag->a.ckpt_uri)
		check_recovery_point(ag);
	sr_err_clear(&e);
	rc = read_progress(ag, &si, &e);
	if (rc < 0) {
		agent__line(ag, "ignoring status file: %s", sr_err_str(&e, rc));
		return;
	}
	if (rc == 0)
		return;
	/* checkpoints stopped reaching the object store: spotrund records
	 * it and raises the "checkpoint" alert */
	report_ckpt_error(ag, si.ckpt_error);
	if (si.nstalls > 0) {
		/* the workload writes the file right after a save, so the
		 * stalls belong to the saves at `step` (status.h) */
		int64_t committed = durable_step(ag);

		for (int i = 0; i < si.nstalls; i++) {
			json_t *ev = json_pack("{s:s, s:i, s:f, s:b, s:b}", "type",
					       "checkpoint", "attempt",
					       ag->w_attempt, "stall_ms",
					       si.stall_ms[i], "final", 0,
					       "durable",
					       si.step >= 0 && committed >= si.step);

			if (ev && si.step >= 0)
				json_object_set_new(ev, "step", json_integer(si.step));
			agent__push(ag, ev, 0);
		}
	}
}
