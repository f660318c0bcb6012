/*
 * cmd_gceemu.c - `spotrun gce-emulator`: serve the Compute Engine REST
 * API, the OAuth2 token endpoint and each VM's metadata server for the
 * local spot cloud's GCP pools on 127.0.0.1 (lib/gcp/gceemu.h), so the
 * gcp driver (or gcloud, or an SDK) can be pointed at it.  Runs until
 * SIGINT or SIGTERM; SIGUSR1 preempts every running spot VM.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cliopt.h"
#include "gcp/gceemu.h"
#include "market/catalog.h"

#define POLL_MS 200
#define MAX_CAPS 32

static volatile sig_atomic_t quit, preempt;

static void on_preempt(int sig)
{
	(void)sig;
	preempt = 1;
}

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
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

enum { OPT_WORK_DIR = CLI_KEY_LONG, OPT_DATA, OPT_PROJECT, OPT_REGION,
       OPT_PORT, OPT_TIME_SCALE, OPT_NOTICE_S, OPT_CAPACITY, OPT_LOG,
       OPT_SKUS };

static const struct cli_optdef gceemu_defs[] = {
	{ "work-dir", OPT_WORK_DIR, CLI_ARG },
	{ "data", OPT_DATA, CLI_ARG },
	{ "project", OPT_PROJECT, CLI_ARG },
	{ "region", OPT_REGION, CLI_ARG },
	{ "port", OPT_PORT, CLI_ARG },
	{ "time-scale", OPT_TIME_SCALE, CLI_ARG },
	{ "notice-s", OPT_NOTICE_S, CLI_ARG },
	{ "capacity", OPT_CAPACITY, CLI_REPEAT },
	{ "request-log", OPT_LOG, CLI_ARG },
	{ "billing-skus", OPT_SKUS, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static int positive(struct cli_opts *p, double *out, double max)
{
	char *end;

	*out = strtod(p->arg, &end);
	if (!*p->arg || *end || !(*out >= 0) || *out > max)
		return cli_opts_error(p, "%s '%s': expected a number 0..%g",
				      p->name, p->arg, max);
	return 0;
}

static int cmd_gceemu(int argc, char **argv)
{
	struct cli_opts p = { .cmd = "gce-emulator", .defs = gceemu_defs,
			      .usage = usage };
	struct gceemu_opts o = { .time_scale = 1 };
	const char *caps[MAX_CAPS + 1] = { NULL };
	size_t ncaps = 0;
	char datadir[4096];
	struct gceemu *m = NULL;
	struct sr_err e = { 0 };
	struct sigaction sa;
	double d = 0;
	int opt, rc;

	while ((opt = cli_opts_next(&p, argc, argv)) > 0) {
		switch (opt) {
		case OPT_WORK_DIR:
			o.work_dir = p.arg;
			break;
		case OPT_DATA:
			o.data_dir = p.arg;
			break;
		case OPT_PROJECT:
			o.project = p.arg;
			break;
		case OPT_REGION:
			o.region = p.arg;
			break;
		case OPT_PORT:
			if (positive(&p, &d, 65535))
				return CLI_USAGE;
			o.port = (int)d;
			break;
		case OPT_TIME_SCALE:
			if (positive(&p, &o.time_scale, 1e6))
				return CLI_USAGE;
			break;
		case OPT_NOTICE_S:
			if (positive(&p, &o.notice_s, 3600))
				return CLI_USAGE;
			break;
		case OPT_CAPACITY: {
			const char *eq = strchr(p.arg, '=');

			if (!eq || eq == p.arg || (strcmp(eq, "=none") &&
						   strcmp(eq, "=plenty")))
				return cli_opts_error(&p, "--capacity '%s': "
						      "expected ZONE=none|plenty",
						      p.arg);
			if (ncaps >= MAX_CAPS)
				return cli_opts_error(&p, "--capacity: at most "
						      "%d", MAX_CAPS);
			caps[ncaps++] = p.arg;
			break;
		}
		case OPT_SKUS:
			o.billing_skus = p.arg;
			break;
		default: /* OPT_LOG */
			o.request_log = p.arg;
			break;
		}
	}
	if (opt < 0)
		return p.status;
	if (!o.work_dir)
		return cli_usage_error("gce-emulator", "--work-dir is required");
	if (!o.data_dir) {
		if (catalog_find_data_dir(datadir, sizeof datadir)) {
			fprintf(stderr, "spotrun gce-emulator: no data directory "
				"(set SPOTRUN_DATA or use --data)\n");
			return CLI_FAIL;
		}
		o.data_dir = datadir;
	}
	o.capacity = caps;
	rc = gceemu_start(&o, &m, &e);
	if (rc < 0) {
		fprintf(stderr, "spotrun gce-emulator: %s\n", sr_err_str(&e, rc));
		return CLI_FAIL;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_preempt;
	sigaction(SIGUSR1, &sa, NULL);
	printf("%s\n", gceemu_url(m));
	fflush(stdout);
	while (!quit) {
		struct timespec ts = { 0, POLL_MS * 1000000L };

		nanosleep(&ts, NULL); /* a signal cuts it short */
		if (preempt) {
			preempt = 0;
			fprintf(stderr, "spotrun gce-emulator: SIGUSR1: %d spot "
				"VM(s) preempted\n", gceemu_preempt(m, NULL));
		}
	}
	gceemu_stop(m);
	return CLI_OK;
}

CLI_COMMAND("gce-emulator", "serve the Compute Engine API for the local spot "
	    "cloud", cmd_gceemu)
