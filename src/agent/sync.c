/*
 * sync.c - a SkyPilot-style job's files on the node: `workdir:` and
 * `file_mounts:` (docs/jobs.md), copied once, before setup.
 *
 * The local cloud's nodes share the host's filesystem, so "the node" is
 * its directory ($SPOTRUN_NODE_DIR):
 *   workdir            -> NODE_DIR/workdir (then setup and run run there)
 *   file_mounts DST    -> NODE_DIR/DST without its leading "/" or "~/"
 *                         (/data/x -> NODE_DIR/data/x); a relative SRC is
 *                         taken from the job's workdir
 * Copies are made by /bin/cp -a, spawned with an argv (no shell), so no
 * path is ever interpreted.  A provider for real machines runs the same
 * copy in its bootstrap.
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "agent.h"
#include "common/fsutil.h"

extern char **environ;

static int cp_a(const char *src, const char *dst, struct sr_err *e)
{
	char *argv[] = { "/bin/cp", "-a", "--", (char *)src, (char *)dst, NULL };
	pid_t pid;
	int st = 0, rc;

	rc = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
	if (rc)
		return sr_err_set(e, -rc, "cp %s: %s", src, strerror(rc));
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return sr_err_set(e, -errno, "cp %s: %s", src, strerror(errno));
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return sr_err_set(e, -EIO, "cp -a %s %s failed (status %d)", src, dst,
				  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}

/* NODE_DIR/DST without a leading "/" or "~/"; -EINVAL for "..". */
static int mount_target(const char *node_dir, const char *dst, char *out, size_t n)
{
	if (!strncmp(dst, "~/", 2))
		dst += 2;
	while (*dst == '/')
		dst++;
	if (!*dst || strstr(dst, ".."))
		return -EINVAL;
	if ((size_t)snprintf(out, n, "%s/%s", node_dir, dst) >= n)
		return -ENAMETOOLONG;
	return 0;
}

int agent_sync_files(struct agent *ag, struct sr_err *e)
{
	struct assignment *a = &ag->a;
	const char *base = a->workdir ? a->workdir : ag->node_dir;
	char dst[8192], src[8192];
	const char *k;
	json_t *v;
	int rc = 0;

	if (ag->synced)
		return 0;
	json_object_foreach(a->mounts, k, v) {
		const char *s = json_string_value(v);
		char *slash;

		if (!s)
			continue;
		rc = mount_target(ag->node_dir, k, dst, sizeof dst);
		if (rc)
			return sr_err_set(e, rc, "file_mounts: '%s' is not a destination", k);
		if ((size_t)snprintf(src, sizeof src, "%s%s%s", s[0] == '/' ? "" : base,
				     s[0] == '/' ? "" : "/", s) >= sizeof src)
			return sr_err_set(e, -ENAMETOOLONG, "file_mounts.%s: path too long", k);
		slash = strrchr(dst, '/');
		*slash = '\0';
		rc = sr_fs_mkdir_p(dst, 0700);
		*slash = '/';
		if (!rc)
			rc = cp_a(src, dst, e);
		if (rc)
			return e && e->code ? rc : sr_err_set(e, rc, "file_mounts.%s", k);
		agent__line(ag, "file_mounts: copied %s to %s", src, dst);
	}
	if (a->sync_workdir && a->workdir) {
		char *copy;

		snprintf(dst, sizeof dst, "%s/workdir", ag->node_dir);
		snprintf(src, sizeof src, "%s/.", a->workdir);
		rc = sr_fs_mkdir_p(dst, 0700);
		if (!rc)
			rc = cp_a(src, dst, e);
		if (rc)
			return e && e->code ? rc : sr_err_set(e, rc, "workdir: %s", dst);
		copy = strdup(dst);
		if (!copy)
			return sr_err_set(e, -ENOMEM, "out of memory");
		agent__line(ag, "workdir: copied %s to %s", a->workdir, dst);
		free(a->workdir);
		a->workdir = copy;
	}
	ag->synced = 1;
	return 0;
}
