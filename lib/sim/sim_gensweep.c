/*
 * sim_gensweep.c - one cell of the widened generator sweep
 * (sim_gensweep.h).
 *
 * Stationary cells draw one market of zones zones, long enough for the
 * history and `windows` non-overlapping windows after it; window w starts
 * at history_h + w * deadline_h.  Outage cells draw one market per
 * window, seeded with seed * 1000003 + w, whose forced outage covers the
 * history and outage_left_h of the window.  Every policy runs the same
 * windows with the same history.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/rng.h"
#include "sim/sim.h"
#include "sim/sim_gensweep.h"

/* Policies run, and where their costs go. */
static const struct policy_ops *const run_ops[] = { &policy_spotrun, &policy_up,
						    &policy_ups };

static size_t state_bytes(void)
{
	size_t n = 1;

	for (size_t i = 0; i < sizeof run_ops / sizeof run_ops[0]; i++)
		n = run_ops[i]->state_size > n ? run_ops[i]->state_size : n;
	return n;
}

/* nw windows of one market, the first first_h hours in, one after the
 * other; their costs added to r. */
static int run_market(const struct gensweep_cell *c, const struct trace_gen_params *g,
		      double first_h, int nw, int with_optimal, void *st,
		      struct gensweep_result *r, struct sr_err *e)
{
	struct trace *t[TRACE_GEN_MAX_ZONES] = { 0 };
	static const char *const names[TRACE_GEN_MAX_ZONES] = {
		"zone0", "zone1", "zone2", "zone3", "zone4", "zone5", "zone6", "zone7",
		"zone8", "zone9", "zone10", "zone11", "zone12", "zone13", "zone14", "zone15",
	};
	struct sim_params sp = { .work_h = c->work_h, .deadline_h = c->deadline_h,
				 .restart_h = c->restart_h, .history_h = c->history_h,
				 .zone_pairs = c->zone_pairs };
	struct sim_market m;
	int rc;

	rc = trace_gen_market(g, c->zones, names, t, e);
	if (rc)
		return rc;
	rc = sim_market_init(&m, t, c->zones, 0, 0, 0, e);
	for (int w = 0; w < nw && !rc; w++) {
		size_t start = (size_t)floor((first_h + (double)w * c->deadline_h) *
					     3600 / (double)g->gap_s + 0.5);
		double cost[3], opt = NAN;

		for (int p = 0; p < 3 && !rc; p++) {
			struct sim_result res;

			rc = sim_run(&m, start, &sp, run_ops[p], st, &res, NULL, 0);
			if (rc) {
				sr_err_set(e, rc, "window at tick %zu does not fit the market",
					   start);
				break;
			}
			cost[p] = res.cost;
			r->misses += !res.met;
			if (!p && res.spot_ticks + res.od_ticks > 0)
				r->spotrun_spot += (double)res.spot_ticks /
						   (double)(res.spot_ticks + res.od_ticks);
		}
		if (!rc && with_optimal) {
			rc = sim_optimal(&m, start, &sp, &opt);
			if (rc)
				sr_err_set(e, rc, "optimal: window at tick %zu", start);
		}
		if (rc)
			break;
		r->spotrun += cost[0];
		r->up += cost[1];
		r->ups += cost[2];
		r->optimal += opt;
		r->windows++;
	}
	for (int z = 0; z < c->zones; z++)
		trace_free(t[z]);
	return rc;
}

void gensweep_cell_base(struct gensweep_cell *c)
{
	memset(c, 0, sizeof *c);
	trace_gen_defaults(&c->gen);
	c->gen.up_h = 30;
	c->gen.down_h = 1;
	c->gen.tail = 1.5;
	c->gen.gap_s = 600;
	c->gen.price_vol = 0.2;
	c->gen.blip_h = 4;
	c->zones = 1;
	c->work_h = 48;
	c->deadline_h = 60;
	c->restart_h = 0.2;
	c->history_h = 24;
}

void gensweep_cell_issue27(struct gensweep_cell *c, double left_h)
{
	gensweep_cell_base(c);
	c->gen.nodes = 16;
	c->gen.up_h = 2000;
	c->gen.price_vol = 0;
	c->gen.od_ratio = 5.6;
	c->outage_left_h = left_h;
}

int gensweep_run(const struct gensweep_cell *c, int windows, uint64_t seed,
		 int with_optimal, struct gensweep_result *r, struct sr_err *e)
{
	struct trace_gen_params g = c->gen;
	double slack = c->deadline_h - c->work_h;
	void *st = NULL;
	int rc = 0;

	memset(r, 0, sizeof *r);
	if (windows < 1 || c->zones < 1 || c->zones > TRACE_GEN_MAX_ZONES ||
	    !(c->history_h >= 0) || !(slack > c->restart_h) ||
	    (c->outage_left_h < 0 && slack + 1 > c->deadline_h - 10) ||
	    c->outage_left_h >= c->deadline_h)
		return sr_err_set(e, -EINVAL, "gensweep: a cell with %d windows, %d zones, "
				  "work %g h, deadline %g h, outage %g h does not fit",
				  windows, c->zones, c->work_h, c->deadline_h,
				  c->outage_left_h);
	st = malloc(state_bytes());
	if (!st)
		return sr_err_set(e, -ENOMEM, "gensweep: out of memory");
	if (c->outage_left_h == 0) {
		g.seed = seed;
		g.outage_h = 0;
		g.hours = c->history_h + windows * c->deadline_h + 1;
		rc = run_market(c, &g, c->history_h, windows, with_optimal, st, r, e);
	} else {
		uint64_t x = seed ^ UINT64_C(0x2545F4914F6CDD1D);

		for (int w = 0; w < windows && !rc; w++) {
			double left = c->outage_left_h;

			if (left < 0)
				left = slack + 1 + (c->deadline_h - 11 - slack) * sim__uniform(&x);
			g.seed = seed * 1000003u + (uint64_t)w;
			g.hours = c->history_h + c->deadline_h + 1;
			g.outage_h = c->history_h + left;
			rc = run_market(c, &g, c->history_h, 1, with_optimal, st, r, e);
		}
	}
	free(st);
	if (rc)
		return rc;
	r->spotrun /= r->windows;
	r->up /= r->windows;
	r->ups /= r->windows;
	r->optimal = with_optimal ? r->optimal / r->windows : NAN;
	r->spotrun_spot /= r->windows;
	return 0;
}

double gensweep_vs_up(const struct gensweep_result *r)
{
	return r->spotrun / (r->up < r->ups ? r->up : r->ups);
}
