/*
 * cliopt.c - the option parser every `spotrun` command uses (cliopt.h).
 *
 * getopt_long runs in "return in order" mode (optstring "-:..."): each
 * word that is not an option comes back as key 1, so operands are seen
 * where they stand (a CLI_LIST option takes the ones after it), and a
 * missing value comes back as ':' rather than a message of getopt's own.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cliopt.h"

enum { KEY_JSON = CLI_KEY_LONG - 1, KEY_OPERAND = 1 };

static int usage_verror(const char *cmd, const char *sub, const char *fmt,
			va_list ap) __attribute__((format(printf, 3, 0)));

static int usage_verror(const char *cmd, const char *sub, const char *fmt,
			va_list ap)
{
	cmd = cmd ? cmd : "";
	sub = sub ? sub : "";
	fprintf(stderr, "spotrun%s%s: ", *cmd ? " " : "", cmd);
	if (*sub)
		fprintf(stderr, "%s: ", sub);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\ntry 'spotrun%s%s%s%s --help'\n", *cmd ? " " : "", cmd,
		*sub ? " " : "", sub);
	return CLI_USAGE;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = usage_verror(cmd, NULL, fmt, ap);
	va_end(ap);
	return rc;
}

int cli_opts_error(const struct cli_opts *p, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = usage_verror(p->cmd, p->sub, fmt, ap);
	va_end(ap);
	return rc;
}

int cli_opts_count(const struct cli_opts *p, unsigned long long max,
		   unsigned long long *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(p->arg, &end, 10);
	if (errno || end == p->arg || *end || p->arg[0] == '-' || v > max)
		return cli_opts_error(p, "%s: expected a whole number <= %llu, got '%s'",
				      p->name, max, p->arg);
	*out = v;
	return 0;
}

static int stop(struct cli_opts *p, int status)
{
	p->status = status;
	p->done = -1;
	return -1;
}

static int add_long(struct cli_opts *p, int *n, size_t *ns, const char *name,
		    int key, enum cli_arg arg)
{
	static const char *const suffix[] = { "", ":", ":", "::" };

	if (*n >= CLI_MAX_OPTS + 2)
		return -1;
	p->longs[*n] = (struct option){ name, arg == CLI_NOARG ? no_argument :
					arg == CLI_LIST ? optional_argument :
					required_argument, NULL, key };
	(*n)++;
	if (key < 128 && isalnum(key)) {
		int w = snprintf(p->shorts + *ns, sizeof p->shorts - *ns, "%c%s",
				 key, suffix[arg]);

		if (w < 0 || (size_t)w >= sizeof p->shorts - *ns)
			return -1;
		*ns += (size_t)w;
	}
	return 0;
}

/* getopt's tables from defs, more, --help and --json. */
static int start(struct cli_opts *p)
{
	const struct cli_optdef *tabs[2] = { p->defs, p->more };
	size_t ns = 2;
	int n = 0, rc = 0;

	memset(p->longs, 0, sizeof p->longs);
	memset(p->seen, 0, sizeof p->seen);
	memcpy(p->shorts, "-:", 3);
	for (int t = 0; t < 2; t++)
		for (const struct cli_optdef *d = tabs[t]; d && d->name; d++)
			rc |= add_long(p, &n, &ns, d->name, d->key, d->arg);
	rc |= add_long(p, &n, &ns, "help", 'h', CLI_NOARG);
	if (p->flags & CLI_OPT_JSON)
		rc |= add_long(p, &n, &ns, "json", KEY_JSON, CLI_NOARG);
	if (rc) { /* a table too long for the arrays: the program's bug */
		fprintf(stderr, "spotrun %s: too many options\n", p->cmd ? p->cmd : "");
		return -1;
	}
	p->started = 1;
	p->n_operands = 0;
	p->rest = NULL;
	p->n_rest = 0;
	p->json = 0;
	optind = 0; /* glibc: start over, whatever the last parse left */
	opterr = 0;
	return 0;
}

static int index_of(const struct cli_opts *p, int key)
{
	for (int i = 0; p->longs[i].name; i++)
		if (p->longs[i].val == key)
			return i;
	return -1;
}

static enum cli_arg arg_of(const struct cli_opts *p, int key)
{
	const struct cli_optdef *tabs[2] = { p->defs, p->more };

	for (int t = 0; t < 2; t++)
		for (const struct cli_optdef *d = tabs[t]; d && d->name; d++)
			if (d->key == key)
				return d->arg;
	return CLI_NOARG;
}

static int add_operand(struct cli_opts *p, char *w)
{
	int max = p->max_operands < CLI_MAX_OPERANDS ? p->max_operands
						     : CLI_MAX_OPERANDS;

	if (p->n_operands >= max)
		return stop(p, cli_opts_error(p, "unexpected argument '%s'", w));
	p->operand[p->n_operands++] = w;
	return 0;
}

/* "--x=1" -> "--x" into buf. */
static const char *typed(const char *w, char *buf, size_t n)
{
	snprintf(buf, n, "%.*s", (int)strcspn(w, "="), w);
	return buf;
}

/* getopt answered '?': an unknown or ambiguous option, or a value given
 * to a flag ("--json=1"). */
static int bad_option(struct cli_opts *p, char **argv)
{
	const char *w = optind > 0 ? argv[optind - 1] : "";
	char name[64], cands[160] = "";
	int nc = 0;

	if (strncmp(w, "--", 2) != 0 || !w[2]) /* a short one: -x */
		return stop(p, cli_opts_error(p, "unknown option '-%c'",
					      optopt ? optopt : '?'));
	typed(w, name, sizeof name);
	if (optopt && strchr(w, '='))
		return stop(p, cli_opts_error(p, "%s takes no value (got '%s')", name,
					      strchr(w, '=') + 1));
	for (int i = 0; p->longs[i].name; i++) {
		size_t used = strlen(cands);

		if (strncmp(p->longs[i].name, name + 2, strlen(name + 2)) != 0)
			continue;
		nc++;
		snprintf(cands + used, sizeof cands - used, "%s--%s", used ? ", " : "",
			 p->longs[i].name);
	}
	if (nc > 1)
		return stop(p, cli_opts_error(p, "ambiguous option '%s' (%s)", name, cands));
	return stop(p, cli_opts_error(p, "unknown option '%s'", name));
}

/* The option just read, named as typed and counted. */
static int take(struct cli_opts *p, int c, int li)
{
	int i = index_of(p, c);
	enum cli_arg arg = arg_of(p, c);

	if (li >= 0)
		snprintf(p->name, sizeof p->name, "--%s", p->longs[li].name);
	else
		snprintf(p->name, sizeof p->name, "-%c", c);
	if (i >= 0 && p->seen[i] && arg == CLI_ARG)
		return stop(p, cli_opts_error(p, "%s given twice", p->name));
	if (i >= 0)
		p->seen[i] = 1;
	p->arg = optarg;
	if (arg == CLI_LIST) {
		p->list_key = c;
		p->list_n = optarg ? 1 : 0;
		snprintf(p->list_name, sizeof p->list_name, "%s", p->name);
		if (!optarg)
			return 0; /* its values are the words that follow */
	}
	return c;
}

/* A CLI_LIST option must have had a value by the time another option or
 * the end comes. */
static int close_list(struct cli_opts *p)
{
	if (p->list_key && p->list_n == 0)
		return stop(p, cli_opts_error(p, "%s needs a value", p->list_name));
	p->list_key = 0;
	return 0;
}

static int finish(struct cli_opts *p, int argc, char **argv)
{
	if (close_list(p))
		return -1;
	if (optind < argc && (p->flags & CLI_OPT_VERB) && !p->n_operands) {
		p->operand[p->n_operands++] = argv[optind]; /* "-- VERB ..." */
		p->rest = argv + optind + 1;
		p->n_rest = argc - optind - 1;
	} else if (optind < argc && (p->flags & CLI_OPT_REST)) {
		p->rest = argv + optind;
		p->n_rest = argc - optind;
	} else {
		for (int i = optind; i < argc; i++)
			if (add_operand(p, argv[i]))
				return -1;
	}
	p->done = 1;
	return 0;
}

int cli_opts_next(struct cli_opts *p, int argc, char **argv)
{
	if (!p->started && start(p))
		return stop(p, CLI_FAIL);
	/* done: 1 after the last word, -1 after a stop */
	while (!p->done) {
		int li = -1, c = getopt_long(argc, argv, p->shorts, p->longs, &li);

		p->ind = optind;

		if (c == -1)
			return finish(p, argc, argv);
		if (c == KEY_OPERAND) {
			if (p->list_key) {
				p->list_n++;
				p->arg = optarg;
				return p->list_key;
			}
			if (add_operand(p, optarg))
				return -1;
			if (p->flags & CLI_OPT_VERB) { /* optind is past it */
				p->rest = argv + optind;
				p->n_rest = argc - optind;
				p->done = 1;
				return 0;
			}
			continue;
		}
		if (close_list(p))
			return -1;
		if (c == '?')
			return bad_option(p, argv);
		if (c == ':') {
			char name[64];

			if (optind > 0 && !strncmp(argv[optind - 1], "--", 2))
				typed(argv[optind - 1], name, sizeof name);
			else
				snprintf(name, sizeof name, "-%c", optopt);
			return stop(p, cli_opts_error(p, "%s needs a value", name));
		}
		if (c == 'h') {
			if (p->usage)
				p->usage();
			return stop(p, CLI_OK);
		}
		if (c == KEY_JSON) {
			p->json = 1;
			continue;
		}
		c = take(p, c, li);
		if (c)
			return c;
	}
	return p->done < 0 ? -1 : 0;
}

int cli_opts_verb(const char *cmd, void (*usage)(void), const char *usage_text,
		  int argc, char **argv, const char **sub, int *sargc,
		  char ***sargv)
{
	struct cli_opts p = { .cmd = cmd, .usage = usage,
			      .flags = CLI_OPT_VERB, .max_operands = 1 };
	int c;

	while ((c = cli_opts_next(&p, argc, argv)) > 0)
		;
	if (c < 0)
		return p.status;
	if (!p.n_operands) {
		fputs(usage_text, stderr);
		return CLI_USAGE;
	}
	*sub = p.operand[0];
	*sargc = p.n_rest + 1; /* from the subcommand on */
	*sargv = p.rest - 1;
	return -1;
}
