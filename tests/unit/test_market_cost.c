/*
 * test_market_cost.c - NETC hand values, Young/Daly, analytic makespan and
 * P(deadline) against Monte Carlo of the same model.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "market/cost.h"

#define USD(x) ((sr_micros)((x) * 1000000.0))

/* The seed's formula, literally: 10 $/h x 10 h + 2 x (10 $/h x 0.5 h + $5). */
static void test_netc_formula(void **state)
{
	(void)state;
	assert_int_equal(cost_netc(USD(10), 10, 2, 0.5, USD(5)), USD(120));
	assert_int_equal(cost_netc(USD(10), 10, 0, 3, USD(5)), USD(100));
	assert_int_equal(cost_netc(USD(4), 2.5, 1.5, 1, USD(2)), USD(19));
}

/* Values computed by hand (python, independent of this code):
 * one segment, lambda = 0.01/h, W = 10 h, R = 0.5 h:
 *   E[N] = e^0.1 - 1 = 0.105170918, E[t_lost] = 100 - 10 q/(1-q) = 4.916680552
 *   E[T] = 10 + E[N](E[t_lost] + R) = 10.569677267, NETC = $105.696773 */
static void test_netc_single_segment(void **state)
{
	struct cost_params p = { .work_h = 10, .nodes = 1, .hazard_per_h = 0.01,
				 .price_per_h = USD(10), .resume_h = 0.5 };
	struct cost_estimate e;

	(void)state;
	assert_int_equal(cost_estimate(&p, &e), 0);
	assert_int_equal(e.n_ckpt, 0);
	assert_true(fabs(e.n_preempt - 0.105170918) < 1e-8);
	assert_true(fabs(e.t_lost_h - 4.916680552) < 1e-8);
	assert_true(fabs(e.makespan_h - 10.569677267) < 1e-8);
	assert_true(llabs(e.netc - 105696773) <= 1);
	assert_int_equal(e.c_resume, USD(5));
}

/* Gang of 2 at 0.05/h each (Lambda = 0.1), W = 10, tau = 3, delta = 0.1,
 * R = 0.25: 3 checkpoints, T_train = 10.3, E[N] = 1.195446260,
 * E[T] = 12.253324170, NETC at $20/h = $245.066483. */
static void test_netc_gang_checkpointed(void **state)
{
	struct cost_params p = { .work_h = 10, .nodes = 2, .hazard_per_h = 0.05,
				 .price_per_h = USD(20), .ckpt_interval_h = 3,
				 .ckpt_stall_h = 0.1, .resume_h = 0.25 };
	struct cost_estimate e;

	(void)state;
	assert_int_equal(cost_estimate(&p, &e), 0);
	assert_true(fabs(e.gang_hazard_per_h - 0.1) < 1e-12);
	assert_int_equal(e.n_ckpt, 3);
	assert_true(fabs(e.t_train_h - 10.3) < 1e-12);
	assert_true(fabs(e.n_preempt - 1.195446260) < 1e-8);
	assert_true(fabs(e.makespan_h - 12.253324170) < 1e-8);
	assert_true(llabs(e.netc - 245066483) <= 2);
	/* a gang of n nodes is preempted n times as often */
	p.nodes = 1;
	p.hazard_per_h = 0.1;
	struct cost_estimate e1;
	assert_int_equal(cost_estimate(&p, &e1), 0);
	assert_true(fabs(e1.n_preempt - e.n_preempt) < 1e-12);
}

static void test_no_hazard(void **state)
{
	struct cost_params p = { .work_h = 5, .nodes = 4, .price_per_h = USD(8),
				 .ckpt_interval_h = 1, .ckpt_stall_h = 0.05 };
	struct cost_estimate e;

	(void)state;
	assert_int_equal(cost_estimate(&p, &e), 0);
	assert_int_equal(e.n_ckpt, 4);
	assert_true(e.n_preempt == 0);
	assert_true(fabs(e.makespan_h - 5.2) < 1e-12);
	assert_true(cost_p_finish_by(&p, 5.2) == 1.0);
	assert_true(cost_p_finish_by(&p, 5.1) == 0.0);
	assert_true(fabs(cost_expected_overrun_h(&p, 5.0) - 0.2) < 1e-12);
}

static void test_bad_params(void **state)
{
	struct cost_params p = { .work_h = 0, .nodes = 1 };
	struct cost_estimate e;

	(void)state;
	assert_int_equal(cost_estimate(&p, &e), -EINVAL);
	p.work_h = 1;
	p.nodes = 0;
	assert_int_equal(cost_estimate(&p, &e), -EINVAL);
	p.nodes = 1;
	p.hazard_per_h = -1;
	assert_int_equal(cost_estimate(&p, &e), -EINVAL);
	p.hazard_per_h = NAN;
	assert_true(cost_p_finish_by(&p, 10) < 0);
}

static void test_young_daly(void **state)
{
	(void)state;
	assert_true(fabs(cost_young_interval_h(0.1, 20) - 2.0) < 1e-12);
	/* sqrt(4) * (1 + 0.05/3 + 0.0025/9) - 0.1 */
	assert_true(fabs(cost_daly_interval_h(0.1, 20) - 1.933888889) < 1e-9);
	/* delta >= 2M: Daly says checkpoint every M */
	assert_true(cost_daly_interval_h(5, 2) == 2);
	assert_true(cost_young_interval_h(0.1, 0) == 0);
	assert_true(cost_daly_interval_h(0.1, INFINITY) == 0);
	/* Daly's optimum beats Young's in expected makespan (it is the
	 * higher-order solution of the same model) */
	struct cost_params p = { .work_h = 48, .nodes = 1, .hazard_per_h = 0.5,
				 .price_per_h = USD(1), .ckpt_stall_h = 0.2,
				 .resume_h = 0.1 };
	struct cost_estimate ey, ed;
	p.ckpt_interval_h = cost_young_interval_h(0.2, 2);
	cost_estimate(&p, &ey);
	p.ckpt_interval_h = cost_daly_interval_h(0.2, 2);
	cost_estimate(&p, &ed);
	assert_true(ed.makespan_h <= ey.makespan_h);
	assert_true(fabs(cost_restore_h(7200000000ULL, 1e6) - 2.0) < 1e-12);
}

/* The analytic mean makespan, E[N] and P(T <= D) agree with a Monte
 * Carlo of the same model within 5 % over several parameter sets and
 * deadlines at several quantiles. */
static void test_monte_carlo_agreement(void **state)
{
	static const struct cost_params sets[] = {
		/* W, n, lambda, $, tau, delta, R */
		{ 48, 1, 0.05, USD(1), 2, 0.05, 0.2 },
		{ 48, 8, 0.02, USD(1), 1, 0.02, 0.25 },
		{ 10, 1, 0.2, USD(1), 0.5, 0.01, 0.1 },
		{ 100, 4, 0.01, USD(1), 0, 0, 0.3 },   /* no checkpoints */
		{ 24, 2, 0.1, USD(1), 1.5, 0.1, 0.5 },
		{ 200, 16, 0.01, USD(1), 0.5, 0.02, 0.2 },
	};
	static const double z[] = { -1, 0, 1, 2 };

	(void)state;
	for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
		struct cost_estimate e;

		assert_int_equal(cost_estimate(&sets[i], &e), 0);
		for (size_t k = 0; k < sizeof z / sizeof z[0]; k++) {
			double D = e.makespan_h + z[k] * e.makespan_sd_h;
			double mt, mn, pm, pa;

			assert_int_equal(cost_monte_carlo(&sets[i], D, 100000,
							  1000 + i, &mt, &mn, &pm), 0);
			pa = cost_p_finish_by(&sets[i], D);
			assert_true(fabs(e.makespan_h - mt) <= 0.05 * mt);
			assert_true(fabs(e.n_preempt - mn) <= 0.05 * mn);
			/* within 5 % of the MC value, or 0.01 absolute where
			 * the probability itself is small */
			assert_true(fabs(pa - pm) <= fmax(0.05 * pm, 0.01));
		}
	}
}

/* The expected overrun matches its Monte Carlo estimate. */
static void test_overrun(void **state)
{
	struct cost_params p = { 48, 1, 0.05, USD(1), 2, 0.05, 0.2 };
	struct cost_estimate e;
	double D, sum = 0, prob;

	(void)state;
	cost_estimate(&p, &e);
	D = e.makespan_h;
	/* E[(T-D)+] = integral of P(T > t) dt from D on */
	for (double t = D; t < D + 10 * e.makespan_sd_h; t += 0.01)
		sum += (1 - cost_p_finish_by(&p, t + 0.005)) * 0.01;
	prob = cost_expected_overrun_h(&p, D);
	assert_true(fabs(prob - sum) <= 0.05 * sum);
}

/* Spot with fallback on a pool that stays down after a loss
 * (cost_outage.c). */
static void test_fallback_with_outages(void **state)
{
	struct cost_params p = { .work_h = 10, .nodes = 1, .hazard_per_h = 0,
				 .price_per_h = 1000000, .ckpt_interval_h = 1,
				 .resume_h = 0.2 };
	struct cost_outage none = { 0, 0, 0, 0 }, o = { 1.0, 2.0, 0, 0 },
			   forever = { 1e6, 0, 0, 0 };
	struct cost_mc_result r, r2;

	(void)state;
	/* never preempted: W + R on spot, never on demand */
	assert_int_equal(cost_fallback_mc(&p, &none, 20, 3000000, 200, 1, &r), 0);
	assert_int_equal(r.mean, 10200000);
	assert_int_equal(r.p95, 10200000);
	assert_true(r.p_fallback == 0);
	/* a pool that never comes back after its first loss: every run that
	 * is preempted ends on demand (W - kept + R at $3/h) */
	p.hazard_per_h = 0.5;
	assert_int_equal(cost_fallback_mc(&p, &forever, 30, 3000000, 500, 1, &r), 0);
	assert_true(r.p_fallback > 0.9);
	assert_true(r.p95 > 30000000 - 1 && r.p95 <= 30600000 + 10200000);
	/* deterministic for a seed; the p95 above the mean; outages cost
	 * more than a pool back at once, and a tight deadline more still */
	assert_int_equal(cost_fallback_mc(&p, &o, 20, 3000000, 500, 7, &r), 0);
	assert_int_equal(cost_fallback_mc(&p, &o, 20, 3000000, 500, 7, &r2), 0);
	assert_int_equal(r.mean, r2.mean);
	assert_int_equal(r.p95, r2.p95);
	assert_true(r.p95 >= r.mean);
	assert_int_equal(cost_fallback_mc(&p, &none, 20, 3000000, 500, 7, &r2), 0);
	assert_true(r.p_fallback >= r2.p_fallback);
	assert_int_equal(cost_fallback_mc(&p, &o, 11, 3000000, 500, 7, &r2), 0);
	assert_true(r2.p_fallback > r.p_fallback && r2.mean > r.mean);
	/* days of a worse market (the rate and the outages scaled together
	 * per run): a wider spread, the same seed the same figures */
	o.disp = 0.5;
	assert_int_equal(cost_fallback_mc(&p, &o, 20, 3000000, 2000, 7, &r2), 0);
	assert_int_equal(cost_fallback_mc(&p, &o, 20, 3000000, 2000, 7, &r), 0);
	assert_int_equal(r.p95, r2.p95);
	o.disp = 0;
	assert_int_equal(cost_fallback_mc(&p, &o, 20, 3000000, 2000, 7, &r2), 0);
	assert_true(r.p95 > r2.p95);
	/* losses in bursts (up spells of the same mean, cv 3): the same
	 * rate, a wider spread of outcomes - a higher p95 */
	o.up_cv = 3;
	assert_int_equal(cost_fallback_mc(&p, &o, 20, 3000000, 2000, 7, &r), 0);
	assert_true(r.p95 > r2.p95);
	o.up_cv = -1;
	assert_int_equal(cost_fallback_mc(&p, &o, 20, 3000000, 10, 1, &r), -EINVAL);
	o.up_cv = 0;
	/* bad input */
	assert_int_equal(cost_fallback_mc(&p, &o, INFINITY, 3000000, 10, 1, &r),
			 -EINVAL);
	assert_int_equal(cost_fallback_mc(&p, NULL, 20, 3000000, 10, 1, &r), -EINVAL);
	assert_int_equal(cost_fallback_mc(&p, &o, 20, 3000000, 0, 1, &r), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_netc_formula),
		cmocka_unit_test(test_netc_single_segment),
		cmocka_unit_test(test_netc_gang_checkpointed),
		cmocka_unit_test(test_no_hazard),
		cmocka_unit_test(test_bad_params),
		cmocka_unit_test(test_young_daly),
		cmocka_unit_test(test_monte_carlo_agreement),
		cmocka_unit_test(test_overrun),
		cmocka_unit_test(test_fallback_with_outages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
