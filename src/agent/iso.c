/*
 * iso.c - the agent's isolation policy (docs/security.md, "A node"); the
 * mechanism is lib/agent/isolate.c.
 *
 *   hidden dirs   every --private PATH that is a directory (spotrund
 *                 passes its state dir: admin token, database, secrets
 *                 key, every node's token)
 *   hidden files  the node token file, every --private PATH that is a file
 *   kept dirs     the node's dir, the checkpoint dir, the workload's cwd
 *                 (bound back when they lie inside a hidden dir)
 *
 * --isolation auto (the default): the best mode this agent can have
 * (isolate.h); if the kernel refuses it, say so once (log line and an
 * "isolation" event the daemon records on the job) and run the workload
 * without it.  strict: refuse to start a workload that cannot be fully
 * isolated (also a root agent, whose mode is only partial), reporting
 * why.  off: no isolation, reported once too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent.h"
#include "common/log.h"

struct iso_paths {
	char *own[3 * ISO_MAX_PATHS]; /* realpath results, freed by paths_free */
	size_t nown;
	struct workload_iso iso;
};

/* canonical path of p (malloc'd, owned by ps), NULL if it does not exist */
static const char *canon(struct iso_paths *ps, const char *p)
{
	char *r;

	if (!p || ps->nown >= sizeof ps->own / sizeof ps->own[0])
		return NULL;
	r = realpath(p, NULL);
	if (r)
		ps->own[ps->nown++] = r;
	return r;
}

static void push(const char **arr, const char *v)
{
	for (int i = 0; v && i < ISO_MAX_PATHS - 1; i++) {
		if (!arr[i]) {
			arr[i] = v;
			return;
		}
	}
}

static void paths_build(struct agent *ag, const char *cwd, struct iso_paths *ps)
{
	memset(ps, 0, sizeof *ps);
	ps->iso.mode = ag->iso_mode;
	for (int i = 0; i < ISO_MAX_PATHS - 2 && ag->o->private_paths[i]; i++) {
		const char *c = canon(ps, ag->o->private_paths[i]);
		struct stat sb;

		if (c && stat(c, &sb) == 0 && S_ISDIR(sb.st_mode))
			push(ps->iso.hide_dirs, c);
		else if (c)
			push(ps->iso.hide_files, c);
	}
	push(ps->iso.hide_files, canon(ps, ag->o->token_file));
	push(ps->iso.keep_dirs, canon(ps, ag->node_dir));
	push(ps->iso.keep_dirs, canon(ps, ag->a.ckpt_dir));
	push(ps->iso.keep_dirs, canon(ps, cwd));
	for (int i = 0; ps->iso.hide_dirs[i]; i++)
		sr_debug("agent", "isolation: hidden dir", "path=\"%s\"",
			 ps->iso.hide_dirs[i]);
	for (int i = 0; ps->iso.hide_files[i]; i++)
		sr_debug("agent", "isolation: hidden file", "path=\"%s\"",
			 ps->iso.hide_files[i]);
	for (int i = 0; ps->iso.keep_dirs[i]; i++)
		sr_debug("agent", "isolation: kept dir", "path=\"%s\"",
			 ps->iso.keep_dirs[i]);
}

static void paths_free(struct iso_paths *ps)
{
	for (size_t i = 0; i < ps->nown; i++)
		free(ps->own[i]);
	ps->nown = 0;
}

/* Once per agent: a log line in the job's log and an "isolation" event,
 * with the paths the workload's process checked were hidden (hidden may
 * be NULL: nothing was). */
static void report_once(struct agent *ag, const char *mode, const char *msg,
			json_t *hidden)
{
	if (ag->iso_reported) {
		json_decref(hidden);
		return;
	}
	ag->iso_reported = 1;
	agent__line(ag, "isolation: %s", msg);
	agent__push(ag, json_pack("{s:s, s:s, s:s, s:o}", "type", "isolation",
				  "mode", mode, "message", msg, "hidden",
				  hidden ? hidden : json_array()), 1);
}

/* What the started workload's process found hidden (workload.h), as a
 * list of paths and a phrase for the message. */
static json_t *hidden_of(const struct workload *w, const struct iso_paths *ps,
			 char *buf, size_t n)
{
	json_t *a = json_array();
	size_t k = 0;

	buf[0] = '\0';
	for (int i = 0; a && i < ISO_MAX_PATHS && ps->iso.hide_dirs[i]; i++) {
		if (w->iso_dirs_hidden & (1u << i))
			json_array_append_new(a, json_string(ps->iso.hide_dirs[i]));
	}
	for (int i = 0; a && i < ISO_MAX_PATHS && ps->iso.hide_files[i]; i++) {
		if (w->iso_files_hidden & (1u << i))
			json_array_append_new(a, json_string(ps->iso.hide_files[i]));
	}
	for (size_t i = 0; a && i < json_array_size(a) && k + 8 < n; i++) {
		int m = snprintf(buf + k, n - k, "%s%s", i ? ", " : "",
				 json_string_value(json_array_get(a, i)));

		k = m < 0 || (size_t)m >= n - k ? n - 1 : k + (size_t)m;
	}
	if (a && !json_array_size(a))
		snprintf(buf, n, "nothing (no --private path exists)");
	return a;
}

static void report_mode(struct agent *ag, const struct workload *w,
			const struct iso_paths *ps)
{
	char what[700], msg[1024];
	json_t *hidden = ps ? hidden_of(w, ps, what, sizeof what) : NULL;

	switch (ag->iso_mode) {
	case ISO_USERNS:
		snprintf(msg, sizeof msg, "user and mount namespaces; checked "
			 "hidden from the workload: %s", what);
		report_once(ag, "userns", msg, hidden);
		break;
	case ISO_ROOT:
		snprintf(msg, sizeof msg, "the agent runs as root: the workload "
			 "runs in a mount namespace, as root of its own user "
			 "namespace; checked hidden from it: %s; uid 0 still owns "
			 "the host's files, so a hostile workload is not contained "
			 "(run spotrund as an unprivileged user for full isolation)",
			 what);
		report_once(ag, "root-partial", msg, hidden);
		break;
	default:
		json_decref(hidden);
		report_once(ag, "none", "off (--isolation off): the workload "
			    "can read the node token and spotrund's state dir",
			    NULL);
		break;
	}
}

int agent__start_isolated(struct agent *ag, const char *script,
			  const char *cwd, char *const *envp, struct sr_err *e)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };

	return agent__start_isolated_argv(ag, argv, -1, cwd, envp, e);
}

int agent__start_isolated_argv(struct agent *ag, char *const *argv, int in,
			       const char *cwd, char *const *envp,
			       struct sr_err *e)
{
	return agent__start_isolated_w(ag, &ag->w, argv, in, cwd, envp, e);
}

int agent__start_isolated_w(struct agent *ag, struct workload *w,
			    char *const *argv, int in, const char *cwd,
			    char *const *envp, struct sr_err *e)
{
	char msg[SR_ERR_MSG_MAX + 160];
	struct iso_paths ps;
	int rc;

	if (ag->iso_mode == ISO_NONE) {
		report_mode(ag, w, NULL);
		return workload_start_argv(w, argv, cwd, envp, in, NULL, e);
	}
	if (ag->iso_mode == ISO_ROOT && ag->o->isolation == AGENT_ISO_STRICT) {
		rc = sr_err_set(e, -EPERM, "isolation is strict, but the agent runs "
				"as root, where it is only partial: run spotrund as "
				"an unprivileged user, or set SPOTRUN_ISOLATION=auto");
		report_once(ag, "refused", e->msg, NULL);
		return rc;
	}
	paths_build(ag, cwd, &ps);
	rc = workload_start_argv(w, argv, cwd, envp, in, &ps.iso, e);
	if (rc == 0)
		report_mode(ag, w, &ps);
	paths_free(&ps);
	if (rc == 0)
		return 0;
	if (!w->iso_failed)
		return rc;
	if (ag->o->isolation == AGENT_ISO_STRICT) {
		snprintf(msg, sizeof msg, "strict, and it cannot be set up (%s): "
			 "the workload is not started", e->msg);
		report_once(ag, "refused", msg, NULL);
		return rc;
	}
	snprintf(msg, sizeof msg, "unavailable (%s): the workload runs without "
		 "it and can read the node token and spotrund's state dir", e->msg);
	ag->iso_mode = ISO_NONE;
	report_once(ag, "unavailable", msg, NULL);
	sr_err_clear(e);
	return workload_start_argv(w, argv, cwd, envp, in, NULL, e);
}
