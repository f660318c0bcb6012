/*
 * slurm_group.c - gathering a launch group's launches (cloud/compute.h,
 * LAUNCH GROUPS): the nodes of a gang placed in one pass come to the
 * driver as one launch each, on worker threads of their own; the last
 * to come submits one allocation for all of them (slurm_drv.c), the
 * others wait for its answer.  Everything here is under p->mu; the
 * groups are a list on the provider (a few at a time).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "providers/slurm/slurm_int.h"

struct slurm_group {
	struct slurm_group *next;
	char key[CLOUD_IDEM_MAX];
	int size, arrived, refs;
	void *member[SLURM_GROUP_MAX];     /* by index; NULL not here */
	bool submitting, done;
	int rc;
	long long jobid;
	struct cloud_error err;
	pthread_cond_t cv;                 /* CLOCK_MONOTONIC */
};

static struct slurm_group *group_new(const char *key, int size)
{
	struct slurm_group *g = calloc(1, sizeof *g);
	pthread_condattr_t a;

	if (!g)
		return NULL;
	snprintf(g->key, sizeof g->key, "%s", key);
	g->size = size;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cv, &a);
	pthread_condattr_destroy(&a);
	return g;
}

int slurm__group_join(struct slurm_prov *p, const char *key, int size,
		      int index, void *ud, struct slurm_group **out,
		      void **members, struct cloud_error *err)
{
	struct slurm_group *g;
	int last = 0;

	*out = NULL;
	if (size < 1 || size > SLURM_GROUP_MAX || index < 0 || index >= size)
		return cloud_err_set(err, CLOUD_EINVALID, NULL, "slurm: a gang of "
				     "%d nodes (launch %d): one allocation holds "
				     "at most %d", size, index, SLURM_GROUP_MAX);
	pthread_mutex_lock(&p->mu);
	for (g = p->groups; g && strcmp(g->key, key); g = g->next)
		;
	if (!g) {
		g = group_new(key, size);
		if (!g) {
			pthread_mutex_unlock(&p->mu);
			return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of "
					     "memory");
		}
		g->next = p->groups;
		p->groups = g;
	}
	g->refs++;
	if (g->size == size && !g->member[index] && !g->done &&
	    !g->submitting) {
		g->member[index] = ud;
		if (++g->arrived == size) {
			g->submitting = true;
			memcpy(members, g->member, sizeof *members * size);
			last = 1;
		}
	}
	pthread_mutex_unlock(&p->mu);
	*out = g;
	return last;
}

void slurm__group_done(struct slurm_prov *p, struct slurm_group *g, int rc,
		       long long jobid, const struct cloud_error *err)
{
	pthread_mutex_lock(&p->mu);
	g->submitting = false;
	g->done = true;
	g->rc = rc;
	g->jobid = jobid;
	if (err)
		g->err = *err;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&p->mu);
}

int slurm__group_wait(struct slurm_prov *p, struct slurm_group *g,
		      const bool *cancel, int64_t timeout_s, long long *jobid,
		      struct cloud_error *err)
{
	struct timespec end;
	int rc = 0, w = 0;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_s;
	pthread_mutex_lock(&p->mu);
	/* a launch being submitted for is never let go: its secret is in
	 * use (the submit is bounded by the command timeout) */
	while (!g->done && (g->submitting || (!*cancel && w != ETIMEDOUT)))
		w = pthread_cond_timedwait(&g->cv, &p->mu, &end);
	if (g->done) {
		rc = g->rc;
		*jobid = g->jobid;
		if (rc)
			*err = g->err;
	} else if (*cancel) {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "slurm: launch "
				   "group %s: the launch was let go", g->key);
	} else {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "slurm: launch "
				   "group %s: %d of its %d launches came within "
				   "%lld s", g->key, g->arrived, g->size,
				   (long long)timeout_s);
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

void slurm__group_leave(struct slurm_prov *p, struct slurm_group *g,
			int index)
{
	struct slurm_group **pp;

	if (!g)
		return;
	pthread_mutex_lock(&p->mu);
	if (index >= 0 && index < g->size && g->member[index] && !g->done) {
		g->member[index] = NULL;
		g->arrived--;
	}
	if (--g->refs == 0) {
		for (pp = &p->groups; *pp && *pp != g; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = g->next;
		pthread_cond_destroy(&g->cv);
		free(g);
	}
	pthread_mutex_unlock(&p->mu);
}

void slurm__group_wake(struct slurm_prov *p)
{
	pthread_mutex_lock(&p->mu);
	for (struct slurm_group *g = p->groups; g; g = g->next)
		pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&p->mu);
}
