/*
 * cli.h - the `spotrun` command's subcommand registry.
 *
 * Each subcommand lives in its own file, src/cli/cmd_<name>.c, and
 * registers itself with CLI_COMMAND(); main.c dispatches on argv[1] and
 * builds the top-level --help from the registry, so adding a command
 * touches no shared file.
 *
 * Conventions for every subcommand (its options are parsed by cliopt.h,
 * which does the first three alike for all):
 *   - `spotrun NAME --help` prints usage to stdout and exits 0;
 *   - a usage error prints one line naming the bad argument plus
 *     "try 'spotrun NAME --help'" to stderr and exits 2;
 *   - read commands take --json and then print exactly one JSON document;
 *   - other failures print "spotrun NAME: <message>" and exit 1.
 */
#ifndef SR_CLI_H
#define SR_CLI_H

struct cli_cmd {
	const char *name;    /* e.g. "ckpt" */
	const char *summary; /* one line for the top-level help */
	int (*run)(int argc, char **argv); /* argv[0] is the command name */
};

void cli_register(const struct cli_cmd *c);

#define CLI_COMMAND(NAME, SUMMARY, FN)                                      \
	static const struct cli_cmd cli__cmd_##FN = { NAME, SUMMARY, FN };  \
	__attribute__((constructor)) static void cli__reg_##FN(void)        \
	{                                                                   \
		cli_register(&cli__cmd_##FN);                               \
	}

/* Exit codes. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Print "spotrun <cmd>: <msg>\ntry 'spotrun <cmd> --help'\n" to stderr
 * and return CLI_USAGE (cliopt.c). */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* `spotrun ckpt ls URI` on a synced directory (ckpt_rounds.c): its
 * rounds, newest first; CLI_OK, or CLI_FAIL with the error on stderr. */
int ckpt_ls_rounds(const char *uri, int json);

#endif
