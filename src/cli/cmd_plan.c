/*
 * cmd_plan.c - `spotrun plan JOB.yaml`: rank placements for a job.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cliopt.h"
#include "clijob.h"
#include "common/timeutil.h"
#include "market/plan.h"
#include "plan_peer.h"

static void usage(void)
{
	printf("usage: spotrun plan JOB.yaml [--all] [--limit N] [--work-hours H]\n"
	       "                    [--deadline-hours H] [--data DIR] [--prices MODE]\n"
	       "                    [--config FILE] [--json]\n\n"
	       "Rank every placement of the job (spot, on-demand, reserved) across the\n"
	       "catalog by expected cost, subject to P(meet deadline) >= p_target and the\n"
	       "governance rules of its criticality (docs/market.md).  JOB.yaml may be a\n"
	       "SkyPilot task file (docs/jobs.md); every problem in it is listed at once.\n\n"
	       "  --all              also list infeasible placements (after the feasible ones)\n"
	       "  --limit N          print at most N rows (default 15; 0 = all)\n"
	       "  --work-hours H     compute hours (overrides spotrun.work; needed for a\n"
	       "                     SkyPilot file without a spotrun: block)\n"
	       "  --deadline-hours H deadline in hours from now (overrides spotrun.deadline)\n"
	       "  --data DIR         data directory (default $SPOTRUN_DATA or ./data)\n"
	       "  --prices MODE      auto (default): each cloud's live price feed where\n"
	       "                     its credentials are found (spotrun check), the\n"
	       "                     bundled catalog otherwise; live: fail without a\n"
	       "                     feed; catalog: never ask a feed.  The output says\n"
	       "                     which each cloud's prices came from\n"
	       "  --config FILE      the daemon's configuration (default $SPOTRUN_CONFIG):\n"
	       "                     the regions of its providers: section are priced,\n"
	       "                     and a Slurm cluster it enables is read: its\n"
	       "                     partitions are committed pools with a queue-wait\n"
	       "                     estimate (docs/slurm.md), a critical job's first\n"
	       "  --json             one JSON document on stdout (every placement)\n\n"
	       "A GPU, cloud, region or zone the catalog does not have, or work longer\n"
	       "than the deadline, is an error (exit 2) naming the nearest valid values.\n"
	       "RATE is the spot preemption rate per node per 24 h and its source:\n"
	       "trace (fitted to data/traces), table (data/offerings.csv) or default.\n");
}

static void pct(double v, char *buf, size_t n)
{
	if (isnan(v))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.0f%%", v * 100);
}

/* The plan's warm-spare choice for the first placement (spare.h). */
static void print_spare(const struct plan_spare *s)
{
	if (!s->priced) {
		printf("\nwarm spares: %d (%s)\n", s->keep, s->why);
		return;
	}
	printf("\nwarm spares: %d (%s)\n", s->keep, s->why);
	printf("  a spare: spot %s/%s %s at $%.2f/h, $%.2f over the run's "
	       "expected %.1fh\n", s->o.cloud, s->o.region, s->o.instance_type,
	       sr_money_to_usd(s->price_per_h), sr_money_to_usd(s->cost),
	       s->kept_h);
	printf("  saves %.0f s of boot and setup per recovery x %.2f expected "
	       "= %.2fh of downtime, worth $%.2f at $%.2f/h of delay",
	       s->saved_s, s->recoveries, s->recoveries * s->saved_s / 3600,
	       sr_money_to_usd(s->value), sr_money_to_usd(s->delay_per_h));
	if (isfinite(s->slack_h))
		printf("; deadline slack %.2fh", s->slack_h);
	printf("\n");
}

/* The committed pools planned (a Slurm cluster's partitions): their
 * price and queue estimate, once each. */
static void queue_lines(const struct plan_result *r)
{
	bool head = false;

	for (size_t i = 0; i < r->n; i++) {
		const struct plan_placement *p = &r->items[i];
		char wait[32];

		if (!p->o.committed)
			continue;
		if (!head)
			printf("\ncommitted pools (capacity already paid for%s):\n",
			       r->n && r->items[0].preferred ?
			       "; a critical job takes one first" : "");
		head = true;
		if (p->o.queue_wait_s < 0)
			snprintf(wait, sizeof wait, "unknown");
		else
			snprintf(wait, sizeof wait, "%.1f min",
				 (double)p->o.queue_wait_s / 60);
		printf("  %s %s/%s: $%.2f/h committed, queue wait %s (%s)\n",
		       p->o.cloud, p->o.region, p->o.instance_type,
		       sr_money_to_usd(p->price_per_h), wait, p->o.queue_basis);
	}
}

static void print_table(const struct plan_result *r, const struct jobspec *js,
			int all, long limit)
{
	char dl[32];
	size_t shown = 0, nsrc[CATALOG_HAZARD_TRACE + 1] = { 0 };

	if (isinf(r->deadline_h))
		snprintf(dl, sizeof dl, "none");
	else
		snprintf(dl, sizeof dl, "%.1fh", r->deadline_h);
	printf("job %s: %s:%d x %d node(s), %.1f compute-h, deadline %s, %s, P target %.3f\n",
	       js->name ? js->name : "(unnamed)", js->accel, js->accel_count,
	       js->num_nodes, js->work_h, dl, jobspec_crit_name(js->criticality),
	       js->p_target);
	printf("resume %.2fh per preemption, checkpoint stall %.0fs; %zu feasible of %zu placements\n\n",
	       r->resume_h, r->stall_h * 3600, r->n_feasible, r->n);
	printf("%-4s %-9s %-9s %-16s %-17s %-25s %8s %10s %5s %5s %6s %-13s %5s %7s %s\n",
	       "#", "MODE", "CLOUD", "REGION", "ZONE", "INSTANCE", "$/H",
	       "EXP.COST", "vsOD", "vsRES", "E[PRE]", "RATE/24H", "CKPT", "P(MEET)",
	       "RISK");
	for (size_t i = 0; i < r->n; i++) {
		const struct plan_placement *p = &r->items[i];
		char od[16], rs[16], ck[16], rate[32];

		if (!p->feasible && !all)
			break;
		if (limit > 0 && shown >= (size_t)limit)
			break;
		pct(p->savings_vs_od, od, sizeof od);
		pct(p->savings_vs_reserved, rs, sizeof rs);
		if (p->ckpt_interval_h > 0)
			snprintf(ck, sizeof ck, "%.0fm", p->ckpt_interval_h * 60);
		else
			snprintf(ck, sizeof ck, "-");
		if (p->mode == PLAN_SPOT || p->mode == PLAN_SPOT_FALLBACK) {
			snprintf(rate, sizeof rate, "%.2f %s", p->o.hazard_per_h * 24,
				 catalog_hazard_src_name(p->o.hazard_src));
			if (p->o.hazard_src <= CATALOG_HAZARD_TRACE)
				nsrc[p->o.hazard_src]++;
		} else
			snprintf(rate, sizeof rate, "-");
		printf("%-4zu %-9s %-9s %-16s %-17s %-25s %8.2f %10.2f %5s %5s %6.2f %-13s %5s %7.4f %s%s%s\n",
		       i + 1, p->o.committed ? "committed" : plan_mode_name(p->mode),
		       p->o.cloud, p->o.region,
		       p->o.zone[0] ? p->o.zone : "-", p->o.instance_type,
		       sr_money_to_usd(p->price_per_h),
		       sr_money_to_usd(p->expected_cost), od, rs, p->est.n_preempt,
		       rate, ck, p->p_meet, plan_risk(r, p), p->feasible ? "" : "  ",
		       p->why);
		shown++;
	}
	if (r->n_feasible == 0)
		printf("no feasible placement%s\n", all ? "" : " (use --all to see why)");
	print_spare(&r->spare);
	plan_peer_print(r, js);
	queue_lines(r);
	if (nsrc[CATALOG_HAZARD_TRACE] + nsrc[CATALOG_HAZARD_TABLE] +
	    nsrc[CATALOG_HAZARD_DEFAULT])
		printf("\nspot rates shown: %zu measured (trace: fitted to data/traces, "
		       "with their outages), %zu from data/offerings.csv (table), "
		       "%zu default (no data: %.2f per node per 24 h assumed; their "
		       "cost and p95 are not calibrated)\n",
		       nsrc[CATALOG_HAZARD_TRACE], nsrc[CATALOG_HAZARD_TABLE],
		       nsrc[CATALOG_HAZARD_DEFAULT], CATALOG_DEFAULT_PREEMPT_PER_24H);
}

enum { OPT_ALL = CLI_KEY_LONG, OPT_DATA, OPT_LIMIT, OPT_WORK_HOURS,
       OPT_DEADLINE_HOURS, OPT_PRICES, OPT_CONFIG };

static const struct cli_optdef plan_defs[] = {
	{ "all", OPT_ALL, CLI_NOARG },
	{ "data", OPT_DATA, CLI_ARG },
	{ "limit", OPT_LIMIT, CLI_ARG },
	{ "work-hours", OPT_WORK_HOURS, CLI_ARG },
	{ "deadline-hours", OPT_DEADLINE_HOURS, CLI_ARG },
	{ "prices", OPT_PRICES, CLI_ARG },
	{ "config", OPT_CONFIG, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static int cmd_plan(int argc, char **argv)
{
	struct cli_opts p = {
		.cmd = "plan", .defs = plan_defs, .usage = usage,
		.flags = CLI_OPT_JSON, .max_operands = 1,
	};
	struct catalog cat;
	struct jobspec js;
	struct plan_result res = { 0 };
	struct sr_err err = { 0 };
	const char *data = NULL, *file = NULL, *prices = NULL, *config = NULL;
	struct prov_price_report rep = { 0 };
	double work_h = 0, deadline_h = 0;
	long limit = 15;
	int json, all = 0, c, rc = CLI_FAIL;

	while ((c = cli_opts_next(&p, argc, argv)) > 0) {
		char *end;

		switch (c) {
		case OPT_ALL:
			all = 1;
			break;
		case OPT_DATA:
			data = p.arg;
			break;
		case OPT_PRICES:
			prices = p.arg;
			break;
		case OPT_CONFIG:
			config = p.arg;
			break;
		case OPT_WORK_HOURS:
		case OPT_DEADLINE_HOURS: {
			double *dst = c == OPT_WORK_HOURS ? &work_h : &deadline_h;

			*dst = strtod(p.arg, &end);
			if (*end || end == p.arg || !(*dst > 0) || *dst > 1e6)
				return cli_opts_error(&p, "%s '%s': expected hours",
						      p.name, p.arg);
			break;
		}
		default: /* OPT_LIMIT */
			limit = strtol(p.arg, &end, 10);
			if (*end || end == p.arg || limit < 0)
				return cli_opts_error(&p, "--limit '%s': expected a count",
						      p.arg);
			break;
		}
	}
	if (c < 0)
		return p.status;
	json = p.json;
	file = p.n_operands ? p.operand[0] : NULL;
	if (!file)
		return cli_usage_error("plan", "missing JOB.yaml");
	catalog_init(&cat);
	jobspec_init(&js);
	if (cli_load_job("plan", file, &js)) {
		rc = CLI_FAIL;
		goto out;
	}
	if (work_h > 0)
		js.work_h = work_h;
	if (deadline_h > 0) {
		js.deadline_kind = JOBSPEC_DEADLINE_RELATIVE;
		js.deadline_ns = (int64_t)(deadline_h * 3600e9);
	}
	if (cli_load_catalog("plan", data, &cat))
		goto out;
	c = cli_live_prices("plan", prices, config, NULL, js.num_nodes, &cat,
			    &rep);
	if (c) {
		rc = c == 2 ? CLI_USAGE : CLI_FAIL;
		goto out;
	}
	if (plan_make(&cat, &js, sr_time_real_ns(), &res, &err)) {
		fprintf(stderr, "spotrun plan: %s: %s\n", file, sr_err_str(&err, err.code));
		if (err.code == -EINVAL)
			rc = CLI_USAGE;
		goto out;
	}
	if (plan_peer_check(&res, &js, file))
		goto out;
	if (json) {
		json_t *doc = plan_to_json(&res, &js);
		char *s;

		if (doc)
			json_object_set_new(doc, "price_sources",
					    prov_price_report_json(&rep));
		if (doc && js.peer_replicas > 0)
			json_object_set_new(doc, "peer_copies",
					    plan_peer_json(&res, &js));
		s = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;

		json_decref(doc);
		if (!s) {
			fprintf(stderr, "spotrun plan: out of memory\n");
			goto out;
		}
		printf("%s\n", s);
		free(s);
	} else {
		prov_price_report_print(&rep, stdout);
		print_table(&res, &js, all, limit);
	}
	rc = CLI_OK;
out:
	prov_price_report_free(&rep);
	plan_result_free(&res);
	jobspec_free(&js);
	catalog_free(&cat);
	return rc;
}

CLI_COMMAND("plan", "rank placements of a job by expected cost", cmd_plan)
