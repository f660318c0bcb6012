/*
 * cmd_version.c - `spotrun version` (also `spotrun --version`): the
 * release, the git commit it was built from, and the checkpoint
 * library's ABI version.
 *
 * SPOTRUN_GIT_COMMIT comes from the build ($(BUILD)/gen/git_commit.h,
 * written by the Makefile; "unknown" outside a git checkout).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "git_commit.h"
#include "spotrun/ckpt.h"

static int cmd_version(int argc, char **argv)
{
	int json = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: spotrun version [--json]\n"
			       "       spotrun --version\n\n"
			       "Print spotrun's version, the git commit it was built from and\n"
			       "the ABI version of libspotckpt.\n");
			return CLI_OK;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else {
			return cli_usage_error("version", "unknown argument '%s'", argv[i]);
		}
	}
	if (json)
		printf("{\"version\":\"%s\",\"commit\":\"%s\",\"libspotckpt_abi\":%d}\n",
		       SPOTRUN_VERSION, SPOTRUN_GIT_COMMIT, (int)spotckpt_abi_version());
	else
		printf("spotrun %s (commit %s, libspotckpt ABI %d)\n", SPOTRUN_VERSION,
		       SPOTRUN_GIT_COMMIT, (int)spotckpt_abi_version());
	return CLI_OK;
}

CLI_COMMAND("version", "print the version, git commit and library ABI", cmd_version)
