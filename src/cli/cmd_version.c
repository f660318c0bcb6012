/*
 * cmd_version.c - `spotrun version`.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define SPOTRUN_VERSION "0.1.0"

static int cmd_version(int argc, char **argv)
{
	int json = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: spotrun version [--json]\n\n"
			       "Print spotrun's version.\n");
			return CLI_OK;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else {
			return cli_usage_error("version", "unknown argument '%s'", argv[i]);
		}
	}
	if (json)
		printf("{\"version\":\"%s\"}\n", SPOTRUN_VERSION);
	else
		printf("spotrun %s\n", SPOTRUN_VERSION);
	return CLI_OK;
}

CLI_COMMAND("version", "print the version", cmd_version)
