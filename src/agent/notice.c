/*
 * notice.c - the IMDS polling thread.
 *
 * DESIGN: the main loop makes blocking HTTP calls to spotrund (heartbeats,
 * reports) that may take a second or more when the daemon is slow or
 * down; a preemption notice must still be seen within the poll interval.
 * So polling runs on its own thread, which only touches the atomics and
 * the error buffer in struct notice_watch and writes one byte to a pipe
 * to wake the main loop when a notice arrives.  It stops polling once a
 * notice is seen (the node is going away; nothing later matters).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
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

static void *watch_main(void *arg)
{
	struct notice_watch *w = arg;

	while (!atomic_load(&w->stop)) {
		int64_t t0 = sr_time_mono_ns();
		struct imds_notice n;
		struct sr_err e;
		int rc;

		sr_err_clear(&e);
		rc = imds_poll(w->imds, &n, &e);
		if (rc < 0) {
			atomic_fetch_add(&w->errors, 1);
			set_error(w, sr_err_str(&e, rc));
		} else {
			atomic_store(&w->errors, 0);
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
		long spent = (long)((sr_time_mono_ns() - t0) / 1000000);
		if (spent < w->interval_ms)
			sleep_ms(w->interval_ms - spent);
	}
	return NULL;
}

int notice_watch_start(struct notice_watch *w, const char *imds_url,
		       long interval_ms, struct sr_err *e)
{
	int rc;

	memset(w, 0, sizeof *w);
	w->wake_fd[0] = w->wake_fd[1] = -1;
	pthread_mutex_init(&w->mu, NULL);
	w->interval_ms = interval_ms > 0 && interval_ms <= 1000 ? interval_ms : 500;
	/* each request may take at most one interval */
	w->imds = imds_create(imds_url, w->interval_ms);
	if (!w->imds)
		return sr_err_set(e, -ENOMEM, "imds client: out of memory");
	if (pipe2(w->wake_fd, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = sr_err_set(e, -errno, "notice pipe: %s", strerror(errno));
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
	if (w->started) {
		atomic_store(&w->stop, 1);
		pthread_join(w->thr, NULL);
		w->started = 0;
	}
	for (int i = 0; i < 2; i++) {
		if (w->wake_fd[i] >= 0)
			close(w->wake_fd[i]);
		w->wake_fd[i] = -1;
	}
	imds_destroy(w->imds);
	w->imds = NULL;
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
