/*
 * cost_reconcile.c - `spotrun cost reconcile BILL...`: the cloud's own
 * bill against spotrun's ledger (lib/finops/reconcile.h; docs/finops.md
 * "Matching the bill").
 *
 * The bills are read here, as the user who runs the command; the ledger
 * (GET /v1/cost/focus?version=1.2: cost per node and interval) and the
 * nodes with the clouds' instance ids (GET /v1/nodes?all=1) come from
 * spotrund's API, like every other command.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cliopt.h"
#include "common/csv.h"
#include "common/fsutil.h"
#include "common/timeutil.h"
#include "ctlcli.h"
#include "finops/reconcile.h"

#define CMD "cost"
#define BILL_MAX (256 << 20)

static void usage(void)
{
	printf("usage: spotrun cost reconcile BILL... [--apply] [--json]\n"
	       "\n"
	       "Match the cloud's bill to spotrun's ledger.  BILL: a FOCUS export (AWS,\n"
	       "Azure, GCP and OCI write them), AWS CUR 2.0 (.csv or .csv.gz), the GCP\n"
	       "billing export to BigQuery saved as CSV or JSON, or Azure cost details,\n"
	       "told apart by their columns.  Lines match by resource id (the node's\n"
	       "instance id, or spotrun's node tag the cloud copied to its disks and\n"
	       "traffic) and day.  Prints, per job, day and cloud: the ledger, the bill,\n"
	       "the difference and its parts - price (what the instances were billed\n"
	       "against spotrun's estimate), disk, egress, credit, other - and every\n"
	       "resource spotrun launched but did not record (a LEAK; exit status 3).\n"
	       "\n"
	       "  --apply          keep the bill's figure beside spotrun's estimate for\n"
	       "                   each job, day and cloud: spotrun cost, --json and the\n"
	       "                   dashboard then show both (a later --apply supersedes)\n"
	       "  --json           print one JSON document (money in *_micros)\n"
	       CTLCLI_COMMON_HELP);
}

/* The ledger per node and UTC day, from the 1.2 export: its estimate
 * (x_EstimatedCost; BilledCost is the bill once one was applied). */
static int ledger_of(struct ctlcli *o, struct rec_ledger **out, size_t *n)
{
	static const char *const cols[] = { "x_NodeId", "x_EstimatedCost",
					    "ChargePeriodStart" };
	struct sr_err e = { 0 };
	struct sr_csv r;
	char *csv = NULL;
	size_t len = 0, nf, cap = 0;
	int col[3], line, rc;

	*out = NULL;
	*n = 0;
	rc = ctlc_get_text(o->c, "/v1/cost/focus?version=1.2", "text/csv", &csv,
			   &len, &e);
	if (rc) {
		fprintf(stderr, "spotrun %s: reconcile: %s\n", CMD, sr_err_str(&e, rc));
		return -1;
	}
	sr_csv_open(&r, csv, len, "the ledger");
	rc = sr_csv_header(&r, cols, 3, 0, col, &nf, &e);
	while (!rc && (rc = sr_csv_row(&r, nf, &line, &e)) == 1) {
		int64_t node = strtoll(r.fields[col[0]], NULL, 10), t = 0, day;
		sr_micros cost = 0;
		size_t i;

		rc = 0;
		if (sr_money_parse(r.fields[col[1]], &cost, NULL) ||
		    sr_time_parse_rfc3339(r.fields[col[2]], &t, NULL)) {
			rc = sr_err_set(&e, -SR_EPARSE, "the ledger:%d: bad row", line);
			break;
		}
		day = t / (INT64_C(86400) * SR_NS_PER_SEC);
		for (i = 0; i < *n && ((*out)[i].node != node || (*out)[i].day != day); i++)
			;
		if (i == *n) {
			if (*n == cap) {
				struct rec_ledger *nv = realloc(*out, (cap = cap ? 2 * cap : 64) *
								sizeof *nv);
				if (!nv) {
					rc = sr_err_set(&e, -ENOMEM, "out of memory");
					break;
				}
				*out = nv;
			}
			(*out)[(*n)++] = (struct rec_ledger){ node, day, 0 };
		}
		(*out)[i].cost += cost;
	}
	sr_csv_close(&r);
	free(csv);
	if (rc < 0) {
		fprintf(stderr, "spotrun %s: reconcile: %s\n", CMD, sr_err_str(&e, rc));
		return -1;
	}
	return 0;
}

static int nodes_of(struct ctlcli *o, struct rec_node **out, size_t *n)
{
	json_t *rep = NULL, *arr, *x;
	size_t i;

	*out = NULL;
	*n = 0;
	if (ctlcli_call(o, "GET", "/v1/nodes?all=1", NULL, &rep) < 0)
		return -1;
	arr = json_object_get(rep, "nodes");
	*out = calloc(json_array_size(arr) + 1, sizeof **out);
	if (!*out) {
		json_decref(rep);
		return -1;
	}
	json_array_foreach(arr, i, x) {
		struct rec_node *nd = &(*out)[(*n)++];

		nd->id = ctlcli_int(x, "id", 0);
		nd->job = ctlcli_int(x, "job_id", 0);
		snprintf(nd->provider, sizeof nd->provider, "%s",
			 ctlcli_str(x, "provider", ""));
		snprintf(nd->instance_id, sizeof nd->instance_id, "%s",
			 ctlcli_str(x, "instance_id", ""));
	}
	json_decref(rep);
	return 0;
}

static void usd(char *buf, size_t n, sr_micros m)
{
	long long cents = (llabs(m) + 5000) / 10000;

	snprintf(buf, n, "%s$%lld.%02lld", m < 0 ? "-" : "", cents / 100, cents % 100);
}

static void print_report(const struct rec_report *r)
{
	char a[4][32], ts[40];

	printf("%-6s %-10s %-8s %11s %11s %11s %11s %11s %11s %11s %11s\n", "JOB",
	       "DAY", "CLOUD", "LEDGER", "BILL", "DIFF", "PRICE", "DISK", "EGRESS",
	       "CREDIT", "OTHER");
	for (size_t i = 0; i < r->ncells; i++) {
		const struct rec_cell *c = &r->cells[i];
		sr_micros v[8] = { c->ledger, c->bill, c->bill - c->ledger,
				   c->part[REC_COMPUTE], c->part[REC_DISK],
				   c->part[REC_EGRESS], c->part[REC_CREDIT],
				   c->part[REC_OTHER] };
		char m[8][32];

		sr_time_format_rfc3339(c->day * INT64_C(86400) * SR_NS_PER_SEC, 0, ts,
				       sizeof ts);
		ts[10] = '\0';
		for (int k = 0; k < 8; k++)
			usd(m[k], sizeof m[k], v[k]);
		printf("%-6lld %-10s %-8.8s %11s %11s %11s %11s %11s %11s %11s %11s\n",
		       (long long)c->job, ts, c->provider, m[0], m[1], m[2], m[3],
		       m[4], m[5], m[6], m[7]);
	}
	usd(a[0], sizeof a[0], r->ledger);
	usd(a[1], sizeof a[1], r->bill);
	usd(a[2], sizeof a[2], r->diff);
	usd(a[3], sizeof a[3], r->explained);
	printf("\nledger %s, bill %s (spotrun's lines), difference %s; explained %s:\n",
	       a[0], a[1], a[2], a[3]);
	for (int k = 0; k < REC_NKINDS; k++) {
		usd(a[0], sizeof a[0], r->part[k]);
		printf("  %-7s %11s\n", finops_rec_kind_name(k), a[0]);
	}
	usd(a[0], sizeof a[0], r->leaked);
	printf("  %-7s %11s\n", "leaked", a[0]);
	for (size_t i = 0; i < r->nleaks; i++) {
		usd(a[0], sizeof a[0], r->leaks[i].cost);
		sr_time_format_rfc3339(r->leaks[i].first_ns, 0, ts, sizeof ts);
		printf("LEAK: %s (%s) billed %s from %s: spotrun launched it and has no "
		       "record of it; terminate it in the cloud's console\n",
		       r->leaks[i].resource_id, r->leaks[i].provider, a[0], ts);
	}
	if (r->foreign_lines) {
		usd(a[0], sizeof a[0], r->foreign_cost);
		printf("(%zu bill line(s), %s, are not spotrun's and were left out)\n",
		       r->foreign_lines, a[0]);
	}
}

/* POST /v1/cost/billed: every cell's ledger and bill. */
static int apply(struct ctlcli *o, const struct rec_report *r, const char *src)
{
	json_t *cells = json_array(), *reply = NULL, *body;
	char ts[40];
	int rc;

	for (size_t i = 0; cells && i < r->ncells; i++) {
		const struct rec_cell *c = &r->cells[i];

		sr_time_format_rfc3339(c->day * INT64_C(86400) * SR_NS_PER_SEC, 0, ts,
				       sizeof ts);
		ts[10] = '\0';
		json_array_append_new(cells, json_pack("{s:I,s:s,s:s,s:I,s:I}", "job",
			(json_int_t)c->job, "day", ts, "provider", c->provider,
			"ledger_micros", (json_int_t)c->ledger, "bill_micros",
			(json_int_t)c->bill));
	}
	body = json_pack("{s:s,s:o}", "source", src, "cells", cells);
	if (!body)
		return -ENOMEM;
	rc = ctlcli_call(o, "POST", "/v1/cost/billed", body, &reply); /* not consumed */
	json_decref(body);
	if (!rc)
		fprintf(stderr, "spotrun %s: reconcile: applied the bill to %lld "
			"job-day(s): spotrun cost now shows the billed figure beside "
			"the estimate\n", CMD, (long long)ctlcli_int(reply, "applied", 0));
	json_decref(reply);
	return rc;
}

enum { OPT_APPLY = CLI_KEY_LONG };

static const struct cli_optdef rec_defs[] = {
	{ "apply", OPT_APPLY, CLI_NOARG },
	{ NULL, 0, CLI_NOARG },
};

int cost_reconcile(int argc, char **argv)
{
	struct ctlcli o = { .cmd = CMD };
	struct cli_opts p = {
		.cmd = CMD, .sub = "reconcile", .defs = rec_defs,
		.more = ctlcli_common_defs,
		.usage = usage, .flags = CLI_OPT_JSON, .max_operands = CLI_MAX_OPERANDS,
	};
	struct rec_line *lines = NULL;
	struct rec_node *nodes = NULL;
	struct rec_ledger *ledger = NULL;
	struct rec_report rep = { 0 };
	size_t nlines = 0, nnodes = 0, nledger = 0;
	struct sr_err e = { 0 };
	int c, rc = CLI_FAIL, do_apply = 0;

	while ((c = cli_opts_next(&p, argc, argv)) > 0)
		if (c == OPT_APPLY)
			do_apply = 1;
		else
			ctlcli_common_opt(&o, c, p.arg);
	if (c < 0)
		return p.status;
	o.json = p.json;
	if (!p.n_operands)
		return cli_usage_error(CMD, "reconcile: which bill? (a FOCUS, CUR 2.0, GCP or Azure export)");
	for (int i = 0; i < p.n_operands; i++) {
		char *buf = NULL;
		size_t len = 0, n = 0;
		struct rec_line *v = NULL, *nv;
		int r = sr_fs_read_file(p.operand[i], BILL_MAX, &buf, &len, &e);

		if (!r)
			r = finops_bill_parse(buf, len, p.operand[i], &v, &n, &e);
		free(buf);
		if (r) {
			fprintf(stderr, "spotrun %s: reconcile: %s\n", CMD, sr_err_str(&e, r));
			goto out;
		}
		nv = realloc(lines, (nlines + n + 1) * sizeof *lines);
		if (!nv) {
			free(v);
			goto out;
		}
		lines = nv;
		if (n)
			memcpy(lines + nlines, v, n * sizeof *v);
		nlines += n;
		free(v);
	}
	if (ctlcli_open(&o) < 0 || nodes_of(&o, &nodes, &nnodes) < 0 ||
	    ledger_of(&o, &ledger, &nledger) < 0)
		goto out;
	if (finops_reconcile(nodes, nnodes, ledger, nledger, lines, nlines, &rep, &e)) {
		fprintf(stderr, "spotrun %s: reconcile: %s\n", CMD, sr_err_str(&e, -ENOMEM));
		goto out;
	}
	if (do_apply && apply(&o, &rep, p.operand[0]) < 0)
		goto out;
	if (o.json) {
		json_t *j = finops_reconcile_json(&rep);
		char *s = j ? json_dumps(j, JSON_SORT_KEYS) : NULL;

		json_decref(j);
		if (!s)
			goto out;
		puts(s);
		free(s);
	} else {
		print_report(&rep);
	}
	rc = rep.nleaks ? 3 : CLI_OK;
out:
	finops_reconcile_free(&rep);
	free(lines);
	free(nodes);
	free(ledger);
	ctlcli_close(&o);
	return rc;
}
