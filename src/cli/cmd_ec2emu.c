/*
 * cmd_ec2emu.c - `spotrun ec2-emulator`: serve the EC2 Query API for the
 * local spot cloud's AWS pools on 127.0.0.1 (lib/aws/ec2emu.h), so the
 * AWS driver, the AWS CLI or an SDK can be pointed at it with
 * AWS_ENDPOINT_URL_EC2.  Runs until SIGINT or SIGTERM.
 *
 * Interruptions from outside (tests, demos): SIGUSR1 reclaims every spot
 * instance; an empty file <work-dir>/interrupts/<instance-id> interrupts
 * that one instance (ec2emu_preempt), as AWS FIS's send-spot-instance-
 * interruptions does.  The directory is read every POLL_MS; each file is
 * removed once handled.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aws/ec2emu.h"
#include "cli.h"
#include "cliopt.h"
#include "market/catalog.h"

#define POLL_MS 200

static volatile sig_atomic_t quit, reclaim;

static void on_reclaim(int sig)
{
	(void)sig;
	reclaim = 1;
}

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static void usage(void)
{
	printf("usage: spotrun ec2-emulator --work-dir DIR [--data DIR] "
	       "[--region R] [--port N]\n"
	       "                            [--time-scale X] [--notice-s S] "
	       "[--boot-s S]\n"
	       "                            [--capacity ZONE:TYPE=none|plenty]...\n"
	       "                            [--throttle] [--throttle-scale X] "
	       "[--background-rps R]\n"
	       "                            [--bucket-fill F]"
	       "\n"
	       "                            [--consistency-s S] [--capacity-fail P]"
	       " [--seed N]\n"
	       "                            [--spot-quota N] [--ondemand-quota N] "
	       "[--request-log FILE]\n"
	       "                            [--run-latency-ms N]\n\n"
	       "Answer the EC2 Query API (RunInstances, DescribeInstances,\n"
	       "TerminateInstances, DescribeSpotPriceHistory,\n"
	       "DescribeInstanceTypeOfferings) on 127.0.0.1 for the AWS pools of\n"
	       "one region of the local spot cloud, whose availability and prices\n"
	       "replay real traces.  An instance is its user-data run by /bin/sh\n"
	       "in DIR/<instance-id>/ with SPOTRUN_NODE_ROOT and SPOTRUN_IMDS_URL\n"
	       "(its own IMDSv2, with spot notices).  Prints the endpoint URL on\n"
	       "the first line; runs until SIGINT or SIGTERM.  SIGUSR1 reclaims:\n"
	       "every pool holding a running spot instance loses its capacity\n"
	       "and those instances get their notice (tests, demos); an empty\n"
	       "file DIR/interrupts/<instance-id> gives that one spot instance\n"
	       "its notice (the file is removed once read).\n\n"
	       "  --work-dir DIR   instance directories (must exist)\n"
	       "  --data DIR       catalog + traces (default $SPOTRUN_DATA or ./data)\n"
	       "  --region R       region (default us-east-1)\n"
	       "  --port N         port (default 0: any free port)\n"
	       "  --time-scale X   cloud seconds per real second (default 1)\n"
	       "  --notice-s S     spot notice to termination, cloud s (default 120)\n"
	       "  --boot-s S       pending to running, cloud s (default 0)\n"
	       "  --capacity ZONE:TYPE=none|plenty\n"
	       "                   override the trace for one pool\n\n"
	       "EC2 where it hurts (all off by default):\n"
	       "  --throttle       meter calls with EC2's request token buckets\n"
	       "                   (reads 100 + 20/s, mutating 50 + 5/s, unfiltered\n"
	       "                   reads 50 + 10/s, RunInstances 1000 + 2/s per\n"
	       "                   instance): an empty bucket answers HTTP 503\n"
	       "                   RequestLimitExceeded\n"
	       "  --throttle-scale X  multiply bucket sizes and rates (default 1)\n"
	       "  --background-rps R  the account's other tools' reads per second\n"
	       "                   (they share the read bucket)\n"
	       "  --bucket-fill F  buckets start this full, 0..1 (default 1)\n"
	       "  --consistency-s S  a new instance stays invisible to\n"
	       "                   DescribeInstances for a random [0, S) s\n"
	       "                   (InvalidInstanceID.NotFound by id)\n"
	       "  --capacity-fail P  probability a launch finds no capacity\n"
	       "  --spot-quota N, --ondemand-quota N  instances not terminated\n"
	       "                   (MaxSpotInstanceCountExceeded,\n"
	       "                   InstanceLimitExceeded)\n"
	       "  --seed N         seed of the random draws (default 0)\n"
	       "  --run-latency-ms N  RunInstances answers N ms late (a launch\n"
	       "                   stays in flight: kill its caller in it)\n"
	       "  --request-log FILE  append \"<epoch ns> <Action> <status> <code>\"\n"
	       "                   per call (what a client costs)\n\n"
	       "Use it with: AWS_ENDPOINT_URL_EC2=<url> AWS_REGION=<region>\n"
	       "AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=y (any key is accepted).\n");
}

static int num(const char *opt, const char *v, double *out)
{
	char *end;

	*out = strtod(v, &end);
	if (*v == '\0' || *end != '\0' || *out < 0)
		return cli_usage_error("ec2-emulator", "%s '%s': expected a "
				       "non-negative number", opt, v);
	return 0;
}

/* Notice every instance named by a file in <work>/interrupts/ and
 * remove the file (see the top of this file). */
static void poll_interrupts(struct ec2emu *m, const char *work)
{
	char dir[4200], path[4500];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/interrupts", work);
	d = opendir(dir);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (ec2emu_preempt(m, de->d_name) == 0)
			fprintf(stderr, "spotrun ec2-emulator: %s: interruption "
				"notice sent\n", de->d_name);
		else
			fprintf(stderr, "spotrun ec2-emulator: %s: no running "
				"spot instance by that id; interruption ignored\n",
				de->d_name);
		unlink(path);
	}
	closedir(d);
}

enum { OPT_WORK_DIR = CLI_KEY_LONG, OPT_DATA, OPT_REGION, OPT_PORT,
       OPT_TIME_SCALE, OPT_NOTICE_S, OPT_BOOT_S, OPT_CAPACITY, OPT_THROTTLE,
       OPT_THROTTLE_SCALE, OPT_BACKGROUND, OPT_CONSISTENCY, OPT_CAP_FAIL,
       OPT_SEED, OPT_SPOT_QUOTA, OPT_OD_QUOTA, OPT_REQUEST_LOG,
       OPT_BUCKET_FILL, OPT_RUN_LATENCY };

static const struct cli_optdef ec2emu_defs[] = {
	{ "work-dir", OPT_WORK_DIR, CLI_ARG },
	{ "data", OPT_DATA, CLI_ARG },
	{ "region", OPT_REGION, CLI_ARG },
	{ "port", OPT_PORT, CLI_ARG },
	{ "time-scale", OPT_TIME_SCALE, CLI_ARG },
	{ "notice-s", OPT_NOTICE_S, CLI_ARG },
	{ "boot-s", OPT_BOOT_S, CLI_ARG },
	{ "capacity", OPT_CAPACITY, CLI_REPEAT },
	{ "throttle", OPT_THROTTLE, CLI_NOARG },
	{ "throttle-scale", OPT_THROTTLE_SCALE, CLI_ARG },
	{ "background-rps", OPT_BACKGROUND, CLI_ARG },
	{ "bucket-fill", OPT_BUCKET_FILL, CLI_ARG },
	{ "run-latency-ms", OPT_RUN_LATENCY, CLI_ARG },
	{ "consistency-s", OPT_CONSISTENCY, CLI_ARG },
	{ "capacity-fail", OPT_CAP_FAIL, CLI_ARG },
	{ "seed", OPT_SEED, CLI_ARG },
	{ "spot-quota", OPT_SPOT_QUOTA, CLI_ARG },
	{ "ondemand-quota", OPT_OD_QUOTA, CLI_ARG },
	{ "request-log", OPT_REQUEST_LOG, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static int cmd_ec2emu(int argc, char **argv)
{
	struct cli_opts p = { .cmd = "ec2-emulator", .defs = ec2emu_defs,
			      .usage = usage };
	struct ec2emu_opts o = { .time_scale = 1 };
	const char *caps[32];
	size_t ncaps = 0;
	char datadir[4096];
	struct ec2emu *m = NULL;
	struct sr_err e = { 0 };
	struct sigaction sa;
	double d = 0;
	int opt, rc;

	while ((opt = cli_opts_next(&p, argc, argv)) > 0) {
		const char *a = p.name, *v = p.arg;

		switch (opt) {
		case OPT_WORK_DIR:
			o.work_dir = v;
			break;
		case OPT_DATA:
			o.data_dir = v;
			break;
		case OPT_REGION:
			o.region = v;
			break;
		case OPT_PORT:
			if (num(a, v, &d) || d > 65535)
				return d > 65535 ? cli_opts_error(&p,
					"--port '%s': expected 0..65535", v) : CLI_USAGE;
			o.port = (int)d;
			break;
		case OPT_TIME_SCALE:
			if (num(a, v, &o.time_scale))
				return CLI_USAGE;
			break;
		case OPT_NOTICE_S:
			if (num(a, v, &o.notice_s))
				return CLI_USAGE;
			break;
		case OPT_BOOT_S:
			if (num(a, v, &o.boot_s))
				return CLI_USAGE;
			break;
		case OPT_THROTTLE:
			o.throttle = true;
			break;
		case OPT_THROTTLE_SCALE:
			if (num(a, v, &o.throttle_scale))
				return CLI_USAGE;
			break;
		case OPT_BACKGROUND:
			if (num(a, v, &o.background_rps))
				return CLI_USAGE;
			break;
		case OPT_RUN_LATENCY:
			if (num(a, v, &d) || d > 600000)
				return d > 600000 ? cli_opts_error(&p, "--run-latency-ms"
					" '%s': at most 600000", v) : CLI_USAGE;
			o.run_latency_ms = (int)d;
			break;
		case OPT_BUCKET_FILL:
			if (num(a, v, &o.bucket_fill) || o.bucket_fill > 1)
				return o.bucket_fill > 1 ? cli_opts_error(&p,
					"--bucket-fill '%s': expected 0..1", v)
							 : CLI_USAGE;
			break;
		case OPT_CONSISTENCY:
			if (num(a, v, &o.consistency_s))
				return CLI_USAGE;
			break;
		case OPT_CAP_FAIL:
			if (num(a, v, &o.capacity_fail) || o.capacity_fail > 1)
				return o.capacity_fail > 1 ? cli_opts_error(&p,
					"--capacity-fail '%s': expected 0..1", v)
							   : CLI_USAGE;
			break;
		case OPT_SEED:
			if (num(a, v, &d))
				return CLI_USAGE;
			o.seed = (uint64_t)d;
			break;
		case OPT_SPOT_QUOTA:
		case OPT_OD_QUOTA:
			if (num(a, v, &d) || d > 1e6)
				return d > 1e6 ? cli_opts_error(&p, "%s '%s': at most "
					"1000000", a, v) : CLI_USAGE;
			*(opt == OPT_SPOT_QUOTA ? &o.spot_quota : &o.ondemand_quota) =
				(int)d;
			break;
		case OPT_REQUEST_LOG:
			o.request_log = v;
			break;
		default: /* OPT_CAPACITY */
			if (ncaps == sizeof(caps) / sizeof(caps[0]) ||
			    strchr(v, ':') == NULL || strchr(v, '=') == NULL)
				return cli_opts_error(&p, "--capacity '%s': expected "
						      "ZONE:TYPE=none|plenty", v);
			caps[ncaps++] = v;
			break;
		}
	}
	if (opt < 0)
		return p.status;
	if (o.work_dir == NULL)
		return cli_usage_error("ec2-emulator", "--work-dir is required");
	if (o.data_dir == NULL) {
		if (catalog_find_data_dir(datadir, sizeof(datadir))) {
			fprintf(stderr, "spotrun ec2-emulator: no data directory (set "
				"SPOTRUN_DATA or use --data)\n");
			return CLI_FAIL;
		}
		o.data_dir = datadir;
	}
	rc = ec2emu_start(&o, &m, &e);
	if (rc < 0) {
		fprintf(stderr, "spotrun ec2-emulator: %s\n", sr_err_str(&e, rc));
		return CLI_FAIL;
	}
	for (size_t i = 0; i < ncaps; i++) {
		char zone[64], type[64], what[16];
		enum ec2emu_capacity c;

		if (sscanf(caps[i], "%63[^:]:%63[^=]=%15s", zone, type, what) != 3 ||
		    (strcmp(what, "none") && strcmp(what, "plenty"))) {
			ec2emu_stop(m);
			return cli_usage_error("ec2-emulator", "--capacity '%s': "
					       "expected ZONE:TYPE=none|plenty",
					       caps[i]);
		}
		c = strcmp(what, "none") == 0 ? EC2EMU_NONE : EC2EMU_PLENTY;
		ec2emu_set_capacity(m, zone, type, c);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_reclaim;
	sigaction(SIGUSR1, &sa, NULL);
	printf("%s\n", ec2emu_url(m));
	fflush(stdout);
	while (!quit) {
		struct timespec ts = { 0, POLL_MS * 1000000L };

		nanosleep(&ts, NULL); /* a signal cuts it short */
		poll_interrupts(m, o.work_dir);
		if (reclaim) {
			reclaim = 0;
			fprintf(stderr, "spotrun ec2-emulator: SIGUSR1: %d spot "
				"instance(s) noticed; their pools have no capacity "
				"now\n", ec2emu_reclaim_all(m));
		}
	}
	ec2emu_stop(m);
	return CLI_OK;
}

CLI_COMMAND("ec2-emulator", "serve the EC2 API for the local spot cloud",
	    cmd_ec2emu)
