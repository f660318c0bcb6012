/*
 * cmd_trace.c - `spotrun trace gen`: write synthetic spot traces.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "sim/trace_gen.h"

#define MAX_REGIONS TRACE_GEN_MAX_ZONES

static const char usage_text[] =
	"usage: spotrun trace gen --out PATH [--regions N] [--nodes N]\n"
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

/* The generator's number flags and the field each sets (NULL: not one). */
static double *num_field(struct trace_gen_params *p, const char *flag)
{
	const struct {
		const char *flag;
		double *field;
	} map[] = {
		{ "--up-hours", &p->up_h }, { "--down-hours", &p->down_h },
		{ "--tail", &p->tail }, { "--hours", &p->hours },
		{ "--spot-price", &p->spot_price }, { "--od-ratio", &p->od_ratio },
		{ "--outage-hours", &p->outage_h }, { "--blip-hours", &p->blip_h },
		{ "--price-vol", &p->price_vol },
	};

	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		if (!strcmp(flag, map[i].flag))
			return map[i].field;
	}
	return NULL;
}

static int trace_gen_cmd(int argc, char **argv)
{
	struct trace_gen_params p;
	struct sr_err e = { 0 };
	const char *out = NULL;
	unsigned long long u, regions = 1;
	struct trace *t[MAX_REGIONS];
	static char paths[MAX_REGIONS][4096];
	char *names[MAX_REGIONS];
	int rc = CLI_OK;

	trace_gen_defaults(&p);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int r = 0;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_text, stdout);
			return CLI_OK;
		}
		if (!v)
			return cli_usage_error("trace", "unknown argument or missing value: '%s'", a);
		i++;
		if (!strcmp(a, "--out") || !strcmp(a, "-o")) {
			out = v;
		} else if (!strcmp(a, "--regions")) {
			r = cli_parse_count("trace", a, v, MAX_REGIONS, &regions);
			if (!r && !regions)
				r = cli_usage_error("trace", "--regions: must be at least 1");
		} else if (!strcmp(a, "--nodes")) {
			r = cli_parse_count("trace", a, v, TRACE_GEN_MAX_NODES, &u);
			p.nodes = (int)u;
		} else if (!strcmp(a, "--gap-seconds")) {
			r = cli_parse_count("trace", a, v, 604800, &u);
			p.gap_s = (int64_t)u;
		} else if (!strcmp(a, "--shared-nodes")) {
			r = cli_parse_count("trace", a, v, TRACE_GEN_MAX_NODES, &u);
			p.shared = (int)u;
		} else if (num_field(&p, a)) {
			r = num_arg(a, v, num_field(&p, a));
		} else if (!strcmp(a, "--seed")) {
			r = cli_parse_count("trace", a, v, UINT64_MAX, &u);
			p.seed = u;
		} else {
			return cli_usage_error("trace", "unknown argument '%s'", a);
		}
		if (r)
			return r;
	}
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

static int cmd_trace(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage_text, argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_USAGE : CLI_OK;
	}
	if (!strcmp(argv[1], "gen"))
		return trace_gen_cmd(argc, argv);
	return cli_usage_error("trace", "unknown subcommand '%s' (expected: gen)", argv[1]);
}

CLI_COMMAND("trace", "generate synthetic spot traces (trace gen)", cmd_trace)
