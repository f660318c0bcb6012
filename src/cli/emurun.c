/*
 * emurun.c - the cloud emulator commands' shared option and serve loop
 * (emurun.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "emurun.h"
#include "market/catalog.h"

#define POLL_MS 200

static volatile sig_atomic_t quit, usr1;

static void on_usr1(int sig)
{
	(void)sig;
	usr1 = 1;
}

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

enum { EMU_WORK_DIR = CLI_KEY_LONG + 200, EMU_DATA, EMU_PORT, EMU_TIME_SCALE,
       EMU_CAPACITY };

const struct cli_optdef emurun_defs[] = {
	{ "work-dir", EMU_WORK_DIR, CLI_ARG },
	{ "data", EMU_DATA, CLI_ARG },
	{ "port", EMU_PORT, CLI_ARG },
	{ "time-scale", EMU_TIME_SCALE, CLI_ARG },
	{ "capacity", EMU_CAPACITY, CLI_REPEAT },
	{ NULL, 0, CLI_NOARG },
};

int emurun_option(struct cli_opts *p, int opt, struct emurun_common *c)
{
	const char *eq;
	double d;

	switch (opt) {
	case EMU_WORK_DIR:
		c->conf.work_dir = p->arg;
		return 1;
	case EMU_DATA:
		c->conf.data_dir = p->arg;
		return 1;
	case EMU_PORT:
		if (emurun_number(p, &d, 65535))
			return CLI_USAGE;
		c->conf.port = (int)d;
		return 1;
	case EMU_TIME_SCALE:
		return emurun_number(p, &c->conf.time_scale, 1e6) ? CLI_USAGE : 1;
	case EMU_CAPACITY:
		eq = strchr(p->arg, '=');
		if (!eq || eq == p->arg || (strcmp(eq, "=none") &&
					    strcmp(eq, "=plenty")))
			return cli_opts_error(p, "--capacity '%s': expected "
					      "%s=none|plenty", p->arg, c->cap_key);
		if (c->ncaps >= EMURUN_MAX_CAPS)
			return cli_opts_error(p, "--capacity: at most %d",
					      EMURUN_MAX_CAPS);
		c->caps[c->ncaps++] = p->arg;
		return 1;
	default:
		return 0;
	}
}

int emurun_check(struct emurun_common *c)
{
	c->conf.capacity = c->caps;
	if (!c->conf.time_scale)
		c->conf.time_scale = 1;
	if (!c->conf.work_dir)
		return cli_usage_error(c->cmd, "--work-dir is required");
	if (!c->conf.data_dir) {
		if (catalog_find_data_dir(c->datadir, sizeof c->datadir)) {
			fprintf(stderr, "spotrun %s: no data directory (set "
				"SPOTRUN_DATA or use --data)\n", c->cmd);
			return CLI_FAIL;
		}
		c->conf.data_dir = c->datadir;
	}
	return 0;
}

int emurun_number(struct cli_opts *p, double *out, double max)
{
	char *end;

	*out = strtod(p->arg, &end);
	if (!*p->arg || *end || !(*out >= 0) || *out > max)
		return cli_opts_error(p, "%s '%s': expected a number 0..%g",
				      p->name, p->arg, max);
	return 0;
}

void emurun_serve(const char *cmd, const char *url, int (*fn)(void *ud),
		  void *ud)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	printf("%s\n", url);
	fflush(stdout);
	while (!quit) {
		struct timespec ts = { 0, POLL_MS * 1000000L };

		nanosleep(&ts, NULL); /* a signal cuts it short */
		if (usr1) {
			usr1 = 0;
			fprintf(stderr, "spotrun %s: SIGUSR1: %d spot VM(s) "
				"preempted\n", cmd, fn(ud));
		}
	}
}
