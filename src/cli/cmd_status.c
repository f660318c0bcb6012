/*
 * cmd_status.c - `spotrun status [JOB]`: all jobs as a table, or one job
 * in detail (GET /v1/jobs, GET /v1/jobs/{id}).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ctlcli.h"

static void usage(void)
{
	printf("usage: spotrun status [JOB] [--json] [--api URL] [--state-dir DIR]\n\n"
	       "Show every job (newest first), or one job in detail.\n\n"
	       "  JOB              a job id\n"
	       "  --json           print spotrund's JSON reply as one document\n"
	       CTLCLI_COMMON_HELP);
}

static const char *step_str(json_t *j, char *buf, size_t n)
{
	int64_t s = ctlcli_int(j, "step", -1), t = ctlcli_int(j, "total_steps", -1);

	if (s < 0)
		snprintf(buf, n, "-");
	else if (t > 0)
		snprintf(buf, n, "%lld/%lld", (long long)s, (long long)t);
	else
		snprintf(buf, n, "%lld", (long long)s);
	return buf;
}

static const char *place_str(json_t *j, char *buf, size_t n)
{
	json_t *p = json_object_get(j, "placement");
	char where[128];

	if (!json_is_object(p)) {
		snprintf(buf, n, "-");
		return buf;
	}
	snprintf(buf, n, "%s %s%s", ctlcli_where(p, where, sizeof where),
		 ctlcli_str(p, "instance_type", "?"),
		 json_is_true(json_object_get(p, "spot")) ? " spot" : " on-demand");
	return buf;
}

static const char *red(bool on)
{
	return on && ctlcli_color(stdout) ? "\033[31m" : "";
}

static const char *unred(bool on)
{
	return on && ctlcli_color(stdout) ? "\033[0m" : "";
}

static void print_table(json_t *jobs)
{
	size_t i;
	json_t *j;

	if (json_array_size(jobs) == 0) {
		printf("no jobs (start one with 'spotrun launch JOB.yaml')\n");
		return;
	}
	printf("%-5s %-16s %-13s %-11s %-10s %-8s %-5s %-26s %s\n", "ID", "NAME",
	       "STATE", "STEP", "COST", "PREEMPT", "MOVES", "DEADLINE", "PLACEMENT");
	json_array_foreach(jobs, i, j) {
		char step[40], cost[32], pl[160], dl[64];
		bool alarm;

		ctlcli_deadline(j, dl, sizeof dl, &alarm);
		printf("%-5lld %-16.16s %-13s %-11s %-10s %-8lld %-5lld %s%-26s%s %s\n",
		       (long long)ctlcli_int(j, "id", 0), ctlcli_str(j, "name", "-"),
		       ctlcli_str(j, "state", "?"), step_str(j, step, sizeof step),
		       ctlcli_money(json_object_get(j, "cost_micros"), cost, sizeof cost),
		       (long long)ctlcli_int(j, "preemptions", 0),
		       (long long)ctlcli_int(j, "moves", 0), red(alarm), dl, unred(alarm),
		       place_str(j, pl, sizeof pl));
	}
}

/* Tier 3's recovery point: the newest checkpoint on the node's disk and
 * the newest in the object store (what a lost node resumes from), with
 * the store's copy's age. */
static void print_recovery_point(json_t *j)
{
	json_t *spec = json_object_get(j, "spec");
	const char *uri = json_string_value(json_object_get(json_object_get(
		json_object_get(spec, "spotrun"), "checkpoint"), "uri"));
	json_t *age = json_object_get(j, "ckpt_store_age_s");
	int64_t local = ctlcli_int(j, "ckpt_local_step", -1);
	int64_t store = ctlcli_int(j, "ckpt_step", -1);
	char b[64];

	if (!uri)
		return;
	printf("  checkpoints  node disk: %s", local >= 0 ? "" : "-");
	if (local >= 0)
		printf("step %lld", (long long)local);
	printf("   object store: ");
	if (store >= 0)
		printf("step %lld", (long long)store);
	else
		printf("none");
	if (json_is_number(age))
		printf(" (saved %s ago)", ctlcli_secs(json_number_value(age), b,
						     sizeof b));
	if (local > store)
		printf("   BEHIND");
	printf("\n  store        %s\n", uri);
}

static void print_job(json_t *j)
{
	char b1[64], b2[64], pl[160];
	json_t *nodes = json_object_get(j, "nodes"), *n, *dl;
	json_t *lg = json_object_get(j, "ledger");
	size_t i;

	printf("job %lld  %s\n", (long long)ctlcli_int(j, "id", 0),
	       ctlcli_str(j, "name", ""));
	printf("  state        %s", ctlcli_str(j, "state", "?"));
	if (ctlcli_str(j, "message", NULL))
		printf("  (%s)", ctlcli_str(j, "message", ""));
	if (ctlcli_int(j, "ckpt_step", -1) >= 0)
		snprintf(b2, sizeof b2, "%lld", (long long)ctlcli_int(j, "ckpt_step", -1));
	else
		snprintf(b2, sizeof b2, "unknown");
	step_str(j, b1, sizeof b1);
	printf("\n  step         %s   last checkpoint %s\n",
	       strcmp(b1, "-") ? b1 : "unknown", b2);
	print_recovery_point(j);
	printf("  placement    %s\n", place_str(j, pl, sizeof pl));
	printf("  cost         %s\n",
	       ctlcli_money(json_object_get(j, "cost_micros"), b1, sizeof b1));
	if (json_is_object(lg)) {
		char b3[32];

		/* the ledger's figures: the same as spotrun cost's */
		printf("  lost work    %s of cloud time, %s (%lld attempt(s))   "
		       "downtime %s\n",
		       ctlcli_secs(ctlcli_num(lg, "lost_work_s", 0), b2, sizeof b2),
		       ctlcli_money(json_object_get(lg, "lost_work_micros"), b1,
				    sizeof b1),
		       (long long)ctlcli_int(lg, "lost_attempts", 0),
		       ctlcli_secs(ctlcli_num(lg, "downtime_s", 0), b3, sizeof b3));
	}
	if (json_is_object(json_object_get(j, "idle")))
		printf("  idle         %s   (%s)\n",
		       ctlcli_money(json_object_get(lg, "idle_cost_micros"), b1,
				    sizeof b1),
		       ctlcli_str(json_object_get(j, "idle"), "rule", "?"));
	printf("  attempt      %lld   restarts %lld/%lld   preemptions %lld   "
	       "moves %lld   recoveries %lld\n",
	       (long long)ctlcli_int(j, "attempt", 0),
	       (long long)ctlcli_int(j, "restarts", 0),
	       (long long)ctlcli_int(j, "max_restarts", 0),
	       (long long)ctlcli_int(j, "preemptions", 0),
	       (long long)ctlcli_int(j, "moves", 0),
	       (long long)ctlcli_int(j, "recoveries", 0));
	dl = json_object_get(j, "sim_deadline_s");
	printf("  cloud time   %s elapsed",
	       ctlcli_secs(ctlcli_num(j, "sim_elapsed_s", -1), b1, sizeof b1));
	if (json_is_number(dl))
		printf(" of a %s deadline", ctlcli_secs(json_number_value(dl), b2,
						       sizeof b2));
	printf("\n");
	if (json_is_object(json_object_get(j, "deadline"))) {
		bool alarm;

		ctlcli_deadline(j, b1, sizeof b1, &alarm);
		printf("  deadline     %s%s%s  (%s)\n", red(alarm), b1, unred(alarm),
		       ctlcli_str(json_object_get(j, "deadline"), "at", "?"));
	}
	if (json_is_integer(json_object_get(j, "exit_code")))
		printf("  exit code    %lld\n", (long long)ctlcli_int(j, "exit_code", 0));
	printf("  created      %s\n", ctlcli_str(j, "created_at", "-"));
	if (json_array_size(nodes) == 0)
		return;
	printf("  nodes:\n");
	json_array_foreach(nodes, i, n) {
		char rank[24];

		if (json_is_true(json_object_get(n, "spare")))
			snprintf(rank, sizeof rank, "spare");
		else
			snprintf(rank, sizeof rank, "%lld",
				 (long long)ctlcli_int(n, "rank", 0));
		printf("    node %-4lld rank %-3s %-10s %s %s%s  addr %s  heartbeat %s\n",
		       (long long)ctlcli_int(n, "id", 0), rank,
		       ctlcli_str(n, "state", "?"),
		       ctlcli_where(n, pl, sizeof pl),
		       ctlcli_str(n, "instance_type", "?"),
		       json_is_true(json_object_get(n, "spot")) ? " spot" : "",
		       ctlcli_str(n, "addr", "-"),
		       ctlcli_age(ctlcli_str(n, "last_heartbeat_at", NULL), b1,
				  sizeof b1));
	}
}

static int cmd_status(int argc, char **argv)
{
	struct ctlcli o = { .cmd = "status" };
	json_t *reply = NULL;
	char path[64];
	int64_t id = 0;
	int rc;

	rc = ctlcli_parse(&o, argc, argv, CTLCLI_JOB_OPTIONAL, usage, NULL, NULL, NULL);
	if (rc >= 0)
		return rc;
	id = o.job;
	if (ctlcli_open(&o) < 0)
		return CLI_FAIL;
	if (id)
		snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
	else
		snprintf(path, sizeof path, "/v1/jobs?limit=1000");
	rc = ctlcli_call(&o, "GET", path, NULL, &reply);
	if (rc == 0) {
		if (o.json)
			ctlcli_print_json(reply);
		else if (id)
			print_job(json_object_get(reply, "job"));
		else
			print_table(json_object_get(reply, "jobs"));
	}
	json_decref(reply);
	ctlcli_close(&o);
	return rc < 0 ? CLI_FAIL : CLI_OK;
}

CLI_COMMAND("status", "show jobs, or one job in detail", cmd_status)
