/* Unit tests: the policies on the bundled traces - the offline optimum is
 * a lower bound on every window, no policy but greedy misses a meetable
 * deadline, and no online policy looks ahead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_size.h"
#include "sim/sim.h"
#include "sim/sim_sweep.h"

#define T "data/traces/"

struct set {
	const char *files[4];
	int n;
};

static const struct set sets[] = {
	{ { T "cbl/availability/1-node/aws-10-26-2022/us-west-2a_v100_1.json" }, 1 },
	{ { T "cbl/availability/1-node/aws-10-26-2022/us-west-2b_k80_1.json" }, 1 },
	{ { T "skynomad/v100_4node_600s/us-east-1f_v100_1/full.json",
	    T "skynomad/v100_4node_600s/us-east-2a_v100_1/full.json",
	    T "skynomad/v100_4node_600s/us-west-2c_v100_1/full.json" }, 3 },
	{ { T "cbl/preemption/4-node/aws-08-03-2023/us-east-1f_v100_1.json",
	    T "cbl/preemption/4-node/aws-08-03-2023/us-west-2c_v100_1.json" }, 2 },
	{ { T "cbl/preemption/1-node/aws-04-22-2023/us-west-2b_v100_1.json" }, 1 },
};

struct loaded {
	struct trace *t[4];
	int n;
	struct sim_market m;
};

static void load(const struct set *s, struct loaded *l)
{
	struct sr_err e = { 0 };

	l->n = s->n;
	for (int i = 0; i < s->n; i++) {
		if (trace_load(s->files[i], TRACE_FMT_AUTO, &l->t[i], &e))
			fail_msg("%s", e.msg);
	}
	assert_int_equal(sim_market_init(&l->m, l->t, s->n, 0.9731, 3.06, 0, &e), 0);
}

static void unload(struct loaded *l)
{
	for (int i = 0; i < l->n; i++)
		trace_free(l->t[i]);
}

static size_t windows_per_set(void)
{
	/* make check's plain pass: 4 fixed-seed windows of every trace set
	 * and setting (issue 27: a small deterministic sweep; make bench
	 * runs 12, sweep_size()'s full).  Under the sanitizers (ASan ~3x
	 * slower, TSan ~10x) one: the figures are the plain pass's to
	 * check; ASan's memory checks are met by every trace set and setting
	 * on one window, and the sweep runs on one thread, so TSan has no
	 * race to find in more of it (check_size.h). */
	return (size_t)sweep_size(12, 4, 1, 1);
}

/* optimal <= every policy on every window; no misses but greedy's. */
static void test_optimal_lower_bound_and_no_misses(void **state)
{
	static const double settings[][2] = { { 52, 0.2 }, { 70, 0.05 } };
	static char st[8192];

	(void)state;
	for (size_t si = 0; si < sizeof sets / sizeof sets[0]; si++) {
		struct loaded l;

		load(&sets[si], &l);
		for (size_t k = 0; k < 2; k++) {
			struct sim_sweep_opts o = {
				.p = { .work_h = 48, .deadline_h = settings[k][0],
				       .restart_h = settings[k][1], .history_h = 24 },
				.seed = 11 + si,
			};
			size_t nw = windows_per_set(), starts[16];

			/* The 32 s trace with a 70 h deadline is the slow DP case. */
			if (l.m.gap_s < 60 && settings[k][0] > 60)
				continue;
			assert_int_equal(sim_sweep_sample(&l.m, &o, starts, nw), 0);
			for (size_t w = 0; w < nw; w++) {
				double opt;

				assert_int_equal(sim_optimal(&l.m, starts[w], &o.p, &opt), 0);
				assert_true(isfinite(opt));
				for (int pi = 0; policy_all[pi]; pi++) {
					const struct policy_ops *pol = policy_all[pi];
					struct sim_result r;

					assert_true(pol->state_size <= sizeof st);
					assert_int_equal(sim_run(&l.m, starts[w], &o.p, pol, st,
								 &r, NULL, 0), 0);
					if (opt > r.cost + 1e-9)
						fail_msg("%s window %zu: optimal $%.6f > %s $%.6f",
							 sets[si].files[0], starts[w], opt,
							 pol->name, r.cost);
					if (strcmp(pol->name, "greedy") && !r.met)
						fail_msg("%s window %zu: %s missed a meetable deadline",
							 sets[si].files[0], starts[w], pol->name);
				}
			}
		}
		unload(&l);
	}
}

/* Random markets, tight and loose, to reach corners the traces may not. */
static void test_random_markets(void **state)
{
	static char st[8192];
	unsigned seed = 42;

	(void)state;
	/* 12 markets plain (every value of each parameter's cycle below:
	 * work it % 5, deadline it % 7, restart it % 3, checkpoints it % 4,
	 * regions it % 2), fewer under the sanitizers, 40 in make bench
	 * (check_size.h) */
	for (int it = 0, n = sweep_size(40, 12, 4, 2); it < n; it++) {
		uint8_t a[2][400];
		double pr[2][400];
		struct trace *t[2];
		struct sim_market m;
		struct sim_params p = { .work_h = 20 + it % 5, .deadline_h = 30 + it % 7,
					.restart_h = (it % 3) * 0.25,
					.ckpt_interval_h = it % 4 == 3 ? 1 : 0,
					.history_h = 4 };
		int nr = 1 + it % 2;
		double opt;

		for (int r = 0; r < nr; r++) {
			int up = 1;

			for (int i = 0; i < 400; i++) {
				/* A two-state Markov chain with sticky runs. */
				if (rand_r(&seed) % 100 < (up ? 8 : 20))
					up = !up;
				a[r][i] = (uint8_t)up;
				pr[r][i] = 0.5 + (rand_r(&seed) % 100) / 100.0;
			}
			assert_int_equal(trace_from_arrays("rand", 600, a[r], pr[r], 400,
							   -1, &t[r]), 0);
		}
		assert_int_equal(sim_market_init(&m, t, nr, 1, 3.06, 1, NULL), 0);
		assert_int_equal(sim_optimal(&m, 50, &p, &opt), 0);
		for (int pi = 0; policy_all[pi]; pi++) {
			struct sim_result r;

			assert_int_equal(sim_run(&m, 50, &p, policy_all[pi], st, &r, NULL, 0), 0);
			if (opt > r.cost + 1e-9)
				fail_msg("market %d: optimal %.6f > %s %.6f", it, opt,
					 policy_all[pi]->name, r.cost);
			if (strcmp(policy_all[pi]->name, "greedy") && !r.met)
				fail_msg("market %d: %s missed", it, policy_all[pi]->name);
		}
		for (int r = 0; r < nr; r++)
			trace_free(t[r]);
	}
}

/* Replace the future of the traces after tick k with random values: every
 * online policy must decide ticks 0..k exactly as before. */
static void test_no_look_ahead(void **state)
{
	static char st[8192];
	struct loaded l;
	struct sim_params p = { .work_h = 48, .deadline_h = 70, .restart_h = 0.2,
				.history_h = 24 };
	static const size_t cuts[] = { 0, 1, 7, 30, 90, 200, 380 };
	/* 4 cuts spread over the window plain (0, 1, 30 and 200 ticks),
	 * 2 under the sanitizers, every cut in make bench (check_size.h) */
	size_t ncuts = (size_t)sweep_size(7, 4, 2, 2), start = 400, ticks;
	unsigned seed = 3;
	int differed = 0;

	(void)state;
	load(&sets[2], &l); /* three priced regions */
	ticks = sim_window_ticks(&l.m, &p);
	for (int pi = 0; policy_all[pi]; pi++) {
		const struct policy_ops *pol = policy_all[pi];
		struct policy_choice base[512], alt[512];
		struct sim_result r;

		assert_true(ticks <= 512);
		assert_int_equal(sim_run(&l.m, start, &p, pol, st, &r, base, ticks), 0);
		for (size_t c = 0; c < ncuts; c++) {
			struct trace *t[3];
			struct sim_market m2;
			size_t k = cuts[c * (sizeof cuts / sizeof cuts[0]) / ncuts];

			for (int g = 0; g < l.n; g++) {
				assert_int_equal(trace_from_arrays("alt", l.t[g]->gap_s, l.t[g]->avail,
								   l.t[g]->price, l.t[g]->n,
								   l.t[g]->od_price, &t[g]), 0);
				for (size_t i = start + k + 1; i < t[g]->n; i++) {
					t[g]->avail[i] = (uint8_t)(rand_r(&seed) & 1);
					t[g]->price[i] = 0.3 + (rand_r(&seed) % 300) / 100.0;
				}
			}
			assert_int_equal(sim_market_init(&m2, t, l.n, 0.9731, 3.06, 0, NULL), 0);
			assert_int_equal(sim_run(&m2, start, &p, pol, st, &r, alt, ticks), 0);
			for (size_t i = 0; i <= k && i < ticks; i++) {
				if (alt[i].hold == (enum sim_hold)-1 && base[i].hold == (enum sim_hold)-1)
					break; /* both finished */
				if (alt[i].hold != base[i].hold || alt[i].region != base[i].region)
					fail_msg("%s looked ahead: tick %zu changed when ticks > %zu did",
						 pol->name, i, k);
			}
			for (size_t i = k + 1; i < ticks; i++)
				differed |= alt[i].hold != base[i].hold;
			for (int g = 0; g < l.n; g++)
				trace_free(t[g]);
		}
	}
	assert_true(differed); /* the altered futures did change later decisions */
	unload(&l);
}

/* Heavy-tailed spot runs (most last one tick, a few last ten hours):
 * a run that has already lasted hours is expected to last longer than a
 * fresh one, so at equal prices a new spot start goes to the region whose
 * run is older.  Both regions show the market the same history, up to
 * the last hours: region 0's run has just begun, region 1's has lasted
 * 5 h.  Region 0 is 1% cheaper and the mean run per region is about
 * the same, so the rule before (price amortised over the mean run) took
 * region 0; only the age of the run can pick region 1. */
static void test_spotrun_starts_in_the_older_run(void **state)
{
	const struct policy_ops *pol = policy_find("spotrun");
	struct policy_job job = { .work_s = 48 * 3600.0, .deadline_s = 70 * 3600.0,
				  .restart_s = 0.2 * 3600, .gap_s = 600, .nregions = 2,
				  .od_price = 3.06, .od_region = 0 };
	uint8_t hist[2][400];
	size_t n = 0;
	double price[2] = { 0.99, 1 };
	void *st;
	struct policy_obs o = { 0 };
	struct policy_choice c;

	(void)state;
	/* four 12-hour blocks: six 1-tick runs, then a 60-tick run */
	for (int blk = 0; blk < 4; blk++) {
		for (int k = 0; k < 6; k++) {
			hist[0][n] = hist[1][n] = 1, n++;
			hist[0][n] = hist[1][n] = 0, n++;
		}
		for (int k = 0; k < 60; k++)
			hist[0][n] = hist[1][n] = 1, n++;
		hist[0][n] = hist[1][n] = 0, n++;
	}
	hist[0][n] = hist[1][n] = 1, n++;
	/* the last 32 ticks, as many up ticks and run ends in each region:
	 * region 0 up, then a one-tick outage that ends now; region 1 a
	 * one-tick outage, then up for 31 ticks (5 h) */
	for (int k = 0; k < 32; k++) {
		hist[0][n] = k < 31;
		hist[1][n] = k > 0;
		n++;
	}
	st = calloc(1, pol->state_size);
	assert_non_null(st);
	pol->reset(st, &job);
	for (size_t i = 0; i < n; i++) {
		uint8_t a[2] = { hist[0][i], hist[1][i] };

		pol->observe(st, &job, a, price);
	}
	{
		uint8_t a[2] = { 1, 1 };

		o.work_left_s = job.work_s;
		o.time_left_s = job.deadline_s;
		o.hold = SIM_NONE;
		o.region = -1;
		o.ckpt_region = -1;
		o.avail = a;
		o.spot_price = price;
		c = pol->decide(st, &job, &o);
	}
	assert_int_equal(c.hold, SIM_SPOT);
	assert_int_equal(c.region, 1);
	if (pol->destroy)
		pol->destroy(st);
	free(st);
}

/* A restart is whole planning steps: from on-demand, with spot up for a
 * day and 0.45 h of slack left (R = 0.2 h), spot is worth starting - its
 * own restart and on-demand's, if it is lost, take 0.4 h.  With a step of
 * 675 s (48 h of work / 256) the plan rounded R to 1.07 steps and the
 * slack down to 2 steps, and stayed on on-demand to the end. */
static void test_spotrun_restart_fits_the_grid(void **state)
{
	const struct policy_ops *pol = policy_find("spotrun");
	struct policy_job job = { .work_s = 48 * 3600.0, .deadline_s = 52 * 3600.0,
				  .restart_s = 0.2 * 3600, .gap_s = 600, .nregions = 1,
				  .od_price = 3.06, .od_region = 0 };
	uint8_t up = 1;
	double price = 0.9731;
	void *st;
	struct policy_obs o = { 0 };
	struct policy_choice c;

	(void)state;
	st = calloc(1, pol->state_size);
	assert_non_null(st);
	pol->reset(st, &job);
	for (int i = 0; i < 144; i++)
		pol->observe(st, &job, &up, &price);
	o.work_left_s = 40 * 3600.0;
	o.work_done_s = job.work_s - o.work_left_s;
	o.time_left_s = o.work_left_s + 0.45 * 3600;
	o.hold = SIM_OD;
	o.region = 0;
	o.ckpt_region = 0;
	o.avail = &up;
	o.spot_price = &price;
	c = policy_guard(&job, &o, pol->decide(st, &job, &o));
	assert_int_equal(c.hold, SIM_SPOT);
	if (pol->destroy)
		pol->destroy(st);
	free(st);
}

/* A spotrun state that has seen a day of 2-tick spells and 1-tick outages
 * (the caller frees it: destroy, then free). */
static void *spotrun_flaky_day(const struct policy_job *job)
{
	const struct policy_ops *pol = policy_find("spotrun");
	double price = 0.9731;
	uint8_t up = 1, down = 0;
	void *st = calloc(1, pol->state_size);

	assert_non_null(st);
	pol->reset(st, job);
	for (int i = 0; i < 48; i++) {
		pol->observe(st, job, &up, &price);
		pol->observe(st, job, &up, &price);
		pol->observe(st, job, &down, &price);
	}
	return st;
}

/* Spot that is there but dearer than on-demand is not an outage.  With
 * every available region's restart-amortised price at or above
 * on-demand, the plan used to be asked as if spot were down, and in an
 * outage with slack to spare its answer is to wait for spot: so the job
 * sat idle while spot was available, until the slack ran out.  After a
 * flaky day (waiting pays in an outage: first checked), spot is up at
 * 1.5x the on-demand price: the choice must be a node (on-demand, the
 * cheaper), never a wait - with a day or an hour of slack, from nothing
 * held and from on-demand; and spot dear only by its restarts gets a
 * node too. */
static void test_spotrun_no_wait_while_spot_is_dear(void **state)
{
	const struct policy_ops *pol = policy_find("spotrun");
	struct policy_job job = { .work_s = 48 * 3600.0, .deadline_s = 72 * 3600.0,
				  .restart_s = 0.2 * 3600, .gap_s = 600, .nregions = 1,
				  .od_price = 3.06, .od_region = 0 };
	static const double slack_h[] = { 24, 1 };
	static const enum sim_hold held[] = { SIM_NONE, SIM_OD };
	double cheap = 0.9731, dear = 1.5 * job.od_price;
	uint8_t up = 1, down = 0;

	(void)state;
	for (size_t k = 0; k < 3; k++) {
		for (size_t j = 0; j < 2; j++) {
			struct policy_obs o = { 0 };
			struct policy_choice c;
			void *st;

			if (k == 2 && j == 1)
				continue;
			st = spotrun_flaky_day(&job);

			o.work_left_s = 40 * 3600.0;
			o.work_done_s = job.work_s - o.work_left_s;
			o.time_left_s = o.work_left_s + slack_h[k % 2] * 3600;
			o.hold = held[j];
			o.region = held[j] == SIM_OD ? 0 : -1;
			o.ckpt_region = 0;
			/* k == 2: the same state in a real outage, from
			 * nothing held, waits */
			o.avail = k == 2 ? &down : &up;
			o.spot_price = k == 2 ? &cheap : &dear;
			c = policy_guard(&job, &o, pol->decide(st, &job, &o));
			printf("  slack %2.0f h, held %d, spot %s: choice %d\n",
			       slack_h[k % 2], held[j], k == 2 ? "down" : "dear",
			       c.hold);
			assert_int_equal(c.hold, k == 2 ? SIM_NONE : SIM_OD);
			if (pol->destroy)
				pol->destroy(st);
			free(st);
		}
	}
	/* Dear by its restarts only (R = 1 h against runs of 20 min), at a
	 * price below on-demand's: a node, spot or on-demand, never a wait. */
	{
		struct policy_obs o = { 0 };
		struct policy_choice c;
		void *st;

		job.restart_s = 3600;
		st = spotrun_flaky_day(&job);
		o.work_left_s = 40 * 3600.0;
		o.work_done_s = job.work_s - o.work_left_s;
		o.time_left_s = o.work_left_s + 24 * 3600;
		o.hold = SIM_NONE;
		o.region = -1;
		o.ckpt_region = 0;
		o.avail = &up;
		o.spot_price = &cheap;
		c = policy_guard(&job, &o, pol->decide(st, &job, &o));
		printf("  R 1 h, slack 24 h, spot cheap but short: choice %d\n", c.hold);
		assert_int_not_equal(c.hold, SIM_NONE);
		if (pol->destroy)
			pol->destroy(st);
		free(st);
	}
}

/* No wait while cheap spot is up, on little history.  A live job whose
 * controller has recorded an hour of the market, spot up all the time
 * at a third of the on-demand price: the young age buckets are seen to
 * survive, the older ones never seen fall back to the pooled rate, so
 * the estimate made an old spell riskier than a young one and the plan
 * chose to wait for the spell to end, to start in a young one ("wait
 * for spot capacity" with spot there).  Now spot, whatever R. */
static void test_spotrun_no_wait_while_spot_is_up(void **state)
{
	const struct policy_ops *pol = policy_find("spotrun");
	static const double restart_s[] = { 60, 600, 1800, 3600 };

	(void)state;
	for (size_t i = 0; i < sizeof restart_s / sizeof restart_s[0]; i++) {
		struct policy_job job = { .work_s = 10 * 3600.0, .deadline_s = 40 * 3600.0,
					  .restart_s = restart_s[i], .gap_s = 600,
					  .nregions = 1, .od_price = 3, .od_region = 0 };
		uint8_t up = 1;
		double price = 1;
		struct policy_obs o = { 0 };
		struct policy_choice c;
		void *st = calloc(1, pol->state_size);

		assert_non_null(st);
		pol->reset(st, &job);
		for (int t = 0; t < 6; t++)
			pol->observe(st, &job, &up, &price);
		o.work_left_s = job.work_s;
		o.time_left_s = job.deadline_s;
		o.hold = SIM_NONE;
		o.region = -1;
		o.ckpt_region = -1;
		o.avail = &up;
		o.spot_price = &price;
		c = policy_guard(&job, &o, pol->decide(st, &job, &o));
		printf("  R %4.0f s, an hour of history: choice %d\n", restart_s[i], c.hold);
		assert_int_equal(c.hold, SIM_SPOT);
		if (pol->destroy)
			pol->destroy(st);
		free(st);
	}
}

/* A spotrun state for two regions that take turns, spot always up
 * somewhere: two days of 12-hour blocks in which region 0 has six 1-tick
 * runs and then a 59-tick one, region 1 the ticks in between (runs of one
 * tick).  Then region 0 comes up for `age` ticks, region 1 down.  Most
 * region runs end within a tick of starting; the few that last, last
 * hours.  (The caller frees it: destroy, then free.) */
static void *spotrun_turns(const struct policy_job *job, int age)
{
	const struct policy_ops *pol = policy_find("spotrun");
	double price[2] = { 0.9731, 0.9731 };
	void *st = calloc(1, pol->state_size);

	assert_non_null(st);
	pol->reset(st, job);
	for (int blk = 0; blk < 4; blk++) {
		for (int k = 0; k < 72; k++) {
			uint8_t r0 = k < 12 ? k % 2 == 0 : k < 71;
			uint8_t a[2] = { r0, !r0 };

			pol->observe(st, job, a, price);
		}
	}
	for (int k = 0; k <= age; k++) {
		uint8_t a[2] = { 1, 0 };

		pol->observe(st, job, a, price);
	}
	return st;
}

/* Across regions the plan prices a spot start by the age of the run it
 * lands in.  Spot is up somewhere all the time, so the spot-somewhere
 * spell is old, and the plan saw only an age-free loss rate: from
 * on-demand it started spot in a run one tick old, where most runs end
 * within a step, as readily as in one five hours old, at every slack
 * (the test fails on it).  Now a fresh run is left alone, and an old
 * one, with slack to spare, is started. */
static void test_spotrun_prices_the_run_it_starts_in(void **state)
{
	const struct policy_ops *pol = policy_find("spotrun");
	struct policy_job job = { .work_s = 48 * 3600.0, .deadline_s = 52 * 3600.0,
				  .restart_s = 0.2 * 3600, .gap_s = 600, .nregions = 2,
				  .od_price = 3.06, .od_region = 0 };
	static const double slack_h[] = { 0.6, 1, 3 };
	static const int age[] = { 0, 30 };
	double price[2] = { 0.9731, 0.9731 };
	uint8_t a[2] = { 1, 0 };

	(void)state;
	for (size_t i = 0; i < sizeof slack_h / sizeof slack_h[0]; i++) {
		for (size_t j = 0; j < 2; j++) {
			struct policy_obs o = { 0 };
			struct policy_choice c;
			void *st = spotrun_turns(&job, age[j]);

			o.work_left_s = 40 * 3600.0;
			o.work_done_s = job.work_s - o.work_left_s;
			o.time_left_s = o.work_left_s + slack_h[i] * 3600;
			o.hold = SIM_OD;
			o.region = 0;
			o.ckpt_region = 0;
			o.avail = a;
			o.spot_price = price;
			c = policy_guard(&job, &o, pol->decide(st, &job, &o));
			printf("  slack %.1f h, run age %2d ticks: choice %d\n", slack_h[i],
			       age[j], c.hold);
			if (age[j] == 0)
				assert_int_equal(c.hold, SIM_OD);
			else if (slack_h[i] >= 3)
				assert_int_equal(c.hold, SIM_SPOT);
			if (pol->destroy)
				pol->destroy(st);
			free(st);
		}
	}
}

/* Across regions a running spot instance moves where the price gap,
 * over the time it is expected to last, pays for the restarts and the
 * slack the move costs.  Two regions up for a day at constant prices (a
 * gap between constant prices stays): held in region 0 at $2/h with
 * region 1 at $1/h it moves; at $1.001/h against $1/h (a gain of
 * cents over the job against a $0.20 restart) it stays; and with 0.25 h
 * of slack, where the restart would leave on-demand out of reach if the
 * new run were lost, it does not move. */
static void test_spotrun_moves_when_the_gap_pays(void **state)
{
	const struct policy_ops *pol = policy_find("spotrun");
	struct policy_job job = { .work_s = 48 * 3600.0, .deadline_s = 60 * 3600.0,
				  .restart_s = 0.2 * 3600, .gap_s = 600, .nregions = 2,
				  .od_price = 8, .od_region = 0 };
	static const struct {
		double p0, slack_h;
		int moves;
	} cases[] = { { 2.0, 10, 1 }, { 1.001, 10, 0 }, { 2.0, 0.25, 0 } };
	uint8_t a[2] = { 1, 1 };

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		double price[2] = { cases[i].p0, 1.0 };
		struct policy_obs o = { 0 };
		struct policy_choice c;
		void *st = calloc(1, pol->state_size);

		assert_non_null(st);
		pol->reset(st, &job);
		for (int k = 0; k < 144; k++)
			pol->observe(st, &job, a, price);
		o.work_left_s = 40 * 3600.0;
		o.work_done_s = job.work_s - o.work_left_s;
		o.time_left_s = o.work_left_s + cases[i].slack_h * 3600;
		o.hold = SIM_SPOT;
		o.region = 0;
		o.ckpt_region = 0;
		o.avail = a;
		o.spot_price = price;
		c = policy_guard(&job, &o, pol->decide(st, &job, &o));
		printf("  held at $%.3f/h, $1/h elsewhere, slack %.2f h: choice %d region %d\n",
		       cases[i].p0, cases[i].slack_h, c.hold, c.region);
		if (cases[i].moves) {
			assert_int_equal(c.hold, SIM_SPOT);
			assert_int_equal(c.region, 1);
		} else {
			assert_false(c.hold == SIM_SPOT && c.region == 1);
		}
		pol->destroy(st);
		free(st);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_optimal_lower_bound_and_no_misses),
		cmocka_unit_test(test_random_markets),
		cmocka_unit_test(test_no_look_ahead),
		cmocka_unit_test(test_spotrun_starts_in_the_older_run),
		cmocka_unit_test(test_spotrun_restart_fits_the_grid),
		cmocka_unit_test(test_spotrun_no_wait_while_spot_is_dear),
		cmocka_unit_test(test_spotrun_no_wait_while_spot_is_up),
		cmocka_unit_test(test_spotrun_prices_the_run_it_starts_in),
		cmocka_unit_test(test_spotrun_moves_when_the_gap_pays),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
