/*
 * parts.c - run n independent jobs (parts of an upload, ranges of a
 * download) on up to `parallel` threads.  Each thread takes the next job
 * number from a shared counter; after the first failure no new job is
 * started, the running ones finish, and the first failure is returned.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "os_int.h"

struct run {
	os_job_fn fn;
	void *ud;
	size_t n;
	atomic_size_t next;
	atomic_int failed;
	atomic_int *cancel;
	pthread_mutex_t mu;
	int rc;
	struct sr_err err;
};

static void *worker(void *arg)
{
	struct run *r = arg;

	for (;;) {
		struct sr_err e = { 0 };
		size_t i;
		int rc;

		if (atomic_load(&r->failed) ||
		    (r->cancel && atomic_load(r->cancel)))
			break;
		i = atomic_fetch_add(&r->next, 1);
		if (i >= r->n)
			break;
		rc = r->fn(r->ud, i, &e);
		if (rc) {
			pthread_mutex_lock(&r->mu);
			if (!r->rc) {
				r->rc = rc;
				r->err = e;
			}
			pthread_mutex_unlock(&r->mu);
			atomic_store(&r->failed, 1);
		}
	}
	return NULL;
}

int os_run_parallel(int parallel, size_t n, os_job_fn fn, void *ud,
		    atomic_int *cancel, struct sr_err *e)
{
	pthread_t th[64];
	struct run r;
	int nth = 0;

	memset(&r, 0, sizeof r);
	r.fn = fn;
	r.ud = ud;
	r.n = n;
	r.cancel = cancel;
	atomic_init(&r.next, 0);
	atomic_init(&r.failed, 0);
	pthread_mutex_init(&r.mu, NULL);
	if (parallel < 1)
		parallel = 1;
	if (parallel > 64)
		parallel = 64;
	for (int i = 0; i < parallel && (size_t)i < n; i++) {
		if (pthread_create(&th[nth], NULL, worker, &r) == 0)
			nth++;
	}
	if (nth == 0)
		worker(&r);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&r.mu);
	if (!r.rc && cancel && atomic_load(cancel))
		return sr_err_set(e, -ECANCELED, "transfer cancelled");
	if (r.rc && e)
		*e = r.err;
	return r.rc;
}
