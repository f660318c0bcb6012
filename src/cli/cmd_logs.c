/*
 * cmd_logs.c - `spotrun logs JOB [-f]`: the workload's stdout/stderr as
 * the agents shipped it (GET /v1/jobs/{id}/logs).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ctlcli.h"

static volatile sig_atomic_t g_stop;

static void on_int(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void usage(void)
{
	printf("usage: spotrun logs JOB [-f] [--rank N] [--json] [--api URL]\n"
	       "                    [--state-dir DIR]\n\n"
	       "Print a job's workload output (every node, every attempt).\n\n"
	       "  -f, --follow     keep printing new lines until the job ends\n"
	       "                   (Ctrl-C stops following; the job keeps running)\n"
	       "  --rank N         only the lines of node rank N\n"
	       "  --json           print {\"lines\": [...]} as one document (not with -f)\n"
	       CTLCLI_COMMON_HELP);
}

/* One log line as `spotrun logs` prints it (also used by launch). */
void logs_print_line(json_t *l, int multi)
{
	const char *stream = ctlcli_str(l, "stream", "stdout");
	FILE *f = strcmp(stream, "stderr") ? stdout : stderr;

	if (multi)
		fprintf(f, "[rank %lld] ", (long long)ctlcli_int(l, "rank", 0));
	if (!strcmp(stream, "agent"))
		fprintf(f, "[spotrun attempt %lld] ", (long long)ctlcli_int(l, "attempt", 0));
	fprintf(f, "%s\n", ctlcli_str(l, "line", ""));
}

struct logs_opts {
	int follow;
	int64_t rank;
};

enum { OPT_RANK = CLI_KEY_LONG };

static const struct cli_optdef logs_defs[] = {
	{ "follow", 'f', CLI_NOARG },
	{ "rank", OPT_RANK, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static int logs_opt(struct ctlcli *o, void *ud, const struct cli_opts *p, int key)
{
	struct logs_opts *lo = ud;
	char *end;

	(void)o;
	if (key == 'f') {
		lo->follow = 1;
		return 0;
	}
	lo->rank = strtoll(p->arg, &end, 10);
	if (*end || end == p->arg || lo->rank < 0)
		return cli_opts_error(p, "%s: '%s' is not a rank", p->name, p->arg);
	return 0;
}

static int cmd_logs(int argc, char **argv)
{
	struct ctlcli o = { .cmd = "logs" };
	struct logs_opts lo = { 0, -1 };
	json_t *all = NULL;
	int64_t id, after = 0;
	int rc, multi = 0;

	rc = ctlcli_parse(&o, argc, argv, CTLCLI_JOB_REQUIRED, usage, logs_defs,
			  logs_opt, &lo);
	if (rc >= 0)
		return rc;
	id = o.job;
	if (lo.follow && o.json)
		return cli_usage_error("logs", "--json cannot be combined with -f");
	if (ctlcli_open(&o) < 0)
		return CLI_FAIL;
	if (lo.rank >= 0) {
		/* a rank outside the gang is an error, not an empty log */
		char path[64];
		json_t *job = NULL;
		int64_t nn;

		snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
		if (ctlcli_call(&o, "GET", path, NULL, &job) < 0) {
			ctlcli_close(&o);
			return CLI_FAIL;
		}
		nn = ctlcli_int(json_object_get(job, "job"), "num_nodes", 0);
		json_decref(job);
		if (nn > 0 && lo.rank >= nn) {
			if (nn == 1)
				fprintf(stderr, "spotrun logs: --rank %lld: job %lld "
					"has one node (rank 0)\n", (long long)lo.rank,
					(long long)id);
			else
				fprintf(stderr, "spotrun logs: --rank %lld: job %lld "
					"has ranks 0..%lld\n", (long long)lo.rank,
					(long long)id, (long long)(nn - 1));
			ctlcli_close(&o);
			return CLI_FAIL;
		}
	}
	if (lo.follow)
		signal(SIGINT, on_int);
	all = json_array();
	while (!g_stop) {
		char path[160];
		json_t *reply = NULL, *lines, *l;
		size_t n, i;
		int done;

		snprintf(path, sizeof path, "/v1/jobs/%lld/logs?after=%lld&limit=5000",
			 (long long)id, (long long)after);
		if (lo.rank >= 0)
			snprintf(path + strlen(path), sizeof path - strlen(path),
				 "&rank=%lld", (long long)lo.rank);
		rc = ctlcli_call(&o, "GET", path, NULL, &reply);
		if (rc < 0)
			break;
		lines = json_object_get(reply, "lines");
		n = json_array_size(lines);
		done = json_is_true(json_object_get(reply, "done"));
		after = ctlcli_int(reply, "next", after);
		if (o.json) {
			json_array_extend(all, lines);
		} else {
			json_array_foreach(lines, i, l) {
				if (ctlcli_int(l, "rank", 0) > 0)
					multi = 1;
				logs_print_line(l, multi);
			}
			fflush(stdout);
		}
		json_decref(reply);
		if (n == 5000)
			continue; /* more right away */
		if (!lo.follow || done)
			break;
		usleep(500000);
	}
	if (rc == 0 && o.json) {
		json_t *doc = json_pack("{s:O}", "lines", all);

		ctlcli_print_json(doc);
		json_decref(doc);
	}
	json_decref(all);
	ctlcli_close(&o);
	return rc < 0 ? CLI_FAIL : CLI_OK;
}

CLI_COMMAND("logs", "print a job's workload output", cmd_logs)
