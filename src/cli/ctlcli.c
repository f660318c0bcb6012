/*
 * ctlcli.c - shared plumbing of the CLI commands that talk to spotrund.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common/text.h"
#include "common/timeutil.h"
#include "ctlcli.h"

const struct cli_optdef ctlcli_common_defs[] = {
	{ "api", CTLCLI_OPT_API, CLI_ARG },
	{ "state-dir", CTLCLI_OPT_STATE_DIR, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

int ctlcli_common_opt(struct ctlcli *o, int key, const char *arg)
{
	if (key == CTLCLI_OPT_API)
		o->api = arg;
	else if (key == CTLCLI_OPT_STATE_DIR)
		o->state_dir = arg;
	else
		return 0;
	return 1;
}

int ctlcli_parse(struct ctlcli *o, int argc, char **argv,
		 enum ctlcli_job_arg job, void (*usage)(void),
		 const struct cli_optdef *defs, ctlcli_opt_fn fn, void *ud)
{
	struct cli_opts p = {
		.cmd = o->cmd, .defs = defs, .more = ctlcli_common_defs,
		.usage = usage, .flags = CLI_OPT_JSON,
		.max_operands = job == CTLCLI_NO_JOB ? 0 : 1,
	};
	int c, rc;

	while ((c = cli_opts_next(&p, argc, argv)) > 0) {
		if (ctlcli_common_opt(o, c, p.arg) || !fn)
			continue;
		rc = fn(o, ud, &p, c);
		if (rc)
			return rc;
	}
	if (c < 0)
		return p.status;
	o->json = p.json;
	if (!p.n_operands && job == CTLCLI_JOB_REQUIRED)
		return cli_usage_error(o->cmd, "which job? (a job id or name)");
	o->job = 0;
	if (p.n_operands) {
		rc = ctlcli_job_ref(o, p.operand[0], &o->job);
		if (rc < 0) {
			ctlcli_close(o); /* a name lookup may have opened it */
			return rc == -2 ? CLI_USAGE : CLI_FAIL;
		}
	}
	return -1;
}

/* Percent-encode s for a query string into buf. */
void ctlcli_query_escape(const char *s, char *buf, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t k = 0;

	for (; *s && k + 4 < n; s++) {
		unsigned char ch = (unsigned char)*s;

		if (isalnum(ch) || strchr("-._~", ch)) {
			buf[k++] = (char)ch;
		} else {
			buf[k++] = '%';
			buf[k++] = hex[ch >> 4];
			buf[k++] = hex[ch & 15];
		}
	}
	buf[k] = '\0';
}

int ctlcli_job_ref(struct ctlcli *o, const char *s, int64_t *id)
{
	char path[600], esc[400];
	json_t *reply = NULL, *jobs;
	size_t n;
	int all_digits = *s != '\0';

	for (const char *p = s; *p; p++)
		all_digits &= isdigit((unsigned char)*p) != 0;
	if (all_digits)
		return ctlcli_job_id(o, s, id) < 0 ? -2 : 0;
	if (strlen(s) > 255) {
		cli_usage_error(o->cmd, "job name longer than 255 bytes");
		return -2;
	}
	if (!o->c && ctlcli_open(o) < 0)
		return -1;
	ctlcli_query_escape(s, esc, sizeof esc);
	snprintf(path, sizeof path, "/v1/jobs?name=%s&limit=1000", esc);
	if (ctlcli_call(o, "GET", path, NULL, &reply) < 0)
		return -1;
	jobs = json_object_get(reply, "jobs");
	n = json_array_size(jobs);
	if (n == 0) {
		fprintf(stderr, "spotrun %s: no job named '%s' (spotrun status lists "
			"jobs)\n", o->cmd, s);
		json_decref(reply);
		return -1;
	}
	/* newest first: a name used again means the latest run */
	*id = ctlcli_int(json_array_get(jobs, 0), "id", 0);
	if (n > 1)
		fprintf(stderr, "spotrun %s: %zu jobs are named '%s'; using the newest, "
			"job %lld\n", o->cmd, n, s, (long long)*id);
	json_decref(reply);
	return *id > 0 ? 0 : -1;
}

int ctlcli_open(struct ctlcli *o)
{
	struct sr_err e;
	int rc;

	if (o->c) /* already open: a job name was looked up */
		return 0;
	sr_err_clear(&e);
	rc = ctlc_open_cli(o->api, o->state_dir, &o->c, &e);
	if (rc < 0) {
		fprintf(stderr, "spotrun %s: %s\n", o->cmd, sr_err_str(&e, rc));
		return -1;
	}
	return 0;
}

void ctlcli_close(struct ctlcli *o)
{
	ctlc_destroy(o->c);
	o->c = NULL;
}

int ctlcli_call(struct ctlcli *o, const char *method, const char *path,
		json_t *body, json_t **reply)
{
	struct sr_err e;
	int rc;

	sr_err_clear(&e);
	rc = ctlc_call(o->c, method, path, body, reply, NULL, &e);
	if (rc < 0)
		fprintf(stderr, "spotrun %s: %s\n", o->cmd, sr_err_str(&e, rc));
	return rc;
}

int ctlcli_job_id(const struct ctlcli *o, const char *s, int64_t *id)
{
	char *end;

	errno = 0;
	*id = strtoll(s, &end, 10);
	if (errno || end == s || *end || *id <= 0) {
		cli_usage_error(o->cmd, "'%s' is not a job id (a positive integer)",
				s);
		return -1;
	}
	return 0;
}

void ctlcli_print_json(const json_t *v)
{
	/* 15 digits: 0.99, not 0.98999999999999999 */
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS |
			     JSON_REAL_PRECISION(15));

	if (s) {
		printf("%s\n", s);
		free(s);
	}
}

const char *ctlcli_money(json_t *micros, char *buf, size_t n)
{
	double usd;

	if (!json_is_integer(micros)) {
		snprintf(buf, n, "-");
		return buf;
	}
	/* one precision in every table: cents (JSON keeps the micro-dollars) */
	usd = (double)json_integer_value(micros) / 1e6;
	snprintf(buf, n, "%s$%.2f", usd < 0 ? "-" : "", usd < 0 ? -usd : usd);
	return buf;
}

const char *ctlcli_secs(double s, char *buf, size_t n)
{
	long t;

	if (!(s >= 0) || s > 1e12) {
		snprintf(buf, n, "-");
		return buf;
	}
	t = (long)(s + 0.5);
	if (t < 60)
		snprintf(buf, n, "%lds", t);
	else if (t < 3600)
		snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
	else if (t < 86400 * 2)
		snprintf(buf, n, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
	else
		snprintf(buf, n, "%ldd%02ldh", t / 86400, (t % 86400) / 3600);
	return buf;
}

const char *ctlcli_age(const char *ts, char *buf, size_t n)
{
	int64_t t;
	char d[32];

	if (!ts || sr_time_parse_rfc3339(ts, &t, NULL) < 0) {
		snprintf(buf, n, "-");
		return buf;
	}
	ctlcli_secs((double)(sr_time_real_ns() - t) / 1e9, d, sizeof d);
	snprintf(buf, n, "%s ago", d);
	return buf;
}

const char *ctlcli_str(json_t *obj, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(obj, key));
	char *safe;

	if (!s)
		return dflt;
	if (!sr_text_unsafe(s, NULL, NULL))
		return s;
	/* ESC, U+202E...: the escaped text replaces the value in the reply
	 * (which the caller owns) and is what the terminal sees */
	safe = sr_text_escape(s);
	if (!safe || json_object_set_new(obj, key, json_string(safe)) < 0) {
		free(safe);
		return "?";
	}
	free(safe);
	return json_string_value(json_object_get(obj, key));
}

int64_t ctlcli_int(json_t *obj, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

double ctlcli_num(json_t *obj, const char *key, double dflt)
{
	json_t *v = json_object_get(obj, key);

	return json_is_number(v) ? json_number_value(v) : dflt;
}

const char *ctlcli_where(json_t *obj, char *buf, size_t n)
{
	static const char *const keys[] = { "cloud", "region", "zone" };
	size_t used = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < 3; k++) {
		const char *v = ctlcli_str(obj, keys[k], "");
		int w;

		if (!*v)
			continue;
		w = snprintf(buf + used, n - used, "%s%s", used ? "/" : "", v);
		if (w < 0 || (size_t)w >= n - used)
			break;
		used += (size_t)w;
	}
	if (!buf[0])
		snprintf(buf, n, "?");
	return buf;
}

bool ctlcli_color(FILE *f)
{
	return isatty(fileno(f)) && !getenv("NO_COLOR");
}

const char *ctlcli_deadline(json_t *job, char *buf, size_t n, bool *alarm)
{
	json_t *d = json_object_get(job, "deadline");
	const char *st = ctlcli_str(d, "state", NULL);
	char a[32], when[40];

	*alarm = false;
	if (!st) {
		snprintf(buf, n, "-");
		return buf;
	}
	if (!strcmp(st, "missed")) {
		*alarm = true;
		snprintf(buf, n, "MISSED by %s", ctlcli_secs(ctlcli_num(d, "late_s", 0),
							     a, sizeof a));
	} else if (!strcmp(st, "at_risk")) {
		*alarm = true;
		/* "2026-12-02T14:02:11.000Z" -> "12-02 14:02Z" */
		const char *p = ctlcli_str(d, "projected_finish_at", "");

		if (strlen(p) >= 16)
			snprintf(when, sizeof when, "%.5s %.5sZ", p + 5, p + 11);
		else
			snprintf(when, sizeof when, "?");
		snprintf(buf, n, "AT RISK, done ~%s", when);
	} else if (!strcmp(st, "not_met")) {
		snprintf(buf, n, "not met");
	} else if (!strcmp(st, "on_track")) {
		snprintf(buf, n, "on track");
	} else {
		snprintf(buf, n, "%s", st);
	}
	return buf;
}
