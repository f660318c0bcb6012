/*
 * bench_forecast.c - does the plan's forecast cover what happens?  (issue
 * 28, "calibrated forecasts"; docs/benchmarks.md#forecast-coverage)
 *
 * For each of --jobs (default 1,000; at least 200) simulated jobs:
 *
 *   1. a job is drawn (seeded): one of the bundled single-node spot traces
 *      whose pool the catalog prices (data/traces/cbl/.../1-node, V100),
 *      a start in it, work W of 4-30 h and a deadline of 1.3-3 x W;
 *   2. the forecast: `spotrun plan`'s own code (jobspec_parse_buf +
 *      plan_make over data/, the catalog with the rates fitted to the
 *      traces) for that job pinned to the trace's zone, the top
 *      spot-with-on-demand-fallback placement: its expected cost and its
 *      cost p95 - what `spotrun plan` and `spotrun launch` show;
 *   3. the outcome: the same job on the trace itself (lib/sim, the
 *      simulator `spotrun sim` runs) with that placement's strategy -
 *      spot in the pool whenever it has capacity, on-demand once the
 *      deadline needs it (policy `greedy`) - at the catalog's prices, the
 *      plan's restart time and checkpoint interval;
 *
 * and counts the jobs whose actual cost is at most the forecast p95
 * (goal: 90-98% of them) and at most the expected cost.  A seeded run is
 * reproducible: the seed is printed and --seed S repeats it.  Exit status
 * 1 when the coverage is outside the goal.
 *
 * Usage: bench_forecast [--jobs N] [--seed S] [--json]   (run from the
 * repository root: it reads data/)
 */
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "market/catalog.h"
#include "market/jobspec.h"
#include "market/plan.h"
#include "sim/rng.h"
#include "sim/sim.h"

#define DATA "data"
#define MAX_TRACES 32
#define COVER_LO 0.90
#define COVER_HI 0.98

struct src {
	char path[512];
	char zone[40];      /* as the file names it: "us-west-2a" */
	char gpu[24];       /* "V100" */
	int count;
	struct trace *t;
	struct sim_market m;
	/* per pool: jobs, covered by p95, under the expectation, sums */
	int jobs, cov95, under_mean;
	double actual, expected, p95, preempt_sim, preempt_plan;
};

/* "DIR/us-west-2a_v100_8.json" -> zone, GPU, count; 0 or -1. */
static int parse_name(const char *path, struct src *s)
{
	const char *b = strrchr(path, '/'), *u2, *u1;

	b = b ? b + 1 : path;
	u2 = strrchr(b, '_');
	if (!u2 || u2 == b)
		return -1;
	for (u1 = u2 - 1; u1 > b && *u1 != '_'; u1--)
		;
	if (u1 == b || (size_t)(u1 - b) >= sizeof s->zone ||
	    (size_t)(u2 - u1 - 1) >= sizeof s->gpu)
		return -1;
	snprintf(s->zone, sizeof s->zone, "%.*s", (int)(u1 - b), b);
	for (int i = 0; i < (int)(u2 - u1 - 1); i++)
		s->gpu[i] = (char)(u1[1 + i] >= 'a' && u1[1 + i] <= 'z' ?
				   u1[1 + i] - 32 : u1[1 + i]);
	s->gpu[u2 - u1 - 1] = '\0';
	s->count = atoi(u2 + 1);
	return s->count > 0 ? 0 : -1;
}

/* The forecast for a job of w_h work due in d_h on s's pool: the top
 * spot-with-fallback placement of `spotrun plan`.  0, 1 = the plan has
 * none there, < 0 error. */
static int forecast(const struct catalog *cat, const struct src *s, double w_h,
		    double d_h, struct plan_placement *out, double *resume_h)
{
	char yaml[512];
	struct jobspec js;
	struct plan_result r = { 0 };
	struct sr_err e = { 0 };
	int rc;

	snprintf(yaml, sizeof yaml, "name: forecast\nresources:\n  cloud: aws\n"
		 "  zone: %s\n  accelerators: %s:%d\n  use_spot: true\n"
		 "spotrun:\n  work: %.6fh\n  deadline: %.6fh\n", s->zone, s->gpu,
		 s->count, w_h, d_h);
	jobspec_init(&js);
	rc = jobspec_parse_buf(yaml, strlen(yaml), "forecast.yaml", &js, &e);
	if (!rc)
		rc = plan_make(cat, &js, sr_time_real_ns(), &r, &e);
	if (rc) {
		fprintf(stderr, "bench_forecast: %s: %s\n", s->path, e.msg);
		jobspec_free(&js);
		return rc;
	}
	rc = 1;
	for (size_t i = 0; i < r.n && rc == 1; i++) {
		if (r.items[i].mode == PLAN_SPOT_FALLBACK &&
		    r.items[i].o.hazard_src == CATALOG_HAZARD_TRACE) {
			*out = r.items[i];
			*resume_h = r.resume_h;
			rc = 0;
		}
	}
	plan_result_free(&r);
	jobspec_free(&js);
	return rc;
}

static int load_sources(const struct catalog *cat, struct src *v, int *n)
{
	glob_t g;
	struct sr_err e = { 0 };

	*n = 0;
	if (glob(DATA "/traces/cbl/*/1-node/aws-*/*_v100_*.json", 0, NULL, &g))
		return -ENOENT;
	for (size_t i = 0; i < g.gl_pathc && *n < MAX_TRACES; i++) {
		struct src *s = &v[*n];
		struct plan_placement p;
		double r;

		memset(s, 0, sizeof *s);
		snprintf(s->path, sizeof s->path, "%s", g.gl_pathv[i]);
		if (parse_name(s->path, s) || forecast(cat, s, 8, 24, &p, &r))
			continue; /* not a pool the plan prices from a trace */
		if (trace_load(s->path, TRACE_FMT_AUTO, &s->t, &e) ||
		    sim_market_init(&s->m, &s->t, 1,
				    (double)p.o.spot_per_h / 1e6,
				    (double)p.o.ondemand_per_h / 1e6, 1, &e)) {
			fprintf(stderr, "bench_forecast: %s: %s\n", s->path, e.msg);
			globfree(&g);
			return -EINVAL;
		}
		(*n)++;
	}
	globfree(&g);
	return *n ? 0 : -ENOENT;
}

int main(int argc, char **argv)
{
	static struct src v[MAX_TRACES];
	static char state[4096];
	const struct policy_ops *greedy = policy_find("greedy");
	struct catalog cat;
	struct sr_err e = { 0 };
	uint64_t seed = (uint64_t)sr_time_real_ns(), x;
	int jobs = 1000, json = 0, n = 0, done = 0, cov = 0, under = 0, skipped = 0;
	double frac, t0 = (double)sr_time_mono_ns() / 1e9;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--jobs") && i + 1 < argc)
			jobs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--json"))
			json = 1;
		else {
			fprintf(stderr, "usage: bench_forecast [--jobs N] [--seed S] "
				"[--json]\n");
			return 2;
		}
	}
	if (jobs < 1 || !greedy || (size_t)greedy->state_size > sizeof state)
		return 2;
	catalog_init(&cat);
	if (catalog_load_dir(&cat, DATA, &e)) {
		fprintf(stderr, "bench_forecast: %s (run from the repository root)\n",
			e.msg);
		return 1;
	}
	if (load_sources(&cat, v, &n)) {
		fprintf(stderr, "bench_forecast: no V100 spot trace under "
			DATA "/traces that the catalog prices\n");
		return 1;
	}
	x = seed;
	for (int k = 0; k < jobs; k++) {
		struct src *s = &v[k % n];
		double w = 4 + 26 * sim__uniform(&x);
		double d = w * (1.3 + 1.7 * sim__uniform(&x)), resume;
		struct plan_placement p;
		struct sim_params sp = { 0 };
		struct sim_result res;
		size_t ticks, start;

		if (forecast(&cat, s, w, d, &p, &resume)) {
			skipped++;
			continue;
		}
		sp.work_h = w;
		sp.deadline_h = d;
		sp.restart_h = resume;
		sp.ckpt_interval_h = p.ckpt_interval_h;
		ticks = sim_window_ticks(&s->m, &sp);
		if (sim_params_check(&sp, &e) || ticks + 1 >= s->m.n) {
			skipped++;
			continue;
		}
		start = (size_t)(sim__uniform(&x) * (double)(s->m.n - ticks - 1));
		if (sim_run(&s->m, start, &sp, greedy, state, &res, NULL, 0)) {
			skipped++;
			continue;
		}
		done++;
		s->jobs++;
		s->actual += res.cost;
		s->expected += (double)p.expected_cost / 1e6;
		s->p95 += (double)p.cost_p95 / 1e6;
		s->preempt_sim += res.preemptions;
		s->preempt_plan += p.est.n_preempt;
		if (res.cost <= (double)p.cost_p95 / 1e6 + 1e-6) {
			cov++;
			s->cov95++;
		}
		if (res.cost <= (double)p.expected_cost / 1e6 + 1e-6) {
			under++;
			s->under_mean++;
		}
	}
	frac = done ? (double)cov / done : 0;
	if (json) {
		printf("{\"seed\": %" PRIu64 ", \"jobs\": %d, \"skipped\": %d, "
		       "\"p95_coverage\": %.4f, \"under_expected\": %.4f, "
		       "\"goal\": [%.2f, %.2f], \"pools\": [", seed, done, skipped,
		       frac, done ? (double)under / done : 0, COVER_LO, COVER_HI);
		for (int i = 0, first = 1; i < n; i++) {
			if (!v[i].jobs)
				continue;
			printf("%s{\"trace\": \"%s\", \"jobs\": %d, \"p95_coverage\": "
			       "%.4f, \"actual_vs_expected\": %.4f, "
			       "\"preemptions_sim\": %.3f, \"preemptions_plan\": %.3f}",
			       first ? "" : ", ", v[i].path + strlen(DATA "/traces/"),
			       v[i].jobs, (double)v[i].cov95 / v[i].jobs,
			       v[i].actual / v[i].expected,
			       v[i].preempt_sim / v[i].jobs,
			       v[i].preempt_plan / v[i].jobs);
			first = 0;
		}
		printf("]}\n");
	} else {
		printf("forecast coverage: %d simulated jobs (seed %" PRIu64 ", %d "
		       "skipped), W 4-30 h, deadline 1.3-3 x W, spot with on-demand "
		       "fallback in the planned pool\n", done, seed, skipped);
		printf("  %-58s %5s %7s %9s %13s\n", "trace", "jobs", "p95 cov",
		       "act/exp", "preempt s/p");
		for (int i = 0; i < n; i++) {
			if (!v[i].jobs)
				continue;
			printf("  %-58s %5d %6.1f%% %9.3f %6.2f/%-6.2f\n",
			       v[i].path + strlen(DATA "/traces/"), v[i].jobs,
			       100.0 * v[i].cov95 / v[i].jobs,
			       v[i].actual / v[i].expected,
			       v[i].preempt_sim / v[i].jobs,
			       v[i].preempt_plan / v[i].jobs);
		}
		printf("p95 covers %.1f%% of the actual costs (goal %.0f-%.0f%%): %s; "
		       "%.1f%% at or under the expected cost; %.1f s\n", 100 * frac,
		       100 * COVER_LO, 100 * COVER_HI, frac >= COVER_LO &&
		       frac <= COVER_HI ? "met" : "NOT MET",
		       done ? 100.0 * under / done : 0,
		       (double)sr_time_mono_ns() / 1e9 - t0);
	}
	for (int i = 0; i < n; i++)
		trace_free(v[i].t);
	catalog_free(&cat);
	return done >= 200 && frac >= COVER_LO && frac <= COVER_HI ? 0 : 1;
}
