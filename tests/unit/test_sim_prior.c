/* Unit tests: spotrun's prior (lib/sim/policy_prior.c) - the counts a
 * trace adds, the resampling to 600 s, the pseudo-counts on a job's age
 * buckets, the pair counts of a market's zones and the fit's grouping of
 * files into markets, and the bundled table against a fit of the bundled
 * traces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glob.h>
#include <math.h>
#include <string.h>

#include "sim/policy_prior.h"
#include "sim/policy_spotrun_plan.h"

static struct trace *mk(int64_t gap, const uint8_t *avail, size_t n)
{
	struct trace *t = NULL;

	assert_int_equal(trace_from_arrays("t", gap, avail, NULL, n, -1, &t), 0);
	return t;
}

/* Spells: the first (its start unseen) is left out, each other counts
 * its ticks by age and ends at its last age; the last is exposure only. */
static void test_counts_by_age(void **state)
{
	/* down 2 (cut) | up 3 | down 1 | up 5 | down 2 (cut) */
	static const uint8_t a[] = { 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0 };
	struct policy_prior p = { 0 };
	struct trace *t = mk(600, a, sizeof a);

	(void)state;
	policy_prior_add(&p, t);
	/* runs of 3 and 5: ends at age 2 (bin 2) and age 4 (bin 3) */
	assert_float_equal(p.ends[1][2], 1, 0);
	assert_float_equal(p.ends[1][3], 1, 0);
	assert_float_equal(p.ends[1][0] + p.ends[1][1] + p.ends[1][4], 0, 0);
	/* exposure at ages 0,1 twice, 2,3 twice / once, 4 once */
	assert_float_equal(p.expo[1][0], 2, 0);
	assert_float_equal(p.expo[1][1], 2, 0);
	assert_float_equal(p.expo[1][2], 3, 0);
	assert_float_equal(p.expo[1][3], 1, 0);
	/* the outage of 1 ends at age 0; the last one, 2 ticks, no end */
	assert_float_equal(p.ends[0][0], 1, 0);
	assert_float_equal(p.ends[0][1], 0, 0);
	assert_float_equal(p.expo[0][0], 2, 0);
	assert_float_equal(p.expo[0][1], 1, 0);
	trace_free(t);
}

/* A 60 s trace is read at every tenth tick: its fit is that of the same
 * market written at 600 s. */
static void test_resampled_to_600s(void **state)
{
	static const uint8_t a[] = { 1, 0, 0, 1, 1, 1, 0, 1, 1, 0, 0, 0, 1, 1 };
	uint8_t fine[sizeof a * 10];
	struct policy_prior p = { 0 }, q = { 0 };
	struct trace *t, *f;

	(void)state;
	for (size_t i = 0; i < sizeof fine; i++)
		fine[i] = a[i / 10];
	fine[15] = 1; /* a blip between two probes is not seen */
	t = mk(600, a, sizeof a);
	f = mk(60, fine, sizeof fine);
	policy_prior_add(&p, t);
	policy_prior_add(&q, f);
	assert_memory_equal(&p, &q, sizeof p);
	trace_free(t);
	trace_free(f);
}

/* On a job's buckets the pseudo-ends add up to the weight, and the rate
 * per tick of each bucket is the prior's, in the job's own ticks. */
static void test_buckets(void **state)
{
	struct policy_prior p = { 0 };
	double e[PLAN_AGES], x[PLAN_AGES], sum = 0;

	(void)state;
	for (int j = 0; j < PRIOR_BINS; j++) {
		p.ends[1][j] = 10;
		p.expo[1][j] = 100; /* 0.1 per 600 s tick at every age */
	}
	policy_prior_buckets(&p, 1, 720, 60, 8, e, x);
	for (int b = 0; b < PLAN_AGES; b++) {
		sum += e[b];
		assert_true(x[b] > 0);
		assert_float_equal(e[b] / x[b], 0.01, 1e-12); /* per 60 s tick */
	}
	assert_float_equal(sum, 8, 1e-9);
	/* bucket 0 of 720 s steps holds the ages 0 and 600 s; the last one,
	 * 16 steps and older, ages from 11520 s (bin 5, tick 19) on */
	policy_prior_buckets(&p, 1, 720, 600, 8, e, x);
	assert_float_equal(e[0], 8 * (10 + 10) / 100.0, 1e-9);
	assert_true(e[PLAN_AGES - 1] > e[0]);
	/* no end of that kind: all zero */
	policy_prior_buckets(&p, 0, 720, 600, 8, e, x);
	for (int b = 0; b < PLAN_AGES; b++)
		assert_true(e[b] == 0 && x[b] == 0);
}

/* The pair counts of two zones, as spotrun_observe() counts its pairs:
 * each zone up a tick before, by o (the other up then) and pair age, a
 * change where it went down or o flipped; a pair whose start was not
 * seen counts nothing. */
static void test_pair_counts(void **state)
{
	static const uint8_t a[] = { 0, 1, 1, 1, 1, 0 }, b[] = { 0, 0, 1, 1, 0, 0 };
	static const uint8_t c[] = { 1, 1, 1, 0 }, d[] = { 0, 0, 0, 0 };
	struct policy_prior p = { 0 }, q = { 0 }, zero = { 0 };
	struct trace *t[2] = { mk(600, a, sizeof a), mk(600, b, sizeof b) };
	struct trace *u[2] = { mk(600, c, sizeof c), mk(600, d, sizeof d) };

	(void)state;
	policy_prior_add_pairs(&p, (const struct trace *const *)t, 2);
	/* a alone at age 0 changes as b comes up, and as both end */
	assert_float_equal(p.expo[PRIOR_PAIR][0], 2, 0);
	assert_float_equal(p.ends[PRIOR_PAIR][0], 2, 0);
	/* together: a tick at age 0 each without a change, then at age 1
	 * both change (b goes down: a's o flips, b's run ends) */
	assert_float_equal(p.expo[PRIOR_PAIR + 1][0], 2, 0);
	assert_float_equal(p.ends[PRIOR_PAIR + 1][0], 0, 0);
	assert_float_equal(p.expo[PRIOR_PAIR + 1][1], 2, 0);
	assert_float_equal(p.ends[PRIOR_PAIR + 1][1], 2, 0);
	/* no spell counts: those are policy_prior_add()'s */
	assert_memory_equal(p.ends[0], zero.ends[0], sizeof p.ends[0] * PRIOR_PAIR);
	/* c's run was up from the first tick: its pair age is unknown */
	policy_prior_add_pairs(&q, (const struct trace *const *)u, 2);
	assert_memory_equal(&q, &zero, sizeof q);
	/* one zone is no market of pairs */
	policy_prior_add_pairs(&q, (const struct trace *const *)t, 1);
	assert_memory_equal(&q, &zero, sizeof q);
	for (int z = 0; z < 2; z++) {
		trace_free(t[z]);
		trace_free(u[z]);
	}
}

#define D "data/traces/cbl/availability/1-node/aws-10-26-2022/"

/* A fit of files pairs the zones of one market (the paths that differ
 * only in the zone) and no others; every file adds its own spells. */
static void test_fit_pairs_by_name(void **state)
{
	static const char *const files[] = { D "us-west-2a_v100_1.json",
					     D "us-west-2a_k80_1.json",
					     D "us-west-2b_v100_1.json" };
	struct policy_prior p = { 0 }, q = { 0 };
	struct trace *t[3];
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(policy_prior_fit(&p, files, 3, &e), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(trace_load(files[i], TRACE_FMT_AUTO, &t[i], &e), 0);
		policy_prior_add(&q, t[i]);
	}
	struct trace *k80 = t[1];

	t[1] = t[2]; /* the two v100_1 zones */
	policy_prior_add_pairs(&q, (const struct trace *const *)t, 2);
	assert_memory_equal(&p, &q, sizeof p);
	assert_true(p.ends[PRIOR_PAIR][0] + p.ends[PRIOR_PAIR + 1][0] > 0);
	trace_free(t[0]);
	trace_free(k80);
	trace_free(t[2]);
	/* a file that does not load is named */
	{
		static const char *const bad[] = { D "us-west-2a_v100_1.json", "/nonexistent_x.json" };

		assert_int_not_equal(policy_prior_fit(&p, bad, 2, &e), 0);
		assert_non_null(strstr(e.msg, "/nonexistent_x.json"));
	}
}

/* The table compiled in is the fit of every bundled trace. */
static void test_bundled_is_the_fit(void **state)
{
	struct policy_prior p = { 0 };
	struct sr_err e = { 0 };
	glob_t g;

	(void)state;
	assert_int_equal(glob("data/traces/cbl/*/*/*/*.json", 0, NULL, &g), 0);
	assert_int_equal(glob("data/traces/skynomad/*/*/full.json", GLOB_APPEND, NULL, &g), 0);
	assert_int_equal(g.gl_pathc, 28);
	assert_int_equal(policy_prior_fit(&p, (const char *const *)g.gl_pathv,
					  (int)g.gl_pathc, &e), 0);
	globfree(&g);
	for (int k = 0; k < PRIOR_KINDS; k++) {
		for (int j = 0; j < PRIOR_BINS; j++) {
			assert_float_equal(p.ends[k][j], policy_prior_bundled.ends[k][j], 0);
			assert_float_equal(p.expo[k][j], policy_prior_bundled.expo[k][j], 0);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_by_age),
		cmocka_unit_test(test_resampled_to_600s),
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_pair_counts),
		cmocka_unit_test(test_fit_pairs_by_name),
		cmocka_unit_test(test_bundled_is_the_fit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
