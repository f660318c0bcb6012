/*
 * cmd_version.c - `spotrun version` (also `spotrun --version`): the
 * release, the git commit it was built from, and the checkpoint
 * library's ABI version.
 *
 * SPOTRUN_GIT_COMMIT comes from the build ($(BUILD)/gen/git_commit.h,
 * written by the Makefile; "unknown" outside a git checkout).
 */
#include <stdio.h>

#include "cli.h"
#include "cliopt.h"
#include "git_commit.h"
#include "spotrun/ckpt.h"

static void usage(void)
{
	printf("usage: spotrun version [--json]\n"
	       "       spotrun --version\n\n"
	       "Print spotrun's version, the git commit it was built from and\n"
	       "the ABI version of libspotckpt.\n");
}

static int cmd_version(int argc, char **argv)
{
	struct cli_opts p = { .cmd = "version", .usage = usage, .flags = CLI_OPT_JSON };
	int json, c;

	while ((c = cli_opts_next(&p, argc, argv)) > 0)
		;
	if (c < 0)
		return p.status;
	json = p.json;
	if (json)
		printf("{\"version\":\"%s\",\"commit\":\"%s\",\"libspotckpt_abi\":%d}\n",
		       SPOTRUN_VERSION, SPOTRUN_GIT_COMMIT, (int)spotckpt_abi_version());
	else
		printf("spotrun %s (commit %s, libspotckpt ABI %d)\n", SPOTRUN_VERSION,
		       SPOTRUN_GIT_COMMIT, (int)spotckpt_abi_version());
	return CLI_OK;
}

CLI_COMMAND("version", "print the version, git commit and library ABI", cmd_version)
