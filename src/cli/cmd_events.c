/*
 * cmd_events.c - `spotrun events JOB`: a job's state transitions,
 * placements, notices, checkpoints, moves (GET /v1/jobs/{id}/events).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ctlcli.h"

static void usage(void)
{
	printf("usage: spotrun events JOB [--json] [--api URL] [--state-dir DIR]\n\n"
	       "Print a job's event log, oldest first: state transitions,\n"
	       "placements, preemption notices, checkpoints, moves, node losses,\n"
	       "workload exits.\n\n"
	       "  --json           print {\"events\": [...]} as one document\n"
	       CTLCLI_COMMON_HELP);
}

/* Print one event as a line; also used by `spotrun launch`. */
void events_print_line(FILE *f, json_t *ev);

void events_print_line(FILE *f, json_t *ev)
{
	const char *ts = ctlcli_str(ev, "ts", "");
	const char *type = ctlcli_str(ev, "type", "?");
	const char *from = ctlcli_str(ev, "from", NULL);
	const char *to = ctlcli_str(ev, "to", NULL);
	json_t *sim = json_object_get(ev, "sim_s");
	char simbuf[32] = "", tsbuf[16] = "";

	if (strlen(ts) >= 19)
		snprintf(tsbuf, sizeof tsbuf, "%.8s", ts + 11);
	if (json_is_number(sim))
		ctlcli_secs(json_number_value(sim), simbuf, sizeof simbuf);
	fprintf(f, "%-8s %8s  %-12s", tsbuf, simbuf, type);
	if (from && to)
		fprintf(f, " %s -> %s", from, to);
	else if (to)
		fprintf(f, " -> %s", to);
	if (json_is_integer(json_object_get(ev, "node_id")))
		fprintf(f, "  node %lld", (long long)ctlcli_int(ev, "node_id", 0));
	if (ctlcli_str(ev, "message", NULL) && *ctlcli_str(ev, "message", ""))
		fprintf(f, "  %s", ctlcli_str(ev, "message", ""));
	fprintf(f, "\n");
}

static int cmd_events(int argc, char **argv)
{
	struct ctlcli o = { .cmd = "events" };
	json_t *all = NULL;
	int64_t id, after = 0;
	int rc;

	rc = ctlcli_parse(&o, argc, argv, CTLCLI_JOB_REQUIRED, usage, NULL, NULL, NULL);
	if (rc >= 0)
		return rc;
	id = o.job;
	if (ctlcli_open(&o) < 0)
		return CLI_FAIL;
	all = json_array();
	for (;;) {
		char path[128];
		json_t *reply = NULL, *evs;
		size_t n;

		snprintf(path, sizeof path, "/v1/jobs/%lld/events?after=%lld&limit=1000",
			 (long long)id, (long long)after);
		rc = ctlcli_call(&o, "GET", path, NULL, &reply);
		if (rc < 0)
			break;
		evs = json_object_get(reply, "events");
		n = json_array_size(evs);
		json_array_extend(all, evs);
		after = ctlcli_int(reply, "next", after);
		json_decref(reply);
		if (n < 1000)
			break;
	}
	if (rc == 0) {
		if (o.json) {
			json_t *doc = json_pack("{s:O}", "events", all);

			ctlcli_print_json(doc);
			json_decref(doc);
		} else {
			size_t i;
			json_t *ev;

			printf("%-8s %8s  %-12s %s\n", "TIME", "CLOUD-T", "TYPE", "DETAIL");
			json_array_foreach(all, i, ev)
				events_print_line(stdout, ev);
		}
	}
	json_decref(all);
	ctlcli_close(&o);
	return rc < 0 ? CLI_FAIL : CLI_OK;
}

CLI_COMMAND("events", "show a job's event log", cmd_events)
