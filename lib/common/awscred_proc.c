/*
 * awscred_proc.c - credential_process: a command the user configured
 * prints credentials as JSON.
 *
 *   credential_process = /opt/bin/get-creds --role "ops admin" --json
 *
 * The line is split into words exactly as the AWS CLI splits it
 * (Python's shlex.split, POSIX mode: whitespace separates words, '...'
 * is literal, "..." keeps a backslash unless it escapes '"' or '\',
 * a backslash outside quotes escapes the next character, "" is an empty
 * word, no comments, no expansion of any kind) and run with
 * posix_spawnp: never through a shell, so nothing in the line is
 * interpreted twice.  stdin is /dev/null; stdout (at most 64 KiB, wiped
 * after use) must be
 *
 *   {"Version": 1, "AccessKeyId": "...", "SecretAccessKey": "...",
 *    "SessionToken": "...", "Expiration": "2026-11-30T20:00:00Z"}
 *
 * (SessionToken and Expiration optional).  A command that exits non-zero
 * is an error quoting its status and the first line of its stderr; one
 * still running after PROC_TIMEOUT_S is killed.  If something else in
 * the process reaps children (waitpid(-1)) and takes our exit status, the
 * output alone decides.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "awscred_int.h"
#include "proc.h"
#include "json.h"
#include "timeutil.h"

#define PROC_TIMEOUT_S 60
#define OUT_MAX (64 << 10)
#define ERR_MAX 2048

extern char **environ;

void sr_awscred__argv_free(char **argv)
{
	if (argv == NULL)
		return;
	for (char **p = argv; *p != NULL; p++)
		free(*p);
	free(argv);
}

/* A growing word list. */
struct words {
	char **v;
	size_t n, cap;
	char *cur;       /* the word being built, or NULL */
	size_t len, room;
	bool oom;
};

static void put_char(struct words *w, char c)
{
	if (w->oom)
		return;
	if (w->cur == NULL || w->len + 2 > w->room) {
		size_t nr = w->room ? 2 * w->room : 32;
		char *g = realloc(w->cur, nr);

		if (g == NULL) {
			w->oom = true;
			return;
		}
		w->cur = g;
		w->room = nr;
	}
	w->cur[w->len++] = c;
	w->cur[w->len] = '\0';
}

static void end_word(struct words *w)
{
	if (w->oom || w->cur == NULL)
		return;
	if (w->n + 2 > w->cap) {
		size_t nc = w->cap ? 2 * w->cap : 8;
		char **g = realloc(w->v, nc * sizeof(*g));

		if (g == NULL) {
			w->oom = true;
			return;
		}
		w->v = g;
		w->cap = nc;
	}
	w->v[w->n++] = w->cur;
	w->v[w->n] = NULL;
	w->cur = NULL;
	w->len = w->room = 0;
}

/* An empty word ("" or '') still starts a word. */
static void start_word(struct words *w)
{
	if (w->cur == NULL && !w->oom) {
		w->cur = calloc(1, 32);
		w->room = 32;
		w->oom = w->cur == NULL;
	}
}

int sr_awscred__split(const char *line, char ***argv, struct sr_err *e)
{
	struct words w = { 0 };
	const char *s = line;
	const char *why = NULL;

	*argv = NULL;
	while (*s != '\0' && why == NULL) {
		char c = *s++;

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			end_word(&w);
		} else if (c == '\\') {
			if (*s == '\0')
				why = "a backslash at the end";
			else
				put_char(&w, *s++);
		} else if (c == '\'') {
			start_word(&w);
			while (*s != '\0' && *s != '\'')
				put_char(&w, *s++);
			if (*s == '\0')
				why = "a ' quote is not closed";
			else
				s++;
		} else if (c == '"') {
			start_word(&w);
			while (*s != '\0' && *s != '"') {
				if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
					s++;
				put_char(&w, *s++);
			}
			if (*s == '\0')
				why = "a \" quote is not closed";
			else
				s++;
		} else {
			put_char(&w, c);
		}
	}
	end_word(&w);
	if (why == NULL && !w.oom && w.n == 0)
		why = "no command";
	if (why != NULL || w.oom) {
		free(w.cur);
		if (w.v != NULL)
			w.v[w.n] = NULL;
		sr_awscred__argv_free(w.v);
		return w.oom ? sr_err_set(e, -ENOMEM, "out of memory")
			     : sr_err_set(e, -EINVAL, "%s", why);
	}
	*argv = w.v;
	return 0;
}

int sr_awscred__process(const char *cmdline, const char *profile,
			struct sr_awscred *out, struct sr_err *e)
{
	char **argv = NULL, *buf = NULL, err[ERR_MAX], line[300], what[200];
	struct sr_err se = { 0 };
	json_t *doc = NULL;
	int64_t version = 0;
	size_t n = 0;
	int status = -1, rc;

	snprintf(what, sizeof(what), "credential_process of profile %s",
		 profile);
	rc = sr_awscred__split(cmdline, &argv, &se);
	if (rc < 0) {
		rc = sr_err_set(e, rc, "aws credentials: %s: %s", what, se.msg);
		goto out;
	}
	buf = malloc(OUT_MAX + 1);
	if (buf == NULL) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	rc = sr_proc_run(argv, NULL, PROC_TIMEOUT_S * SR_NS_PER_SEC, buf,
			 OUT_MAX + 1, &n, err, sizeof(err), &status, &se);
	if (rc < 0) {
		rc = sr_err_set(e, rc == -ENOMEM ? rc : -EACCES,
				"aws credentials: %s: %s", what, se.msg);
		goto out;
	}
	if (status != -1 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		sr_proc_first_line(err, line, sizeof(line));
		if (WIFEXITED(status))
			rc = sr_err_set(e, -EACCES, "aws credentials: %s: %s exited "
					"with status %d%s%s", what, argv[0],
					WEXITSTATUS(status), line[0] ? ": " : "",
					line);
		else
			rc = sr_err_set(e, -EACCES, "aws credentials: %s: %s was "
					"killed by signal %d", what, argv[0],
					WTERMSIG(status));
		goto out;
	}
	doc = sr_json_load_buf(buf, n, what, NULL);
	if (doc == NULL || sr_json_get_int(doc, "Version", &version, "", NULL) < 0 ||
	    version != 1) {
		rc = sr_err_set(e, -EACCES, "aws credentials: %s: %s", what,
				doc == NULL ? "the output is not JSON"
					    : "expected \"Version\": 1");
		goto out;
	}
	rc = sr_awscred__from_doc(doc, what, out, e);
	if (rc == -SR_EHTTP) { /* the command's answer, not the network */
		snprintf(line, sizeof(line), "%s", sr_err_str(e, rc));
		rc = sr_err_set(e, -EACCES, "%s", line);
	}
	if (rc < 0)
		goto out;
	out->kind = SR_AWSCRED_PROCESS;
	snprintf(out->source, sizeof(out->source), "profile %s "
		 "(credential_process %s)", profile, argv[0]);
out:
	json_decref(doc);
	if (buf != NULL) {
		OPENSSL_cleanse(buf, OUT_MAX + 1);
		free(buf);
	}
	sr_awscred__argv_free(argv);
	return rc;
}
