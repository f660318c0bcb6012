/*
 * bench_sim.c - simulator speed.
 *
 *   1. policy-ticks per second on one core, per online policy, with `od`
 *      (the cheapest possible decision) as the peer the others are
 *      compared with in the same run;
 *   2. the offline DP: window-ticks per second and slack cells per second;
 *   3. a full sweep: every bundled trace that holds a window (alone, and
 *      the multi-region groups), 100 windows, all policies + optimal, at
 *      the paper's tight setting (48 h work, 52 h deadline, R = 0.2 h),
 *      wall seconds on one core.
 */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "sim/sim_sweep.h"

#define T "data/traces/"

static double now_s(void)
{
	return (double)sr_time_mono_ns() / 1e9;
}

static int load_set(const char *const *files, int n, struct trace **t,
		    struct sim_market *m)
{
	struct sr_err e = { 0 };

	for (int i = 0; i < n; i++) {
		if (trace_load(files[i], TRACE_FMT_AUTO, &t[i], &e)) {
			fprintf(stderr, "bench_sim: %s\n", e.msg);
			return -1;
		}
	}
	return sim_market_init(m, t, n, 0.9731, 3.06, 0, &e);
}

static void bench_policies(void)
{
	const char *files[] = { T "cbl/preemption/1-node/aws-04-22-2023/us-west-2b_v100_1.json" };
	struct sim_params p = { .work_h = 48, .deadline_h = 70, .restart_h = 0.2,
				.history_h = 24 };
	struct trace *t[1];
	struct sim_market m;
	static char st[4096];
	double od_rate = 0;

	if (load_set(files, 1, t, &m))
		exit(1);
	printf("policy-ticks per second, one core (70 h windows of %s, 32 s ticks):\n",
	       "us-west-2b_v100_1");
	for (int pi = 0; policy_all[pi]; pi++) {
		double t0 = now_s(), el;
		int64_t ticks = 0;
		size_t w = 0;

		do {
			struct sim_result r;
			size_t start = (w * 977) % (m.n - sim_window_ticks(&m, &p));

			sim_run(&m, start, &p, policy_all[pi], st, &r, NULL, 0);
			ticks += (int64_t)ceil(r.finish_s / (double)m.gap_s);
			w++;
			el = now_s() - t0;
		} while (el < 0.5);
		if (pi == 0)
			od_rate = (double)ticks / el;
		printf("  %-8s %12.3g ticks/s   %.2fx of od\n", policy_all[pi]->name,
		       (double)ticks / el, (double)ticks / el / od_rate);
	}
	printf("optimal (offline DP), one core:\n");
	for (int k = 0; k < 2; k++) {
		double t0 = now_s(), el, opt;
		size_t w = 0, wt;

		p.deadline_h = k ? 70 : 52;
		wt = sim_window_ticks(&m, &p);
		do {
			sim_optimal(&m, (w * 977) % (m.n - wt), &p, &opt);
			w++;
			el = now_s() - t0;
		} while (el < 0.5);
		printf("  %2.0f h deadline: %10.3g window-ticks/s  %8.3g tick x slack-tick cells/s  %.1f ms/window\n",
		       p.deadline_h, (double)(w * wt) / el,
		       (double)(w * wt) * ((p.deadline_h - p.work_h) * 3600 / (double)m.gap_s + 1) / el,
		       el / (double)w * 1e3);
	}
	trace_free(t[0]);
}

static double sweep(const char *const *files, int n, int *nwin)
{
	struct trace *t[SIM_MAX_REGIONS];
	struct sim_market m;
	struct sim_sweep_opts o = {
		.p = { .work_h = 48, .deadline_h = 52, .restart_h = 0.2, .history_h = 24 },
		.nwindows = 100, .seed = 1, .label = files[0],
		.policies = { "od", "greedy", "up", "ups", "optimal", "spotrun" },
		.npolicies = 6,
	};
	struct sr_err e = { 0 };
	json_t *doc = NULL;
	double t0;

	if (load_set(files, n, t, &m))
		exit(1);
	t0 = now_s();
	if (m.n * (size_t)m.gap_s >= 52 * 3600) {
		if (sim_sweep_run(&m, &o, &doc, &e)) {
			fprintf(stderr, "bench_sim: %s\n", e.msg);
			exit(1);
		}
		*nwin += 100;
	}
	json_decref(doc);
	for (int i = 0; i < n; i++)
		trace_free(t[i]);
	return now_s() - t0;
}

static void bench_sweep(void)
{
	static const char *groups[] = {
		T "skynomad/v100_4node_600s/*/full.json",
		T "cbl/preemption/4-node/aws-08-03-2023/*.json",
		T "cbl/availability/16-node/aws-08-27-2023/*.json",
		T "cbl/preemption/1-node/aws-04-22-2023/*.json",
		T "cbl/preemption/1-node/aws-04-19-2023/*.json",
	};
	glob_t all;
	double total = 0;
	int nwin = 0, nsets = 0;

	glob(T "cbl/*/*/*/*.json", 0, NULL, &all);
	glob(T "skynomad/*/*/full.json", GLOB_APPEND, NULL, &all);
	for (size_t i = 0; i < all.gl_pathc; i++) {
		const char *f[1] = { all.gl_pathv[i] };

		total += sweep(f, 1, &nwin);
		nsets++;
	}
	globfree(&all);
	for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
		glob_t gl;

		glob(groups[g], 0, NULL, &gl);
		total += sweep((const char *const *)gl.gl_pathv, (int)gl.gl_pathc, &nwin);
		nsets++;
		globfree(&gl);
	}
	printf("full sweep: %d trace sets (%d windows that fit), 6 policies incl. optimal,\n"
	       "  48 h work / 52 h deadline / R 0.2 h: %.1f s on one core\n",
	       nsets, nwin, total);
}

int main(void)
{
	bench_policies();
	bench_sweep();
	return 0;
}
