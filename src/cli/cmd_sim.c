/*
 * cmd_sim.c - `spotrun sim`: replay spot traces against policies.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cliopt.h"
#include "common/json.h"
#include "sim/policy_prior.h"
#include "sim/sim_sweep.h"

#define MAX_STARTS 4096

static const char usage_text[] =
	"usage: spotrun sim --trace FILE... [--policy P ...]\n"
	"                   [--work-hours H --deadline-hours D --restart-hours R]\n"
	"                   [--ckpt-interval-hours I --ckpt-gb S --egress-per-gb $]\n"
	"                   [--od-price $ --spot-price $] [--trace-format cbl|skynomad|csv]\n"
	"                   [--windows N --window-hours W --seed S | --start-tick T ...] [--json]\n"
	"                   [--prior-trace FILE...] [--zone-pairs off|on|auto]\n"
	"\n"
	"Replay spot-market traces and compare policies on the same windows.\n"
	"Several traces are several regions, aligned in time.\n"
	"\n"
	"  --trace FILE...         trace files (CBL JSON, SkyNomad JSON or CSV)\n"
	"  --trace-format F        override format detection\n"
	"  --policy P ...          od greedy up ups optimal spotrun (default: all)\n"
	"  --work-hours H          work to do (default 48)\n"
	"  --deadline-hours D      deadline from the window start (default 52)\n"
	"  --restart-hours R       zero-progress time of every new start (default 0.2)\n"
	"  --ckpt-interval-hours I 0 = continuous checkpointing (default 0)\n"
	"  --ckpt-gb S, --egress-per-gb $   checkpoint egress on region moves (default 0)\n"
	"  --od-price $            on-demand $/h (default: the traces' own, else 3.06)\n"
	"  --spot-price $          spot $/h for traces without prices (default 0.9731)\n"
	"  --windows N             sampled windows (default 100)\n"
	"  --window-hours W        window length, >= deadline (default: the deadline)\n"
	"  --seed S                window sampling seed (default 1)\n"
	"  --history-hours H       market history before each window that policies\n"
	"                          may learn from (default 24; spotrun uses it)\n"
	"  --start-tick T          run exactly the window starting at tick T (repeatable)\n"
	"  --prior-trace FILE...   fit spotrun's prior on these traces instead of using\n"
	"                          the bundled one (validation on held-out trace sets;\n"
	"                          `spotrun trace prior`)\n"
	"  --zone-pairs M          spotrun across regions: plan on which regions are up\n"
	"                          together once the market's own run ends favour it\n"
	"                          (auto, default), on each region run's age (off), or\n"
	"                          on which regions are up together always (on)\n"
	"  --json                  one JSON document on stdout\n"
	"\n"
	"The model is described in docs/simulator.md, the policies in docs/policies.md.\n";

static const char *const all_policies[] = {
	"od", "greedy", "up", "ups", "optimal", "spotrun", NULL
};

static int parse_num(const char *flag, const char *s, double lo, double *out)
{
	char *end;
	double v;

	if (*s == '$')
		s++;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo)
		return cli_usage_error("sim", "%s: expected a number >= %g, got '%s'",
				       flag, lo, s);
	*out = v;
	return 0;
}

static int known_policy(const char *p)
{
	for (int i = 0; all_policies[i]; i++) {
		if (!strcmp(all_policies[i], p))
			return 1;
	}
	return 0;
}

static void progress_bar(void *arg, size_t done, size_t total)
{
	int width = 40, fill = (int)((double)done / (double)total * width);

	(void)arg;
	fprintf(stderr, "\r[%.*s%*s] %zu/%zu windows", fill,
		"########################################", width - fill, "", done, total);
	if (done == total)
		fputs("\r\033[K", stderr);
	fflush(stderr);
}

static double num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void print_table(json_t *doc, struct sim_sweep_opts *o)
{
	json_t *pols = json_object_get(doc, "policies");
	json_t *params = json_object_get(doc, "params");

	printf("trace: %s\n", o->label);
	printf("work %.2f h, deadline %.2f h, restart %.3f h, on-demand $%.4f/h, %zu windows\n\n",
	       o->p.work_h, o->p.deadline_h, o->p.restart_h, num(params, "od_price"),
	       (size_t)num(params, "windows"));
	printf("%-8s %10s %10s %10s %9s %7s %6s %8s %6s\n", "policy", "mean $",
	       "median $", "p95 $", "xoptimal", "xod", "misses", "preempt", "spot%");
	for (int i = 0; i < o->npolicies; i++) {
		json_t *s = json_object_get(pols, o->policies[i]);
		double pre = num(s, "mean_preemptions"), sf = num(s, "spot_fraction");
		char pbuf[16] = "-", sbuf[16] = "-";

		if (!isnan(pre))
			snprintf(pbuf, sizeof pbuf, "%.2f", pre);
		if (!isnan(sf))
			snprintf(sbuf, sizeof sbuf, "%.1f", 100 * sf);
		printf("%-8s %10.2f %10.2f %10.2f %9.3f %7.3f %6d %8s %6s\n",
		       o->policies[i], num(s, "mean_cost"), num(s, "median_cost"),
		       num(s, "p95_cost"), num(s, "ratio_to_optimal"),
		       num(s, "ratio_to_od"), (int)num(s, "misses"), pbuf, sbuf);
	}
}

enum { OPT_TRACE = CLI_KEY_LONG, OPT_POLICY, OPT_WORK_HOURS,
       OPT_DEADLINE_HOURS, OPT_RESTART_HOURS, OPT_CKPT_INTERVAL_HOURS,
       OPT_CKPT_GB, OPT_EGRESS_PER_GB, OPT_OD_PRICE, OPT_SPOT_PRICE,
       OPT_HISTORY_HOURS, OPT_WINDOW_HOURS, OPT_WINDOWS, OPT_SEED,
       OPT_START_TICK, OPT_PRIOR_TRACE, OPT_ZONE_PAIRS, OPT_TRACE_FORMAT };

static const struct cli_optdef sim_defs[] = {
	{ "trace", OPT_TRACE, CLI_LIST },
	{ "policy", OPT_POLICY, CLI_LIST },
	{ "work-hours", OPT_WORK_HOURS, CLI_ARG },
	{ "deadline-hours", OPT_DEADLINE_HOURS, CLI_ARG },
	{ "restart-hours", OPT_RESTART_HOURS, CLI_ARG },
	{ "ckpt-interval-hours", OPT_CKPT_INTERVAL_HOURS, CLI_ARG },
	{ "ckpt-gb", OPT_CKPT_GB, CLI_ARG },
	{ "egress-per-gb", OPT_EGRESS_PER_GB, CLI_ARG },
	{ "od-price", OPT_OD_PRICE, CLI_ARG },
	{ "spot-price", OPT_SPOT_PRICE, CLI_ARG },
	{ "history-hours", OPT_HISTORY_HOURS, CLI_ARG },
	{ "window-hours", OPT_WINDOW_HOURS, CLI_ARG },
	{ "windows", OPT_WINDOWS, CLI_ARG },
	{ "seed", OPT_SEED, CLI_ARG },
	{ "start-tick", OPT_START_TICK, CLI_REPEAT },
	{ "prior-trace", OPT_PRIOR_TRACE, CLI_LIST },
	{ "zone-pairs", OPT_ZONE_PAIRS, CLI_ARG },
	{ "trace-format", OPT_TRACE_FORMAT, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static void usage(void)
{
	fputs(usage_text, stdout);
}

static int cmd_sim(int argc, char **argv)
{
	struct cli_opts p = { .cmd = "sim", .defs = sim_defs, .usage = usage,
			      .flags = CLI_OPT_JSON };
	struct sim_sweep_opts o = {
		.p = { .work_h = 48, .deadline_h = 52, .restart_h = 0.2, .history_h = 24 },
		.nwindows = 100, .seed = 1,
	};
	const char *files[SIM_MAX_REGIONS];
	struct trace *tr[SIM_MAX_REGIONS] = { 0 };
	static size_t starts[MAX_STARTS];
	static struct policy_prior prior;
	static const char *prior_files[MAX_STARTS];
	int nprior = 0;
	enum trace_format fmt = TRACE_FMT_AUTO;
	double od_price = 3.06, spot_price = 0.9731;
	int nfiles = 0, json, force_od = 0, c, rc = CLI_OK;
	char label[1024] = "";
	struct sim_market m;
	struct sr_err e = { 0 };
	json_t *doc = NULL;
	unsigned long long u;

	while ((c = cli_opts_next(&p, argc, argv)) > 0) {
		const char *a = p.name, *v = p.arg;
		int r = 0;

		switch (c) {
		case OPT_TRACE:
			if (nfiles == SIM_MAX_REGIONS)
				return cli_opts_error(&p, "--trace: at most %d files",
						      SIM_MAX_REGIONS);
			files[nfiles++] = v;
			break;
		case OPT_POLICY:
			if (!known_policy(v))
				return cli_opts_error(&p, "--policy: unknown policy '%s' (known: od greedy up ups optimal spotrun)", v);
			if (o.npolicies == SIM_SWEEP_MAX_POLICIES)
				return cli_opts_error(&p, "--policy: too many");
			o.policies[o.npolicies++] = v;
			break;
		case OPT_WORK_HOURS:
			r = parse_num(a, v, 1e-6, &o.p.work_h);
			break;
		case OPT_DEADLINE_HOURS:
			r = parse_num(a, v, 1e-6, &o.p.deadline_h);
			break;
		case OPT_RESTART_HOURS:
			r = parse_num(a, v, 0, &o.p.restart_h);
			break;
		case OPT_CKPT_INTERVAL_HOURS:
			r = parse_num(a, v, 0, &o.p.ckpt_interval_h);
			break;
		case OPT_CKPT_GB:
			r = parse_num(a, v, 0, &o.p.ckpt_gb);
			break;
		case OPT_EGRESS_PER_GB:
			r = parse_num(a, v, 0, &o.p.egress_per_gb);
			break;
		case OPT_OD_PRICE:
			r = parse_num(a, v, 1e-9, &od_price);
			force_od = 1;
			break;
		case OPT_SPOT_PRICE:
			r = parse_num(a, v, 0, &spot_price);
			break;
		case OPT_HISTORY_HOURS:
			r = parse_num(a, v, 0, &o.p.history_h);
			break;
		case OPT_WINDOW_HOURS:
			r = parse_num(a, v, 1e-6, &o.window_h);
			break;
		case OPT_WINDOWS:
			r = cli_opts_count(&p, 1000000, &u);
			o.nwindows = (size_t)u;
			if (!r && !u)
				r = cli_opts_error(&p, "--windows: must be at least 1");
			break;
		case OPT_SEED:
			r = cli_opts_count(&p, UINT64_MAX, &u);
			o.seed = u;
			break;
		case OPT_START_TICK:
			if (o.nstarts == MAX_STARTS)
				return cli_opts_error(&p, "--start-tick: at most %d",
						      MAX_STARTS);
			r = cli_opts_count(&p, SIZE_MAX, &u);
			starts[o.nstarts++] = (size_t)u;
			break;
		case OPT_PRIOR_TRACE:
			if (nprior == MAX_STARTS)
				return cli_opts_error(&p, "--prior-trace: at most %d files",
						      MAX_STARTS);
			prior_files[nprior++] = v;
			break;
		case OPT_ZONE_PAIRS:
			if (!strcmp(v, "off"))
				o.p.zone_pairs = SIM_PAIRS_OFF;
			else if (!strcmp(v, "on"))
				o.p.zone_pairs = SIM_PAIRS_ON;
			else if (!strcmp(v, "auto"))
				o.p.zone_pairs = SIM_PAIRS_AUTO;
			else
				return cli_opts_error(&p, "--zone-pairs: expected off, on or auto, got '%s'", v);
			break;
		default: /* OPT_TRACE_FORMAT */
			if (trace_format_parse(v, &fmt) || fmt == TRACE_FMT_AUTO)
				return cli_opts_error(&p, "--trace-format: expected cbl, skynomad or csv, got '%s'", v);
			break;
		}
		if (r)
			return r;
	}
	if (c < 0)
		return p.status;
	json = p.json;
	if (nprior) { /* each file's spells, and the pairs of each market's zones */
		int r = policy_prior_fit(&prior, prior_files, nprior, &e);

		if (r) {
			fprintf(stderr, "spotrun sim: --prior-trace: %s\n", sr_err_str(&e, r));
			return CLI_FAIL;
		}
		o.p.prior = &prior;
	}
	if (!nfiles)
		return cli_usage_error("sim", "--trace: at least one trace file is needed");
	if (o.p.work_h + o.p.restart_h > o.p.deadline_h)
		return cli_usage_error("sim",
				       "--work-hours %g + --restart-hours %g = %g h is longer than --deadline-hours %g: no schedule can meet the deadline",
				       o.p.work_h, o.p.restart_h, o.p.work_h + o.p.restart_h,
				       o.p.deadline_h);
	if (sim_params_check(&o.p, &e))
		return cli_usage_error("sim", "%s", e.msg);
	if (o.window_h && o.window_h < o.p.deadline_h)
		return cli_usage_error("sim", "--window-hours: %g is shorter than the deadline (%g h)",
				       o.window_h, o.p.deadline_h);
	if (!o.npolicies) {
		for (int i = 0; all_policies[i]; i++)
			o.policies[o.npolicies++] = all_policies[i];
	}
	o.starts = starts;
	for (int f = 0; f < nfiles; f++) {
		int r = trace_load(files[f], fmt, &tr[f], &e);

		if (r) {
			fprintf(stderr, "spotrun sim: %s\n", sr_err_str(&e, r));
			rc = CLI_FAIL;
			goto out;
		}
		snprintf(label + strlen(label), sizeof label - strlen(label), "%s%s",
			 f ? "+" : "", files[f]);
	}
	o.label = label;
	if (sim_market_init(&m, tr, nfiles, spot_price, od_price, force_od, &e)) {
		fprintf(stderr, "spotrun sim: %s\n", e.msg);
		rc = CLI_FAIL;
		goto out;
	}
	if (m.n < sim_window_ticks(&m, &o.p) ||
	    (o.window_h && (double)m.n * (double)m.gap_s < o.window_h * 3600 - 1e-6)) {
		rc = cli_usage_error("sim",
				     "%s: %.1f h of trace is shorter than one %g h window (--deadline-hours or --window-hours)",
				     label, (double)m.n * (double)m.gap_s / 3600.0,
				     o.window_h > o.p.deadline_h ? o.window_h : o.p.deadline_h);
		goto out;
	}
	/* A progress bar on a terminal, never with --json. */
	if (!json && isatty(STDERR_FILENO) && (o.nstarts ? o.nstarts : o.nwindows) > 1)
		o.progress = progress_bar;
	if (sim_sweep_run(&m, &o, &doc, &e)) {
		fprintf(stderr, "spotrun sim: %s\n", e.msg);
		rc = CLI_FAIL;
		goto out;
	}
	if (json) {
		char *s = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(10));

		if (!s) {
			rc = CLI_FAIL;
			goto out;
		}
		puts(s);
		free(s);
	} else {
		print_table(doc, &o);
	}
out:
	json_decref(doc);
	for (int f = 0; f < nfiles; f++)
		trace_free(tr[f]);
	return rc;
}

CLI_COMMAND("sim", "replay spot traces against policies", cmd_sim)
