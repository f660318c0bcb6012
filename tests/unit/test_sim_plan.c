/* Unit tests: the plan behind `spotrun` (policy_spotrun_plan.c) - its
 * two age scales agree where age says nothing, a start that cannot get
 * past its restart is never chosen when the restart is modelled step by
 * step, waiting with spot up (the exact-law reference's option) only
 * lowers values, across regions a start is priced by whether another
 * region is up (and, with the pair model, by which regions are up
 * together), and bad model options are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "check_size.h"
#include "sim/policy_spotrun_plan.h"

#define STEP 720.0

/* 48 h of work and 4 h of slack; under the sanitizers 24 h (ASan) and
 * 12 h (TSan) of work: the plan's tables grow with the work, and what
 * these tests check holds at every size (check_size.h) */
static struct policy_job job_48_52(void)
{
	double work_h = check_size(48, 24, 12);
	struct policy_job job = { .work_s = work_h * 3600.0,
				  .deadline_s = (work_h + 4) * 3600.0,
				  .restart_s = STEP, .gap_s = (int64_t)STEP,
				  .nregions = 1, .od_price = 3.06, .od_region = 0 };

	return job;
}

static double ex_up[PLAN_AGES_MAX], ex_down[PLAN_AGES_MAX];

/* The same end probabilities at every age, on both scales. */
static struct plan_model memoryless(double end_up, double end_down)
{
	struct plan_model m;

	memset(&m, 0, sizeof m);
	for (int a = 0; a < PLAN_AGES_MAX; a++) {
		ex_up[a] = end_up;
		ex_down[a] = end_down;
		if (a < PLAN_AGES) {
			m.end_up[a] = end_up;
			m.end_down[a] = end_down;
		}
	}
	m.exact_up = ex_up;
	m.exact_down = ex_down;
	m.spot_price = 0.9731;
	m.od_price = 3.06;
	m.restart_s = STEP;
	return m;
}

/* On a memoryless market a spell's age tells nothing, so the doubling
 * buckets and exact ages must give the same choices in every state, and
 * the same values (each a full backward pass, so checked on a sparser
 * grid). */
static void test_exact_ages_agree_when_memoryless(void **state)
{
	struct policy_job job = job_48_52();
	struct plan_model m = memoryless(0.08, 0.3), me = m;
	struct plan pb = { 0 }, pe = { 0 };
	static const enum sim_hold held[] = { SIM_NONE, SIM_OD, SIM_SPOT };

	(void)state;
	me.exact_ages = 40;
	assert_int_equal(policy__plan_build(&pb, &m, STEP, job.work_s, 4 * 3600.0), 0);
	assert_int_equal(policy__plan_build(&pe, &me, STEP, job.work_s, 4 * 3600.0), 0);
	for (double C = STEP; C <= job.work_s; C += STEP) {
		for (double S = 0; S <= 4 * 3600.0; S += STEP) {
			for (int h = 0; h < 3; h++) {
				for (int a = 0; a < 2; a++) {
					double vb, ve;

					if (held[h] == SIM_SPOT && !a)
						continue;
					assert_int_equal(policy__plan_choose(&pb, C, S, held[h], a, 3),
							 policy__plan_choose(&pe, C, S, held[h], a, 17));
					if (fmod(C, 60 * STEP) != 0 || fmod(S, 5 * STEP) != 0)
						continue;
					assert_int_equal(policy__plan_eval(&pb, &m, &job, PLAN_RULE_PLAN, C, S,
									   held[h], a, 3, &vb), 0);
					assert_int_equal(policy__plan_eval(&pe, &me, &job, PLAN_RULE_PLAN, C, S,
									   held[h], a, 17, &ve), 0);
					if (isinf(vb))
						assert_true(isinf(ve));
					else
						assert_true(fabs(vb - ve) < 1e-9 * (1 + vb));
				}
			}
		}
	}
	policy__plan_free(&pb);
	policy__plan_free(&pe);
}

/* A run that always ends within a step: with the restart folded into the
 * first step of work, a spot start still earns that step; modelled step
 * by step, the run is gone before the restart is over, so a start only
 * pays and loses slack, and the plan must never choose it. */
static void test_exact_restart_never_starts_a_doomed_run(void **state)
{
	struct policy_job job = job_48_52();
	struct plan_model m = memoryless(1.0, 0.5);
	struct plan pl = { 0 };

	(void)state;
	m.exact_ages = 8;
	m.exact_restart = 1;
	assert_int_equal(policy__plan_build(&pl, &m, STEP, job.work_s, 4 * 3600.0), 0);
	for (double C = STEP; C <= job.work_s; C += 5 * STEP) {
		for (double S = 0; S <= 4 * 3600.0; S += STEP) {
			assert_int_not_equal(policy__plan_choose(&pl, C, S, SIM_NONE, 1, 0), SIM_SPOT);
			assert_int_not_equal(policy__plan_choose(&pl, C, S, SIM_OD, 1, 0), SIM_SPOT);
		}
	}
	policy__plan_free(&pl);
}

/* Runs that last exactly four steps, outages one: at a run's last step a
 * start (a step without work) is sure to be lost.  With waiting open while
 * spot is up (idle_up, the exact-law reference of bench_policy_bound) the
 * plan waits that step out instead of paying for a start, and no state
 * costs more than without it: waiting only adds a choice. */
static void test_idle_up_waits_out_a_dying_run(void **state)
{
	struct policy_job job = job_48_52();
	struct plan_model m = memoryless(0, 1.0), mw;
	struct plan pn = { 0 }, pw = { 0 };
	static const enum sim_hold held[] = { SIM_NONE, SIM_OD, SIM_SPOT };
	double vn, vw, W = 10 * STEP, SL = 20 * STEP;

	(void)state;
	for (int a = 3; a < PLAN_AGES_MAX; a++)
		ex_up[a] = 1.0;
	m.exact_ages = 8;
	m.exact_restart = 1;
	mw = m;
	mw.idle_up = 1;
	job.work_s = W;
	job.deadline_s = W + SL;
	assert_int_equal(policy__plan_build(&pn, &m, STEP, W, SL), 0);
	assert_int_equal(policy__plan_build(&pw, &mw, STEP, W, SL), 0);
	assert_int_not_equal(policy__plan_choose(&pn, W, SL, SIM_NONE, 1, 3), SIM_NONE);
	assert_int_equal(policy__plan_choose(&pw, W, SL, SIM_NONE, 1, 3), SIM_NONE);
	assert_int_equal(policy__plan_eval(&pn, &m, &job, PLAN_RULE_PLAN, W, SL,
					   SIM_NONE, 1, 3, &vn), 0);
	assert_int_equal(policy__plan_eval(&pw, &mw, &job, PLAN_RULE_PLAN, W, SL,
					   SIM_NONE, 1, 3, &vw), 0);
	assert_true(vw < vn - 0.1);
	/* every state plain; under the sanitizers every third step of work
	 * (their memory and race checks, at ~10x the CPU, meet the same
	 * code in each) */
	for (double C = STEP; C <= W; C += check_size(1, 3, 3) * STEP) {
		for (double S = 0; S <= SL; S += STEP) {
			for (int h = 0; h < 3; h++) {
				for (int a = 0; a < 2; a++) {
					for (int b = 0; b < 8; b++) {
						if (held[h] == SIM_SPOT && !a)
							continue;
						assert_int_equal(policy__plan_eval(&pn, &m, &job,
							PLAN_RULE_PLAN, C, S, held[h], a, b, &vn), 0);
						assert_int_equal(policy__plan_eval(&pw, &mw, &job,
							PLAN_RULE_PLAN, C, S, held[h], a, b, &vw), 0);
						assert_true(isinf(vn) || vw <= vn + 1e-9 * (1 + vn));
					}
				}
			}
		}
	}
	policy__plan_free(&pn);
	policy__plan_free(&pw);
}

/* The market of the two tests of several regions below: outages of 20 steps on
 * average, spot at 2.5 $/h against 3.06, R one step; the run's fate is
 * the test's. */
static struct plan_model multi_market(void)
{
	struct plan_model m;

	memset(&m, 0, sizeof m);
	for (int b = 0; b < PLAN_AGES; b++) {
		m.end_up[b] = 0.01;
		m.end_down[b] = 0.05;
	}
	m.multi = 1;
	m.land_other = 1;
	m.spot_price = 2.5;
	m.od_price = 3.06;
	m.restart_s = STEP;
	return m;
}

/* From on-demand with 20 h of work and 4 h of slack: start spot only
 * with another region up (index PLAN_AGES), not alone (0); held spot is
 * kept in both. */
static void assert_starts_only_beside_another(const struct plan_model *m)
{
	struct plan pl = { 0 };
	double C = 20 * 3600.0, S = 4 * 3600.0;

	assert_int_equal(policy__plan_build(&pl, m, STEP, C, S), 0);
	assert_int_equal(policy__plan_choose(&pl, C, S, SIM_OD, 1, 0), SIM_OD);
	assert_int_equal(policy__plan_choose(&pl, C, S, SIM_OD, 1, PLAN_AGES), SIM_SPOT);
	assert_int_equal(policy__plan_choose(&pl, C, S, SIM_SPOT, 1, 0), SIM_SPOT);
	assert_int_equal(policy__plan_choose(&pl, C, S, SIM_SPOT, 1, PLAN_AGES), SIM_SPOT);
	policy__plan_free(&pl);
}

/* Several regions: a region run's end with another region up lands the
 * job in that region's run, with none up it is an outage.  From
 * on-demand, 20 h of work and 4 h of slack, spot at 2.5 $/h against
 * 3.06 in runs lost with 0.2 a step, outages of 20 steps on average: a
 * start is worth it only where a loss is a restart elsewhere (another
 * region up), not where it is an outage (none other up). */
static void test_multi_prices_another_region_up(void **state)
{
	struct plan_model m = multi_market();

	(void)state;
	for (int b = 0; b < PLAN_AGES; b++) {
		m.loss[b] = 0.2;
		m.land[b] = 1.0 / PLAN_AGES;
	}
	m.rho[0] = 1; /* none other up: a run end is an outage */
	m.rho[1] = 0; /* another up: never */
	assert_starts_only_beside_another(&m);
}

/* The pair model (m.pair) where it says what the run model says: no
 * change of o while the run goes on, a run end landing at age 0, the
 * same end rate by age for both o and the same outage share by o.  The
 * two tables agree in every cell. */
static void test_pair_agrees_with_runs_when_o_never_flips(void **state)
{
	struct plan_model m;
	struct plan run = { 0 }, pair = { 0 };
	double C = 12 * 3600.0, S = 4 * 3600.0;

	(void)state;
	memset(&m, 0, sizeof m);
	for (int b = 0; b < PLAN_AGES; b++) {
		m.end_up[b] = 0.01;
		m.end_down[b] = 0.05 + 0.01 * b;
		m.loss[b] = 0.3 / (b + 1);
	}
	m.land[0] = 1; /* a run landed in is fresh */
	m.multi = 1;
	m.rho[0] = 0.9;
	m.rho[1] = 0.2;
	m.land_other = 0.4;
	m.out_other = 0.3;
	m.spot_price = 1.0;
	m.od_price = 3.06;
	m.restart_s = STEP;
	assert_int_equal(policy__plan_build(&run, &m, STEP, C, S), 0);
	m.pair = 1;
	for (int o = 0; o < 2; o++) {
		for (int b = 0; b < PLAN_AGES; b++)
			m.chg[o][b] = m.loss[b];
		m.pout[o][PAIR_FLIP] = 0;
		m.pout[o][PAIR_OUT] = m.rho[o];
		m.pout[o][PAIR_LAND] = 1 - m.rho[o];
	}
	assert_int_equal(policy__plan_build(&pair, &m, STEP, C, S), 0);
	for (size_t i = 0; i < 5 * (size_t)run.na * (run.nc + 1) * (run.ns + 1); i++) {
		if (isfinite(run.v[i]))
			assert_true(fabs(run.v[i] - pair.v[i]) < 1e-9 * (1 + run.v[i]));
		else
			assert_false(isfinite(pair.v[i]));
	}
	policy__plan_free(&run);
	policy__plan_free(&pair);
}

/* Which regions are up together: a run alone whose pair changes into an
 * outage is not worth a start from on-demand; the same run beside
 * another region, whose pair changes only into a loss with spot up
 * elsewhere, is. */
static void test_pair_prices_zones_up_together(void **state)
{
	struct plan_model m = multi_market();

	(void)state;
	m.pair = 1;
	for (int b = 0; b < PLAN_AGES; b++) {
		m.chg[0][b] = 0.2;
		m.chg[1][b] = 0.2;
	}
	m.pout[0][PAIR_OUT] = 1;  /* alone: a change is an outage */
	m.pout[1][PAIR_LAND] = 1; /* beside another: a restart there */
	assert_starts_only_beside_another(&m);
}

static void test_bad_model_options_are_refused(void **state)
{
	struct plan_model m = memoryless(0.1, 0.1);
	struct plan pl = { 0 };

	(void)state;
	m.exact_ages = 1;
	assert_int_equal(policy__plan_build(&pl, &m, STEP, 3600, 3600), -EINVAL);
	m.exact_ages = PLAN_AGES_MAX + 1;
	assert_int_equal(policy__plan_build(&pl, &m, STEP, 3600, 3600), -EINVAL);
	m.exact_ages = 0;
	m.exact_restart = 1;
	m.restart_s = 2 * STEP; /* two steps: not modelled step by step */
	assert_int_equal(policy__plan_build(&pl, &m, STEP, 3600, 3600), -EINVAL);
	m.restart_s = STEP;
	assert_int_equal(policy__plan_build(&pl, &m, STEP, 3600, 3600), 0);
	policy__plan_free(&pl);
	m.multi = 1; /* waiting with spot up is modelled in one region only */
	m.idle_up = 1;
	assert_int_equal(policy__plan_build(&pl, &m, STEP, 3600, 3600), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_ages_agree_when_memoryless),
		cmocka_unit_test(test_exact_restart_never_starts_a_doomed_run),
		cmocka_unit_test(test_idle_up_waits_out_a_dying_run),
		cmocka_unit_test(test_multi_prices_another_region_up),
		cmocka_unit_test(test_pair_agrees_with_runs_when_o_never_flips),
		cmocka_unit_test(test_pair_prices_zones_up_together),
		cmocka_unit_test(test_bad_model_options_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
