/*
 * main.c - `spotrun` entry point: dispatch to registered subcommands.
 *
 * Each command parses its own options with cliopt.h (getopt_long), which
 * takes "--name value" and "--name=value" alike.
 * "spotrun --version" is "spotrun version".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cliopt.h"
#include "providers/registry.h"

#define CLI_MAX_CMDS 64

static const struct cli_cmd *g_cmds[CLI_MAX_CMDS];
static int g_ncmds;

void cli_register(const struct cli_cmd *c)
{
	if (g_ncmds < CLI_MAX_CMDS)
		g_cmds[g_ncmds++] = c;
}

static int dispatch(int argc, char **argv);

static int cmp_cmd(const void *a, const void *b)
{
	const struct cli_cmd *x = *(const struct cli_cmd *const *)a;
	const struct cli_cmd *y = *(const struct cli_cmd *const *)b;

	return strcmp(x->name, y->name);
}

static void usage(FILE *f)
{
	int w = 0;

	fprintf(f, "usage: spotrun COMMAND [ARGS...]\n\n"
		   "Run training jobs safely on spot GPUs.\n\ncommands:\n");
	for (int i = 0; i < g_ncmds; i++)
		if ((int)strlen(g_cmds[i]->name) > w)
			w = (int)strlen(g_cmds[i]->name);
	for (int i = 0; i < g_ncmds; i++)
		fprintf(f, "  %-*s  %s\n", w, g_cmds[i]->name, g_cmds[i]->summary);
	fprintf(f, "\n'spotrun COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv)
{
	qsort(g_cmds, (size_t)g_ncmds, sizeof g_cmds[0], cmp_cmd);
	/* job files name the clouds the built providers sell */
	prov_infra_install(NULL);
	return dispatch(argc, argv);
}

static void usage_out(void)
{
	usage(stdout);
}

static int dispatch(int argc, char **argv)
{
	static const struct cli_optdef defs[] = {
		{ "version", 'V', CLI_NOARG },
		{ NULL, 0, CLI_NOARG },
	};
	struct cli_opts p = { .defs = defs, .usage = usage_out,
			      .flags = CLI_OPT_VERB, .max_operands = 1 };
	const char *name;
	int c;

	c = cli_opts_next(&p, argc, argv);
	if (c < 0)
		return p.status;
	if (c == 'V') { /* "spotrun --version ARGS" is "spotrun version ARGS" */
		argv[p.ind - 1] = "version";
		argc -= p.ind - 1;
		argv += p.ind - 1;
	} else if (p.n_operands) {
		argc = p.n_rest + 1;
		argv = p.rest - 1;
	} else {
		usage(stderr);
		return CLI_USAGE;
	}
	name = !strcmp(argv[0], "help") ? NULL : argv[0];
	if (!name) {
		usage(stdout);
		return CLI_OK;
	}
	for (int i = 0; i < g_ncmds; i++) {
		if (!strcmp(name, g_cmds[i]->name))
			return g_cmds[i]->run(argc, argv);
	}
	fprintf(stderr, "spotrun: unknown command '%s'\n", name);
	usage(stderr);
	return CLI_USAGE;
}
