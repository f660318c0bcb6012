/*
 * main.c - `spotrun` entry point: dispatch to registered subcommands.
 *
 * Before dispatch, every "--name=value" argument (up to a bare "--") is
 * split into "--name" "value", so each command takes both spellings
 * without its own code.
 * "spotrun --version" is "spotrun version".
 */
#include <errno.h>
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

int cli_parse_count(const char *cmd, const char *flag, const char *s,
		    unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v > max)
		return cli_usage_error(cmd, "%s: expected a whole number <= %llu, got '%s'",
				       flag, max, s);
	*out = v;
	return 0;
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
	fprintf(f, "usage: spotrun COMMAND [ARGS...]\n\n"
		   "Run training jobs safely on spot GPUs.\n\ncommands:\n");
	for (int i = 0; i < g_ncmds; i++)
		fprintf(f, "  %-10s %s\n", g_cmds[i]->name, g_cmds[i]->summary);
	fprintf(f, "\n'spotrun COMMAND --help' describes a command.\n");
}

/* argv with "--name=value" split in two; NULL on out-of-memory.  The
 * strings are argv's own or owned by *store (caller frees both arrays). */
static char **split_eq(int argc, char **argv, int *nargc, char **store)
{
	char **v = calloc((size_t)argc * 2 + 1, sizeof *v);
	size_t total = 0, off = 0;
	int k = 0, rest = 0; /* rest: after a bare "--", passed on untouched */

	for (int i = 0; i < argc; i++)
		total += strlen(argv[i]) + 1;
	*store = malloc(total + 1);
	if (!v || !*store) {
		free(v);
		free(*store);
		*store = NULL;
		return NULL;
	}
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');

		if (!strcmp(a, "--"))
			rest = 1;
		if (!rest && i > 0 && !strncmp(a, "--", 2) && a[2] && eq && eq > a + 2) {
			size_t n = (size_t)(eq - a);

			memcpy(*store + off, a, n);
			(*store)[off + n] = '\0';
			v[k++] = *store + off;
			off += n + 1;
			v[k++] = (char *)eq + 1;
		} else {
			v[k++] = argv[i];
		}
	}
	v[k] = NULL;
	*nargc = k;
	return v;
}

int main(int argc, char **argv)
{
	char **args, *store = NULL;
	int nargs = 0, rc;

	qsort(g_cmds, (size_t)g_ncmds, sizeof g_cmds[0], cmp_cmd);
	args = split_eq(argc, argv, &nargs, &store);
	if (!args) {
		fprintf(stderr, "spotrun: out of memory\n");
		return CLI_FAIL;
	}
	rc = dispatch(nargs, args);
	free(args);
	free(store);
	return rc;
}

static int dispatch(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return CLI_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
		argv[1] = "version";
	for (int i = 0; i < g_ncmds; i++) {
		if (!strcmp(argv[1], g_cmds[i]->name))
			return g_cmds[i]->run(argc - 1, argv + 1);
	}
	fprintf(stderr, "spotrun: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return CLI_USAGE;
}
