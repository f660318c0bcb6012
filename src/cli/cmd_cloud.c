/*
 * cmd_cloud.c - `spotrun cloud preempt|outage`: drive the local cloud by
 * hand (POST /v1/cloud/preempt, /v1/cloud/outage; lib/ctl/routes_cloud.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ctlcli.h"
#include "common/timeutil.h"

#define USAGE                                                                  \
	"usage: spotrun cloud preempt NODE [--lead S] [--json] [--api URL]\n"  \
	"                                  [--state-dir DIR]\n"                \
	"       spotrun cloud outage POOL --for D [--json] [--api URL]\n"      \
	"                                  [--state-dir DIR]\n"

enum { OPT_LEAD = CLI_KEY_LONG, OPT_FOR };

static void usage(void)
{
	printf(USAGE "\n"
	       "Drive the local cloud by hand, as a real cloud would act on its own.\n\n"
	       "  preempt NODE   reclaim node NODE's spot instance: it gets its\n"
	       "                 interruption notice now and is killed when the\n"
	       "                 notice runs out; spotrund handles it as any\n"
	       "                 preemption (final checkpoint, replacement, resume)\n"
	       "  --lead S       the notice's lead, real seconds (default: the\n"
	       "                 cloud's, --notice-ms)\n"
	       "  outage POOL    take POOL's spot capacity away: its spot nodes are\n"
	       "                 reclaimed one at a time and spot launches into it\n"
	       "                 fail, until the outage ends\n"
	       "  --for D        how long, on the cloud's clock (--time-scale):\n"
	       "                 90s, 30m, 2h, 1d\n"
	       "  --json         print spotrund's JSON reply\n\n"
	       "NODE is a node id (spotrun nodes).  POOL is a pool number (spotrun\n"
	       "nodes --json: \"pool\") or cloud/region/zone/type, as\n"
	       "aws/us-west-2/us-west-2a/p3.2xlarge.  Only the local cloud can be\n"
	       "driven this way; a node or pool of a real cloud is refused.\n\n"
	       CTLCLI_COMMON_HELP);
}

static const struct cli_optdef preempt_defs[] = {
	{ "lead", OPT_LEAD, CLI_ARG },
	{ NULL, 0, 0 },
};

static const struct cli_optdef outage_defs[] = {
	{ "for", OPT_FOR, CLI_ARG },
	{ NULL, 0, 0 },
};

/* A duration (sr_dur_parse) in seconds, or a usage error naming opt. */
static int dur_s(const struct cli_opts *p, double *out)
{
	struct sr_err e = { 0 };
	int64_t ns = 0;

	if (sr_dur_parse(p->arg, &ns, &e))
		return cli_opts_error(p, "%s: %s", p->name, e.msg);
	*out = (double)ns / 1e9;
	return 0;
}

static int call(struct ctlcli *o, const char *path, json_t *body, json_t **reply)
{
	int rc;

	if (!body) {
		fprintf(stderr, "spotrun cloud: out of memory\n");
		return -ENOMEM;
	}
	rc = ctlcli_open(o) < 0 ? -EIO : ctlcli_call(o, "POST", path, body, reply);
	json_decref(body);
	return rc;
}

static void print_preempt(json_t *r)
{
	printf("node %lld: interruption notice given; reclaimed at %s (in %.1f s)\n",
	       (long long)ctlcli_int(r, "node", 0), ctlcli_str(r, "notice_at", "?"),
	       json_number_value(json_object_get(r, "lead_s")));
}

static void print_outage(json_t *r)
{
	char d[32];
	double for_s = json_number_value(json_object_get(r, "for_s"));

	if (sr_dur_format((int64_t)(for_s * 1e9), d, sizeof d) < 0)
		snprintf(d, sizeof d, "%.0fs", for_s);
	printf("pool %lld (%s): no spot capacity for %s of cloud time "
	       "(%.1f s real); its spot nodes are reclaimed one at a time\n",
	       (long long)ctlcli_int(r, "pool", 0), ctlcli_str(r, "where", "?"), d,
	       json_number_value(json_object_get(r, "real_s")));
}

/* `spotrun cloud preempt|outage` after the verb. */
static int run(const char *sub, int argc, char **argv)
{
	bool pre = !strcmp(sub, "preempt");
	struct ctlcli o = { .cmd = "cloud" };
	struct cli_opts p = {
		.cmd = "cloud", .sub = sub, .defs = pre ? preempt_defs : outage_defs,
		.more = ctlcli_common_defs, .usage = usage, .flags = CLI_OPT_JSON,
		.max_operands = 1,
	};
	double lead_s = 0, for_s = -1;
	json_t *body, *reply = NULL;
	char *end = NULL;
	int c, rc;

	while ((c = cli_opts_next(&p, argc, argv)) > 0) {
		if (ctlcli_common_opt(&o, c, p.arg))
			continue;
		rc = dur_s(&p, c == OPT_LEAD ? &lead_s : &for_s);
		if (rc)
			return rc;
	}
	if (c < 0)
		return p.status;
	o.json = p.json;
	if (!p.n_operands)
		return cli_opts_error(&p, pre ? "which node? (a node id: spotrun "
				      "nodes)" : "which pool? (a number or "
				      "cloud/region/zone/type)");
	if (pre) {
		long long id;

		errno = 0;
		id = strtoll(p.operand[0], &end, 10);
		if (errno || end == p.operand[0] || *end || id <= 0)
			return cli_opts_error(&p, "'%s' is not a node id (a positive "
					      "integer)", p.operand[0]);
		body = json_pack("{s:I,s:f}", "node", (json_int_t)id, "lead_s", lead_s);
		if (body && lead_s <= 0)
			json_object_del(body, "lead_s");
		rc = call(&o, "/v1/cloud/preempt", body, &reply);
	} else {
		long long pool;

		if (for_s <= 0)
			return cli_opts_error(&p, "--for: how long? (> 0: 90s, "
					      "30m, 2h)");
		errno = 0;
		pool = strtoll(p.operand[0], &end, 10);
		if (!errno && end != p.operand[0] && !*end && pool >= 0)
			body = json_pack("{s:I,s:f}", "pool", (json_int_t)pool,
					 "for_s", for_s);
		else
			body = json_pack("{s:s,s:f}", "pool", p.operand[0],
					 "for_s", for_s);
		rc = call(&o, "/v1/cloud/outage", body, &reply);
	}
	if (!rc && o.json)
		ctlcli_print_json(reply);
	else if (!rc)
		(pre ? print_preempt : print_outage)(reply);
	json_decref(reply);
	ctlcli_close(&o);
	return rc ? CLI_FAIL : CLI_OK;
}

static int cmd_cloud(int argc, char **argv)
{
	const char *sub = NULL;
	int rc = cli_opts_verb("cloud", usage, USAGE, argc, argv, &sub, &argc, &argv);

	if (rc >= 0)
		return rc;
	if (strcmp(sub, "preempt") && strcmp(sub, "outage"))
		return cli_usage_error("cloud", "unknown subcommand '%s' (preempt, "
				       "outage)", sub);
	return run(sub, argc, argv);
}

CLI_COMMAND("cloud", "drive the local cloud by hand: preempt a node, a pool outage",
	    cmd_cloud)
