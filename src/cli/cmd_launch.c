/*
 * cmd_launch.c - `spotrun launch JOB.yaml [-d] [-y]`: show what will be
 * bought, ask, submit the job and follow it until it ends.
 *
 * The file is first read here, so every problem in it is listed at once
 * (the same parser spotrund runs), and planned on the bundled catalog:
 * the chosen pool, its price, the deadline and the expected cost with its
 * 95th percentile are printed, and on a terminal the user confirms (-y
 * skips the question).  The YAML is then sent as text (POST /v1/jobs,
 * spec_yaml); spotrund parses and places it itself.  While following,
 * the workload's log lines and every job event are printed on stdout,
 * and a live status line (state, time in it, step, cost so far, savings)
 * is redrawn on stderr when stderr is a terminal.  Ctrl-C detaches: the
 * job keeps running.
 */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clijob.h"
#include "common/backoff.h"
#include "common/fsutil.h"
#include "common/timeutil.h"
#include "ctlcli.h"
#include "launch_ckpt.h"
#include "launch_files.h"
#include "market/joblimits.h"
#include "market/plan.h"

void events_print_line(FILE *f, json_t *ev); /* cmd_events.c */
void logs_print_line(json_t *l, int multi);  /* cmd_logs.c */

static volatile sig_atomic_t g_detach;

static void on_int(int sig)
{
	(void)sig;
	g_detach = 1;
}

static void usage(void)
{
	printf("usage: spotrun launch JOB.yaml [-d] [-y] [--env KEY=VALUE]...\n"
	       "                      [--max-restarts N] [--workdir DIR] [--no-logs]\n"
	       "                      [--no-store-check]\n"
	       "                      [--json] [--api URL] [--state-dir DIR]\n\n"
	       "Show what the job will run on (pool, price, deadline, expected cost\n"
	       "and its 95th percentile, from the catalog), ask for confirmation on a\n"
	       "terminal, submit it to spotrund and follow it: the workload's output\n"
	       "and every job event are printed, and on a terminal a live line shows\n"
	       "state, step, cost so far and savings.  JOB.yaml may be a SkyPilot task\n"
	       "file (docs/jobs.md).\n"
	       "Ctrl-C detaches (the job keeps running; 'spotrun status JOB').\n"
	       "Exit status: 0 when the job SUCCEEDED, 1 when it FAILED or was\n"
	       "CANCELLED (or on an error), 0 after detaching, 2 on a usage error or\n"
	       "a name the catalog does not have.\n\n"
	       "  -d, --detach       submit, print the job id and return\n"
	       "  -y, --yes          do not ask for confirmation\n"
	       "  --env KEY=VALUE    add an environment variable for the workload\n"
	       "  --max-restarts N   workload crashes tolerated (default 3)\n"
	       "  --workdir DIR      the job's directory: uploaded as its workdir\n"
	       "                     when it has workdir: (which DIR replaces),\n"
	       "                     where relative file_mounts sources are read\n"
	       "                     (only files under it are uploaded), else where\n"
	       "                     the local cloud runs it (default: the file's\n"
	       "                     workdir:, else the file's dir)\n"
	       "  --no-logs          follow events only, not the workload's output\n"
	       "  --no-store-check   do not check that the job's nodes can reach its\n"
	       "                     spotrun.checkpoint.uri and its bucket file_mounts\n"
	       "                     with the credentials they get (its envs and\n"
	       "                     --env; by default a store that refuses them, or\n"
	       "                     a missing bucket, refuses the launch)\n"
	       "  --json             with -d: print the created job as JSON\n"
	       "secrets: with no value are taken from the environment of this command.\n"
	       CTLCLI_COMMON_HELP);
}

static int terminal(const char *state)
{
	return !strcmp(state, "SUCCEEDED") || !strcmp(state, "FAILED") ||
	       !strcmp(state, "CANCELLED");
}

/* When the job entered its current state (monotonic s), for the timer
 * shown while it waits or provisions. */
static char g_state[32];
static double g_state_since;

static void status_line(json_t *job, int tty)
{
	char cost[32], rate[32], step[96] = "", where[128], took[32];
	const char *state = ctlcli_str(job, "state", "?");
	double now = (double)sr_time_mono_ns() / 1e9;
	json_t *pl = json_object_get(job, "placement");
	json_t *list = json_object_get(job, "list_cost_micros");
	int64_t s = ctlcli_int(job, "step", -1), t = ctlcli_int(job, "total_steps", -1);
	int64_t c = ctlcli_int(job, "cost_micros", 0);

	if (!tty)
		return;
	if (strcmp(g_state, state)) {
		snprintf(g_state, sizeof g_state, "%s", state);
		g_state_since = now;
	}
	if (s >= 0 && t > 0)
		snprintf(step, sizeof step, "  step %lld/%lld (%d%%)", (long long)s,
			 (long long)t, (int)(100 * s / t));
	else if (s >= 0)
		snprintf(step, sizeof step, "  step %lld", (long long)s);
	fprintf(stderr, "\r\033[K%-13s %-7s%s  cost %s", state,
		ctlcli_secs(now - g_state_since, took, sizeof took), step,
		ctlcli_money(json_object_get(job, "cost_micros"), cost, sizeof cost));
	if (json_is_integer(list) && json_integer_value(list) > 0)
		fprintf(stderr, "  saved %.0f%% vs on-demand",
			100.0 * (1.0 - (double)c / (double)json_integer_value(list)));
	if (json_is_object(pl))
		fprintf(stderr, "  on %s %s %s/h", ctlcli_where(pl, where, sizeof where),
			json_is_true(json_object_get(pl, "spot")) ? "spot" : "on-demand",
			ctlcli_money(json_object_get(pl, "price_micros_per_hour"), rate,
				     sizeof rate));
	fprintf(stderr, "  preemptions %lld moves %lld",
		(long long)ctlcli_int(job, "preemptions", 0),
		(long long)ctlcli_int(job, "moves", 0));
	fflush(stderr);
}

static void summary(json_t *job)
{
	char cost[32], list[32], el[32];
	json_t *lc = json_object_get(job, "list_cost_micros");
	json_t *dl = json_object_get(job, "sim_deadline_s");
	const char *state = ctlcli_str(job, "state", "?");

	printf("job %lld %s", (long long)ctlcli_int(job, "id", 0), state);
	if (!strcmp(state, "FAILED") && json_is_integer(json_object_get(job, "exit_code")))
		printf(" (exit code %lld)", (long long)ctlcli_int(job, "exit_code", 0));
	printf(": cost %s", ctlcli_money(json_object_get(job, "cost_micros"), cost,
					 sizeof cost));
	if (json_is_integer(lc) && json_integer_value(lc) > 0)
		printf(" (all on-demand: %s)", ctlcli_money(lc, list, sizeof list));
	printf(", %lld preemptions, %lld moves, %s of cloud time",
	       (long long)ctlcli_int(job, "preemptions", 0),
	       (long long)ctlcli_int(job, "moves", 0),
	       ctlcli_secs(ctlcli_num(job, "sim_elapsed_s", -1), el, sizeof el));
	if (json_is_number(dl)) {
		char v[64];
		bool alarm, c = ctlcli_color(stdout);

		ctlcli_deadline(job, v, sizeof v, &alarm);
		printf(" (deadline %s: %s%s%s)", ctlcli_secs(json_number_value(dl), list,
							    sizeof list),
		       alarm && c ? "\033[31m" : "", v, alarm && c ? "\033[0m" : "");
	}
	printf("\n");
}

/* Follow job `id` until it ends or the user detaches.  Returns the exit
 * status of the command. */
/* Print the workload's new log lines; 0 or the call's error code. */
static int follow_logs(struct ctlcli *o, int64_t id, int64_t *after, int tty,
		       int *multi, struct sr_err *e)
{
	char path[160];
	json_t *reply = NULL, *lines, *l;
	size_t i;
	int r;

	snprintf(path, sizeof path, "/v1/jobs/%lld/logs?after=%lld&limit=5000",
		 (long long)id, (long long)*after);
	r = ctlc_call(o->c, "GET", path, NULL, &reply, NULL, e);
	if (r < 0)
		return r;
	lines = json_object_get(reply, "lines");
	if (tty && json_array_size(lines))
		fprintf(stderr, "\r\033[K");
	json_array_foreach(lines, i, l) {
		if (ctlcli_int(l, "rank", 0) > 0)
			*multi = 1;
		logs_print_line(l, *multi);
	}
	fflush(stdout);
	*after = ctlcli_int(reply, "next", *after);
	json_decref(reply);
	return 0;
}

static int follow(struct ctlcli *o, int64_t id, int logs)
{
	int tty = isatty(2), rc = CLI_FAIL, misses = 0, multi = 0;
	int64_t after = 0, log_after = 0, lost_since = 0;
	struct sr_backoff bo;
	struct sigaction sa;

	/* the daemon unreachable: retry after 0.5 s, doubling, up to 5 s */
	sr_backoff_init(&bo, 500 * INT64_C(1000000), 5 * SR_NS_PER_SEC);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_int;
	sigaction(SIGINT, &sa, NULL);
	while (!g_detach) {
		char path[128];
		json_t *reply = NULL, *job, *evs, *ev;
		size_t i;
		struct sr_err e;
		int r;

		snprintf(path, sizeof path, "/v1/jobs/%lld/events?after=%lld&limit=1000",
			 (long long)id, (long long)after);
		sr_err_clear(&e);
		r = logs ? follow_logs(o, id, &log_after, tty, &multi, &e) : 0;
		if (r == 0)
			r = ctlc_call(o->c, "GET", path, NULL, &reply, NULL, &e);
		if (r == 0) {
			evs = json_object_get(reply, "events");
			if (tty && json_array_size(evs))
				fprintf(stderr, "\r\033[K");
			json_array_foreach(evs, i, ev) {
				json_t *d = json_object_get(ev, "data");

				/* periodic checkpoints are in 'spotrun events';
				 * here only the final one after a notice */
				if (!strcmp(ctlcli_str(ev, "type", ""), "checkpoint") &&
				    !json_is_true(json_object_get(d, "final")))
					continue;
				events_print_line(stdout, ev);
			}
			fflush(stdout);
			after = ctlcli_int(reply, "next", after);
			json_decref(reply);
			reply = NULL;
			snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
			r = ctlc_call(o->c, "GET", path, NULL, &reply, NULL, &e);
		}
		if (r < 0) {
			/* a daemon restart is survivable: keep trying a while */
			if (++misses == 1 && tty)
				fprintf(stderr, "\r\033[K");
			if (misses == 1 || misses % 10 == 0)
				fprintf(stderr, "spotrun launch: %s (retrying)\n",
					sr_err_str(&e, r));
			if (misses == 1)
				lost_since = sr_time_mono_ns();
			if (sr_time_mono_ns() - lost_since > 60 * SR_NS_PER_SEC ||
			    r == -SR_ENOTFOUND || r == -EACCES) {
				json_decref(reply);
				return CLI_FAIL;
			}
			json_decref(reply);
			usleep((useconds_t)(sr_backoff_fail(&bo, sr_time_mono_ns()) /
					    1000));
			continue;
		}
		misses = 0;
		sr_backoff_ok(&bo);
		job = json_object_get(reply, "job");
		if (terminal(ctlcli_str(job, "state", ""))) {
			if (tty)
				fprintf(stderr, "\r\033[K");
			if (logs) /* the last lines, written as it ended */
				follow_logs(o, id, &log_after, tty, &multi, &e);
			summary(job);
			rc = strcmp(ctlcli_str(job, "state", ""), "SUCCEEDED") ? CLI_FAIL
									   : CLI_OK;
			json_decref(reply);
			return rc;
		}
		status_line(job, tty);
		json_decref(reply);
		usleep(500000);
	}
	if (tty)
		fprintf(stderr, "\r\033[K");
	fprintf(stderr, "detached: job %lld keeps running; it was not cancelled "
		"('spotrun status %lld', 'spotrun logs %lld -f', 'spotrun cancel "
		"%lld')\n", (long long)id, (long long)id, (long long)id, (long long)id);
	return CLI_OK;
}

/* Plan js on the bundled catalog and print the placement it would buy to
 * f (NULL: check only).  Returns 0 (also when there is nothing to show),
 * or CLI_USAGE after printing that a name is not in the catalog or the
 * work cannot fit before the deadline. */
/* fprintf that does nothing without a stream (launch --json). */
__attribute__((format(printf, 2, 3)))
static void say(FILE *f, const char *fmt, ...)
{
	va_list ap;

	if (!f)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
}

static int preview(const struct jobspec *js, FILE *f)
{
	struct catalog cat;
	struct plan_result r = { 0 };
	struct sr_err e = { 0 };
	char a[32], b[32], dl[32], where[160];
	const struct plan_placement *p;
	int rc = 0;

	say(f, "job %s: %s:%d x %d node(s)\n", js->name ? js->name : "(unnamed)",
	       js->accel[0] ? js->accel : "-", js->accel_count, js->num_nodes);
	if (!(js->work_h > 0)) {
		say(f, "  (no spotrun.work: add it to see the pool, cost and risk)\n");
		return 0;
	}
	if (cli_load_catalog("launch", NULL, &cat)) {
		say(f, "  (no catalog to price the job)\n");
		return 0;
	}
	if (plan_make(&cat, js, sr_time_real_ns(), &r, &e)) {
		fprintf(stderr, "spotrun launch: %s\n", sr_err_str(&e, e.code));
		rc = e.code == -EINVAL ? CLI_USAGE : 0;
		goto out;
	}
	if (!r.n_feasible) {
		say(f, "  no placement meets the deadline and limits ('spotrun plan FILE "
		       "--all' says why); spotrund will still try\n");
		goto out;
	}
	p = &r.items[0];
	snprintf(where, sizeof where, "%s/%s%s%s", p->o.cloud, p->o.region,
		 p->o.zone[0] ? "/" : "", p->o.zone);
	say(f, "  pool:      %s %s %s\n", plan_mode_name(p->mode), where,
	       p->o.instance_type);
	snprintf(a, sizeof a, "$%.2f/h", sr_money_to_usd(p->price_per_h));
	if (p->mode == PLAN_SPOT_FALLBACK)
		say(f, "  price:     %s spot, $%.2f/h on-demand fallback\n", a,
		       sr_money_to_usd(p->o.ondemand_per_h) * js->num_nodes);
	else
		say(f, "  price:     %s %s\n", a, plan_mode_name(p->mode));
	if (isinf(r.deadline_h))
		snprintf(dl, sizeof dl, "none");
	else
		snprintf(dl, sizeof dl, "%.1fh", r.deadline_h);
	say(f, "  deadline:  %s (work %.1fh)\n", dl, js->work_h);
	snprintf(a, sizeof a, "$%.2f", sr_money_to_usd(p->expected_cost));
	snprintf(b, sizeof b, "$%.2f", sr_money_to_usd(p->cost_p95));
	say(f, "  expected:  %s (p95 %s), P(meet deadline) %.4f, risk %s\n", a, b,
	       p->p_meet, plan_risk(&r, p));
out:
	if (f)
		fflush(f);
	plan_result_free(&r);
	catalog_free(&cat);
	return rc;
}

/* "Launch? [Y/n]" on a terminal: 1 to go on, 0 to stop. */
static int confirm(void)
{
	char line[32];

	printf("Launch? [Y/n] ");
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 0;
	return line[0] == '\n' || line[0] == 'y' || line[0] == 'Y';
}

/* secrets: without a value come from this command's environment. */
static int fill_secrets(const struct jobspec *js, json_t *envs, const char *file)
{
	for (size_t i = 0; i < js->n_secrets; i++) {
		const char *k = js->secrets[i].key, *v;

		if (js->secrets[i].value || json_object_get(envs, k))
			continue;
		v = getenv(k);
		if (!v) {
			fprintf(stderr, "spotrun launch: %s: secrets.%s has no value; export "
				"%s=... or pass --env %s=...\n", file, k, k, k);
			return -1;
		}
		json_object_set_new(envs, k, json_string(v));
	}
	return 0;
}

enum { OPT_NO_LOGS = CLI_KEY_LONG, OPT_ENV, OPT_MAX_RESTARTS, OPT_WORKDIR,
       OPT_NO_STORE_CHECK };

static const struct cli_optdef launch_defs[] = {
	{ "detach", 'd', CLI_NOARG },
	{ "yes", 'y', CLI_NOARG },
	{ "no-logs", OPT_NO_LOGS, CLI_NOARG },
	{ "env", OPT_ENV, CLI_REPEAT },
	{ "max-restarts", OPT_MAX_RESTARTS, CLI_ARG },
	{ "workdir", OPT_WORKDIR, CLI_ARG },
	{ "no-store-check", OPT_NO_STORE_CHECK, CLI_NOARG },
	{ NULL, 0, CLI_NOARG },
};

static int cmd_launch(int argc, char **argv)
{
	struct ctlcli o = { .cmd = "launch" };
	struct cli_opts p = {
		.cmd = "launch", .defs = launch_defs, .more = ctlcli_common_defs,
		.usage = usage, .flags = CLI_OPT_JSON, .max_operands = 1,
	};
	const char *file = NULL, *workdir = NULL;
	char *text = NULL, *namecopy = NULL;
	json_t *envs = json_object(), *body = NULL, *reply = NULL;
	int detach = 0, yes = 0, logs = 1, store_check = 1, c, rc, ret = CLI_FAIL;
	struct jobspec js;
	long max_restarts = -1;
	struct sr_err e;
	size_t len = 0;
	int64_t id;

	jobspec_init(&js);
	while ((c = cli_opts_next(&p, argc, argv)) > 0) {
		const char *eq;
		char *end, *key;

		if (ctlcli_common_opt(&o, c, p.arg))
			continue;
		switch (c) {
		case 'd':
			detach = 1;
			break;
		case 'y':
			yes = 1;
			break;
		case OPT_NO_LOGS:
			logs = 0;
			break;
		case OPT_NO_STORE_CHECK:
			store_check = 0;
			break;
		case OPT_ENV:
			eq = strchr(p.arg, '=');
			if (!eq || eq == p.arg) {
				ret = cli_opts_error(&p, "--env needs KEY=VALUE, got '%s'",
						     p.arg);
				goto out;
			}
			key = strndup(p.arg, (size_t)(eq - p.arg));
			if (!key || json_object_set_new(envs, key,
							json_string(eq + 1)) < 0) {
				free(key);
				fprintf(stderr, "spotrun launch: --env '%s': not "
					"valid UTF-8, or out of memory\n", p.arg);
				goto out;
			}
			free(key);
			break;
		case OPT_MAX_RESTARTS:
			max_restarts = strtol(p.arg, &end, 10);
			if (*end || end == p.arg || max_restarts < 0 ||
			    max_restarts > 1000) {
				ret = cli_opts_error(&p, "--max-restarts: '%s' is "
						     "not a number in 0..1000", p.arg);
				goto out;
			}
			break;
		default: /* OPT_WORKDIR */
			workdir = p.arg;
			break;
		}
	}
	if (c < 0) {
		ret = p.status;
		goto out;
	}
	o.json = p.json;
	if (!p.n_operands) {
		ret = cli_usage_error("launch", "which job? (a JOB.yaml file)");
		goto out;
	}
	file = p.operand[0];
	sr_err_clear(&e);
	rc = sr_fs_read_file(file, SR_LIMIT_JOB_BYTES, &text, &len, &e);
	if (rc < 0) {
		if (rc == -EFBIG)
			fprintf(stderr, "spotrun launch: %s: larger than %d KiB\n", file,
				SR_LIMIT_JOB_BYTES / 1024);
		else
			fprintf(stderr, "spotrun launch: %s\n", sr_err_str(&e, rc));
		goto out;
	}
	if (strlen(text) != len) {
		fprintf(stderr, "spotrun launch: %s: contains a NUL byte (not a YAML "
			"text file)\n", file);
		goto out;
	}
	if (cli_load_job("launch", file, &js))
		goto out;
	rc = preview(&js, o.json ? NULL : stdout);
	if (rc) {
		ret = rc;
		goto out;
	}
	if (!o.json && !yes && isatty(0) && isatty(1) && !confirm()) {
		fprintf(stderr, "spotrun launch: not launched\n");
		goto out;
	}
	if (fill_secrets(&js, envs, file))
		goto out;
	/* a job whose nodes cannot reach its checkpoint store is refused */
	if (store_check && launch_ckpt_check(&js, envs, file))
		goto out;
	namecopy = strdup(file);
	body = namecopy ? json_pack("{s:s, s:s}", "spec_yaml", text, "spec_name",
				    basename(namecopy)) : NULL;
	if (!body) {
		fprintf(stderr, "spotrun launch: %s: not valid UTF-8 text\n", file);
		goto out;
	}
	if (json_object_size(envs))
		json_object_set(body, "envs", envs);
	if (max_restarts >= 0)
		json_object_set_new(body, "max_restarts", json_integer(max_restarts));
	if (ctlcli_open(&o) < 0)
		goto out;
	/* workdir: and file_mounts: are read here, as this user, and go
	 * with the job (launch_files.c) */
	if (launch_files(&o, &js, file, workdir, body))
		goto out;
	if (ctlcli_call(&o, "POST", "/v1/jobs", body, &reply) < 0)
		goto out;
	id = ctlcli_int(json_object_get(reply, "job"), "id", 0);
	if (detach) {
		if (o.json)
			ctlcli_print_json(reply);
		else
			printf("job %lld submitted ('spotrun status %lld', 'spotrun logs "
			       "%lld -f')\n", (long long)id, (long long)id, (long long)id);
		ret = CLI_OK;
		goto out;
	}
	printf("job %lld submitted; following it (Ctrl-C detaches)\n", (long long)id);
	fflush(stdout);
	ret = follow(&o, id, logs);
out:
	jobspec_free(&js);
	json_decref(reply);
	json_decref(body);
	json_decref(envs);
	free(text);
	free(namecopy);
	ctlcli_close(&o);
	return ret;
}

CLI_COMMAND("launch", "submit a job and follow it", cmd_launch)
