/*
 * cmd_cancel.c - `spotrun cancel JOB` (POST /v1/jobs/{id}/cancel).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ctlcli.h"

static void usage(void)
{
	printf("usage: spotrun cancel JOB [--api URL] [--state-dir DIR]\n\n"
	       "Cancel a job: spotrund stops its nodes and marks it CANCELLED.\n"
	       "A job that has already finished cannot be cancelled.  A job with\n"
	       "a bucket mount synced back (MOUNT, MOUNT_CACHED) ends once its\n"
	       "node has stopped the run and committed the final upload round;\n"
	       "`spotrun events JOB` shows it (sync_final), or what was left and\n"
	       "where (sync_error).\n\n"
	       CTLCLI_COMMON_HELP);
}

static int cmd_cancel(int argc, char **argv)
{
	struct ctlcli o = { .cmd = "cancel" };
	json_t *reply = NULL, *body;
	char path[64];
	int64_t id;
	int rc;

	rc = ctlcli_parse(&o, argc, argv, CTLCLI_JOB_REQUIRED, usage, NULL, NULL, NULL);
	if (rc >= 0)
		return rc;
	id = o.job;
	if (ctlcli_open(&o) < 0)
		return CLI_FAIL;
	snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", (long long)id);
	body = json_object();
	rc = ctlcli_call(&o, "POST", path, body, &reply);
	json_decref(body);
	if (rc == 0) {
		if (o.json)
			ctlcli_print_json(reply);
		else
			printf("job %lld: cancel requested (state %s)\n", (long long)id,
			       ctlcli_str(json_object_get(reply, "job"), "state", "?"));
	}
	json_decref(reply);
	ctlcli_close(&o);
	return rc < 0 ? CLI_FAIL : CLI_OK;
}

CLI_COMMAND("cancel", "cancel a job", cmd_cancel)
