/*
 * watch.c - the main loop's watchdog and keep-alive.
 *
 * Heartbeats are the node's liveness: spotrund declares a node LOST after
 * --heartbeat-timeout of silence (10 s by default) and replaces it.  The
 * main loop sends them, but a pass of it can block in a call whose bound
 * is longer than that: the job's files fetch (120 s) and unpack (120 s),
 * a workload or syncer start, two calls to spotrund in one pass (3 s
 * each), a directive that starts all of these from inside a report.
 *
 *   main loop:  agent__phase("files fetch") ... agent__phase("...")
 *                   |  what it does now and since when (atomics)
 *   watch thread (wakes every tick):
 *     stalled >= WATCH_LOG_NS in one phase: "main loop stalled" (warn,
 *       every WATCH_LOG_EVERY_NS while it lasts; the loop logs the total
 *       when the phase ends);
 *     stalled and no heartbeat for the node's period, heartbeats allowed
 *       (no notice taken, node not gone), the loop not in a call to
 *       spotrund itself (a slow spotrund gets no second call beside
 *       it; those calls end in 3 s): a keep-alive heartbeat with what
 *       the loop last sent (workload state, attempt, pgid) - liveness
 *       only, no progress; its directive is left to the loop (directives
 *       are spotrund's state, repeated on every heartbeat);
 *     stalled longer than WATCH_COVER_NS (past every bounded call the
 *       loop makes): no more keep-alives, so a loop stuck for good is
 *       declared lost and replaced, as before.
 *
 * Keep-alives that fail are paced at one per WATCH_FAIL_EVERY_NS.  The
 * client (ctlc) is safe to share between the two threads: every call has
 * its own transfer.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "common/log.h"
#include "common/timeutil.h"

#define WATCH_LOG_NS (2 * SR_NS_PER_SEC)
#define WATCH_LOG_EVERY_NS (10 * SR_NS_PER_SEC)
#define WATCH_COVER_NS (300 * SR_NS_PER_SEC)
#define WATCH_FAIL_EVERY_NS (2 * SR_NS_PER_SEC)
#define WATCH_TICK_MS 250

const char *agent__phase(struct agent *ag, const char *name)
{
	struct agent_watch *w = &ag->watch;
	const char *prev = atomic_load(&w->phase);
	int64_t now = sr_time_mono_ns(), took = now - atomic_load(&w->since_ns);

	if (prev && took >= WATCH_LOG_NS)
		sr_warn("agent", "main loop stalled", "s=%.1f phase=\"%s\" "
			"keepalives=%ld", (double)took / 1e9, prev,
			atomic_load(&w->keepalives));
	atomic_store(&w->since_ns, now);
	atomic_store(&w->phase, name);
	return prev;
}

void agent__watch_beat(struct agent *ag, const char *workload, int attempt,
		       int pgid, bool allowed)
{
	struct agent_watch *w = &ag->watch;

	atomic_store(&w->hb_allowed, allowed);
	if (!workload)
		return;
	atomic_store(&w->hb_workload, workload);
	atomic_store(&w->hb_attempt, attempt);
	atomic_store(&w->hb_pgid, pgid);
	atomic_store(&w->hb_ns, sr_time_mono_ns());
}

static void keepalive(struct agent *ag, int64_t now)
{
	struct agent_watch *w = &ag->watch;
	const char *wl = atomic_load(&w->hb_workload);
	json_t *b, *reply = NULL;
	char path[96];
	struct sr_err e;
	int pgid = atomic_load(&w->hb_pgid), rc;

	b = json_pack("{s:s, s:i}", "workload", wl ? wl : "idle", "attempt",
		      atomic_load(&w->hb_attempt));
	if (!b)
		return;
	if (pgid > 0)
		json_object_set_new(b, "workload_pgid", json_integer(pgid));
	snprintf(path, sizeof path, "%s/heartbeat", ag->path_prefix);
	sr_err_clear(&e);
	rc = ctlc_call(ag->cli, "POST", path, b, &reply, NULL, &e);
	json_decref(reply);
	json_decref(b);
	if (rc == 0) {
		atomic_store(&w->hb_ns, now);
		atomic_fetch_add(&w->keepalives, 1);
	} else {
		w->fail_ns = now;
		sr_warn("agent", "keep-alive heartbeat failed", "error=\"%s\"",
			sr_err_str(&e, rc));
	}
}

static void *watch_main(void *arg)
{
	struct agent *ag = arg;
	struct agent_watch *w = &ag->watch;
	int64_t logged_ns = 0, covered_since = -1;

	while (!atomic_load(&w->stop)) {
		struct pollfd p = { w->wake[0], POLLIN, 0 };
		const char *phase;
		int64_t now, since, stalled;

		if (poll(&p, 1, WATCH_TICK_MS) < 0 && errno != EINTR)
			break;
		if (atomic_load(&w->stop))
			break;
		now = sr_time_mono_ns();
		phase = atomic_load(&w->phase);
		since = atomic_load(&w->since_ns);
		stalled = now - since;
		if (!phase || stalled < WATCH_LOG_NS) {
			logged_ns = 0;
			continue;
		}
		if (!logged_ns || now - logged_ns >= WATCH_LOG_EVERY_NS) {
			logged_ns = now;
			sr_warn("agent", "main loop stalled", "s=%.1f phase=\"%s\" "
				"so_far=1 keepalives=%ld", (double)stalled / 1e9,
				phase, atomic_load(&w->keepalives));
		}
		if (stalled >= WATCH_COVER_NS) {
			if (covered_since != since)
				sr_error("agent", "main loop stuck: no more keep-alive "
					 "heartbeats (spotrund replaces this node)",
					 "s=%.1f phase=\"%s\"", (double)stalled / 1e9,
					 phase);
			covered_since = since;
			continue;
		}
		if (!atomic_load(&w->hb_allowed) || atomic_load(&w->talking) ||
		    now - atomic_load(&w->hb_ns) < w->every_ns ||
		    (w->fail_ns && now - w->fail_ns < WATCH_FAIL_EVERY_NS))
			continue;
		keepalive(ag, now);
	}
	return NULL;
}

int agent__watch_start(struct agent *ag, int64_t every_ns, struct sr_err *e)
{
	struct agent_watch *w = &ag->watch;
	int rc;

	w->every_ns = every_ns;
	if (pipe2(w->wake, O_CLOEXEC) < 0)
		return sr_err_set(e, -errno, "watchdog: pipe: %s", strerror(errno));
	atomic_store(&w->since_ns, sr_time_mono_ns());
	rc = pthread_create(&w->thr, NULL, watch_main, ag);
	if (rc) {
		close(w->wake[0]);
		close(w->wake[1]);
		w->wake[0] = w->wake[1] = -1;
		return sr_err_set(e, -rc, "watchdog: thread: %s", strerror(rc));
	}
	w->started = 1;
	return 0;
}

void agent__watch_stop(struct agent *ag)
{
	struct agent_watch *w = &ag->watch;

	if (w->started) {
		atomic_store(&w->stop, 1);
		if (write(w->wake[1], "x", 1) < 0)
			(void)0; /* it wakes at its next tick anyway */
		pthread_join(w->thr, NULL);
		w->started = 0;
	}
	for (int i = 0; i < 2; i++) {
		if (w->wake[i] >= 0)
			close(w->wake[i]);
		w->wake[i] = -1;
	}
}
