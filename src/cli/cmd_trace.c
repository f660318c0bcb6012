/*
 * cmd_trace.c - `spotrun trace gen`: write synthetic spot traces;
 * `spotrun trace prior`: fit spotrun's prior on traces.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cliopt.h"
#include "common/json.h"
#include "sim/policy_prior.h"
#include "sim/trace_gen.h"

#define MAX_REGIONS TRACE_GEN_MAX_ZONES

static const char usage_text[] =
	"usage: spotrun trace gen --out PATH [--regions N] [--nodes N] ...\n"
	"       spotrun trace prior FILE... [--json]\n"
	"\n"
	"  gen     write a synthetic spot trace (below)\n"
	"  prior   fit spotrun's prior on traces: spell ends and ticks of exposure\n"
	"          by age, pooled over the files (docs/design/policies.md), and the\n"
	"          pair changes of each market's zones (files named ZONE_INSTANCE);\n"
	"          `spotrun sim --prior-trace` uses such a fit instead of the bundled one\n"
	"\n"
	"spotrun trace gen --out PATH [--regions N] [--nodes N]\n"
	"                         [--up-hours H --down-hours H --tail A]\n"
	"                         [--gap-seconds S --hours H]\n"
	"                         [--spot-price $ --od-ratio X] [--seed S]\n"
	"                         [--shared-nodes N] [--outage-hours H --blip-hours H]\n"
	"                         [--price-vol V]\n"
	"\n"
	"Write a synthetic spot trace (SkyNomad JSON, readable by `spotrun sim\n"
	"--trace`): a semi-Markov market with heavy-tailed spells.  Each node of\n"
	"a gang alternates up and down spells of Lomax-distributed length;\n"
	"spot is available when every node is up.\n"
	"\n"
	"  --out PATH        the trace file; with --regions N > 1, a directory that\n"
	"                    gets region0.json ... (one market's zones)\n"
	"  --regions N       regions, 1..16 (default 1)\n"
	"  --nodes N         gang size: nodes that must all be up (default 16)\n"
	"  --up-hours H      mean up spell of one node (default 20)\n"
	"  --down-hours H    mean down spell of one node (default 1)\n"
	"  --tail A          Lomax shape > 1: 1.2 = very heavy tails, 50 = nearly\n"
	"                    exponential (default 1.5)\n"
	"  --gap-seconds S   tick length (default 600)\n"
	"  --hours H         trace length (default 720)\n"
	"  --spot-price $    spot $/h (default 1)\n"
	"  --od-ratio X      on-demand price / spot price (default 5)\n"
	"  --seed S          random seed; region k's own nodes use seed + k (default 1)\n"
	"  --shared-nodes N  of the gang's nodes, N shared by every region: their\n"
	"                    outages are every region's (correlated; default 0 =\n"
	"                    independent regions)\n"
	"  --outage-hours H  spot down everywhere for the first H hours (default 0)\n"
	"  --blip-hours H    in that outage, one-tick blips of spot every H hours on\n"
	"                    average (default 0 = none)\n"
	"  --price-vol V     spot price per tick: sd of its log around --spot-price,\n"
	"                    reverting with a 6 h half-life (default 0 = constant)\n"
	"\n"
	"The model is described in docs/simulator.md (\"Synthetic traces\").\n";

static int num_arg(const char *flag, const char *s, double *out)
{
	char *end;
	double v;

	if (*s == '$')
		s++;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v))
		return cli_usage_error("trace", "%s: expected a number, got '%s'", flag, s);
	*out = v;
	return 0;
}

enum { OPT_REGIONS = CLI_KEY_LONG, OPT_NODES, OPT_UP_HOURS, OPT_DOWN_HOURS,
       OPT_TAIL, OPT_GAP_SECONDS, OPT_HOURS, OPT_SPOT_PRICE, OPT_OD_RATIO,
       OPT_SHARED, OPT_OUTAGE_HOURS, OPT_BLIP_HOURS, OPT_PRICE_VOL, OPT_SEED };

static const struct cli_optdef gen_defs[] = {
	{ "out", 'o', CLI_ARG },
	{ "regions", OPT_REGIONS, CLI_ARG },
	{ "nodes", OPT_NODES, CLI_ARG },
	{ "up-hours", OPT_UP_HOURS, CLI_ARG },
	{ "down-hours", OPT_DOWN_HOURS, CLI_ARG },
	{ "tail", OPT_TAIL, CLI_ARG },
	{ "gap-seconds", OPT_GAP_SECONDS, CLI_ARG },
	{ "hours", OPT_HOURS, CLI_ARG },
	{ "spot-price", OPT_SPOT_PRICE, CLI_ARG },
	{ "od-ratio", OPT_OD_RATIO, CLI_ARG },
	{ "shared-nodes", OPT_SHARED, CLI_ARG },
	{ "outage-hours", OPT_OUTAGE_HOURS, CLI_ARG },
	{ "blip-hours", OPT_BLIP_HOURS, CLI_ARG },
	{ "price-vol", OPT_PRICE_VOL, CLI_ARG },
	{ "seed", OPT_SEED, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static void usage(void)
{
	fputs(usage_text, stdout);
}

static int trace_gen_cmd(int argc, char **argv)
{
	struct cli_opts op = { .cmd = "trace", .defs = gen_defs, .usage = usage };
	struct trace_gen_params p;
	struct sr_err e = { 0 };
	const char *out = NULL;
	unsigned long long u, regions = 1;
	struct trace *t[MAX_REGIONS];
	static char paths[MAX_REGIONS][4096];
	char *names[MAX_REGIONS];
	int c, rc = CLI_OK;

	trace_gen_defaults(&p);
	while ((c = cli_opts_next(&op, argc, argv)) > 0) {
		const char *a = op.name, *v = op.arg;
		int r = 0;

		switch (c) {
		case 'o':
			out = v;
			break;
		case OPT_REGIONS:
			r = cli_opts_count(&op, MAX_REGIONS, &regions);
			if (!r && !regions)
				r = cli_opts_error(&op, "--regions: must be at least 1");
			break;
		case OPT_NODES:
			r = cli_opts_count(&op, TRACE_GEN_MAX_NODES, &u);
			p.nodes = (int)u;
			break;
		case OPT_UP_HOURS:
			r = num_arg(a, v, &p.up_h);
			break;
		case OPT_DOWN_HOURS:
			r = num_arg(a, v, &p.down_h);
			break;
		case OPT_TAIL:
			r = num_arg(a, v, &p.tail);
			break;
		case OPT_GAP_SECONDS:
			r = cli_opts_count(&op, 604800, &u);
			p.gap_s = (int64_t)u;
			break;
		case OPT_HOURS:
			r = num_arg(a, v, &p.hours);
			break;
		case OPT_SPOT_PRICE:
			r = num_arg(a, v, &p.spot_price);
			break;
		case OPT_OD_RATIO:
			r = num_arg(a, v, &p.od_ratio);
			break;
		case OPT_SHARED:
			r = cli_opts_count(&op, TRACE_GEN_MAX_NODES, &u);
			p.shared = (int)u;
			break;
		case OPT_OUTAGE_HOURS:
			r = num_arg(a, v, &p.outage_h);
			break;
		case OPT_BLIP_HOURS:
			r = num_arg(a, v, &p.blip_h);
			break;
		case OPT_PRICE_VOL:
			r = num_arg(a, v, &p.price_vol);
			break;
		default: /* OPT_SEED */
			r = cli_opts_count(&op, UINT64_MAX, &u);
			p.seed = u;
			break;
		}
		if (r)
			return r;
	}
	if (c < 0)
		return op.status;
	if (!out)
		return cli_usage_error("trace", "--out: a file (or, with --regions, a directory) is needed");
	if (trace_gen_check(&p, &e))
		return cli_usage_error("trace", "--%s", e.msg);
	if (regions > 1 && mkdir(out, 0755) && errno != EEXIST) {
		fprintf(stderr, "spotrun trace: %s: %s\n", out, strerror(errno));
		return CLI_FAIL;
	}
	for (unsigned long long k = 0; k < regions; k++) {
		names[k] = paths[k];
		if (regions > 1)
			snprintf(paths[k], sizeof paths[k], "%s/region%llu.json", out, k);
		else
			snprintf(paths[k], sizeof paths[k], "%s", out);
	}
	if (trace_gen_market(&p, (int)regions, (const char *const *)names, t, &e)) {
		fprintf(stderr, "spotrun trace: %s\n", e.msg);
		return CLI_FAIL;
	}
	for (unsigned long long k = 0; k < regions; k++) {
		if (rc == CLI_OK && trace_write_skynomad(t[k], p.spot_price, paths[k], &e)) {
			fprintf(stderr, "spotrun trace: %s\n", e.msg);
			rc = CLI_FAIL;
		}
		trace_free(t[k]);
	}
	return rc;
}

/* The fit as JSON: {"traces", "tick_seconds", "ends", "exposure_ticks",
 * "pair_changes", "pair_exposure_ticks"}; the pair arrays by o. */
static int prior_json(const struct policy_prior *p, int nfiles)
{
	json_t *doc = json_object(), *ends = json_array(), *expo = json_array();
	json_t *pchg = json_array(), *pexpo = json_array();
	char *s = NULL;
	int rc = CLI_FAIL;

	if (!doc || !ends || !expo || !pchg || !pexpo)
		goto out;
	for (int k = 0; k < PRIOR_KINDS; k++) {
		json_t *a = json_array(), *b = json_array();

		for (int j = 0; a && b && j < PRIOR_BINS; j++) {
			json_array_append_new(a, json_real(p->ends[k][j]));
			json_array_append_new(b, json_real(p->expo[k][j]));
		}
		json_array_append_new(k < PRIOR_PAIR ? ends : pchg, a);
		json_array_append_new(k < PRIOR_PAIR ? expo : pexpo, b);
	}
	json_object_set_new(doc, "traces", json_integer(nfiles));
	json_object_set_new(doc, "tick_seconds", json_integer(PRIOR_TICK_S));
	json_object_set(doc, "ends", ends);
	json_object_set(doc, "exposure_ticks", expo);
	json_object_set(doc, "pair_changes", pchg);
	json_object_set(doc, "pair_exposure_ticks", pexpo);
	s = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
	if (s) {
		puts(s);
		rc = CLI_OK;
	}
out:
	free(s);
	json_decref(doc);
	json_decref(ends);
	json_decref(expo);
	json_decref(pchg);
	json_decref(pexpo);
	return rc;
}

static int trace_prior_cmd(int argc, char **argv)
{
	static const char *const kinds[PRIOR_KINDS] = { "outages", "runs", "pairs o=0",
							"pairs o=1" };
	struct cli_opts op = { .cmd = "trace", .sub = "prior", .usage = usage,
			       .flags = CLI_OPT_JSON, .max_operands = CLI_MAX_OPERANDS };
	struct policy_prior p = { 0 };
	struct sr_err e = { 0 };
	int c;

	while ((c = cli_opts_next(&op, argc, argv)) > 0)
		;
	if (c < 0)
		return op.status;
	if (!op.n_operands)
		return cli_opts_error(&op, "at least one trace file is needed");
	{ /* each file's spells, and the pairs of each market's zones */
		int r = policy_prior_fit(&p, (const char *const *)op.operand, op.n_operands, &e);

		if (r) {
			fprintf(stderr, "spotrun trace: %s\n", sr_err_str(&e, r));
			return CLI_FAIL;
		}
	}
	if (op.json)
		return prior_json(&p, op.n_operands);
	printf("prior from %d traces, resampled to %d s ticks\n"
	       "%-8s %-12s %10s %12s %10s\n", op.n_operands, PRIOR_TICK_S, "spells",
	       "age (ticks)", "ends", "exposure", "per tick");
	for (int k = 0; k < PRIOR_KINDS; k++) {
		for (int j = 0; j < PRIOR_BINS; j++) {
			size_t lo = j ? (size_t)1 << (j - 1) : 0;
			char age[32];

			if (j == PRIOR_BINS - 1)
				snprintf(age, sizeof age, "%zu+", lo);
			else
				snprintf(age, sizeof age, "%zu-%zu", lo, j ? 2 * lo - 1 : 0);
			printf("%-8s %-12s %10.0f %12.0f %10.4f\n", kinds[k], age, p.ends[k][j],
			       p.expo[k][j], p.expo[k][j] > 0 ? p.ends[k][j] / p.expo[k][j] : 0);
		}
	}
	return CLI_OK;
}

static int cmd_trace(int argc, char **argv)
{
	const char *sub = NULL;
	int rc = cli_opts_verb("trace", usage, usage_text, argc, argv, &sub, &argc,
			       &argv);

	if (rc >= 0)
		return rc;
	if (!strcmp(sub, "gen"))
		return trace_gen_cmd(argc, argv);
	if (!strcmp(sub, "prior"))
		return trace_prior_cmd(argc, argv);
	return cli_usage_error("trace", "unknown subcommand '%s' (expected: gen or prior)",
			       sub);
}

CLI_COMMAND("trace", "synthetic spot traces (trace gen), spotrun's prior (trace prior)",
	    cmd_trace)
