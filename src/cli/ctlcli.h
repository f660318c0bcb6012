/*
 * ctlcli.h - what the CLI commands that talk to spotrund share: the
 * common options (--api, --state-dir, --json), opening the client with a
 * clear error, and formatting (money, durations, ages, tables).
 */
#ifndef SR_CLI_CTLCLI_H
#define SR_CLI_CTLCLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cliopt.h"
#include "ctlclient/ctlclient.h"

struct ctlcli {
	const char *cmd;       /* "status", for messages */
	const char *api;       /* --api */
	const char *state_dir; /* --state-dir */
	int json;              /* --json */
	int64_t job;           /* the JOB argument, 0 if none */
	struct ctlc *c;
};

enum ctlcli_job_arg { CTLCLI_NO_JOB, CTLCLI_JOB_OPTIONAL, CTLCLI_JOB_REQUIRED };

/* --api and --state-dir, which every command that talks to spotrund
 * takes (a cli_opts `more` table), and their keys. */
enum { CTLCLI_OPT_API = CLI_KEY_LONG + 200, CTLCLI_OPT_STATE_DIR };
extern const struct cli_optdef ctlcli_common_defs[];

#define CTLCLI_COMMON_HELP                                                     \
	"  --api URL        spotrund URL (default: $SPOTRUN_API, else the\n"   \
	"                   daemon's <state-dir>/api.url, else " CTLC_DEFAULT_URL ")\n" \
	"  --state-dir DIR  spotrund's state dir (default: $SPOTRUN_STATE_DIR\n" \
	"                   or ~/.local/state/spotrun); the token is read there\n" \
	"JOB is a job id or a job name (the newest job of that name).\n"

/* If key is a common option's, store its value and return 1; else 0. */
int ctlcli_common_opt(struct ctlcli *o, int key, const char *arg);

/* A command's own option `key` (value in p->arg, spelling in p->name):
 * return 0, or CLI_USAGE after printing a usage error (cli_opts_error). */
typedef int (*ctlcli_opt_fn)(struct ctlcli *o, void *ud,
			     const struct cli_opts *p, int key);

/* Parse a command line: --help/-h (prints usage()), --json, the common
 * options, the command's own (defs, handed to fn; both may be NULL), and
 * the JOB as `job` says.  Returns -1 to go on, or the exit status to
 * return at once (CLI_OK after --help, CLI_USAGE after a usage error,
 * already printed; CLI_FAIL when a job name could not be looked up). */
int ctlcli_parse(struct ctlcli *o, int argc, char **argv,
		 enum ctlcli_job_arg job, void (*usage)(void),
		 const struct cli_optdef *defs, ctlcli_opt_fn fn, void *ud);

/* Open the client (a no-op when already open); on failure print
 * "spotrun CMD: why" and return -1. */
int ctlcli_open(struct ctlcli *o);
void ctlcli_close(struct ctlcli *o);

/* ctlc_call plus printing the error as "spotrun CMD: message".  Returns 0
 * or the negative code (already printed). */
int ctlcli_call(struct ctlcli *o, const char *method, const char *path,
		json_t *body, json_t **reply);

/* A job given by id ("12") or by name ("spotrun-demo"; the newest job of
 * that name, looked up with GET /v1/jobs?name=, which opens the client).
 * Returns 0, -2 after a usage error, -1 after another error (printed). */
int ctlcli_job_ref(struct ctlcli *o, const char *s, int64_t *id);

/* Parse a job id ("12"); prints a usage error and returns -1 if bad. */
int ctlcli_job_id(const struct ctlcli *o, const char *s, int64_t *id);

/* s percent-encoded for a query string (unreserved characters kept),
 * truncated to fit buf. */
void ctlcli_query_escape(const char *s, char *buf, size_t n);

/* Print v as one JSON document on stdout (indent 2, sorted keys). */
void ctlcli_print_json(const json_t *v);

/* Formatting into caller buffers; each returns buf. */
const char *ctlcli_money(json_t *micros, char *buf, size_t n);  /* "$1.23" */
const char *ctlcli_secs(double s, char *buf, size_t n);         /* "1h02m" */
const char *ctlcli_age(const char *rfc3339, char *buf, size_t n); /* "5s ago" */
/* obj[key] as text for a terminal, or dflt.  A value with control or
 * bidirectional-text characters is escaped (common/text.h) in obj itself,
 * so the pointer stays valid as long as obj. */
const char *ctlcli_str(json_t *obj, const char *key, const char *dflt);
int64_t ctlcli_int(json_t *obj, const char *key, int64_t dflt);
double ctlcli_num(json_t *obj, const char *key, double dflt); /* int or real */
/* "cloud/region/zone" of a placement or node (empty parts skipped). */
const char *ctlcli_where(json_t *obj, char *buf, size_t n);
/* Whether to color what goes to f: a terminal, and NO_COLOR unset. */
bool ctlcli_color(FILE *f);
/* A job's deadline verdict (its view's "deadline"): "MISSED by 1h30m",
 * "AT RISK, done ~12-02 14:02Z", "met", "not met", "on track", or "-"
 * without a deadline; *alarm for the first two (shown red). */
const char *ctlcli_deadline(json_t *job, char *buf, size_t n, bool *alarm);

#endif
