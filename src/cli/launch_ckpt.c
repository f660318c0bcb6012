/*
 * launch_ckpt.c - before `spotrun launch` submits a job whose checkpoints
 * go to an object store (spotrun.checkpoint.uri), check that its nodes
 * can reach that store (issue 28).  A job that cannot would lose all of
 * its work at every preemption; better refused here, naming what to fix,
 * than found out after the first one.
 *
 * The check runs in a child process whose environment is what a node's
 * workload gets (src/agent/envp.c): PATH, HOME and LANG (what spotrund
 * passes its agents), the job's envs: and secrets:, then --env.  The
 * credentials are so found where the workload would find them: in the
 * job's variables, in HOME's ~/.aws files, from an instance or container
 * role.  The child opens the store and lists it once (objstore_check,
 * what tier 3 does when it starts).  A refusal (objstore_refused: no
 * credentials, credentials refused, no such bucket, a bad URI) refuses
 * the launch; a store that does not answer is a warning, since the
 * uploads are retried.  The child reports through a pipe: its code, then
 * the message.
 *
 * Bucket file_mounts (issue 30) are checked the same way, each in a
 * child of its own: the nodes restore and sync them with those
 * credentials, and spotrun creates no bucket, so a missing one or
 * refused credentials refuse the launch, naming file_mounts.DST.  Every
 * store is checked, and every refusal said, before launch gives up.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/err.h"
#include "common/timeutil.h"
#include "launch_ckpt.h"
#include "objstore/objstore.h"

#define CHECK_TIMEOUT_NS (20 * SR_NS_PER_SEC) /* the listing's deadline */
#define CHECK_KILL_S 60                       /* the child's, whatever hangs */

/* What spotrund passes its agents (the workload's environment, level 1). */
static const char *const kept[] = { "PATH", "HOME", "LANG" };

/* The child: the node's environment, the check, the result into fd. */
static void child(const struct jobspec *js, json_t *envs, const char *uri,
		  int fd)
{
	const char *keep[sizeof kept / sizeof kept[0]];
	struct sr_err e = { 0 };
	const char *k;
	json_t *v;
	int rc;

	alarm(CHECK_KILL_S);
	for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
		keep[i] = getenv(kept[i]);
		keep[i] = keep[i] ? strdup(keep[i]) : NULL;
	}
	clearenv();
	for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
		if (keep[i])
			setenv(kept[i], keep[i], 1);
	for (size_t i = 0; i < js->n_envs; i++)
		setenv(js->envs[i].key, js->envs[i].value, 1);
	for (size_t i = 0; i < js->n_secrets; i++)
		if (js->secrets[i].value)
			setenv(js->secrets[i].key, js->secrets[i].value, 1);
	json_object_foreach(envs, k, v)
		if (json_is_string(v))
			setenv(k, json_string_value(v), 1);
	rc = objstore_check(uri, CHECK_TIMEOUT_NS, &e);
	dprintf(fd, "%d\n%s", rc, rc ? sr_err_str(&e, rc) : "");
	_exit(0);
}

/* Read all of fd into buf (NUL-terminated). */
static void slurp(int fd, char *buf, size_t n)
{
	size_t got = 0;
	ssize_t r;

	while (got + 1 < n && ((r = read(fd, buf + got, n - 1 - got)) > 0 ||
			       (r < 0 && errno == EINTR)))
		got += r > 0 ? (size_t)r : 0;
	buf[got] = '\0';
}

/* Check one store, uri, which the job names at `what`
 * ("spotrun.checkpoint.uri", "file_mounts./ckpt").  0, or -1 after
 * saying why the launch is refused. */
static int check_one(const struct jobspec *js, json_t *envs, const char *file,
		     const char *what, const char *uri, int bucket)
{
	char buf[SR_ERR_MSG_MAX + 32], *msg;
	int p[2], status = 0, rc;
	pid_t pid;

	struct objstore_uri u;
	struct sr_err e = { 0 };

	rc = objstore_uri_parse(uri, &u, &e);
	if (rc) {
		fprintf(stderr, "spotrun launch: %s: %s: %s\n", file, what,
			sr_err_str(&e, rc));
		return -1;
	}
	rc = u.kind;
	objstore_uri_free(&u);
	if (rc == OBJSTORE_FILE)
		return 0; /* a directory: nothing to reach */
	if (pipe(p) < 0) {
		fprintf(stderr, "spotrun launch: cannot check %s: %s\n", uri,
			strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "spotrun launch: cannot check %s: %s\n", uri,
			strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		child(js, envs, uri, p[1]);
	}
	close(p[1]);
	slurp(p[0], buf, sizeof buf);
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	msg = strchr(buf, '\n');
	if (!msg || !WIFEXITED(status)) {
		fprintf(stderr, "spotrun launch: warning: %s: the check of %s did "
			"not finish; the job's nodes may not reach it\n", file,
			what);
		return 0;
	}
	*msg++ = '\0';
	rc = atoi(buf);
	if (rc == 0)
		return 0;
	if (!objstore_refused(rc)) {
		fprintf(stderr, "spotrun launch: warning: %s: %s does not answer "
			"now (%s): %s\n", file, what, bucket ? "the nodes retry" :
			"its uploads will be retried", msg);
		return 0;
	}
	if (bucket)
		fprintf(stderr, "spotrun launch: %s: the job's nodes cannot use the "
			"bucket of %s (%s): %s\n  spotrun creates no bucket: name one "
			"that exists.  Give the nodes credentials with envs: or "
			"secrets: in the job file, or --env KEY=VALUE "
			"(docs/jobs.md), or launch with --no-store-check if they "
			"get them otherwise.\n", file, what, uri, msg);
	else
		fprintf(stderr, "spotrun launch: %s: the job's nodes cannot use "
			"spotrun.checkpoint.uri: %s\n  Its checkpoints would stay on "
			"each node's disk and every preemption would lose all of its "
			"work.  Give the nodes credentials with envs: or secrets: in "
			"the job file, or --env KEY=VALUE (docs/checkpoint.md), or "
			"launch with --no-store-check if they get them otherwise.\n",
			file, msg);
	return -1;
}

int launch_ckpt_check(const struct jobspec *js, json_t *envs, const char *file)
{
	char what[300];
	int rc = 0;

	if (js->ckpt_uri)
		rc |= check_one(js, envs, file, "spotrun.checkpoint.uri",
				js->ckpt_uri, 0);
	for (size_t i = 0; i < js->n_buckets; i++) {
		snprintf(what, sizeof what, "file_mounts.%s", js->buckets[i].dst);
		rc |= check_one(js, envs, file, what, js->buckets[i].uri, 1);
	}
	return rc ? -1 : 0;
}
