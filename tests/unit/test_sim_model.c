/* Unit tests: lib/sim/sim.c (the model), policy_up.c (the paper's rules,
 * hand-computed) and sim_optimal.c (against exhaustive search). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

#define H 3600.0

/* ---- a scripted policy: follows g_script[tick] -------------------------- */

static struct policy_choice g_script[64];
static size_t g_script_len;

static void script_reset(void *s, const struct policy_job *j)
{
	(void)s;
	(void)j;
}

static struct policy_choice script_decide(void *s, const struct policy_job *j,
					  const struct policy_obs *o)
{
	(void)s;
	(void)j;
	if ((size_t)o->tick < g_script_len)
		return g_script[o->tick];
	return (struct policy_choice){ SIM_OD, 0 };
}

static const struct policy_ops script_policy = {
	.name = "script", .summary = "test", .state_size = 1, .self_guarded = 1,
	.reset = script_reset, .decide = script_decide,
};

/* A market of nr regions, 1 h ticks, spot $1/h (region r: $1 + r), od $3/h. */
struct mk {
	struct trace *t[SIM_MAX_REGIONS];
	struct sim_market m;
};

static void mk_init(struct mk *k, int nr, const char *const *avail)
{
	size_t n = strlen(avail[0]);

	for (int r = 0; r < nr; r++) {
		uint8_t a[64];

		for (size_t i = 0; i < n; i++)
			a[i] = avail[r][i] == '1';
		assert_int_equal(trace_from_arrays("mk", 3600, a, NULL, n, -1, &k->t[r]), 0);
	}
	assert_int_equal(sim_market_init(&k->m, k->t, nr, 1.0, 3.0, 1, NULL), 0);
	for (int r = 0; r < nr; r++)
		k->m.const_price[r] = 1.0 + r;
}

static void mk_free(struct mk *k, int nr)
{
	for (int r = 0; r < nr; r++)
		trace_free(k->t[r]);
}

static struct sim_result run_script(struct mk *k, const struct sim_params *p,
				    const struct policy_choice *sc, size_t n)
{
	struct sim_result r;
	char st[8];

	memcpy(g_script, sc, n * sizeof *sc);
	g_script_len = n;
	assert_int_equal(sim_run(&k->m, 0, p, &script_policy, st, &r, NULL, 0), 0);
	return r;
}

#define NONE_ { SIM_NONE, -1 }
#define SPOT_(r) { SIM_SPOT, r }
#define OD_ { SIM_OD, 0 }

/* Full-tick billing, including the finishing tick; R on the first launch. */
static void test_billing_and_first_launch(void **state)
{
	const char *av[] = { "0000000000" };
	struct sim_params p = { .work_h = 2, .deadline_h = 10, .restart_h = 0.5 };
	struct policy_choice sc[] = { OD_, OD_, OD_, OD_ };
	struct mk k;
	struct sim_result r;

	(void)state;
	mk_init(&k, 1, av);
	r = run_script(&k, &p, sc, 4);
	assert_true(r.met);
	assert_int_equal(r.starts, 1);
	assert_float_equal(r.finish_s, 2.5 * H, 1e-6); /* 0.5 + 1 + 0.5 */
	assert_float_equal(r.cost, 3 * 3.0, 1e-9);    /* 3 ticks of od, billed in full */
	assert_int_equal(r.od_ticks, 3);
	mk_free(&k, 1);
}

/* Preemption keeps the work with continuous checkpoints, loses the work
 * since the last checkpoint with an interval; a relaunch pays R again. */
static void test_preemption(void **state)
{
	const char *av[] = { "1101111111" };
	struct sim_params p = { .work_h = 2, .deadline_h = 10, .restart_h = 0.5 };
	struct policy_choice sc[] = { SPOT_(0), SPOT_(0), SPOT_(0), SPOT_(0),
				      SPOT_(0), SPOT_(0) };
	struct mk k;
	struct sim_result r;

	(void)state;
	mk_init(&k, 1, av);
	r = run_script(&k, &p, sc, 6);
	assert_int_equal(r.preemptions, 1);
	assert_int_equal(r.starts, 2);
	/* 0.5 + 1 (kept) | preempted at 2 | 3: R 0.5 + 0.5 -> done at 4 h */
	assert_float_equal(r.finish_s, 4 * H, 1e-6);
	assert_float_equal(r.cost, 3 * 1.0, 1e-9);

	p.ckpt_interval_h = 1;
	r = run_script(&k, &p, sc, 6);
	/* 1.5 h done rolls back to the 1 h checkpoint: 3: +0.5, 4: +0.5 */
	assert_float_equal(r.finish_s, 4.5 * H, 1e-6);
	assert_float_equal(r.cost, 4 * 1.0, 1e-9);
	mk_free(&k, 1);
}

/* A region move pays R and the checkpoint egress; spot<->od pays R. */
static void test_region_move_and_switch(void **state)
{
	const char *av[] = { "1111111111", "1111111111" };
	struct sim_params p = { .work_h = 3, .deadline_h = 10, .restart_h = 0.5,
				.ckpt_gb = 10, .egress_per_gb = 0.1 };
	struct policy_choice sc[] = { SPOT_(0), SPOT_(1), OD_, OD_, OD_, OD_ };
	struct mk k;
	struct sim_result r;

	(void)state;
	mk_init(&k, 2, av);
	r = run_script(&k, &p, sc, 6);
	/* t0 r0 ($1): +0.5; t1 r1 ($2, egress $1): +0.5; t2 od in the od
	 * region 0 (egress $1 back): +0.5; t3, t4 od: +1.5 -> done at 4.5 h */
	assert_int_equal(r.starts, 3);
	assert_float_equal(r.finish_s, 4.5 * H, 1e-6);
	assert_float_equal(r.cost, 1.0 + 2.0 + 1.0 + 1.0 + 3 * 3.0, 1e-9);
	mk_free(&k, 2);
}

/* A miss is finished on on-demand after the deadline and billed. */
static void test_miss_is_billed(void **state)
{
	const char *av[] = { "000" };
	struct sim_params p = { .work_h = 2, .deadline_h = 2, .restart_h = 0.5 };
	struct policy_choice sc[] = { OD_, OD_, OD_ };
	struct mk k;
	struct sim_result r;
	double opt;

	(void)state;
	mk_init(&k, 1, av);
	r = run_script(&k, &p, sc, 3);
	assert_false(r.met);
	assert_float_equal(r.cost, 3 * 3.0, 1e-9);
	assert_float_equal(r.finish_s, 2.5 * H, 1e-6);
	assert_int_equal(sim_optimal(&k.m, 0, &p, &opt), 0);
	assert_true(isinf(opt)); /* work + R > deadline: nothing meets it */
	mk_free(&k, 1);
}

/* ---- up: hand-computed cases from the paper's rules ----------------------
 * 1 h ticks, C0 = 10 h, R0 = 20 h, d = 0.5 h, so ep(t) = t / 2. */
static void up_log(const char *avail, double work_h, double deadline_h,
		   struct policy_choice *log, size_t n)
{
	const char *av[] = { avail };
	struct sim_params p = { .work_h = work_h, .deadline_h = deadline_h,
				.restart_h = 0.5 };
	struct mk k;
	struct sim_result r;
	char st[64];

	mk_init(&k, 1, av);
	assert_true(policy_up.state_size <= sizeof st);
	assert_int_equal(sim_run(&k.m, 0, &p, &policy_up, st, &r, log, n), 0);
	assert_true(r.met);
	mk_free(&k, 1);
}

static void test_up_rules(void **state)
{
	struct policy_choice log[32];

	(void)state;
	up_log("00110111111111111111", 10, 20, log, 32);
	/* t0: no spot, cp 0 = ep(0): wait. */
	assert_int_equal(log[0].hold, SIM_NONE);
	/* t1: no spot, cp 0 < ep(1) = 0.5: on-demand to catch up. */
	assert_int_equal(log[1].hold, SIM_OD);
	/* t2: spot is back but cp 0.5 < ep(2 + 2d) = 1.5: hysteresis keeps od. */
	assert_int_equal(log[2].hold, SIM_OD);
	/* t3: cp 1.5 < ep(4) = 2: still od. */
	assert_int_equal(log[3].hold, SIM_OD);
	/* t4: no spot, cp 2.5 >= ep(5) = 2.5 and >= ep(4) = 2: release, wait. */
	assert_int_equal(log[4].hold, SIM_NONE);
	/* t5: spot: take it (taking risks), then stay (exploitation). */
	assert_int_equal(log[5].hold, SIM_SPOT);
	assert_int_equal(log[6].hold, SIM_SPOT);

	/* Safety net: C0 = 10, R0 = 12.  t0: ceil(10 + 1) = 11 < 12: wait.
	 * t1: ceil(10 + 1) = 11 >= floor(11) = 11: on-demand to the end,
	 * even when spot comes back at t3. */
	up_log("000111111111", 10, 12, log, 12);
	assert_int_equal(log[0].hold, SIM_NONE);
	for (int t = 1; t < 11; t++)
		assert_int_equal(log[t].hold, SIM_OD);
}

/* ---- optimal == exhaustive search over every schedule (exact cases) ----- */
static double brute(struct mk *k, int nr, const struct sim_params *p, size_t n)
{
	size_t opts = (size_t)nr + 2, total = 1;
	double best = INFINITY;
	struct policy_choice sc[16];

	for (size_t i = 0; i < n; i++)
		total *= opts;
	for (size_t code = 0; code < total; code++) {
		size_t c = code;
		struct sim_result r;

		for (size_t i = 0; i < n; i++, c /= opts) {
			size_t v = c % opts;

			sc[i] = v == 0 ? (struct policy_choice)NONE_ :
				v == 1 ? (struct policy_choice)OD_ :
					 (struct policy_choice)SPOT_((int)v - 2);
		}
		r = run_script(k, p, sc, n);
		if (r.met && r.cost < best)
			best = r.cost;
	}
	return best;
}

static void test_optimal_is_exhaustive_minimum(void **state)
{
	static const char *pat1[] = { "1011011", "0110110", "1100111", "0011101",
				      "1111011", "0101010" };
	struct sim_params p = { .work_h = 3, .deadline_h = 7, .restart_h = 1 };
	unsigned seed = 7;

	(void)state;
	for (size_t i = 0; i < sizeof pat1 / sizeof pat1[0]; i++) {
		for (int rr = 0; rr < 2; rr++) {
			const char *av[] = { pat1[i] };
			struct mk k;
			double opt, bf;

			p.restart_h = rr ? 0.5 : 1;
			mk_init(&k, 1, av);
			assert_int_equal(sim_optimal(&k.m, 0, &p, &opt), 0);
			bf = brute(&k, 1, &p, 7);
			assert_float_equal(opt, bf, 1e-9);
			mk_free(&k, 1);
		}
	}
	/* Two regions with different prices, random availability. */
	for (int it = 0; it < 6; it++) {
		char a0[8] = { 0 }, a1[8] = { 0 };
		const char *av[] = { a0, a1 };
		struct mk k;
		double opt, bf;

		for (int i = 0; i < 6; i++) {
			a0[i] = (char)('0' + (rand_r(&seed) % 3 != 0));
			a1[i] = (char)('0' + (rand_r(&seed) % 2));
		}
		p.work_h = 3;
		p.deadline_h = 6;
		p.restart_h = 0.5;
		mk_init(&k, 2, av);
		assert_int_equal(sim_optimal(&k.m, 0, &p, &opt), 0);
		bf = brute(&k, 2, &p, 6);
		assert_float_equal(opt, bf, 1e-9);
		mk_free(&k, 2);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_billing_and_first_launch),
		cmocka_unit_test(test_preemption),
		cmocka_unit_test(test_region_move_and_switch),
		cmocka_unit_test(test_miss_is_billed),
		cmocka_unit_test(test_up_rules),
		cmocka_unit_test(test_optimal_is_exhaustive_minimum),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
