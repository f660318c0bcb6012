/* Unit tests: the synthetic market generator (lib/sim/trace_gen.c), the
 * long outage then recovery of issue 27 (spotrun returns to spot and
 * costs no more than Uniform Progress), and a fixed handful of cells of
 * the widened generator sweep (lib/sim/sim_gensweep.c): on each,
 * `spotrun` costs at most 2% more than the better of up and ups on
 * average and never misses a deadline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim.h"
#include "sim/sim_gensweep.h"
#include "sim/trace_gen.h"

static struct trace *gen(const struct trace_gen_params *p)
{
	struct trace *t = NULL;
	struct sr_err e = { 0 };

	if (trace_gen(p, "synthetic", &t, &e))
		fail_msg("trace_gen: %s", e.msg);
	return t;
}

/* Same parameters, same trace; the spell statistics follow the
 * parameters: availability near (up / (up + down)) ^ nodes. */
static void test_generator_shape(void **state)
{
	struct trace_gen_params p;
	struct trace *a, *b;
	size_t up = 0, runs = 0;

	(void)state;
	trace_gen_defaults(&p);
	p.nodes = 4;
	p.up_h = 20;
	p.down_h = 1;
	p.tail = 3;
	p.hours = 20000;
	a = gen(&p);
	b = gen(&p);
	assert_int_equal(a->n, 20000 * 6);
	assert_int_equal(a->gap_s, 600);
	assert_memory_equal(a->avail, b->avail, a->n);
	assert_float_equal(a->od_price, 5, 1e-12);
	assert_float_equal(a->price[7], 1, 1e-12);
	for (size_t i = 0; i < a->n; i++) {
		up += a->avail[i];
		runs += i && a->avail[i] && !a->avail[i - 1];
	}
	/* (20/21)^4 = 0.823 (the stationary odds of 4 independent nodes); a
	 * gang spell ends when any of 4 nodes fails: about 20/4 = 5 h = 30
	 * ticks (36 here: Lomax nodes are not memoryless). */
	assert_true(fabs((double)up / (double)a->n - 0.823) < 0.03);
	assert_true(fabs((double)up / (double)runs - 30) < 15);
	trace_free(b);
	p.seed = 2;
	b = gen(&p);
	assert_memory_not_equal(a->avail, b->avail, a->n);
	trace_free(a);
	trace_free(b);
}

static void test_generator_errors(void **state)
{
	struct trace_gen_params p;
	struct sr_err e = { 0 };
	struct trace *t = NULL;

	(void)state;
	trace_gen_defaults(&p);
	p.tail = 1;
	assert_int_equal(trace_gen(&p, "x", &t, &e), -EINVAL);
	assert_null(t);
	assert_non_null(strstr(e.msg, "tail"));
	trace_gen_defaults(&p);
	p.nodes = 0;
	assert_int_equal(trace_gen_check(&p, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "nodes: expected 1..256, got 0"));
	trace_gen_defaults(&p);
	p.od_ratio = 0.5;
	assert_int_equal(trace_gen_check(&p, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "od-ratio"));
	trace_gen_defaults(&p);
	p.hours = 0.1;
	assert_int_equal(trace_gen_check(&p, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "hours"));
	trace_gen_defaults(&p);
	p.down_h = NAN;
	assert_int_equal(trace_gen_check(&p, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "down-hours"));
}

/* Zones drawn together share their shared nodes' outages: with every
 * node shared they are one market, with none the zones are trace_gen()'s
 * independent traces of seed + k, and in between both-down ticks are
 * far more common than independence gives. */
static void test_generator_zones(void **state)
{
	static const char *const names[] = { "z0", "z1", "z2" };
	struct trace_gen_params p;
	struct trace *z[3], *one;
	struct sr_err e = { 0 };
	size_t down0 = 0, down1 = 0, both = 0;

	(void)state;
	trace_gen_defaults(&p);
	p.nodes = 4;
	p.hours = 5000;
	p.seed = 11;
	assert_int_equal(trace_gen_market(&p, 3, names, z, &e), 0);
	for (int k = 0; k < 3; k++) {
		struct trace_gen_params q = p;

		q.seed = p.seed + (uint64_t)k;
		one = gen(&q);
		assert_memory_equal(one->avail, z[k]->avail, one->n);
		trace_free(one);
		trace_free(z[k]);
	}
	p.shared = 4;
	assert_int_equal(trace_gen_market(&p, 2, names, z, &e), 0);
	assert_memory_equal(z[0]->avail, z[1]->avail, z[0]->n);
	trace_free(z[0]);
	trace_free(z[1]);
	p.shared = 2;
	assert_int_equal(trace_gen_market(&p, 2, names, z, &e), 0);
	for (size_t i = 0; i < z[0]->n; i++) {
		down0 += !z[0]->avail[i];
		down1 += !z[1]->avail[i];
		both += !z[0]->avail[i] && !z[1]->avail[i];
	}
	/* correlated: P(both down) well above P(down)^2 */
	assert_true((double)both / (double)z[0]->n >
		    2 * ((double)down0 / (double)z[0]->n) * ((double)down1 / (double)z[0]->n));
	assert_memory_not_equal(z[0]->avail, z[1]->avail, z[0]->n);
	trace_free(z[0]);
	trace_free(z[1]);
	assert_int_equal(trace_gen_market(&p, 0, names, z, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "zones"));
}

/* The forced outage: down for its hours but for one-tick blips at about
 * the rate asked; then the market as it would have been.  Prices move
 * per tick around the spot price when asked to, and nothing else moves. */
static void test_generator_outage_and_prices(void **state)
{
	struct trace_gen_params p;
	struct trace *a, *b;
	size_t out, blips = 0;
	double mean = 0;

	(void)state;
	trace_gen_defaults(&p);
	p.nodes = 2;
	p.up_h = 200;
	p.hours = 2000;
	a = gen(&p);
	p.outage_h = 1000;
	p.blip_h = 2;
	p.price_vol = 0.3;
	b = gen(&p);
	out = 1000 * 6;
	for (size_t i = 0; i < out; i++)
		blips += b->avail[i];
	/* 1000 h / 2 h = 500 blips expected */
	assert_true(blips > 400 && blips < 600);
	assert_memory_equal(a->avail + out, b->avail + out, a->n - out);
	for (size_t i = 0; i < b->n; i++) {
		assert_true(b->price[i] > 0);
		mean += b->price[i] / (double)b->n;
	}
	assert_true(fabs(mean - 1) < 0.1);
	assert_true(b->price[10] != b->price[11]);
	trace_free(a);
	trace_free(b);
	trace_gen_defaults(&p);
	p.outage_h = p.hours;
	assert_int_equal(trace_gen_check(&p, &(struct sr_err){ 0 }), -EINVAL);
	trace_gen_defaults(&p);
	p.blip_h = 0.01;
	assert_int_equal(trace_gen_check(&p, &(struct sr_err){ 0 }), -EINVAL);
	trace_gen_defaults(&p);
	p.price_vol = -1;
	assert_int_equal(trace_gen_check(&p, &(struct sr_err){ 0 }), -EINVAL);
	trace_gen_defaults(&p);
	p.shared = 17;
	assert_int_equal(trace_gen_check(&p, &(struct sr_err){ 0 }), -EINVAL);
}

static int sanitized(void)
{
	const char *mode = getenv("SPOTRUN_CHECK_MODE");

	return mode && (!strcmp(mode, "asan") || !strcmp(mode, "tsan"));
}

/* Issue 27's market, rebuilt: a 16-node gang at 600 s ticks, on-demand
 * 5.6x spot, 48 h of work by 60 h, R = 0.2 h; the window starts inside
 * an outage broken by one-tick blips (the policy's whole 24 h of history
 * is that outage), and spot comes back H h into the window and stays up
 * for days.  spotrun used to go on-demand and stay there (0.3-4% spot,
 * 1.2-2.0x UP's cost); it must return to spot and cost no more than UP. */
static void test_long_outage_then_recovery(void **state)
{
	static const double lefts[] = { 19, 40, 49 };
	int n = sanitized() ? 1 : 3;

	(void)state;
	for (int i = 0; i < n; i++) {
		struct gensweep_cell c;
		struct gensweep_result r;
		struct sr_err e = { 0 };

		gensweep_cell_issue27(&c, lefts[i]);
		assert_int_equal(gensweep_run(&c, 1, 1 + (uint64_t)i, 0, &r, &e), 0);
		printf("  spot back %2.0f h in: up $%.2f spotrun $%.2f (x%.3f), spotrun on spot %.0f%% of held ticks\n",
		       lefts[i], r.up, r.spotrun, r.spotrun / r.up, 100 * r.spotrun_spot);
		assert_int_equal(r.misses, 0);
		assert_true(r.spotrun <= r.up);
		/* back on spot for most of what is left after the outage */
		assert_true(r.spotrun_spot > 0.5 * (1 - lefts[i] / 60) * 60 / 48);
	}
}

/* The widened generator sweep (issue 27), a fixed handful of its cells
 * with two windows each (bench/bench_policy_sweep.c runs the whole grid
 * with more): each axis value of the grid - gangs of 1, 4 and 16 nodes,
 * 1, 3 and 8 correlated zones, on-demand 2x, 4x and 8x spot, stationary
 * windows and windows that start in an outage longer than the slack - and
 * two cells of the earlier sweep's (tails 1.2 and 3, 60 s ticks, R = 0.05
 * h and 0.5 h).  On each, 0 misses, and spotrun costs at most 2% more
 * than Uniform Progress: than ups, the rule its guard falls back to (on
 * one zone that is up).  The issue's goal is against the better of up and
 * ups; with several zones which of the two is cheaper over two windows is
 * the home zone's luck (up and ups differ by 4% either way on the 1-node
 * 8-zone cell, where they differ in little but which zones' prices they
 * pay), so that is measured over more windows by the bench, and printed
 * here. */
static void test_spotrun_never_loses_to_up(void **state)
{
	static const struct {
		int outage, nodes, zones;
		double ratio, tail, restart;
		int64_t gap;
	} cells[] = {
		{ 1, 16, 1, 2, 1.5, 0.2, 600 },
		{ 0, 1, 8, 2, 1.5, 0.2, 600 },
		{ 0, 16, 1, 8, 1.5, 0.2, 600 },
		{ 1, 4, 8, 8, 1.5, 0.2, 600 },
		{ 0, 4, 3, 4, 1.5, 0.2, 600 },
		{ 1, 1, 3, 4, 1.5, 0.2, 600 },
		{ 0, 16, 1, 6, 1.2, 0.5, 60 },
		{ 0, 16, 1, 2, 3, 0.05, 600 },
	};
	/* Under the sanitizers (ASan 3x slower, TSan 10x) the first two
	 * cells: the figures are the same, only the memory and race checks
	 * differ. */
	int n = sanitized() ? 2 : (int)(sizeof cells / sizeof cells[0]);
	int windows = 2, over = 0;
	double worst = 0;

	(void)state;
	for (int i = 0; i < n; i++) {
		struct gensweep_cell c;
		struct gensweep_result r;
		struct sr_err e = { 0 };
		double q;

		gensweep_cell_base(&c);
		c.gen.nodes = cells[i].nodes;
		c.zones = cells[i].zones;
		c.gen.shared = c.zones > 1 ? c.gen.nodes / 2 : 0;
		c.gen.od_ratio = cells[i].ratio;
		c.gen.tail = cells[i].tail;
		c.gen.gap_s = cells[i].gap;
		c.restart_h = cells[i].restart;
		c.outage_left_h = cells[i].outage ? -1 : 0;
		assert_int_equal(gensweep_run(&c, windows, 100 + (uint64_t)i, 0, &r, &e), 0);
		q = r.spotrun / r.ups;
		printf("  %s %2d nodes %d zones od %.0fx tail %.1f tick %3llds R %.2f h: up $%.2f ups $%.2f spotrun $%.2f (x%.3f ups, x%.3f the better) misses %d\n",
		       cells[i].outage ? "outage" : "steady", c.gen.nodes, c.zones,
		       c.gen.od_ratio, c.gen.tail, (long long)c.gen.gap_s, c.restart_h, r.up,
		       r.ups, r.spotrun, q, gensweep_vs_up(&r), r.misses);
		worst = q > worst ? q : worst;
		over += q > 1.02;
		assert_int_equal(r.misses, 0);
	}
	printf("  %d cells, %d windows each, worst spotrun / ups x%.3f\n", n, windows, worst);
	assert_int_equal(over, 0);
}

/* --zone-pairs auto on a history of one-tick blips: a 16-node gang in 8
 * zones whose window starts in an outage (the sweep's cell "outage 16
 * nodes 8 zones od 2x", its 4th window alone).  Each blip is a zone run
 * that ended after one tick; that is no evidence that the zones fail
 * together, so auto keeps the run model and spends what spotrun as
 * shipped spends.  When the pair model was scored with a prior fitted to
 * the market's own pooled rate, the blips alone gave it a lead of 8-11
 * nats and auto planned with it from the first tick ($99.03 against
 * $97.55 here; docs/notes/policies.md, sessions 17-18).  ~5 CPU-s, so
 * not under the sanitizers (the figures are the same there). */
static void test_pairs_auto_not_fooled_by_blips(void **state)
{
	double cost[2];

	(void)state;
	if (sanitized()) {
		printf("# ~5 CPU-s of simulation: the plain pass runs it\n");
		skip();
	}
	for (int i = 0; i < 2; i++) {
		struct gensweep_cell c;
		struct gensweep_result r;
		struct sr_err e = { 0 };

		gensweep_cell_base(&c);
		c.gen.nodes = 16;
		c.zones = 8;
		c.gen.shared = 8;
		c.gen.od_ratio = 2;
		c.outage_left_h = -1;
		c.zone_pairs = i ? SIM_PAIRS_AUTO : SIM_PAIRS_OFF;
		assert_int_equal(gensweep_run(&c, 1, 4, 0, &r, &e), 0);
		assert_int_equal(r.misses, 0);
		cost[i] = r.spotrun;
	}
	printf("  blips in 8 zones: spotrun $%.2f, with --zone-pairs auto $%.2f\n", cost[0],
	       cost[1]);
	assert_true(fabs(cost[1] - cost[0]) < 0.005);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generator_shape),
		cmocka_unit_test(test_generator_errors),
		cmocka_unit_test(test_generator_zones),
		cmocka_unit_test(test_generator_outage_and_prices),
		cmocka_unit_test(test_long_outage_then_recovery),
		cmocka_unit_test(test_spotrun_never_loses_to_up),
		cmocka_unit_test(test_pairs_auto_not_fooled_by_blips),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
