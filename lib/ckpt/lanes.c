/*
 * lanes.c - the writer's helper threads for striped checkpoints.
 *
 * With several tier-2 directories (one per disk) each directory is a lane:
 * its shards are written, and hashed, by a thread of their own through a
 * queue of their own, so the disks are busy at once and the hashing is
 * split between cores instead of capping the write at one core's XXH3
 * rate.  Lane 0 is the calling thread (the writer, or save_final's
 * caller) with its own io; lanes 1..n-1 are threads started once with the
 * engine, each with a private io, that sleep between jobs.  A job runs
 * fn(io_k, arg_k) on every lane at once and returns when all are done.
 * The threads follow the writer's placement (CPUs, nice value).
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"
#include "io.h"

struct lane {
	struct ckpt_lanes *ls;
	int idx;
	pthread_t th;
	int started;
	struct ckpt_io *io;
};

struct ckpt_lanes {
	pthread_mutex_t mu;
	pthread_cond_t cv_work, cv_done;
	int n, stop, running;
	uint64_t gen;
	ckpt_lane_fn fn;
	void *const *args;
	struct ckpt_place *place; /* borrowed; may be NULL */
	struct lane *l;           /* [1..n-1] are threads */
};

static void *lane_main(void *p)
{
	struct lane *me = p;
	struct ckpt_lanes *ls = me->ls;
	uint64_t seen = 0;
	unsigned placed = 0;

	pthread_mutex_lock(&ls->mu);
	for (;;) {
		while (!ls->stop && ls->gen == seen)
			pthread_cond_wait(&ls->cv_work, &ls->mu);
		if (ls->stop)
			break;
		seen = ls->gen;
		{
			ckpt_lane_fn fn = ls->fn;
			void *arg = ls->args[me->idx];

			pthread_mutex_unlock(&ls->mu);
			ckpt__place_apply(ls->place, &placed, 1);
			fn(me->io, arg);
			pthread_mutex_lock(&ls->mu);
		}
		if (--ls->running == 0)
			pthread_cond_broadcast(&ls->cv_done);
	}
	pthread_mutex_unlock(&ls->mu);
	return NULL;
}

int ckpt__lanes_new(int n, uint32_t depth, uint32_t chunk,
		    struct ckpt_place *place, struct ckpt_lanes **out)
{
	struct ckpt_lanes *ls = calloc(1, sizeof *ls);
	int rc = 0;

	*out = NULL;
	if (!ls)
		return -ENOMEM;
	pthread_mutex_init(&ls->mu, NULL);
	pthread_cond_init(&ls->cv_work, NULL);
	pthread_cond_init(&ls->cv_done, NULL);
	ls->place = place;
	ls->l = calloc((size_t)(n > 1 ? n : 1), sizeof *ls->l);
	if (!ls->l) {
		ckpt__lanes_free(ls);
		return -ENOMEM;
	}
	ls->n = n;
	for (int k = 1; k < n && rc == 0; k++) {
		ls->l[k].ls = ls;
		ls->l[k].idx = k;
		rc = ckpt__io_new(depth, chunk, &ls->l[k].io);
		if (rc == 0) {
			rc = -pthread_create(&ls->l[k].th, NULL, lane_main, &ls->l[k]);
			ls->l[k].started = rc == 0;
		}
	}
	if (rc) {
		ckpt__lanes_free(ls);
		return rc;
	}
	*out = ls;
	return 0;
}

void ckpt__lanes_free(struct ckpt_lanes *ls)
{
	if (!ls)
		return;
	pthread_mutex_lock(&ls->mu);
	ls->stop = 1;
	pthread_cond_broadcast(&ls->cv_work);
	pthread_mutex_unlock(&ls->mu);
	for (int k = 1; ls->l && k < ls->n; k++) {
		if (ls->l[k].started)
			pthread_join(ls->l[k].th, NULL);
		ckpt__io_free(ls->l[k].io);
	}
	pthread_mutex_destroy(&ls->mu);
	pthread_cond_destroy(&ls->cv_work);
	pthread_cond_destroy(&ls->cv_done);
	free(ls->l);
	free(ls);
}

int ckpt__lanes_count(const struct ckpt_lanes *ls)
{
	return ls ? ls->n : 1;
}

void ckpt__lanes_set_rate(struct ckpt_lanes *ls, uint64_t bytes_per_s)
{
	for (int k = 1; ls && k < ls->n; k++)
		ls->l[k].io->max_bytes_per_s = bytes_per_s;
}

void ckpt__lanes_unregister(struct ckpt_lanes *ls)
{
	for (int k = 1; ls && k < ls->n; k++)
		ckpt__io_unregister_buffer(ls->l[k].io);
}

void ckpt__lanes_run(struct ckpt_lanes *ls, struct ckpt_io *io0,
		     ckpt_lane_fn fn, void *const *args)
{
	if (!ls || ls->n < 2) {
		fn(io0, args[0]);
		return;
	}
	pthread_mutex_lock(&ls->mu);
	ls->fn = fn;
	ls->args = args;
	ls->running = ls->n - 1;
	ls->gen++;
	pthread_cond_broadcast(&ls->cv_work);
	pthread_mutex_unlock(&ls->mu);
	fn(io0, args[0]);
	pthread_mutex_lock(&ls->mu);
	while (ls->running > 0)
		pthread_cond_wait(&ls->cv_done, &ls->mu);
	pthread_mutex_unlock(&ls->mu);
}
