/*
 * notice.c - the notice sources: how a node learns that its provider will
 * take it (docs/agent.md "Notice sources").  A provider names its nodes'
 * source (cloud_prov_def.notice_source); the agent runs those --notice
 * lists:
 *
 *   imds    AWS IMDSv2, as EC2 and spotrund's local cloud serve it:
 *           spot/instance-action (the notice and the cloud's time for it)
 *           and events/recommendations/rebalance (an early warning, not a
 *           notice), on a polling thread; tokens fetched again before
 *           they expire (lib/agent/imds.c).
 *   scheduled-events
 *           Azure Scheduled Events at the same --imds base
 *           (lib/azure/schedev.h): this VM's Preempt, Terminate, Reboot
 *           or Redeploy, its NotBefore the deadline; polled at the same
 *           pace (at most a second apart), DocumentIncarnation tracked.
 *           The event is acknowledged (StartRequests) once the final
 *           checkpoint is reported (agent.c), so Azure may go early.
 *   gce     the GCE metadata server (at --imds's URL): a hanging GET on
 *           instance/preempted and one on instance/maintenance-event,
 *           each on its own thread, last_etag kept across reconnects
 *           (lib/agent/gcemeta.c).  preempted TRUE is the notice; GCE
 *           stops the VM 30 s after it (GCE_PREEMPT_S).  A
 *           TERMINATE_ON_HOST_MAINTENANCE event is one too, 60 s ahead
 *           (GCE_MAINT_S); MIGRATE_ON_HOST_MAINTENANCE is only logged.
 *   signal  a scheduler's signal (Slurm sends SIGTERM before its kill, or
 *           --signal=USR1@LEAD): the notice's time is now + --notice-lead.
 *           The signal is then a notice, not "agent, quit": SIGINT always
 *           quits, SIGTERM quits unless it is the notice signal.
 *
 * DESIGN: the main loop makes blocking HTTP calls to spotrund (heartbeats,
 * reports) that may take a second or more when the daemon is slow or
 * down; a preemption notice must still be seen within the poll interval.
 * So polling runs on its own thread, which only touches the atomics and
 * the error buffer in struct notice_watch and writes one byte to a pipe
 * to wake the main loop when a notice arrives; the signal's handler
 * writes the same pipe (write is async-signal-safe).  Polling stops once
 * a notice is seen (the node is going away; nothing later matters).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <strings.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "agent/gcemeta.h"
#include "common/log.h"
#include "common/timeutil.h"

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void set_error(struct notice_watch *w, const char *msg)
{
	int changed;

	pthread_mutex_lock(&w->mu);
	changed = strcmp(w->last_err, msg) != 0;
	snprintf(w->last_err, sizeof w->last_err, "%s", msg);
	pthread_mutex_unlock(&w->mu);
	if (changed) {
		atomic_fetch_add(&w->err_gen, 1);
		sr_warn("agent", "preemption poll failed", "error=\"%s\"", msg);
	}
}

/* The signal source: its handler's state (one agent per process). */
static volatile sig_atomic_t sig_seen;
static int sig_wake_fd = -1;

static void on_notice_signal(int sig)
{
	int saved = errno;
	char one = 's';

	(void)sig;
	sig_seen = 1;
	if (sig_wake_fd >= 0 && write(sig_wake_fd, &one, 1) < 0)
		(void)0; /* the main loop also polls */
	errno = saved;
}

int notice_signal_install(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_notice_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	return sigaction(sig, &sa, NULL);
}

bool notice_signal_seen(void)
{
	return sig_seen != 0;
}

int notice_sources_parse(const char *list, unsigned *out, struct sr_err *e)
{
	const char *p = list;

	*out = 0;
	while (p && *p) {
		size_t len = strcspn(p, ",");

		if (len == 4 && !strncmp(p, "imds", 4))
			*out |= NOTICE_SRC_IMDS;
		else if (len == 16 && !strncmp(p, "scheduled-events", 16))
			*out |= NOTICE_SRC_SCHEDEV;
		else if (len == 6 && !strncmp(p, "signal", 6))
			*out |= NOTICE_SRC_SIGNAL;
		else if (len == 3 && !strncmp(p, "gce", 3))
			*out |= NOTICE_SRC_GCE;
		else if (!(len == 4 && !strncmp(p, "none", 4)))
			return sr_err_set(e, -EINVAL, "'%.*s' is not a notice "
					  "source (imds, scheduled-events, gce, "
					  "signal, none)", (int)len, p);
		p += len + (p[len] == ',');
	}
	return 0;
}

int notice_signal_parse(const char *name)
{
	if (!strncasecmp(name, "SIG", 3))
		name += 3;
	if (!strcasecmp(name, "TERM"))
		return SIGTERM;
	if (!strcasecmp(name, "USR1"))
		return SIGUSR1;
	if (!strcasecmp(name, "USR2"))
		return SIGUSR2;
	return -1;
}

/* One Scheduled Events poll: 1 when it found this VM's notice (stored,
 * the main loop woken), 0 otherwise. */
static int schedev_step(struct notice_watch *w, struct sr_err *e)
{
	struct schedev_notice n;
	char one = 'n';
	int rc = schedev_poll(w->se, &n, e);

	if (rc < 0) {
		atomic_fetch_add(&w->errors, 1);
		set_error(w, sr_err_str(e, rc));
		return 0;
	}
	atomic_store(&w->errors, 0);
	if (n.type == 0)
		return 0;
	pthread_mutex_lock(&w->mu);
	snprintf(w->se_event, sizeof w->se_event, "%s", n.event_id);
	pthread_mutex_unlock(&w->mu);
	atomic_store(&w->time_ns, n.time_ns);
	atomic_store(&w->se_type, (int)n.type);
	atomic_store(&w->action, IMDS_TERMINATE);
	atomic_store(&w->have, 1);
	if (write(w->wake_fd[1], &one, 1) < 0)
		(void)0; /* the main loop also polls */
	return 1;
}

static void *watch_main(void *arg)
{
	struct notice_watch *w = arg;

	while (!atomic_load(&w->stop)) {
		int64_t t0 = sr_time_mono_ns();
		struct imds_notice n;
		struct sr_err e;
		int rc;

		sr_err_clear(&e);
		if (w->se) {
			if (schedev_step(w, &e) == 1)
				break;
			goto pace;
		}
		rc = imds_poll(w->imds, &n, &e);
		if (rc < 0) {
			atomic_fetch_add(&w->errors, 1);
			set_error(w, sr_err_str(&e, rc));
		} else {
			atomic_store(&w->errors, 0);
			if (n.rebalance_ns && !atomic_load(&w->rebalance_ns)) {
				char one = 'r';

				atomic_store(&w->rebalance_ns, n.rebalance_ns);
				if (write(w->wake_fd[1], &one, 1) < 0)
					(void)0;
			}
			if (n.action != IMDS_NONE) {
				char one = 'n';

				atomic_store(&w->time_ns, n.time_ns);
				atomic_store(&w->action, (int)n.action);
				atomic_store(&w->have, 1);
				if (write(w->wake_fd[1], &one, 1) < 0)
					(void)0; /* the main loop also polls */
				break;
			}
		}
pace:;
		long spent = (long)((sr_time_mono_ns() - t0) / 1000000);
		if (spent < w->interval_ms)
			sleep_ms(w->interval_ms - spent);
	}
	return NULL;
}

#define GCE_PREEMPT_S 30
#define GCE_MAINT_S 60

/* Record a notice due lead_s from now and wake the main loop. */
static void notice_take(struct notice_watch *w, int lead_s)
{
	char one = 'n';

	atomic_store(&w->time_ns, sr_time_real_ns() + lead_s * SR_NS_PER_SEC);
	atomic_store(&w->action, (int)IMDS_TERMINATE);
	atomic_store(&w->have, 1);
	if (write(w->wake_fd[1], &one, 1) < 0)
		(void)0; /* the main loop also polls */
}

/* One gce key's hanging GETs until a notice or stop.  A failed GET is
 * asked again after a second (the ETag held, so nothing is missed). */
static void gce_watch(struct notice_watch *w, const char *key)
{
	struct gcemeta *c = gcemeta_create(w->gce_url, key, 0, &w->stop);

	if (!c) {
		set_error(w, "gce metadata client: out of memory");
		return;
	}
	while (!atomic_load(&w->stop) && !atomic_load(&w->have)) {
		char v[40];
		bool changed;
		struct sr_err e;
		int rc;

		sr_err_clear(&e);
		rc = gcemeta_next(c, v, sizeof v, &changed, &e);
		if (rc < 0) {
			if (atomic_load(&w->stop))
				break;
			atomic_fetch_add(&w->errors, 1);
			set_error(w, sr_err_str(&e, rc));
			sleep_ms(1000);
			continue;
		}
		atomic_store(&w->errors, 0);
		if (!changed)
			continue;
		if (!strcmp(v, "TRUE")) {
			notice_take(w, GCE_PREEMPT_S);
		} else if (!strcmp(v, "TERMINATE_ON_HOST_MAINTENANCE")) {
			notice_take(w, GCE_MAINT_S);
		} else if (!strcmp(v, "MIGRATE_ON_HOST_MAINTENANCE")) {
			sr_info("agent", "host maintenance: live migration",
				"key=%s", key);
		}
	}
	gcemeta_destroy(c);
}

static void *gce_preempted_main(void *arg)
{
	gce_watch(arg, GCEMETA_PREEMPTED);
	return NULL;
}

static void *gce_maint_main(void *arg)
{
	gce_watch(arg, GCEMETA_MAINTENANCE);
	return NULL;
}

static int gce_start(struct notice_watch *w, const struct agent_opts *o,
		     struct sr_err *e)
{
	void *(*fn[2])(void *) = { gce_preempted_main, gce_maint_main };

	w->gce_url = o->imds;
	for (int i = 0; i < 2; i++) {
		int rc = -pthread_create(&w->gthr[i], NULL, fn[i], w);

		if (rc < 0)
			return sr_err_set(e, rc, "gce notice thread: %s",
					  strerror(-rc));
		w->gstarted = i + 1;
	}
	return 0;
}

int notice_watch_start(struct notice_watch *w, const struct agent_opts *o,
		       long interval_ms, struct sr_err *e)
{
	int rc;

	memset(w, 0, sizeof *w);
	w->wake_fd[0] = w->wake_fd[1] = -1;
	pthread_mutex_init(&w->mu, NULL);
	w->interval_ms = interval_ms > 0 && interval_ms <= 1000 ? interval_ms : 500;
	if (pipe2(w->wake_fd, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = sr_err_set(e, -errno, "notice pipe: %s", strerror(errno));
		goto fail;
	}
	/* the signal source's handler (notice_signal_install) wakes the
	 * main loop from here on */
	if (o->notice_sources & NOTICE_SRC_SIGNAL)
		sig_wake_fd = w->wake_fd[1];
	if (o->notice_sources & NOTICE_SRC_GCE) {
		rc = gce_start(w, o, e);
		if (rc)
			goto fail;
	}
	if (!(o->notice_sources & (NOTICE_SRC_IMDS | NOTICE_SRC_SCHEDEV)))
		return 0;
	/* each request may take at most one interval */
	if (o->notice_sources & NOTICE_SRC_SCHEDEV)
		w->se = schedev_create(o->imds, w->interval_ms);
	else
		w->imds = imds_create(o->imds, w->interval_ms);
	if (!w->imds && !w->se) {
		rc = sr_err_set(e, -ENOMEM, "imds client: out of memory");
		goto fail;
	}
	rc = -pthread_create(&w->thr, NULL, watch_main, w);
	if (rc < 0) {
		sr_err_set(e, rc, "notice thread: %s", strerror(-rc));
		goto fail;
	}
	w->started = 1;
	return 0;
fail:
	notice_watch_stop(w);
	return rc;
}

void notice_watch_stop(struct notice_watch *w)
{
	atomic_store(&w->stop, 1); /* also cancels a hanging GET */
	if (w->started) {
		pthread_join(w->thr, NULL);
		w->started = 0;
	}
	for (int i = 0; i < w->gstarted; i++)
		pthread_join(w->gthr[i], NULL);
	w->gstarted = 0;
	sig_wake_fd = -1; /* the handler writes nothing from here */
	for (int i = 0; i < 2; i++) {
		if (w->wake_fd[i] >= 0)
			close(w->wake_fd[i]);
		w->wake_fd[i] = -1;
	}
	imds_destroy(w->imds);
	w->imds = NULL;
	schedev_destroy(w->se);
	w->se = NULL;
}

int notice_watch_error(struct notice_watch *w, int *gen, char *buf, size_t n)
{
	int g = atomic_load(&w->err_gen);

	if (g == *gen)
		return 0;
	*gen = g;
	pthread_mutex_lock(&w->mu);
	snprintf(buf, n, "%s", w->last_err);
	pthread_mutex_unlock(&w->mu);
	return 1;
}
