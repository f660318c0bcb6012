/*
 * cmd_nodes.c - `spotrun nodes`: the nodes spotrund holds (GET /v1/nodes).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ctlcli.h"

static void usage(void)
{
	printf("usage: spotrun nodes [--all] [--job JOB] [--json] [--api URL]\n"
	       "                     [--state-dir DIR]\n\n"
	       "List live nodes (with --all, terminated and lost ones too).\n\n"
	       "  --all            include nodes that are gone\n"
	       "  --job JOB        only the nodes of this job\n"
	       "  --json           print spotrund's JSON reply as one document\n"
	       CTLCLI_COMMON_HELP);
}

static void print_table(json_t *nodes)
{
	size_t i;
	json_t *n;

	if (json_array_size(nodes) == 0) {
		printf("no nodes\n");
		return;
	}
	printf("%-5s %-5s %-4s %-10s %-6s %-14s %-14s %-5s %-9s %-5s %-15s %s\n",
	       "ID", "JOB", "RANK", "STATE", "CLOUD", "ZONE", "TYPE", "SPOT", "$/H",
	       "CPU", "ADDR", "HEARTBEAT");
	json_array_foreach(nodes, i, n) {
		char price[32], age[40], cpu[16];
		json_t *cu = json_object_get(n, "cpu_util");

		if (json_is_number(cu))
			snprintf(cpu, sizeof cpu, "%.0f%%", json_number_value(cu) * 100);
		else
			snprintf(cpu, sizeof cpu, "-");
		printf("%-5lld %-5lld %-4lld %-10s %-6s %-14s %-14s %-5s %-9s %-5s %-15s "
		       "%s%s%s\n",
		       (long long)ctlcli_int(n, "id", 0),
		       (long long)ctlcli_int(n, "job_id", 0),
		       (long long)ctlcli_int(n, "rank", 0), ctlcli_str(n, "state", "?"),
		       ctlcli_str(n, "cloud", "?"),
		       *ctlcli_str(n, "zone", "") ? ctlcli_str(n, "zone", "") : "-",
		       ctlcli_str(n, "instance_type", "?"),
		       json_is_true(json_object_get(n, "spot")) ? "yes" : "no",
		       ctlcli_money(json_object_get(n, "price_micros_per_hour"), price,
				    sizeof price),
		       cpu, ctlcli_str(n, "addr", "-"),
		       ctlcli_age(ctlcli_str(n, "last_heartbeat_at", NULL), age,
				  sizeof age),
		       ctlcli_str(n, "end_reason", NULL) ? "  ended: " : "",
		       ctlcli_str(n, "end_reason", ""));
	}
}

struct nodes_opts {
	int all;
	const char *job; /* an id or a name, looked up once parsed */
};

enum { OPT_ALL = CLI_KEY_LONG, OPT_JOB };

static const struct cli_optdef nodes_defs[] = {
	{ "all", OPT_ALL, CLI_NOARG },
	{ "job", OPT_JOB, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static int nodes_opt(struct ctlcli *o, void *ud, const struct cli_opts *p, int key)
{
	struct nodes_opts *no = ud;

	(void)o;
	if (key == OPT_ALL)
		no->all = 1;
	else
		no->job = p->arg;
	return 0;
}

static int cmd_nodes(int argc, char **argv)
{
	struct ctlcli o = { .cmd = "nodes" };
	struct nodes_opts no = { 0, NULL };
	json_t *reply = NULL;
	char path[96];
	int64_t job = 0;
	int rc;

	rc = ctlcli_parse(&o, argc, argv, CTLCLI_NO_JOB, usage, nodes_defs,
			  nodes_opt, &no);
	if (rc >= 0)
		return rc;
	rc = no.job ? ctlcli_job_ref(&o, no.job, &job) : 0;
	if (rc < 0) {
		ctlcli_close(&o);
		return rc == -2 ? CLI_USAGE : CLI_FAIL;
	}
	if (ctlcli_open(&o) < 0)
		return CLI_FAIL;
	snprintf(path, sizeof path, "/v1/nodes?all=%d", no.all);
	if (job)
		snprintf(path + strlen(path), sizeof path - strlen(path), "&job=%lld",
			 (long long)job);
	rc = ctlcli_call(&o, "GET", path, NULL, &reply);
	if (rc == 0) {
		if (o.json)
			ctlcli_print_json(reply);
		else
			print_table(json_object_get(reply, "nodes"));
	}
	json_decref(reply);
	ctlcli_close(&o);
	return rc < 0 ? CLI_FAIL : CLI_OK;
}

CLI_COMMAND("nodes", "list the nodes spotrund holds", cmd_nodes)
