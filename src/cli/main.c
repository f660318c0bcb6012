/*
 * main.c - `spotrun` entry point: dispatch to registered subcommands.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define CLI_MAX_CMDS 64

static const struct cli_cmd *g_cmds[CLI_MAX_CMDS];
static int g_ncmds;

void cli_register(const struct cli_cmd *c)
{
	if (g_ncmds < CLI_MAX_CMDS)
		g_cmds[g_ncmds++] = c;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "spotrun %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry 'spotrun %s --help'\n", cmd);
	return CLI_USAGE;
}

static int cmp_cmd(const void *a, const void *b)
{
	const struct cli_cmd *x = *(const struct cli_cmd *const *)a;
	const struct cli_cmd *y = *(const struct cli_cmd *const *)b;

	return strcmp(x->name, y->name);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: spotrun COMMAND [ARGS...]\n\n"
		   "Run training jobs safely on spot GPUs.\n\ncommands:\n");
	for (int i = 0; i < g_ncmds; i++)
		fprintf(f, "  %-10s %s\n", g_cmds[i]->name, g_cmds[i]->summary);
	fprintf(f, "\n'spotrun COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv)
{
	qsort(g_cmds, (size_t)g_ncmds, sizeof g_cmds[0], cmp_cmd);
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return CLI_OK;
	}
	for (int i = 0; i < g_ncmds; i++) {
		if (!strcmp(argv[1], g_cmds[i]->name))
			return g_cmds[i]->run(argc - 1, argv + 1);
	}
	fprintf(stderr, "spotrun: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return CLI_USAGE;
}
