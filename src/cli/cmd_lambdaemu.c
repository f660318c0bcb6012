/*
 * cmd_lambdaemu.c - `spotrun lambda-emulator`: serve the Lambda Cloud
 * REST API the lambda driver calls, over the local spot cloud's Lambda
 * pools, on 127.0.0.1 (lib/lambda/lambdaemu.h), with an ssh stand-in for
 * the driver's bootstrap step.  Runs until SIGINT or SIGTERM; SIGUSR1
 * fails every live instance's host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cliopt.h"
#include "emurun.h"
#include "lambda/lambdaemu.h"

static int fail_all(void *ud)
{
	return lambdaemu_fail_all(ud);
}

static void usage(void)
{
	printf("usage: spotrun lambda-emulator --work-dir DIR [--data DIR] "
	       "[--port N]\n"
	       "                               [--time-scale X] [--boot-s S] "
	       "[--quota N]\n"
	       "                               [--capacity TYPE=none|plenty]... "
	       "[--api-key-file F]\n\n"
	       "Answer the Lambda Cloud REST API (<url>/api/v1: instance-types\n"
	       "with regions_with_capacity_available, instance-operations/launch\n"
	       "and terminate, instances; insufficient-capacity, quota, 401, 429)\n"
	       "on 127.0.0.1 for the Lambda pools of the local spot cloud, whose\n"
	       "capacity replays real traces.  DIR/ssh is the ssh for the\n"
	       "driver's bootstrap step (providers.lambda.ssh): it runs the\n"
	       "script on the instance, DIR/<ip>/.  Prints the URL on the first\n"
	       "line; runs until SIGINT or SIGTERM.  SIGUSR1 fails every live\n"
	       "instance's host.  Test controls: POST <url>/emu/fail?id=ID,\n"
	       "/emu/throttle?n=K; GET <url>/emu/state, /emu/requests.\n\n"
	       "  --work-dir DIR   instance directories and ssh (must exist)\n"
	       "  --data DIR       catalog + traces (default $SPOTRUN_DATA or ./data)\n"
	       "  --port N         port (default 0: any free port)\n"
	       "  --time-scale X   cloud seconds per real second (default 1)\n"
	       "  --boot-s S       booting -> active, real s (default 0.3)\n"
	       "  --quota N        live instances at most (default: no limit)\n"
	       "  --capacity TYPE=none|plenty  the type's capacity in every\n"
	       "                   region, whatever the trace says\n"
	       "  --api-key-file F the API key it takes (default %s)\n\n"
	       "Use it with providers.lambda endpoint: <url>/api/v1, ssh:\n"
	       "DIR/ssh and LAMBDA_API_KEY (or api_key_file).\n", LAMBDAEMU_KEY);
}

enum { OPT_BOOT_S = CLI_KEY_LONG, OPT_QUOTA, OPT_KEY_FILE };

static const struct cli_optdef lambdaemu_defs[] = {
	{ "boot-s", OPT_BOOT_S, CLI_ARG },
	{ "quota", OPT_QUOTA, CLI_ARG },
	{ "api-key-file", OPT_KEY_FILE, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

/* The first line of path into key (n bytes): 0, or CLI_FAIL said. */
static int read_key(const char *path, char *key, size_t n)
{
	FILE *f = fopen(path, "re");

	if (!f || !fgets(key, (int)n, f)) {
		fprintf(stderr, "spotrun lambda-emulator: --api-key-file %s: "
			"cannot read a line\n", path);
		if (f)
			fclose(f);
		return CLI_FAIL;
	}
	fclose(f);
	key[strcspn(key, "\r\n")] = '\0';
	return 0;
}

static int cmd_lambdaemu(int argc, char **argv)
{
	struct cli_opts p = { .cmd = "lambda-emulator", .defs = lambdaemu_defs,
			      .more = emurun_defs, .usage = usage };
	struct emurun_common c = { .cmd = "lambda-emulator", .cap_key = "TYPE" };
	struct lambdaemu_opts o = { 0 };
	const char *key_file = NULL;
	char key[128];
	struct lambdaemu *m = NULL;
	struct sr_err e = { 0 };
	double d = 0;
	int opt, rc;

	while ((opt = cli_opts_next(&p, argc, argv)) > 0) {
		rc = emurun_option(&p, opt, &c);
		if (rc)
			rc = rc == 1 ? 0 : rc;
		else if (opt == OPT_KEY_FILE)
			key_file = p.arg;
		else if (opt == OPT_BOOT_S)
			rc = emurun_number(&p, &o.boot_s, 3600);
		else if (!(rc = emurun_number(&p, &d, 100000)))
			o.quota = (int)d;
		if (rc)
			return CLI_USAGE;
	}
	if (opt < 0)
		return p.status;
	rc = emurun_check(&c);
	if (rc)
		return rc;
	if (key_file) {
		if (read_key(key_file, key, sizeof key))
			return CLI_FAIL;
		o.api_key = key;
	}
	o.conf = c.conf;
	rc = lambdaemu_start(&o, &m, &e);
	if (rc < 0) {
		fprintf(stderr, "spotrun lambda-emulator: %s\n", sr_err_str(&e, rc));
		return CLI_FAIL;
	}
	emurun_serve("lambda-emulator", lambdaemu_url(m), fail_all, m);
	lambdaemu_stop(m);
	return CLI_OK;
}

CLI_COMMAND("lambda-emulator", "serve the Lambda Cloud API for the local "
	    "spot cloud", cmd_lambdaemu)
