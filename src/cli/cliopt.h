/*
 * cliopt.h - the one option parser of every `spotrun` command.
 *
 * getopt_long underneath (so "--name value", "--name=value", "-f", "-dy"
 * and unambiguous prefixes all work as in other GNU tools), with what
 * every command answers alike done here once:
 *   --help, -h    print the command's usage to stdout, exit 0;
 *   --json        (with CLI_OPT_JSON) sets p->json;
 *   usage errors  one line naming the argument, then "try 'spotrun CMD
 *                 --help'", exit 2: an unknown or ambiguous option, a
 *                 missing value, a value given to a flag, a value option
 *                 given twice, an operand too many;
 *   operands      (words that are not options) collected in order into
 *                 p->operand[]; after a bare "--" the rest are operands
 *                 too, or with CLI_OPT_REST they go to p->rest untouched
 *                 (`spotrun daemon start -- --flag-for-spotrund`).
 *
 * A command declares its options in a table and switches on the keys:
 *
 *     static const struct cli_optdef defs[] = {
 *             { "detach", 'd', CLI_NOARG },   // also -d
 *             { "env", OPT_ENV, CLI_REPEAT }, // OPT_ENV >= 256: long only
 *             { NULL, 0, 0 },
 *     };
 *     struct cli_opts p = { .cmd = "launch", .defs = defs, .usage = usage,
 *                           .flags = CLI_OPT_JSON, .max_operands = 1 };
 *     while ((c = cli_opts_next(&p, argc, argv)) > 0)
 *             switch (c) { case 'd': ...; case OPT_ENV: use p.arg; }
 *     if (c < 0)
 *             return p.status;         // help shown or usage error printed
 *
 * Keys are letters (the short option too) or values >= CLI_KEY_LONG; 'h'
 * is --help's.  The parser uses getopt's global state: one parse at a
 * time, in one thread (a CLI's main thread).
 */
#ifndef SR_CLI_CLIOPT_H
#define SR_CLI_CLIOPT_H

#include <getopt.h>

enum cli_arg {
	CLI_NOARG,   /* a flag; given twice is the same as once */
	CLI_ARG,     /* takes one value; given twice is a usage error */
	CLI_REPEAT,  /* takes one value each time; may be repeated */
	CLI_LIST,    /* "--trace A B C": the words after it, up to the next
		      * option, are its values (returned one at a time);
		      * at least one is required */
};

struct cli_optdef {
	const char *name; /* long name without "--"; NULL ends a table */
	int key;          /* returned for it: a letter or >= CLI_KEY_LONG */
	enum cli_arg arg;
};

enum { CLI_KEY_LONG = 256 };

enum {
	CLI_OPT_JSON = 1,  /* take --json (sets p->json) */
	CLI_OPT_REST = 2,  /* the words after "--" go to p->rest */
	CLI_OPT_VERB = 4,  /* stop at the first operand (a subcommand: "ckpt
			    * ls ..."): it is operand[0], and p->rest holds
			    * the words after it for the subcommand's own
			    * parse, which gets (p->n_rest + 1, p->rest - 1) */
};

#define CLI_MAX_OPERANDS 32
#define CLI_MAX_OPTS 48

struct cli_opts {
	/* set by the caller */
	const char *cmd;               /* "launch": "spotrun launch: ..."
					* (NULL: spotrun itself) */
	const char *sub;               /* "bench" or NULL: "spotrun ckpt: bench: ..." */
	const struct cli_optdef *defs; /* the command's options (may be NULL) */
	const struct cli_optdef *more; /* shared ones (ctlcli's --api...), or NULL */
	void (*usage)(void);           /* prints the help to stdout */
	unsigned flags;                /* CLI_OPT_* */
	int max_operands;              /* more is "unexpected argument" */

	/* results */
	int json;                        /* --json was given */
	const char *arg;                 /* value of the option just returned */
	char name[64];                   /* that option as typed: "--rank", "-f" */
	char *operand[CLI_MAX_OPERANDS]; /* borrowed from argv */
	int n_operands;
	char **rest;                     /* CLI_OPT_REST: after "--" (borrowed) */
	int n_rest;
	int ind;                         /* argv index of the next word to read */
	int status;                      /* exit status after a -1 return */

	/* private */
	int started, done, list_key, list_n;
	char list_name[64];
	char shorts[2 * CLI_MAX_OPTS + 4];
	struct option longs[CLI_MAX_OPTS + 3];
	unsigned char seen[CLI_MAX_OPTS + 3];
};

/* The next option: its key (value in p->arg, spelling in p->name); 0 when
 * the command line is read (operands in p->operand); -1 when the command
 * must return p->status at once (--help printed: CLI_OK; a usage error
 * printed: CLI_USAGE). */
int cli_opts_next(struct cli_opts *p, int argc, char **argv);

/* Print "spotrun CMD: [SUB: ]<message>" and the --help hint to stderr;
 * returns CLI_USAGE.  For a bad value: cli_opts_error(p, "%s: '%s' is
 * not ...", p->name, p->arg). */
int cli_opts_error(const struct cli_opts *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A whole number <= max from the current option's value into *out, or a
 * usage error naming the option (returns CLI_USAGE). */
int cli_opts_count(const struct cli_opts *p, unsigned long long max,
		   unsigned long long *out);

/* A command of subcommands ("spotrun ckpt ls ..."): read its command
 * line up to the verb (--help prints usage).  Returns -1 to go on, with
 * *sub the verb and *sargc, *sargv the words from the verb on (for the
 * subcommand's own parse); else the exit status to return at once
 * (CLI_OK after --help; CLI_USAGE after a usage error, or with no verb
 * after printing usage_text on stderr). */
int cli_opts_verb(const char *cmd, void (*usage)(void), const char *usage_text,
		  int argc, char **argv, const char **sub, int *sargc,
		  char ***sargv);

#endif
