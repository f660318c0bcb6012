/*
 * cmd_cost.c - `spotrun cost`: what was spent, what was saved, what was
 * wasted idle; and `--focus FILE.csv`, a FOCUS 1.3 export (its Cost and
 * Usage dataset in FILE.csv, the Contract Commitment dataset in
 * FILE-contract-commitment.csv, the metadata in FILE-metadata.json), or
 * 1.2 with --focus-version 1.2.
 *
 * Asks spotrund's API (GET /v1/cost, GET /v1/cost/focus), like every
 * other command: the ledger lives in the daemon's store (SQLite or
 * PostgreSQL, docs/store.md), which the CLI never opens.  When the daemon
 * is not running, the command says so and how to start it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/timeutil.h"
#include "ctlcli.h"
#include "finops/report.h"

#define CMD "cost"

static void usage(void)
{
	printf("usage: spotrun cost [--since WHEN] [--until WHEN] [--job JOB]\n"
	       "                    [--by KEY] [--json]\n"
	       "       spotrun cost --focus FILE.csv [--since WHEN] [--until WHEN]\n"
	       "                    [--job JOB] [--account ID] [--account-name NAME]\n"
	       "                    [--focus-version 1.3|1.2]\n"
	       "       spotrun cost reconcile BILL.csv... [--json]   (see its --help)\n"
	       "\n"
	       "Cost, savings and waste from the billing ledger, as spotrund's API\n"
	       "serves them (GET /v1/cost; the daemon must be running).  SAVED is\n"
	       "against on-demand for the node-hours actually used; VS-PLAN, a second\n"
	       "line, against each finished job's planned on-demand cost (its declared\n"
	       "work at the on-demand price; negative, in red, when spot cost more).\n"
	       "A FAILED or CANCELLED job's cost is waste, never a saving.\n"
	       "\n"
	       "  --since WHEN     only intervals starting at or after WHEN: an RFC 3339\n"
	       "                   time, a date YYYY-MM-DD (UTC), or a duration ago (24h, 7d)\n"
	       "  --until WHEN     only intervals starting before WHEN\n"
	       "  --job JOB        only this job (an id, or a name: the newest of it)\n"
	       "  --by KEY         group rows by job, cloud, region, pool, day, team,\n"
	       "                   project or cost_center (the job's labels)\n"
	       "  --json           print one JSON document (money in *_micros and *_usd)\n"
	       "  --focus FILE     write a FOCUS 1.3 export instead: the Cost and Usage\n"
	       "                   dataset to FILE (- for stdout), the Contract\n"
	       "                   Commitment dataset to FILE-contract-commitment.csv\n"
	       "                   and the metadata to FILE-metadata.json (FILE's\n"
	       "                   .csv taken off first)\n"
	       "  --focus-version V  1.3 (default) or 1.2 (one dataset, FILE only)\n"
	       "  --account ID     BillingAccountId for the export (default spotrun)\n"
	       "  --account-name N BillingAccountName for the export (default spotrun)\n"
	       CTLCLI_COMMON_HELP);
}

struct cost_opts {
	const char *since, *until, *focus, *account, *account_name, *job_ref;
	const char *version;
	enum finops_by by;
	int64_t job;
};

enum { OPT_SINCE = CLI_KEY_LONG, OPT_UNTIL, OPT_JOB, OPT_BY, OPT_FOCUS,
       OPT_ACCOUNT, OPT_ACCOUNT_NAME, OPT_FOCUS_VERSION };

static const struct cli_optdef cost_defs[] = {
	{ "since", OPT_SINCE, CLI_ARG },
	{ "until", OPT_UNTIL, CLI_ARG },
	{ "job", OPT_JOB, CLI_ARG },
	{ "by", OPT_BY, CLI_ARG },
	{ "focus", OPT_FOCUS, CLI_ARG },
	{ "account", OPT_ACCOUNT, CLI_ARG },
	{ "account-name", OPT_ACCOUNT_NAME, CLI_ARG },
	{ "focus-version", OPT_FOCUS_VERSION, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static int cost_opt(struct ctlcli *o, void *ud, const struct cli_opts *p, int key)
{
	struct cost_opts *co = ud;
	const char *v = p->arg;
	int64_t ns;

	switch (key) {
	case OPT_SINCE:
	case OPT_UNTIL:
		if (finops_parse_when(v, sr_time_real_ns(), &ns))
			return cli_opts_error(p, "%s: '%s' is not an RFC 3339 time, "
					      "a date or a duration", p->name, v);
		*(key == OPT_SINCE ? &co->since : &co->until) = v;
		break;
	case OPT_JOB:
		co->job_ref = v; /* an id is checked here, a name looked up later */
		if (strspn(v, "0123456789") == strlen(v) &&
		    ctlcli_job_id(o, v, &co->job) < 0)
			return CLI_USAGE;
		break;
	case OPT_BY:
		if (finops_by_parse(v, &co->by) || co->by == FINOPS_BY_TOTAL)
			return cli_opts_error(p, "%s: '%s' is not one of job, cloud, "
					      "region, pool, day, team, project, "
					      "cost_center", p->name, v);
		break;
	case OPT_FOCUS:
		co->focus = v;
		break;
	case OPT_ACCOUNT:
		co->account = v;
		break;
	case OPT_FOCUS_VERSION:
		if (strcmp(v, "1.3") && strcmp(v, "1.2"))
			return cli_opts_error(p, "%s: '%s' is not 1.3 or 1.2",
					      p->name, v);
		co->version = v;
		break;
	default:
		co->account_name = v;
		break;
	}
	return 0;
}

/* Append "&key=escaped(v)" to path when v is set. */
static void add_query(char *path, size_t n, const char *key, const char *v)
{
	char esc[400];
	size_t l = strlen(path);

	if (!v)
		return;
	ctlcli_query_escape(v, esc, sizeof esc);
	snprintf(path + l, n - l, "%s%s=%s", strchr(path, '?') ? "&" : "?", key, esc);
}

/* "$1.23" right-aligned in 11 columns ("-" when absent); red when
 * negative and color.  Tables show cents; --json keeps the micro-dollars. */
static void money_cell(char *buf, size_t n, json_t *micros, bool color)
{
	char m[32];
	bool neg = json_is_integer(micros) && json_integer_value(micros) < 0;

	ctlcli_money(micros, m, sizeof m);
	snprintf(buf, n, "%s%11s%s", color && neg ? "\033[31m" : "", m,
		 color && neg ? "\033[0m" : "");
}

/* "12 name" for a job key (names from GET /v1/jobs), else the key. */
static const char *job_label(json_t *jobs, const char *key, char *buf, size_t n)
{
	size_t i;
	json_t *j;

	json_array_foreach(jobs, i, j) {
		char id[24];

		snprintf(id, sizeof id, "%lld", (long long)ctlcli_int(j, "id", 0));
		if (!strcmp(id, key)) {
			snprintf(buf, n, "%s %s", key, ctlcli_str(j, "name", ""));
			return buf;
		}
	}
	return key;
}

/* SAVED%: a fraction of the report (null = no baseline) as "12.3%". */
static void pct_cell(char *buf, size_t n, json_t *frac, bool color)
{
	double f = json_number_value(frac);

	if (!json_is_number(frac))
		snprintf(buf, n, "%7s", "-");
	else
		snprintf(buf, n, "%s%6.1f%%%s", color && f < 0 ? "\033[31m" : "",
			 100.0 * f, color && f < 0 ? "\033[0m" : "");
}

/* --by team|project|cost_center: who pays, with the shared costs split
 * over the groups (docs/finops.md "Shared costs"). */
static void print_chargeback(json_t *rep, bool color)
{
	json_t *groups = json_object_get(rep, "groups");
	size_t ng = json_array_size(groups);
	char cell[4][48];

	printf("cost since %s, by %s (USD); shared costs split %s\n\n",
	       ctlcli_str(rep, "since", "the beginning"), ctlcli_str(rep, "by", ""),
	       !strcmp(ctlcli_str(rep, "shared_split", ""), "even") ?
	       "evenly between teams" : "by GPU-hours");
	printf("%-34s %11s %11s %11s %9s %11s\n", "KEY", "COST", "SHARED",
	       "ALLOCATED", "GPU-H", "SAVED");
	for (size_t i = 0; i <= ng; i++) {
		json_t *t = i < ng ? json_array_get(groups, i) :
			    json_object_get(rep, "total");

		money_cell(cell[0], sizeof cell[0], json_object_get(t, "cost_micros"),
			   false);
		money_cell(cell[1], sizeof cell[1],
			   json_object_get(t, "shared_cost_micros"), false);
		money_cell(cell[2], sizeof cell[2],
			   json_object_get(t, "allocated_cost_micros"), false);
		money_cell(cell[3], sizeof cell[3],
			   json_object_get(t, "savings_vs_list_micros"), color);
		printf("%-34.34s %s %s %s %9.1f %s\n", i < ng ?
		       ctlcli_str(t, "key", "") : "TOTAL", cell[0], cell[1], cell[2],
		       json_number_value(json_object_get(t, "gpu_hours")), cell[3]);
	}
	printf("\nCOST: what the group's jobs were billed.  SHARED: its part of "
	       "the costs no\njob bought alone (the control plane, idle reserved "
	       "capacity; finops.json),\nsplit by GPU-hours or evenly.  ALLOCATED "
	       "= COST + SHARED: what to charge back.\n'unassigned': jobs without "
	       "the label, and nodes of no job.\n");
}

/* Committed capacity (a Slurm partition, finops.json commitments):
 * what the jobs used of it (Committed) and what stayed idle (waste). */
static void print_committed(json_t *c)
{
	json_t *pools = json_object_get(c, "pools");
	char used[32], idle[32];

	if (!json_array_size(pools))
		return;
	ctlcli_money(json_object_get(c, "idle_cost_micros"), idle, sizeof idle);
	printf("\nCOMMITTED capacity (paid for whether used or not; its time is "
	       "billed as\nCommitted; idle reserved %s is waste, allocated to the "
	       "jobs as SHARED):\n", idle);
	for (size_t i = 0; i < json_array_size(pools); i++) {
		json_t *p = json_array_get(pools, i);

		ctlcli_money(json_object_get(p, "used_cost_micros"), used,
			     sizeof used);
		ctlcli_money(json_object_get(p, "idle_cost_micros"), idle,
			     sizeof idle);
		printf("  %s (%s %s/%s, %lld node(s)): used %.3f node-h (%s), "
		       "idle %.3f node-h = %.3f GPU-h (%s)\n",
		       ctlcli_str(p, "commitment", ""), ctlcli_str(p, "provider", ""),
		       ctlcli_str(p, "region", ""), ctlcli_str(p, "instance_type", ""),
		       (long long)ctlcli_int(p, "count", 0),
		       json_number_value(json_object_get(p, "used_hours")), used,
		       json_number_value(json_object_get(p, "idle_hours")),
		       json_number_value(json_object_get(p, "idle_gpu_hours")), idle);
	}
}

static void print_table(json_t *rep, json_t *jobs)
{
	bool color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
	json_t *groups = json_object_get(rep, "groups");
	const char *by = ctlcli_str(rep, "by", "total");
	size_t ng = json_array_size(groups);

	if (!strcmp(by, "team") || !strcmp(by, "project") ||
	    !strcmp(by, "cost_center")) {
		print_chargeback(rep, color);
		return;
	}
	printf("cost since %s, by %s (USD)\n\n",
	       ctlcli_str(rep, "since", "the beginning"), by);
	static const struct { const char *head, *key; bool signed_; } cols[] = {
		{ "COST", "cost_micros", false },
		{ "OD-FOR-USED", "list_cost_micros", false },
		{ "SAVED", "savings_vs_list_micros", true },
		{ "SAVED%", "savings_vs_list_fraction", true },
		{ "PLANNED-OD", "planned_od_cost_micros", false },
		{ "VS-PLAN", "savings_vs_plan_micros", true },
		{ "WASTE", "waste_cost_micros", false },
		{ "FAILED", "failed_cost_micros", false },
		{ "LOST-WORK", "lost_work_cost_micros", false },
		{ "IDLE-COST", "idle_cost_micros", false },
	};
	const size_t ncols = sizeof cols / sizeof cols[0];

	printf("%-34s", "KEY");
	for (size_t k = 0; k < ncols; k++)
		printf(" %*s", strchr(cols[k].head, '%') ? 7 : 11, cols[k].head);
	printf(" %8s\n", "PREEMPT");
	for (size_t i = 0; i <= ng; i++) {
		json_t *t = i < ng ? json_array_get(groups, i) :
			    json_object_get(rep, "total");
		char label[256], cell[48];
		const char *key = "TOTAL";

		if (i < ng && !strcmp(by, "total"))
			continue;
		if (i < ng) {
			key = ctlcli_str(t, "key", "");
			if (!strcmp(by, "job"))
				key = job_label(jobs, key, label, sizeof label);
		}
		printf("%-34.34s", key);
		for (size_t k = 0; k < ncols; k++) {
			json_t *v = json_object_get(t, cols[k].key);
			bool red = color && cols[k].signed_;

			if (strchr(cols[k].head, '%'))
				pct_cell(cell, sizeof cell, v, red);
			else
				money_cell(cell, sizeof cell, v, red);
			printf(" %s", cell);
		}
		printf(" %8lld\n", (long long)ctlcli_int(t, "preemptions", 0));
	}
	if (json_is_integer(json_object_get(json_object_get(rep, "total"),
					    "billed_micros"))) {
		char b[32], est[32];
		json_t *t = json_object_get(rep, "total");

		ctlcli_money(json_object_get(t, "billed_micros"), b, sizeof b);
		ctlcli_money(json_object_get(t, "billed_estimate_micros"), est,
			     sizeof est);
		printf("\nBILLED: %s by the cloud's bill where one was applied "
		       "(spotrun cost reconcile --apply), against spotrun's estimate "
		       "%s for the same job-days.\n", b, est);
	}
	if (ctlcli_int(json_object_get(rep, "total"), "spare_cost_micros", 0) > 0) {
		char sp[32];
		json_t *t = json_object_get(rep, "total");

		ctlcli_money(json_object_get(t, "spare_cost_micros"), sp, sizeof sp);
		printf("\nSPARES: %s for %.3f node-h of warm spares (spotrun.spares: "
		       "nodes kept booted\nbeside a gang to take a lost rank's "
		       "place), part of COST, not of IDLE-COST.\n", sp,
		       json_number_value(json_object_get(t, "spare_hours")));
	}
	printf("\nSAVED: against on-demand for the node-hours actually used, by "
	       "running and\nSUCCEEDED jobs.  A FAILED or CANCELLED job saves "
	       "nothing: all of its cost is\nwaste (FAILED).  VS-PLAN: against "
	       "each SUCCEEDED job's planned on-demand cost\n(its declared work "
	       "at the on-demand price), for the node-hours each group\nserved; "
	       "negative = it cost more than all-on-demand.  WASTE = FAILED +\n"
	       "LOST-WORK + IDLE-COST (work redone after preemptions and moves; "
	       "nodes booting,\nrestoring or idle).\n");
	printf("IDLE-COST: %s.\n", ctlcli_str(rep, "idle_rule", "?"));
	print_committed(json_object_get(rep, "committed"));
}

/* The FOCUS CSV from GET /v1/cost/focus: to stdout for "-", else written
 * durably (temporary file, fsync, rename). */
static int write_focus(struct ctlcli *o, const char *path, const char *file,
		       const char *what)
{
	struct sr_err e = { 0 };
	char *csv = NULL;
	size_t len = 0, rows = 0;
	int rc;

	rc = ctlc_get_text(o->c, path, strstr(path, "dataset=metadata") ?
			   "application/json" : "text/csv", &csv, &len, &e);
	if (rc) {
		fprintf(stderr, "spotrun %s: %s\n", CMD, sr_err_str(&e, rc));
		return CLI_FAIL;
	}
	/* records end with CRLF (RFC 4180); the first is the header */
	for (const char *p = csv; (p = strstr(p, "\r\n")) != NULL; p += 2)
		rows++;
	rows = rows ? rows - 1 : 0;
	if (!strcmp(file, "-")) {
		rc = fwrite(csv, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : -EIO;
		if (rc)
			sr_err_set(&e, rc, "stdout: write failed");
	} else {
		rc = sr_fs_write_atomic(file, csv, len, 0644, &e);
	}
	free(csv);
	if (rc) {
		fprintf(stderr, "spotrun %s: %s\n", CMD, sr_err_str(&e, rc));
		return CLI_FAIL;
	}
	if (strcmp(what, "metadata"))
		fprintf(stderr, "spotrun %s: wrote %zu FOCUS rows to %s (%s)\n",
			CMD, rows, strcmp(file, "-") ? file : "stdout", what);
	else
		fprintf(stderr, "spotrun %s: wrote the FOCUS metadata to %s\n", CMD,
			file);
	return CLI_OK;
}

/* FOCUS 1.3: the three datasets (FILE, FILE-contract-commitment.csv,
 * FILE-metadata.json; only the first for "-"), or 1.2's one. */
static int focus_all(struct ctlcli *o, const char *path, const char *file,
		     const char *version)
{
	static const struct { const char *ds, *suffix, *what; } sets[] = {
		{ "contract_commitment", "-contract-commitment.csv",
		  "Contract Commitment" },
		{ "metadata", "-metadata.json", "metadata" },
	};
	char p[1600], stem[1200], out[1300];
	size_t n = strlen(file);
	int rc;

	if (version && !strcmp(version, "1.2")) {
		snprintf(p, sizeof p, "%s%sversion=1.2", path,
			 strchr(path, '?') ? "&" : "?");
		return write_focus(o, p, file, "1.2 Cost and Usage");
	}
	rc = write_focus(o, path, file, "1.3 Cost and Usage");
	if (rc != CLI_OK || !strcmp(file, "-"))
		return rc;
	snprintf(stem, sizeof stem, "%.*s", (int)(n > 4 &&
		 !strcmp(file + n - 4, ".csv") ? n - 4 : n), file);
	for (size_t i = 0; rc == CLI_OK && i < sizeof sets / sizeof sets[0]; i++) {
		snprintf(p, sizeof p, "%s%sdataset=%s", path,
			 strchr(path, '?') ? "&" : "?", sets[i].ds);
		snprintf(out, sizeof out, "%s%s", stem, sets[i].suffix);
		rc = write_focus(o, p, out, sets[i].what);
	}
	return rc;
}

int cost_reconcile(int argc, char **argv); /* cost_reconcile.c */

static int cmd_cost(int argc, char **argv)
{
	struct ctlcli o = { .cmd = CMD };
	struct cost_opts co = { .by = FINOPS_BY_TOTAL };
	json_t *rep = NULL, *jobs = NULL;
	char path[1400], id[24];
	int rc;

	if (argc > 1 && !strcmp(argv[1], "reconcile"))
		return cost_reconcile(argc - 1, argv + 1);
	rc = ctlcli_parse(&o, argc, argv, CTLCLI_NO_JOB, usage, cost_defs,
			  cost_opt, &co);
	if (rc >= 0)
		goto out;
	rc = CLI_USAGE;
	if (co.focus && (o.json || co.by != FINOPS_BY_TOTAL)) {
		cli_usage_error(CMD, "--focus: cannot be combined with %s",
				o.json ? "--json" : "--by");
		goto out;
	}
	if (!co.focus && (co.account || co.account_name || co.version)) {
		cli_usage_error(CMD, "--account, --account-name and --focus-version "
				"go with --focus");
		goto out;
	}
	rc = CLI_FAIL;
	if (ctlcli_open(&o) < 0)
		goto out;
	if (co.job_ref) {
		int r = ctlcli_job_ref(&o, co.job_ref, &co.job);

		if (r < 0) {
			rc = r == -2 ? CLI_USAGE : CLI_FAIL;
			goto out;
		}
	}
	snprintf(path, sizeof path, "%s", co.focus ? "/v1/cost/focus" : "/v1/cost");
	add_query(path, sizeof path, "since", co.since);
	add_query(path, sizeof path, "until", co.until);
	if (co.job > 0) {
		snprintf(id, sizeof id, "%lld", (long long)co.job);
		add_query(path, sizeof path, "job", id);
	}
	if (co.focus) {
		add_query(path, sizeof path, "account", co.account);
		add_query(path, sizeof path, "account_name", co.account_name);
		rc = focus_all(&o, path, co.focus, co.version);
		goto out;
	}
	add_query(path, sizeof path, "by", finops_by_name(co.by));
	if (ctlcli_call(&o, "GET", path, NULL, &rep) < 0)
		goto out;
	if (o.json) {
		char *s = json_dumps(rep, JSON_SORT_KEYS | JSON_REAL_PRECISION(12));

		if (!s) {
			fprintf(stderr, "spotrun %s: out of memory\n", CMD);
			goto out;
		}
		puts(s);
		free(s);
	} else {
		if (co.by == FINOPS_BY_JOB &&
		    ctlcli_call(&o, "GET", "/v1/jobs?limit=1000", NULL, &jobs) < 0)
			goto out;
		print_table(rep, json_object_get(jobs, "jobs"));
	}
	rc = CLI_OK;
out:
	json_decref(rep);
	json_decref(jobs);
	ctlcli_close(&o);
	return rc;
}

CLI_COMMAND("cost", "cost, savings and idle waste; FOCUS export", cmd_cost)
