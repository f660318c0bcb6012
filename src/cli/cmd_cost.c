/*
 * cmd_cost.c - `spotrun cost`: what was spent, what was saved, what was
 * wasted idle; and `--focus FILE.csv`, a FOCUS 1.2 export.
 *
 * Reads the ledger straight from spotrund's SQLite database, opened
 * read-only (<state-dir>/spotrun.db), so it works whether or not the
 * daemon is running and never contends with it for the write lock.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common/err.h"
#include "common/money.h"
#include "common/timeutil.h"
#include "ctlclient/ctlclient.h"
#include "finops/focus.h"
#include "finops/report.h"

#define CMD "cost"

static void usage(void)
{
	printf("usage: spotrun cost [--since WHEN] [--until WHEN] [--job JOB]\n"
	       "                    [--by job|cloud|region|pool|day] [--json]\n"
	       "       spotrun cost --focus FILE.csv [--since WHEN] [--until WHEN]\n"
	       "                    [--job JOB] [--account ID] [--account-name NAME]\n"
	       "\n"
	       "Cost, savings and waste from the billing ledger.  Savings are\n"
	       "against each job's planned on-demand cost (its declared work at the\n"
	       "on-demand price; negative, in red, when spot cost more), and\n"
	       "separately against on-demand for the node-hours actually used.\n"
	       "\n"
	       "  --since WHEN     only intervals starting at or after WHEN: an RFC 3339\n"
	       "                   time, a date YYYY-MM-DD (UTC), or a duration ago (24h, 7d)\n"
	       "  --until WHEN     only intervals starting before WHEN\n"
	       "  --job JOB        only this job (an id, or a name: the newest of it)\n"
	       "  --by KEY         group rows by job, cloud, region, pool or day\n"
	       "  --json           print one JSON document (money in *_micros and *_usd)\n"
	       "  --focus FILE     write a FOCUS 1.2 CSV export to FILE instead\n"
	       "                   (- for stdout)\n"
	       "  --account ID     BillingAccountId for the export (default spotrun)\n"
	       "  --account-name N BillingAccountName for the export (default spotrun)\n"
	       "  --state-dir DIR  spotrund's state dir (default $SPOTRUN_STATE_DIR,\n"
	       "                   $XDG_STATE_HOME/spotrun or ~/.local/state/spotrun)\n"
	       "  --db FILE        the database file itself\n");
}

/* <state-dir>/spotrun.db, the state dir found as every command finds it
 * (--state-dir, $SPOTRUN_STATE_DIR, $XDG_STATE_HOME/spotrun,
 * ~/.local/state/spotrun), unless --db names the file. */
static int db_path(const char *db, const char *state_dir, char *buf, size_t n,
		   struct sr_err *e)
{
	char *dir;
	int len;

	if (db) {
		len = snprintf(buf, n, "%s", db);
	} else {
		dir = ctlc_state_dir(state_dir, e);
		if (!dir)
			return e->code;
		len = snprintf(buf, n, "%s/spotrun.db", dir);
		free(dir);
	}
	if (len < 0 || (size_t)len >= n)
		return sr_err_set(e, -ENAMETOOLONG, "database path: too long");
	return 0;
}

static int open_ro(const char *path, sqlite3 **db)
{
	sqlite3_stmt *st = NULL;
	int src, ok;

	*db = NULL;
	if (access(path, R_OK) != 0) {
		fprintf(stderr, "spotrun cost: %s: %s (has spotrund run?)\n", path,
			sr_strerror(-errno));
		return -1;
	}
	src = sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL);
	if (src != SQLITE_OK) {
		fprintf(stderr, "spotrun cost: %s: %s\n", path,
			*db ? sqlite3_errmsg(*db) : sqlite3_errstr(src));
		sqlite3_close(*db);
		*db = NULL;
		return -1;
	}
	sqlite3_busy_timeout(*db, 5000);
	ok = sqlite3_prepare_v2(*db, "SELECT 1 FROM ledger LIMIT 1", -1, &st,
				NULL) == SQLITE_OK;
	sqlite3_finalize(st);
	if (!ok) {
		fprintf(stderr, "spotrun cost: %s: no billing ledger in this "
				"database (%s)\n", path, sqlite3_errmsg(*db));
		sqlite3_close(*db);
		*db = NULL;
		return -1;
	}
	return 0;
}

/* A money cell: "-" when unknown; negative in red on a terminal. */
static void money_cell(char *buf, size_t n, bool known, sr_micros m, bool color)
{
	if (!known)
		snprintf(buf, n, "%11s", "-");
	else if (color && m < 0)
		snprintf(buf, n, "\033[31m%11.4f\033[0m", sr_money_to_usd(m));
	else
		snprintf(buf, n, "%11.4f", sr_money_to_usd(m));
}

/* "12 spotrun-demo" for a job key (the name from the jobs table), else
 * the key itself.  Returns buf or key. */
static const char *job_label(sqlite3 *db, enum finops_by by, const char *key,
			     char *buf, size_t n)
{
	sqlite3_stmt *st = NULL;

	if (by != FINOPS_BY_JOB || !db ||
	    sqlite3_prepare_v2(db, "SELECT name FROM jobs WHERE id=?", -1, &st,
			       NULL) != SQLITE_OK)
		return key;
	sqlite3_bind_int64(st, 1, strtoll(key, NULL, 10));
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		snprintf(buf, n, "%s %s", key, (const char *)sqlite3_column_text(st, 0));
	else
		snprintf(buf, n, "%s", key);
	sqlite3_finalize(st);
	return buf;
}

/* --job NAME: the newest job of that name; 0 if none. */
static int64_t job_by_name(sqlite3 *db, const char *name)
{
	sqlite3_stmt *st = NULL;
	int64_t id = 0;

	if (sqlite3_prepare_v2(db, "SELECT id FROM jobs WHERE name=? ORDER BY id DESC"
			       " LIMIT 1", -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return id;
}

static void print_table(sqlite3 *db, const struct finops_report *r,
			const struct finops_filter *f)
{
	char since[40] = "the beginning";
	bool color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");

	if (f->since_ns > 0)
		sr_time_format_rfc3339(f->since_ns, 0, since, sizeof since);
	printf("cost since %s, by %s (USD)\n\n", since, finops_by_name(r->by));
	printf("%-34s %11s %11s %11s %7s %11s %11s %11s %11s %11s %8s\n", "KEY",
	       "COST", "PLANNED-OD", "SAVED", "SAVED%", "WASTE", "LOST-WORK",
	       "IDLE-COST", "OD-FOR-USED", "SAVED-USED", "PREEMPT");
	for (size_t i = 0; i <= r->ngroups; i++) {
		const struct finops_totals *t = i < r->ngroups ? &r->groups[i].t : &r->total;
		char label[256];
		const char *key = i < r->ngroups ? job_label(db, r->by, r->groups[i].key,
							     label, sizeof label)
						 : "TOTAL";
		bool planned = t->plans > 0 && t->planned_od_cost > 0;
		char plan[32], saved[48], pct[40], used[48];

		if (r->by == FINOPS_BY_TOTAL && i < r->ngroups)
			continue;
		money_cell(plan, sizeof plan, planned, t->planned_od_cost, false);
		money_cell(saved, sizeof saved, planned, t->savings_vs_plan, color);
		money_cell(used, sizeof used, true, t->savings_vs_list, color);
		if (!planned)
			snprintf(pct, sizeof pct, "%7s", "-");
		else
			snprintf(pct, sizeof pct, "%s%6.1f%%%s",
				 color && t->savings_vs_plan < 0 ? "\033[31m" : "",
				 100.0 * (double)t->savings_vs_plan /
				 (double)t->planned_od_cost,
				 color && t->savings_vs_plan < 0 ? "\033[0m" : "");
		printf("%-34.34s %11.4f %s %s %s %11.4f %11.4f %11.4f %11.4f %s "
		       "%8lld\n", key, sr_money_to_usd(t->cost), plan, saved, pct,
		       sr_money_to_usd(t->waste_cost),
		       sr_money_to_usd(t->lost_work_cost),
		       sr_money_to_usd(t->idle_cost), sr_money_to_usd(t->list_cost),
		       used, (long long)t->preemptions);
	}
	printf("\nSAVED: against the planned on-demand cost (each job's declared "
	       "work at the on-demand\nprice); negative = it cost more than "
	       "all-on-demand.  SAVED-USED: against on-demand\nfor the node-hours "
	       "actually used (waste adds hours, so it flatters).  WASTE =\n"
	       "LOST-WORK + IDLE-COST (work redone after preemptions and moves; "
	       "nodes booting,\nrestoring or idle).\n");
}

static int cmd_cost(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "job", required_argument, NULL, 'j' },
		{ "by", required_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'J' },
		{ "focus", required_argument, NULL, 'f' },
		{ "account", required_argument, NULL, 'a' },
		{ "account-name", required_argument, NULL, 'n' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ "db", required_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	struct finops_filter f = { 0 };
	struct finops_focus_opts fo = { NULL, NULL };
	struct finops_report rep = { 0 };
	enum finops_by by = FINOPS_BY_TOTAL;
	const char *focus = NULL, *state_dir = NULL, *dbfile = NULL, *job_name = NULL;
	char path[4096], *end;
	sqlite3 *db = NULL;
	struct sr_err e;
	int json = 0, c, rc = CLI_FAIL;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage();
			return CLI_OK;
		case 's':
		case 'u':
			if (finops_parse_when(optarg, sr_time_real_ns(),
					      c == 's' ? &f.since_ns : &f.until_ns))
				return cli_usage_error(CMD, "--%s: '%s' is not an RFC 3339 "
						       "time, a date or a duration",
						       c == 's' ? "since" : "until", optarg);
			break;
		case 'j':
			f.job_id = strtoll(optarg, &end, 10);
			if (*end || end == optarg)
				job_name = optarg; /* a name: looked up once open */
			else if (f.job_id <= 0)
				return cli_usage_error(CMD, "--job: '%s' is not a job id",
						       optarg);
			break;
		case 'b':
			if (finops_by_parse(optarg, &by) || by == FINOPS_BY_TOTAL)
				return cli_usage_error(CMD, "--by: '%s' is not one of job, "
						       "cloud, region, pool, day", optarg);
			break;
		case 'J':
			json = 1;
			break;
		case 'f':
			focus = optarg;
			break;
		case 'a':
			fo.billing_account_id = optarg;
			break;
		case 'n':
			fo.billing_account_name = optarg;
			break;
		case 'S':
			state_dir = optarg;
			break;
		case 'D':
			dbfile = optarg;
			break;
		default:
			return cli_usage_error(CMD, "unknown or incomplete argument '%s'",
					       argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	if (focus && (json || by != FINOPS_BY_TOTAL))
		return cli_usage_error(CMD, "--focus: cannot be combined with %s",
				       json ? "--json" : "--by");
	if (f.until_ns && f.until_ns <= f.since_ns)
		return cli_usage_error(CMD, "--until: not after --since");
	if (db_path(dbfile, state_dir, path, sizeof path, &e)) {
		fprintf(stderr, "spotrun cost: %s\n", e.msg);
		return CLI_FAIL;
	}
	if (open_ro(path, &db))
		return CLI_FAIL;
	if (job_name) {
		f.job_id = job_by_name(db, job_name);
		if (f.job_id <= 0) {
			fprintf(stderr, "spotrun cost: no job named '%s'\n", job_name);
			goto out;
		}
	}
	if (focus) {
		size_t n = 0;

		/* "-" is stdout, as for most Unix tools */
		if (!strcmp(focus, "-") ? finops_focus_write(db, &f, &fo, stdout, &n, &e) ||
					  fflush(stdout)
					: finops_focus_export(db, &f, &fo, focus, &n, &e)) {
			fprintf(stderr, "spotrun cost: %s\n", sr_err_str(&e, e.code));
			goto out;
		}
		fprintf(stderr, "spotrun cost: wrote %zu FOCUS rows to %s\n", n,
			strcmp(focus, "-") ? focus : "stdout");
		rc = CLI_OK;
		goto out;
	}
	if (finops_report_build(db, &f, by, &rep, &e)) {
		fprintf(stderr, "spotrun cost: %s\n", sr_err_str(&e, e.code));
		goto out;
	}
	if (json) {
		json_t *j = finops_report_json(&rep, &f);
		char *s = j ? json_dumps(j, JSON_SORT_KEYS | JSON_REAL_PRECISION(12)) : NULL;

		json_decref(j);
		if (!s) {
			fprintf(stderr, "spotrun cost: out of memory\n");
			goto out;
		}
		puts(s);
		free(s);
	} else {
		print_table(db, &rep, &f);
	}
	rc = CLI_OK;
out:
	finops_report_free(&rep);
	sqlite3_close(db);
	return rc;
}

CLI_COMMAND("cost", "cost, savings and idle waste; FOCUS export", cmd_cost)
