/* Unit tests: lib/providers/slurm/slurm_group.c - a launch group's
 * launches gathered (cloud/compute.h, LAUNCH GROUPS): the last to come
 * gets every launch by index and submits for all, the others wait for
 * its answer (or its error); a launch let go or waiting too long stops
 * waiting with a transient error; a group too big is refused.  (The
 * allocation against a real Slurm: tests/py/test_slurm_provider.py.) */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "providers/slurm/slurm_int.h"

struct waiter {
	struct slurm_prov *p;
	int index;
	struct slurm_group *g;
	bool cancel;
	int joined, rc;
	long long jobid;
	struct cloud_error err;
	pthread_t th;
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;

	w->rc = slurm__group_wait(w->p, w->g, &w->cancel, 600, &w->jobid,
				  &w->err);
	slurm__group_leave(w->p, w->g, w->index);
	return NULL;
}

static void prov_init(struct slurm_prov *p)
{
	memset(p, 0, sizeof *p);
	pthread_mutex_init(&p->mu, NULL);
}

/* Launches 0 and 2 come first and wait; 1 comes last and submits. */
static void gather(struct slurm_prov *p, int rc, long long jobid,
		   struct waiter *w)
{
	int ud[3] = { 10, 11, 12 }, order[2] = { 2, 0 };
	void *members[SLURM_GROUP_MAX] = { 0 };
	struct cloud_error err = { 0 };
	struct slurm_group *g = NULL;

	for (int k = 0; k < 2; k++) {
		struct waiter *x = &w[k];

		x->p = p;
		x->index = order[k];
		x->joined = slurm__group_join(p, "sr-c-7-1", 3, x->index,
					      &ud[x->index], &x->g, members, &err);
		assert_int_equal(x->joined, 0);
		assert_int_equal(pthread_create(&x->th, NULL, wait_main, x), 0);
	}
	assert_int_equal(slurm__group_join(p, "sr-c-7-1", 3, 1, &ud[1], &g,
					   members, &err), 1);
	for (int i = 0; i < 3; i++)
		assert_ptr_equal(members[i], &ud[i]);
	if (rc)
		cloud_err_set(&err, CLOUD_EINVALID, NULL, "sbatch: error: "
			      "invalid partition specified: nosuch");
	slurm__group_done(p, g, rc, jobid, &err);
	slurm__group_leave(p, g, 1);
	for (int k = 0; k < 2; k++)
		pthread_join(w[k].th, NULL);
	assert_null(p->groups); /* the last to leave freed it */
}

static void test_last_submits_for_all(void **state)
{
	struct slurm_prov p;
	struct waiter w[2] = { 0 };

	(void)state;
	prov_init(&p);
	gather(&p, 0, 42, w);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(w[k].rc, 0);
		assert_int_equal(w[k].jobid, 42);
	}
	pthread_mutex_destroy(&p.mu);
}

static void test_a_failed_submit_fails_every_launch(void **state)
{
	struct slurm_prov p;
	struct waiter w[2] = { 0 };

	(void)state;
	prov_init(&p);
	gather(&p, -EINVAL, 0, w);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(w[k].rc, -EINVAL);
		assert_int_equal(w[k].err.cls, CLOUD_EINVALID);
		assert_non_null(strstr(w[k].err.msg, "invalid partition"));
	}
	pthread_mutex_destroy(&p.mu);
}

static void test_let_go_or_too_long(void **state)
{
	struct slurm_prov p;
	struct waiter w = { 0 };
	void *members[SLURM_GROUP_MAX];
	struct cloud_error err = { 0 };
	struct slurm_group *g = NULL;
	long long id = 0;
	int ud = 1, rc;

	(void)state;
	prov_init(&p);
	/* one of two: its wait ends at the limit (0 s here), transient */
	assert_int_equal(slurm__group_join(&p, "k", 2, 0, &ud, &g, members,
					   &err), 0);
	rc = slurm__group_wait(&p, g, &w.cancel, 0, &id, &err);
	assert_true(rc < 0);
	assert_int_equal(err.cls, CLOUD_ETRANSIENT);
	assert_non_null(strstr(err.msg, "1 of its 2 launches came"));
	slurm__group_leave(&p, g, 0);
	assert_null(p.groups);
	/* let go (req_free): the waiter wakes and stops */
	w.p = &p;
	w.index = 1;
	assert_int_equal(slurm__group_join(&p, "k", 2, 1, &ud, &w.g, members,
					   &err), 0);
	assert_int_equal(pthread_create(&w.th, NULL, wait_main, &w), 0);
	pthread_mutex_lock(&p.mu);
	w.cancel = true;
	pthread_mutex_unlock(&p.mu);
	slurm__group_wake(&p);
	pthread_join(w.th, NULL);
	assert_true(w.rc < 0);
	assert_int_equal(w.err.cls, CLOUD_ETRANSIENT);
	assert_non_null(strstr(w.err.msg, "let go"));
	assert_null(p.groups);
	/* more nodes than one allocation takes here: refused, no group */
	rc = slurm__group_join(&p, "big", SLURM_GROUP_MAX + 1, 0, &ud, &g,
			       members, &err);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err.msg, "at most 32"));
	assert_null(p.groups);
	pthread_mutex_destroy(&p.mu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_last_submits_for_all),
		cmocka_unit_test(test_a_failed_submit_fails_every_launch),
		cmocka_unit_test(test_let_go_or_too_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
