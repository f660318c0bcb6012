/* Unit tests: the exact two-zone table (sim_known2.c) - with one zone
 * that never comes up it is the single-region exact plan
 * (policy_spotrun_plan.c, exact ages, restart step by step) to the cent;
 * a second zone and the freedom to wait can only lower its cost; two
 * zones with one law are interchangeable; memoryless zones written as one
 * joint spell give the same values; bad models are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "sim/policy_spotrun_plan.h"
#include "sim/sim_known2.h"

#define STEP 720.0
#define AGES 12
#define WORK (30 * STEP)
#define SLACK (6 * STEP)

/* A law with memory: young runs are fragile, old outages persist. */
static double run_end[AGES], out_end[AGES], never[AGES], always[AGES];

static void laws_init(void)
{
	for (int a = 0; a < AGES; a++) {
		run_end[a] = a < 2 ? 0.35 : 0.04;
		out_end[a] = 0.5 / (a + 1);
		never[a] = 0;
		always[a] = 1;
	}
}

/* Zone 0 on the law above; zone 1 as given. */
static struct known2_model model2(const double *z1_out, const double *z1_run, int idle)
{
	struct known2_model m = { .ages = AGES, .spot_price = { 0.9731, 0.9731 },
				  .od_price = 3.06, .step_s = STEP, .idle_when_up = idle };

	laws_init();
	m.end[0][0] = out_end;
	m.end[0][1] = run_end;
	m.end[1][0] = z1_out;
	m.end[1][1] = z1_run;
	return m;
}

static size_t mk_of(const struct sim_known2 *k, int u0, int a0, int u1, int a1)
{
	int up[2] = { u0, u1 }, age[2] = { a0, a1 };

	return sim_known2_market(k, up, age);
}

static int same(double x, double y)
{
	if (isinf(x) || isinf(y))
		return isinf(x) && isinf(y);
	return fabs(x - y) <= 1e-9 * (1 + fabs(x));
}

/* Zone 1 down for good: every value at the top of the table is the
 * single-region plan's on zone 0's law (waiting only with spot down, as
 * that plan does). */
static void test_one_zone_down_is_the_single_region_plan(void **state)
{
	struct known2_model m2 = model2(never, always, 0);
	struct policy_job job = { .work_s = WORK, .deadline_s = WORK + SLACK,
				  .restart_s = STEP, .gap_s = (int64_t)STEP, .nregions = 1,
				  .od_price = 3.06 };
	struct plan_model m1;
	struct sim_known2 k;
	struct plan pl = { 0 };
	static const struct {
		int h2;
		enum sim_hold h1;
	} held[] = { { KNOWN2_NONE, SIM_NONE }, { KNOWN2_OD, SIM_OD }, { KNOWN2_SPOT0, SIM_SPOT } };

	(void)state;
	memset(&m1, 0, sizeof m1);
	m1.exact_ages = AGES;
	m1.exact_up = run_end;
	m1.exact_down = out_end;
	m1.exact_restart = 1;
	m1.spot_price = 0.9731;
	m1.od_price = 3.06;
	m1.restart_s = STEP;
	assert_int_equal(sim_known2_build(&k, &m2, WORK, SLACK), 0);
	assert_int_equal(policy__plan_build(&pl, &m1, STEP, WORK, SLACK), 0);
	for (size_t s = 0; s <= k.ns; s++) {
		for (int i = 0; i < 3; i++) {
			for (int u = 0; u < 2; u++) {
				for (int a = 0; a < AGES; a++) {
					double v1;

					if (held[i].h1 == SIM_SPOT && !u)
						continue;
					assert_int_equal(policy__plan_eval(&pl, &m1, &job, PLAN_RULE_PLAN,
									   WORK, (double)s * STEP,
									   held[i].h1, u, a, &v1), 0);
					assert_true(same(sim_known2_value(&k, s, held[i].h2,
									  mk_of(&k, u, a, 0, 3)), v1));
				}
			}
		}
	}
	/* Spot is never started in the zone that is down. */
	for (size_t c = 1; c <= k.nc; c++) {
		for (size_t s = 0; s <= k.ns; s++)
			assert_int_not_equal(sim_known2_choose(&k, c, s, KNOWN2_NONE,
							       mk_of(&k, 1, 0, 0, 5)),
					     KNOWN2_SPOT1);
	}
	policy__plan_free(&pl);
	sim_known2_free(&k);
}

/* More choices never cost more: a second zone that comes up, and waiting
 * with spot up. */
static void test_more_choices_never_cost_more(void **state)
{
	struct known2_model one = model2(never, always, 0);
	struct known2_model two = model2(out_end, run_end, 0);
	struct known2_model wait = model2(out_end, run_end, 1);
	struct sim_known2 k1, k2, kw;
	int lower = 0;

	(void)state;
	assert_int_equal(sim_known2_build(&k1, &one, WORK, SLACK), 0);
	assert_int_equal(sim_known2_build(&k2, &two, WORK, SLACK), 0);
	assert_int_equal(sim_known2_build(&kw, &wait, WORK, SLACK), 0);
	for (size_t s = 0; s <= k1.ns; s++) {
		for (int h = KNOWN2_NONE; h <= KNOWN2_SPOT0; h++) {
			for (int u = 0; u < 2; u++) {
				for (int a = 0; a < AGES; a++) {
					double v1 = sim_known2_value(&k1, s, h, mk_of(&k1, u, a, 0, 0));
					double v2 = sim_known2_value(&k2, s, h, mk_of(&k2, u, a, 0, 0));
					double vw = sim_known2_value(&kw, s, h, mk_of(&kw, u, a, 1, 0));
					double v2u = sim_known2_value(&k2, s, h, mk_of(&k2, u, a, 1, 0));

					if (h == KNOWN2_SPOT0 && !u)
						continue;
					assert_true(v2 <= v1 + 1e-9);
					assert_true(vw <= v2u + 1e-9);
					lower += isfinite(v1) && v2 < v1 - 1e-6;
				}
			}
		}
	}
	assert_true(lower > 0); /* the second zone is worth something */
	sim_known2_free(&k1);
	sim_known2_free(&k2);
	sim_known2_free(&kw);
}

/* Two zones on one law: swapping them swaps nothing but the names. */
static void test_zones_with_one_law_are_interchangeable(void **state)
{
	struct known2_model m = model2(out_end, run_end, 1);
	struct sim_known2 k;

	(void)state;
	m.end[1][0] = out_end;
	m.end[1][1] = run_end;
	assert_int_equal(sim_known2_build(&k, &m, WORK, SLACK), 0);
	for (size_t s = 0; s <= k.ns; s++) {
		for (int u0 = 0; u0 < 2; u0++) {
			for (int a0 = 0; a0 < AGES; a0 += 3) {
				for (int u1 = 0; u1 < 2; u1++) {
					for (int a1 = 0; a1 < AGES; a1 += 2) {
						size_t x = mk_of(&k, u0, a0, u1, a1);
						size_t y = mk_of(&k, u1, a1, u0, a0);

						assert_true(same(sim_known2_value(&k, s, KNOWN2_NONE, x),
								 sim_known2_value(&k, s, KNOWN2_NONE, y)));
						assert_true(same(sim_known2_value(&k, s, KNOWN2_OD, x),
								 sim_known2_value(&k, s, KNOWN2_OD, y)));
						if (u0)
							assert_true(same(sim_known2_value(&k, s, KNOWN2_SPOT0, x),
									 sim_known2_value(&k, s, KNOWN2_SPOT1, y)));
					}
				}
			}
		}
	}
	sim_known2_free(&k);
}

/* Two memoryless zones are a Markov chain on the joint state: as one
 * joint spell (its end: either zone flips; the next state: which did)
 * the table must give the independent zones' values. */
static void test_joint_spells_of_memoryless_zones_are_the_zones(void **state)
{
	static const double p[2][2] = { { 0.3, 0.06 }, { 0.45, 0.1 } }; /* [zone][up] */
	static double flat[2][2][AGES], jend[4 * AGES], jnext[4 * AGES * 4];
	struct known2_model mz = model2(out_end, run_end, 1), mj;
	struct sim_known2 kz, kj;

	(void)state;
	for (int z = 0; z < 2; z++) {
		for (int u = 0; u < 2; u++) {
			for (int a = 0; a < AGES; a++)
				flat[z][u][a] = p[z][u];
			mz.end[z][u] = flat[z][u];
		}
	}
	for (int j = 0; j < 4; j++) {
		double p0 = p[0][j & 1], p1 = p[1][j >> 1 & 1], end = 1 - (1 - p0) * (1 - p1);

		for (int a = 0; a < AGES; a++) {
			double *nx = jnext + (j * AGES + a) * 4;

			jend[j * AGES + a] = end;
			memset(nx, 0, 4 * sizeof *nx);
			nx[j ^ 1] = p0 * (1 - p1) / end;
			nx[j ^ 2] = (1 - p0) * p1 / end;
			nx[j ^ 3] = p0 * p1 / end;
		}
	}
	mj = mz;
	mj.joint = 1;
	mj.jend = jend;
	mj.jnext = jnext;
	assert_int_equal(sim_known2_build(&kz, &mz, WORK, SLACK), 0);
	assert_int_equal(sim_known2_build(&kj, &mj, WORK, SLACK), 0);
	assert_int_equal(kj.nm, 4 * AGES);
	for (size_t s = 0; s <= kz.ns; s++) {
		for (int j = 0; j < 4; j++) {
			for (int h = 0; h < KNOWN2_HOLDS; h++) {
				size_t x = mk_of(&kz, j & 1, 3, j >> 1 & 1, 7);
				size_t y = sim_known2_market_joint(&kj, j, (int)s);

				assert_true(same(sim_known2_value(&kz, s, h, x),
						 sim_known2_value(&kj, s, h, y)));
			}
		}
	}
	sim_known2_free(&kz);
	sim_known2_free(&kj);
	/* A next-state row that does not sum to 1 is refused. */
	jnext[5] += 0.1;
	assert_int_equal(sim_known2_build(&kj, &mj, WORK, SLACK), -EINVAL);
}

static void test_bad_models_are_refused(void **state)
{
	struct known2_model m = model2(out_end, run_end, 1);
	struct sim_known2 k;
	double bad[AGES];

	(void)state;
	m.ages = 1;
	assert_int_equal(sim_known2_build(&k, &m, WORK, SLACK), -EINVAL);
	m.ages = KNOWN2_AGES_MAX + 1;
	assert_int_equal(sim_known2_build(&k, &m, WORK, SLACK), -EINVAL);
	m.ages = AGES;
	assert_int_equal(sim_known2_build(&k, &m, 0, SLACK), -EINVAL);
	assert_int_equal(sim_known2_build(&k, &m, WORK, -1), -EINVAL);
	memcpy(bad, run_end, sizeof bad);
	bad[AGES - 1] = 1.5;
	m.end[1][1] = bad;
	assert_int_equal(sim_known2_build(&k, &m, WORK, SLACK), -EINVAL);
	m.end[1][1] = NULL;
	assert_int_equal(sim_known2_build(&k, &m, WORK, SLACK), -EINVAL);
	assert_null(k.act);
	sim_known2_free(&k);
	sim_known2_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_zone_down_is_the_single_region_plan),
		cmocka_unit_test(test_more_choices_never_cost_more),
		cmocka_unit_test(test_zones_with_one_law_are_interchangeable),
		cmocka_unit_test(test_joint_spells_of_memoryless_zones_are_the_zones),
		cmocka_unit_test(test_bad_models_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
