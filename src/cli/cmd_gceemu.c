/*
 * cmd_gceemu.c - `spotrun gce-emulator`: serve the Compute Engine REST
 * API, the OAuth2 token endpoint and each VM's metadata server for the
 * local spot cloud's GCP pools on 127.0.0.1 (lib/gcp/gceemu.h), so the
 * gcp driver (or gcloud, or an SDK) can be pointed at it.  Runs until
 * SIGINT or SIGTERM; SIGUSR1 preempts every running spot VM.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cliopt.h"
#include "emurun.h"
#include "gcp/gceemu.h"

static int preempt_all(void *ud)
{
	return gceemu_preempt(ud, NULL);
}

static void usage(void)
{
	printf("usage: spotrun gce-emulator --work-dir DIR [--data DIR] "
	       "[--project P]\n"
	       "                            [--region R] [--port N] "
	       "[--time-scale X]\n"
	       "                            [--notice-s S] "
	       "[--capacity ZONE=none|plenty]...\n"
	       "                            [--request-log FILE]\n"
	       "                            [--billing-skus FILE]\n\n"
	       "Answer the Compute Engine REST API (instances insert, get,\n"
	       "delete, aggregatedList; zone operations; regions.get), the\n"
	       "OAuth2 token endpoint (/token: jwt-bearer and refresh_token)\n"
	       "and each VM's metadata server (/meta/<name>/computeMetadata/v1/:\n"
	       "instance/preempted and maintenance-event with ETags and hanging\n"
	       "GETs) on 127.0.0.1, for the GCP pools of one region of the local\n"
	       "spot cloud, whose availability replays real traces.  A VM is its\n"
	       "startup-script run by /bin/sh in DIR/<name>/.  Prints the URL on\n"
	       "the first line; runs until SIGINT or SIGTERM.  SIGUSR1 preempts\n"
	       "every running spot VM (POST <url>/emu/preempt?name=N one;\n"
	       "POST <url>/emu/capacity?zone=Z&spot=none|plenty sets a zone's\n"
	       "spot capacity from now on).\n\n"
	       "  --work-dir DIR   VM directories (must exist)\n"
	       "  --data DIR       catalog + traces (default $SPOTRUN_DATA or ./data)\n"
	       "  --project P      project id (default spotrun-emu)\n"
	       "  --region R       region (default us-central1)\n"
	       "  --port N         port (default 0: any free port)\n"
	       "  --time-scale X   cloud seconds per real second (default 1)\n"
	       "  --notice-s S     preemption to deletion, cloud s (default 30)\n"
	       "  --capacity ZONE=none|plenty  the zone's spot capacity, whatever\n"
	       "                   the trace says\n"
	       "  --request-log FILE  append \"<epoch ns> <METHOD> <path>\" per call\n"
	       "  --billing-skus FILE  a Cloud Billing Catalog answer ({\"skus\":\n"
	       "                   [...]}) served, paged, at\n"
	       "                   /v1/services/6F81-5844-456A/skus\n\n"
	       "Use it with: CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE=<url>/compute/v1\n"
	       "GOOGLE_APPLICATION_CREDENTIALS=<a key file whose token_uri is\n"
	       "<url>/token> GOOGLE_CLOUD_PROJECT=<project>.\n");
}

enum { OPT_PROJECT = CLI_KEY_LONG, OPT_REGION, OPT_NOTICE_S, OPT_LOG,
       OPT_SKUS };

static const struct cli_optdef gceemu_defs[] = {
	{ "project", OPT_PROJECT, CLI_ARG },
	{ "region", OPT_REGION, CLI_ARG },
	{ "notice-s", OPT_NOTICE_S, CLI_ARG },
	{ "request-log", OPT_LOG, CLI_ARG },
	{ "billing-skus", OPT_SKUS, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static int cmd_gceemu(int argc, char **argv)
{
	struct cli_opts p = { .cmd = "gce-emulator", .defs = gceemu_defs,
			      .more = emurun_defs, .usage = usage };
	struct emurun_common c = { .cmd = "gce-emulator", .cap_key = "ZONE" };
	struct gceemu_opts o = { 0 };
	struct gceemu *m = NULL;
	struct sr_err e = { 0 };
	int opt, rc;

	while ((opt = cli_opts_next(&p, argc, argv)) > 0) {
		rc = emurun_option(&p, opt, &c);
		if (rc)
			rc = rc == 1 ? 0 : rc;
		else if (opt == OPT_PROJECT)
			o.project = p.arg;
		else if (opt == OPT_REGION)
			o.region = p.arg;
		else if (opt == OPT_NOTICE_S)
			rc = emurun_number(&p, &o.notice_s, 3600);
		else if (opt == OPT_SKUS)
			o.billing_skus = p.arg;
		else /* OPT_LOG */
			o.request_log = p.arg;
		if (rc)
			return CLI_USAGE;
	}
	if (opt < 0)
		return p.status;
	rc = emurun_check(&c);
	if (rc)
		return rc;
	o.conf = c.conf;
	rc = gceemu_start(&o, &m, &e);
	if (rc < 0) {
		fprintf(stderr, "spotrun gce-emulator: %s\n", sr_err_str(&e, rc));
		return CLI_FAIL;
	}
	emurun_serve("gce-emulator", gceemu_url(m), preempt_all, m);
	gceemu_stop(m);
	return CLI_OK;
}

CLI_COMMAND("gce-emulator", "serve the Compute Engine API for the local spot "
	    "cloud", cmd_gceemu)
