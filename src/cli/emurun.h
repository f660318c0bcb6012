/*
 * emurun.h - what the cloud emulator commands share (`spotrun
 * gce-emulator`, `spotrun azure-emulator`): a number option, and serving
 * until a signal.
 */
#ifndef SR_CLI_EMURUN_H
#define SR_CLI_EMURUN_H

#include "cliopt.h"
#include "cloud/emuconf.h"

#define EMURUN_MAX_CAPS 32

/* The options every emulator takes (cli_opts.more = emurun_defs):
 * --work-dir, --data, --port, --time-scale, --capacity KEY=none|plenty
 * (repeated). */
extern const struct cli_optdef emurun_defs[];

struct emurun_common {
	const char *cmd;           /* "azure-emulator" */
	const char *cap_key;       /* what --capacity names: "SIZE" */
	struct emuhttp_conf conf;  /* what the options say (emurun_check
				      completes it) */
	const char *caps[EMURUN_MAX_CAPS + 1];   /* NULL-ended */
	size_t ncaps;
	char datadir[4096];
};

/* One of emurun_defs' options (opt, p->arg) into c: 1 taken, 0 not one of
 * them, or CLI_USAGE (said). */
int emurun_option(struct cli_opts *p, int opt, struct emurun_common *c);
/* After the options: --work-dir given, the data directory found (--data,
 * else $SPOTRUN_DATA or ./data), c->conf complete (time scale 1 unless
 * given, the capacity list).  0, or the exit status (said). */
int emurun_check(struct emurun_common *c);

/* p->arg as a number in 0..max into *out: 0, or cli_opts_error's code
 * naming the option. */
int emurun_number(struct cli_opts *p, double *out, double max);

/* Print url on the first line of stdout, then wait for SIGINT or
 * SIGTERM; each SIGUSR1 calls usr1(ud) and reports how many spot VMs it
 * preempted ("<cmd>: SIGUSR1: N spot VM(s) preempted" on stderr). */
void emurun_serve(const char *cmd, const char *url, int (*usr1)(void *ud),
		  void *ud);

#endif
