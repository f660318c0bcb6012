/*
 * copypool.c - the tier-1 copy threads.
 *
 * A job is a list of segments (dst, src, n).  The threads take the
 * concatenation of all segments POOL_CHUNK bytes at a time from a shared
 * cursor, so a job is split evenly however the tensor sizes are mixed,
 * and a thread that gets less CPU copies less: with the training thread
 * pinned to CPU 0, the copy thread sharing CPU 0 with it no longer holds
 * back the copy the training thread waits for (an even split made it the
 * straggler).  The threads are started once and sleep between jobs; a
 * job allocates nothing.  The last thread to finish runs the job's done
 * hook, then the job counts as finished (ckpt__pool_wait returns).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define POOL_CHUNK (8ull << 20)

struct ckpt_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv_work, cv_done;
	int nthreads, stop;
	uint64_t gen;          /* bumped per job */
	int running;           /* threads still working on the job */
	int busy;              /* job started and not finished */
	const struct ckpt_seg *segs;
	size_t nsegs;
	uint64_t total;
	atomic_uint_fast64_t next; /* cursor: first byte not yet taken */
	ckpt_done_fn done;
	void *ud;
	pthread_t *th;
	struct ckpt_place *place; /* borrowed from the engine, may be NULL */
};

struct worker_arg { struct ckpt_pool *p; int idx; };

static void copy_range(const struct ckpt_seg *segs, size_t n, uint64_t lo,
		       uint64_t hi)
{
	uint64_t base = 0;

	for (size_t i = 0; i < n && base < hi; i++) {
		uint64_t sb = base, se = base + segs[i].n;

		base = se;
		if (se <= lo)
			continue;
		uint64_t a = sb > lo ? sb : lo, b = se < hi ? se : hi;

		if (segs[i].src)
			memcpy(segs[i].dst + (a - sb), segs[i].src + (a - sb), b - a);
		else
			memset(segs[i].dst + (a - sb), 0, b - a);
	}
}

static void *worker(void *argp)
{
	struct worker_arg *arg = argp;
	struct ckpt_pool *p = arg->p;
	uint64_t seen = 0;
	unsigned placed = 0;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && p->gen == seen)
			pthread_cond_wait(&p->cv_work, &p->mu);
		if (p->stop)
			break;
		seen = p->gen;
		{
			const struct ckpt_seg *segs = p->segs;
			size_t n = p->nsegs;
			uint64_t B = p->total;
			struct ckpt_place *pl = p->place;

			pthread_mutex_unlock(&p->mu);
			ckpt__place_apply(pl, &placed, 0);
			for (;;) {
				uint64_t lo = atomic_fetch_add(&p->next, POOL_CHUNK);

				if (lo >= B)
					break;
				copy_range(segs, n, lo, B - lo < POOL_CHUNK ? B :
					   lo + POOL_CHUNK);
			}
			pthread_mutex_lock(&p->mu);
		}
		if (--p->running == 0) {
			ckpt_done_fn done = p->done;
			void *ud = p->ud;

			pthread_mutex_unlock(&p->mu);
			if (done)
				done(ud);
			pthread_mutex_lock(&p->mu);
			p->busy = 0;
			pthread_cond_broadcast(&p->cv_done);
		}
	}
	pthread_mutex_unlock(&p->mu);
	free(arg);
	return NULL;
}

int ckpt__pool_new(int nthreads, struct ckpt_pool **out)
{
	struct ckpt_pool *p = calloc(1, sizeof *p);

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->nthreads = nthreads < 1 ? 1 : nthreads;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv_work, NULL);
	pthread_cond_init(&p->cv_done, NULL);
	p->th = calloc((size_t)p->nthreads, sizeof *p->th);
	if (!p->th) {
		ckpt__pool_free(p);
		return -ENOMEM;
	}
	for (int i = 0; i < p->nthreads; i++) {
		struct worker_arg *a = malloc(sizeof *a);
		int rc;

		if (!a) {
			p->nthreads = i;
			ckpt__pool_free(p);
			return -ENOMEM;
		}
		a->p = p;
		a->idx = i;
		rc = pthread_create(&p->th[i], NULL, worker, a);
		if (rc) {
			free(a);
			p->nthreads = i;
			ckpt__pool_free(p);
			return -rc;
		}
	}
	*out = p;
	return 0;
}

void ckpt__pool_set_place(struct ckpt_pool *p, struct ckpt_place *pl)
{
	pthread_mutex_lock(&p->mu);
	p->place = pl;
	pthread_mutex_unlock(&p->mu);
}

void ckpt__pool_free(struct ckpt_pool *p)
{
	if (!p)
		return;
	ckpt__pool_wait(p);
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->cv_work);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; p->th && i < p->nthreads; i++)
		pthread_join(p->th[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv_work);
	pthread_cond_destroy(&p->cv_done);
	free(p->th);
	free(p);
}

void ckpt__pool_start(struct ckpt_pool *p, const struct ckpt_seg *segs,
		      size_t n, ckpt_done_fn done, void *ud)
{
	pthread_mutex_lock(&p->mu);
	while (p->busy)
		pthread_cond_wait(&p->cv_done, &p->mu);
	p->segs = segs;
	p->nsegs = n;
	p->total = 0;
	for (size_t i = 0; i < n; i++)
		p->total += segs[i].n;
	atomic_store(&p->next, 0);
	p->done = done;
	p->ud = ud;
	p->running = p->nthreads;
	p->busy = 1;
	p->gen++;
	pthread_cond_broadcast(&p->cv_work);
	pthread_mutex_unlock(&p->mu);
}

void ckpt__pool_wait(struct ckpt_pool *p)
{
	pthread_mutex_lock(&p->mu);
	while (p->busy)
		pthread_cond_wait(&p->cv_done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

int ckpt__pool_busy(struct ckpt_pool *p)
{
	int b;

	pthread_mutex_lock(&p->mu);
	b = p->busy;
	pthread_mutex_unlock(&p->mu);
	return b;
}

int ckpt__pool_nthreads(const struct ckpt_pool *p)
{
	return p->nthreads;
}
