/*
 * cmd_daemon.c - `spotrun daemon start|stop|status`: run spotrund in the
 * background with its state (SQLite, tokens, node dirs, log) in a state
 * directory, default ~/.local/state/spotrun.
 *
 * Files in the state dir that this command uses:
 *   api.url       written by spotrund once it listens (http://HOST:PORT)
 *   spotrund.pid  the daemon's pid (written by spotrund; the CLI writes it
 *                 itself if the daemon did not)
 *   spotrund.log  the daemon's stdout/stderr (appended)
 *   api.token     the admin token (the other commands read it)
 *
 * start: fork, setsid, exec spotrund (argv array, no shell), then wait
 * until GET /healthz answers at the daemon's URL, or report why it died
 * with the tail of its log.  stop: SIGTERM, wait, then SIGKILL (safe by
 * design: spotrund keeps nothing outside its database).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "common/fsutil.h"
#include "common/http.h"
#include "common/timeutil.h"
#include "common/proc.h"
#include "ctlcli.h"

#define START_WAIT_S 20
#define STOP_WAIT_S 15
#define MAX_EXTRA 32

static void usage(void)
{
	printf("usage: spotrun daemon start [--listen HOST:PORT] [--state-dir DIR]\n"
	       "                            [-- SPOTRUND-OPTION...]\n"
	       "       spotrun daemon stop [--state-dir DIR]\n"
	       "       spotrun daemon status [--state-dir DIR] [--json]\n\n"
	       "Start spotrund (the control plane, with the local spot cloud) in the\n"
	       "background, stop it, or say whether it runs.  State (database,\n"
	       "tokens, node dirs, spotrund.log) lives in the state dir.\n"
	       "Options after '--' are passed to spotrund (see 'spotrund --help').\n"
	       "'status' exits 0 when the daemon runs and answers, 3 when it does\n"
	       "not run.\n\n"
	       "  --listen HOST:PORT  where spotrund listens (default 127.0.0.1:7077;\n"
	       "                      port 0 picks a free one)\n"
	       "  --state-dir DIR     default $SPOTRUN_STATE_DIR or ~/.local/state/spotrun\n"
	       "  --json              (status) print one JSON document\n");
}

static char *state_file(const char *dir, const char *name)
{
	char *p = NULL;

	return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

/* pid from <dir>/spotrund.pid ("PID [START]") if that process is alive,
 * else 0.  Alive means running, not a zombie left by a kill -9 whose
 * parent has not reaped it yet, and (when the file has START, the
 * /proc starttime) not another process that reuses the pid. */
static pid_t read_pid(const char *dir)
{
	char *path = state_file(dir, "spotrund.pid"), *buf = NULL, *end = NULL;
	long v = 0;
	long long start = 0;

	if (path && sr_fs_read_file(path, 64, &buf, NULL, NULL) == 0) {
		v = strtol(buf, &end, 10);
		if (end && *end == ' ')
			start = strtoll(end + 1, NULL, 10);
	}
	free(buf);
	free(path);
	if (v <= 0 || v > INT_MAX || start < 0)
		return 0;
	if (!sr_proc_alive(v, start))
		return 0;
	return (pid_t)v;
}

static int write_pid(const char *dir, pid_t pid)
{
	char *path = state_file(dir, "spotrund.pid");
	char buf[32];
	int rc;

	if (!path)
		return -ENOMEM;
	snprintf(buf, sizeof buf, "%d %lld\n", (int)pid,
		 (long long)sr_proc_start_time(pid));
	rc = sr_fs_write_atomic(path, buf, strlen(buf), 0600, NULL);
	free(path);
	return rc;
}

/* GET url/healthz; returns 0 and the body (caller frees) when it answers
 * 200. */
static int healthz(const char *url, char **body)
{
	struct sr_http_opts o;
	struct sr_http_resp r;
	char *u = NULL;
	int rc;

	*body = NULL;
	if (asprintf(&u, "%s/healthz", url) < 0)
		return -ENOMEM;
	sr_http_opts_default(&o);
	o.timeout_ms = 2000;
	o.connect_timeout_ms = 1000;
	o.max_retries = 0;
	o.ca_file = getenv("SPOTRUN_CA_CERT"); /* an https daemon's own cert */
	rc = sr_http_request("GET", u, NULL, NULL, 0, &o, &r, NULL);
	free(u);
	if (rc == 0 && r.status == 200) {
		*body = r.body;
		r.body = NULL;
	} else if (rc == 0) {
		rc = -SR_EHTTP;
	}
	sr_http_resp_free(&r);
	return rc;
}

/* spotrund beside this spotrun binary, else "spotrund" from PATH. */
static void find_spotrund(char *out, size_t n)
{
	char self[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
	const char *env = getenv("SPOTRUN_SPOTRUND");

	if (env && *env) {
		snprintf(out, n, "%s", env);
		return;
	}
	if (k > 0) {
		char *slash;

		self[k] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			int w;

			*slash = '\0';
			w = snprintf(out, n, "%s/spotrund", self);
			if (w > 0 && (size_t)w < n && access(out, X_OK) == 0)
				return;
		}
	}
	snprintf(out, n, "spotrund");
}

static void print_log_tail(const char *dir)
{
	char *path = state_file(dir, "spotrund.log"), *buf = NULL;
	size_t len = 0;

	if (path && sr_fs_read_file(path, 16 << 20, &buf, &len, NULL) == 0) {
		const char *p = buf + len;
		int lines = 0;

		while (p > buf && lines < 11)
			if (*--p == '\n')
				lines++;
		fprintf(stderr, "--- last lines of %s ---\n%s", path,
			p == buf ? p : p + 1);
	}
	free(buf);
	free(path);
}

static int do_start(const char *dir, const char *listen, char **extra, int nextra)
{
	char bin[PATH_MAX], *url = NULL, *body = NULL, *urlfile = NULL, *logp = NULL;
	char *argv[8 + MAX_EXTRA];
	int argc = 0, rc = CLI_FAIL, st;
	pid_t pid, running;
	int64_t t_end;

	if (sr_fs_mkdir_p(dir, 0700) < 0) {
		fprintf(stderr, "spotrun daemon: cannot create %s: %s\n", dir,
			strerror(errno));
		return CLI_FAIL;
	}
	running = read_pid(dir);
	if (running) {
		url = ctlc_api_url(NULL, dir);
		if (url && healthz(url, &body) == 0) {
			printf("spotrund already running (pid %d) at %s\n", (int)running,
			       url);
			rc = CLI_OK;
		} else {
			fprintf(stderr, "spotrun daemon: spotrund (pid %d) runs but does "
				"not answer at %s; 'spotrun daemon stop' first\n",
				(int)running, url ? url : "?");
		}
		goto out;
	}
	urlfile = state_file(dir, "api.url");
	logp = state_file(dir, "spotrund.log");
	if (!urlfile || !logp)
		goto out;
	unlink(urlfile); /* wait for the new daemon's own */
	find_spotrund(bin, sizeof bin);
	argv[argc++] = bin;
	argv[argc++] = "--state-dir";
	argv[argc++] = (char *)dir;
	if (listen) {
		argv[argc++] = "--listen";
		argv[argc++] = (char *)listen;
	}
	for (int i = 0; i < nextra; i++)
		argv[argc++] = extra[i];
	argv[argc] = NULL;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "spotrun daemon: fork: %s\n", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		int lfd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		int nfd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		setsid();
		if (lfd >= 0) {
			dup2(lfd, 1);
			dup2(lfd, 2);
		}
		if (nfd >= 0)
			dup2(nfd, 0);
		signal(SIGINT, SIG_DFL);
		execvp(bin, argv);
		dprintf(2, "spotrun daemon: cannot run %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	t_end = sr_time_mono_ns() + START_WAIT_S * SR_NS_PER_SEC;
	while (sr_time_mono_ns() < t_end) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			fprintf(stderr, "spotrun daemon: spotrund exited at start (%s %d)\n",
				WIFEXITED(st) ? "exit" : "signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			print_log_tail(dir);
			goto out;
		}
		free(url);
		url = NULL;
		if (access(urlfile, R_OK) == 0)
			url = ctlc_api_url(NULL, dir);
		else if (listen && !strstr(listen, ":0") &&
			 asprintf(&url, "http://%s", listen) < 0)
			url = NULL;
		if (url && healthz(url, &body) == 0) {
			if (read_pid(dir) != pid)
				write_pid(dir, pid);
			printf("spotrund started (pid %d) at %s\n  state %s\n  log   %s\n",
			       (int)pid, url, dir, logp);
			rc = CLI_OK;
			goto out;
		}
		usleep(100000);
	}
	fprintf(stderr, "spotrun daemon: spotrund (pid %d) did not answer within "
		"%d s\n", (int)pid, START_WAIT_S);
	print_log_tail(dir);
out:
	free(body);
	free(url);
	free(urlfile);
	free(logp);
	return rc;
}

static int do_stop(const char *dir)
{
	pid_t pid = read_pid(dir);
	char *pidf;
	int64_t t_end;

	if (!pid) {
		printf("spotrund is not running (state dir %s)\n", dir);
		return CLI_OK;
	}
	if (kill(pid, SIGTERM) < 0) {
		fprintf(stderr, "spotrun daemon: cannot signal pid %d: %s\n", (int)pid,
			strerror(errno));
		return CLI_FAIL;
	}
	t_end = sr_time_mono_ns() + STOP_WAIT_S * SR_NS_PER_SEC;
	while (kill(pid, 0) == 0 && sr_time_mono_ns() < t_end) {
		waitpid(pid, NULL, WNOHANG); /* in case it is our child */
		usleep(50000);
	}
	if (kill(pid, 0) == 0) {
		fprintf(stderr, "spotrun daemon: spotrund (pid %d) did not stop in "
			"%d s; killing it (its state is safe in the database)\n",
			(int)pid, STOP_WAIT_S);
		kill(pid, SIGKILL);
		usleep(200000);
	}
	pidf = state_file(dir, "spotrund.pid");
	if (pidf)
		unlink(pidf);
	free(pidf);
	printf("spotrund stopped (pid %d)\n", (int)pid);
	return CLI_OK;
}

static int do_status(const char *dir, int json)
{
	pid_t pid = read_pid(dir);
	char *url = ctlc_api_url(NULL, dir), *body = NULL;
	int up = url && healthz(url, &body) == 0;
	json_t *h = body ? json_loads(body, 0, NULL) : NULL;

	if (json) {
		json_t *doc = json_pack("{s:b, s:s, s:s?}", "running", pid > 0 && up,
					"state_dir", dir, "url", url);

		json_object_set_new(doc, "pid", pid ? json_integer(pid) : json_null());
		json_object_set_new(doc, "healthz", h ? json_incref(h) : json_null());
		ctlcli_print_json(doc);
		json_decref(doc);
	} else if (pid && up) {
		printf("spotrund running (pid %d) at %s, provider %s, time scale %g\n"
		       "  state %s\n", (int)pid, url, ctlcli_str(h, "provider", "?"),
		       json_number_value(json_object_get(h, "time_scale")), dir);
	} else if (pid) {
		printf("spotrund (pid %d) runs but does not answer at %s\n", (int)pid,
		       url ? url : "?");
	} else {
		printf("spotrund is not running (state dir %s); start it with "
		       "'spotrun daemon start'\n", dir);
	}
	json_decref(h);
	free(body);
	free(url);
	return pid && up ? CLI_OK : 3;
}

enum { OPT_STATE_DIR = CLI_KEY_LONG, OPT_LISTEN };

static const struct cli_optdef daemon_defs[] = {
	{ "state-dir", OPT_STATE_DIR, CLI_ARG },
	{ "listen", OPT_LISTEN, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static int cmd_daemon(int argc, char **argv)
{
	struct cli_opts p = {
		.cmd = "daemon", .defs = daemon_defs, .usage = usage,
		.flags = CLI_OPT_JSON | CLI_OPT_REST, .max_operands = 1,
	};
	const char *verb = NULL, *dirflag = NULL, *listen = NULL;
	char **extra;
	int nextra, json, c, rc;
	struct sr_err e = { 0 };
	char *dir;

	while ((c = cli_opts_next(&p, argc, argv)) > 0) {
		if (c == OPT_STATE_DIR)
			dirflag = p.arg;
		else
			listen = p.arg;
	}
	if (c < 0)
		return p.status;
	verb = p.n_operands ? p.operand[0] : NULL;
	extra = p.rest;
	nextra = p.n_rest;
	json = p.json;
	if (!verb)
		return cli_usage_error("daemon", "start, stop or status?");
	if (nextra > MAX_EXTRA)
		return cli_usage_error("daemon", "more than %d options after '--'",
				       MAX_EXTRA);
	if (strcmp(verb, "start") && (listen || nextra))
		return cli_usage_error("daemon", "--listen and '--' go with 'start'");
	if (strcmp(verb, "status") && json)
		return cli_usage_error("daemon", "--json goes with 'status'");
	dir = ctlc_state_dir(dirflag, &e);
	if (!dir) {
		fprintf(stderr, "spotrun daemon: %s\n", e.msg);
		return CLI_FAIL;
	}
	if (!strcmp(verb, "start"))
		rc = do_start(dir, listen, extra, nextra);
	else if (!strcmp(verb, "stop"))
		rc = do_stop(dir);
	else if (!strcmp(verb, "status"))
		rc = do_status(dir, json);
	else
		rc = cli_usage_error("daemon", "unknown action '%s' (start, stop or "
				     "status)", verb);
	free(dir);
	return rc;
}

CLI_COMMAND("daemon", "start, stop or check spotrund", cmd_daemon)
