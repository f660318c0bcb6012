/*
 * cmd_logs.c - `spotrun logs JOB [-f]`: the workload's stdout/stderr as
 * the agents shipped it (GET /v1/jobs/{id}/logs).
 */
#include <signal.h>
#include <stdio.h>
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

static void print_line(json_t *l, int multi)
{
	const char *stream = ctlcli_str(l, "stream", "stdout");
	FILE *f = strcmp(stream, "stderr") ? stdout : stderr;

	if (multi)
		fprintf(f, "[rank %lld] ", (long long)ctlcli_int(l, "rank", 0));
	if (!strcmp(stream, "agent"))
		fprintf(f, "[spotrun attempt %lld] ", (long long)ctlcli_int(l, "attempt", 0));
	fprintf(f, "%s\n", ctlcli_str(l, "line", ""));
}

static int cmd_logs(int argc, char **argv)
{
	struct ctlcli o = { .cmd = "logs" };
	const char *job = NULL;
	json_t *all = NULL;
	int64_t id, after = 0, rank = -1;
	int follow = 0, rc, multi = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return CLI_OK;
		}
		rc = ctlcli_common_opt(&o, argc, argv, &i);
		if (rc < 0)
			return CLI_USAGE;
		if (rc)
			continue;
		if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--follow")) {
			follow = 1;
		} else if (!strcmp(argv[i], "--rank")) {
			char *end;

			if (i + 1 >= argc)
				return cli_usage_error("logs", "--rank needs a value");
			rank = strtoll(argv[++i], &end, 10);
			if (*end || rank < 0)
				return cli_usage_error("logs", "--rank: '%s' is not a "
						       "rank", argv[i]);
		} else if (argv[i][0] == '-' || job) {
			return cli_usage_error("logs", "unexpected argument '%s'",
					       argv[i]);
		} else {
			job = argv[i];
		}
	}
	if (!job)
		return cli_usage_error("logs", "which job? (a job id)");
	if (ctlcli_job_id(&o, job, &id) < 0)
		return CLI_USAGE;
	if (follow && o.json)
		return cli_usage_error("logs", "--json cannot be combined with -f");
	if (ctlcli_open(&o) < 0)
		return CLI_FAIL;
	if (follow)
		signal(SIGINT, on_int);
	all = json_array();
	while (!g_stop) {
		char path[160];
		json_t *reply = NULL, *lines, *l;
		size_t n, i;
		int done;

		snprintf(path, sizeof path, "/v1/jobs/%lld/logs?after=%lld&limit=5000",
			 (long long)id, (long long)after);
		if (rank >= 0)
			snprintf(path + strlen(path), sizeof path - strlen(path),
				 "&rank=%lld", (long long)rank);
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
				print_line(l, multi);
			}
			fflush(stdout);
		}
		json_decref(reply);
		if (n == 5000)
			continue; /* more right away */
		if (!follow || done)
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
