/*
 * launch_files.c - what `spotrun launch` sends of a job's files (issue
 * 24; docs/jobs.md "workdir and file_mounts").
 *
 * The files are read here, as the user who launches, and uploaded with
 * the job: spotrund and the nodes never read a path on a job's behalf.
 *
 *   the job's directory  workdir: (or --workdir DIR, which replaces it)
 *                        when the job has one, else the job file's
 *                        directory (or --workdir DIR); the file's own
 *                        workdir: must be the current directory or
 *                        under the job file's directory
 *   workdir:             that directory, uploaded as workdir/ (the node
 *                        runs setup and run in its copy)
 *   file_mounts DST: SRC SRC relative to the job's directory, and inside
 *                        it: a path that resolves (links followed) out of
 *                        it is refused, as is anything in spotrund's state
 *                        dir and a link inside the tree that leaves it
 *                        (lib/bundle); uploaded as DST without its
 *                        leading "/" ("~/X" stays: the workload's home)
 *   DST: ~/F             a FILE of the launching user's home, named with
 *                        "~/" in the job file (SkyPilot's ~/.ssh/id_rsa:
 *                        ~/.ssh/sky-key): read when it resolves (links
 *                        followed) inside $HOME, is a regular file the
 *                        user owns, and lies in none of the credential
 *                        stores below nor spotrund's state dir; uploaded
 *                        owner-only (0600 on the node), and said on
 *                        stderr.  A directory of the home is refused.
 *   bucket mounts        nothing is read here (the nodes open the bucket)
 *
 * Every problem of every mount is said before launch gives up.
 *   neither              nothing is uploaded; the local cloud runs the
 *                        job in place, in the job's directory (the API's
 *                        "workdir")
 *
 * The job's directory is opened once; every file uploaded is opened
 * beneath that descriptor (lib/bundle bundle_add_at: openat2
 * RESOLVE_BENEATH, then *at() calls), so a directory swapped for a link
 * between the checks here and the reads is not read through.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "launch_files.h"

static void note(void *ud, const char *msg)
{
	(void)ud;
	fprintf(stderr, "spotrun launch: note: %s\n", msg);
}

/* path is dir or below it (both canonical) */
static int under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

/* A job file's own workdir: (canonical, in ctx) may be the directory
 * launch runs in or one under the job file's: the file must not choose
 * what else of this machine goes to its nodes (~/.aws, /etc).  --workdir
 * is the launching user's own choice. */
static int workdir_allowed(const char *w, const char *file, const char *ctx)
{
	char cwd[PATH_MAX], fdir[PATH_MAX];
	char *copy = strdup(file);
	int ok = copy && realpath(".", cwd) && !strcmp(ctx, cwd);

	if (!ok && copy && realpath(dirname(copy), fdir))
		ok = under(ctx, fdir);
	if (!ok)
		fprintf(stderr, "spotrun launch: workdir: %s%s%s is neither the "
			"current directory nor under the job file's directory: "
			"a job file may not choose what of this machine is "
			"uploaded (run launch there, or pass --workdir %s; "
			"docs/jobs.md)\n", w, strcmp(w, ctx) ? " -> " : "",
			strcmp(w, ctx) ? ctx : "", w);
	free(copy);
	return ok ? 0 : -1;
}

/* Where the open descriptor fd is, canonical, into out. */
static int fd_path(int fd, char out[PATH_MAX])
{
	char at[64];
	ssize_t n;

	snprintf(at, sizeof at, "/proc/self/fd/%d", fd);
	n = readlink(at, out, PATH_MAX - 1);
	if (n < 0 || n >= PATH_MAX - 1)
		return -1;
	out[n] = '\0';
	return 0;
}

/* The job's directory, opened once (*dfd: every file is read beneath
 * it), and its canonical path into ctx. */
static int job_dir(const struct jobspec *js, const char *file,
		   const char *workdir, char ctx[PATH_MAX], int *dfd)
{
	const char *w = workdir ? workdir : js->workdir;
	char *copy = strdup(w ? w : file);
	int ok;

	if (!copy) {
		fprintf(stderr, "spotrun launch: out of memory\n");
		return -1;
	}
	*dfd = open(w ? copy : dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ok = *dfd >= 0 && fd_path(*dfd, ctx) == 0;
	if (!ok)
		fprintf(stderr, "spotrun launch: %s: %s\n", w ? w : file,
			strerror(errno));
	free(copy);
	if (ok && !workdir && w)
		return workdir_allowed(w, file, ctx);
	return ok ? 0 : -1;
}

/* Where a home file may not come from: what other tools keep their
 * credentials in (a job's cloud credentials go in secrets:, sealed;
 * docs/security.md).  Relative to the home. */
static const char *const home_refused[] = {
	".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".gnupg",
	".netrc", ".git-credentials", ".pgpass", ".config/spotrun",
	".local/state/spotrun", NULL
};

/* A "~/F" source: a regular file of the launching user's own home (see
 * the top), resolved into out; 0, or -1 (said). */
static int home_src(const struct jobspec_mount *m, char out[PATH_MAX])
{
	char home[PATH_MAX], joined[PATH_MAX * 2], bad[PATH_MAX * 2];
	const char *h = getenv("HOME");
	struct stat sb;

	if (!h || h[0] != '/' || !realpath(h, home)) {
		fprintf(stderr, "spotrun launch: file_mounts.%s: %s: no home "
			"directory ($HOME) to read it from\n", m->dst, m->src);
		return -1;
	}
	snprintf(joined, sizeof joined, "%s/%s", h, m->src + 2);
	if (!realpath(joined, out) || stat(out, &sb) < 0) {
		fprintf(stderr, "spotrun launch: file_mounts.%s: %s: %s\n", m->dst,
			m->src, strerror(errno));
		return -1;
	}
	if (!under(out, home)) {
		fprintf(stderr, "spotrun launch: file_mounts.%s: %s -> %s lies "
			"outside your home %s\n", m->dst, m->src, out, home);
		return -1;
	}
	for (size_t i = 0; home_refused[i]; i++) {
		snprintf(bad, sizeof bad, "%s/%s", home, home_refused[i]);
		if (under(out, bad)) {
			fprintf(stderr, "spotrun launch: file_mounts.%s: %s lies in "
				"~/%s, where credentials are kept: a job file may "
				"not upload them (give the job what it needs with "
				"secrets:; docs/security.md)\n", m->dst, m->src,
				home_refused[i]);
			return -1;
		}
	}
	if (!S_ISREG(sb.st_mode) || sb.st_uid != getuid()) {
		fprintf(stderr, "spotrun launch: file_mounts.%s: %s: %s; from your "
			"home spotrun uploads only files you own, each named in "
			"the job file (docs/jobs.md)\n", m->dst, m->src,
			S_ISDIR(sb.st_mode) ? "a directory" : !S_ISREG(sb.st_mode) ?
			"not a regular file" : "not yours");
		return -1;
	}
	return 0;
}

/* file_mounts.DST's source as a path relative to the job's directory ctx
 * into rel; -1 (said) if it does not resolve to something inside ctx.
 * The file is then opened beneath the directory's descriptor
 * (bundle_add_at), not by this path. */
static int mount_src(const struct jobspec_mount *m, const char *ctx,
		     char rel[PATH_MAX])
{
	char joined[PATH_MAX * 2], out[PATH_MAX];
	const char *s = m->src;
	size_t n = strlen(ctx);

	if (s[0] == '/')
		snprintf(joined, sizeof joined, "%s", s);
	else
		snprintf(joined, sizeof joined, "%s/%s", ctx, s);
	if (!realpath(joined, out)) {
		fprintf(stderr, "spotrun launch: file_mounts.%s: %s: %s\n", m->dst,
			m->src, strerror(errno));
		return -1;
	}
	if (!under(out, ctx)) {
		fprintf(stderr, "spotrun launch: file_mounts.%s: %s%s%s lies outside "
			"the job's directory %s: spotrun uploads only files under it "
			"(copy what the job needs there; docs/jobs.md)\n", m->dst,
			m->src, strcmp(m->src, out) ? " -> " : "",
			strcmp(m->src, out) ? out : "", ctx);
		return -1;
	}
	snprintf(rel, PATH_MAX, "%s", out[n] ? out + n + (n > 1) : ".");
	return 0;
}

int launch_files(struct ctlcli *o, const struct jobspec *js, const char *file,
		 const char *workdir, json_t *body)
{
	char ctx[PATH_MAX], src[PATH_MAX], state[PATH_MAX];
	int dfd = -1;
	const char *refuse[2] = { NULL, NULL };
	struct bundle b = { .refuse = refuse, .note = note };
	struct sr_err e = { 0 };
	json_t *reply = NULL;
	char *sd = ctlc_state_dir(o->state_dir, &e);
	int rc = -1, bad = 0;

	if (sd && realpath(sd, state))
		refuse[0] = state;
	free(sd);
	if (job_dir(js, file, workdir, ctx, &dfd))
		goto out;
	if (!js->workdir && !js->n_mounts) {
		/* in place, on a node that shares this disk */
		rc = json_object_set_new(body, "workdir", json_string(ctx)) ? -1 : 0;
		goto out;
	}
	sr_err_clear(&e);
	if (js->workdir && bundle_add_at(&b, dfd, ".", "workdir", &e)) {
		fprintf(stderr, "spotrun launch: workdir: %s\n", e.msg);
		bad = 1; /* the mounts' problems are said too */
	}
	for (size_t i = 0; i < js->n_mounts; i++) {
		const struct jobspec_mount *m = &js->mounts[i];
		const char *name = bundle_mount_name(m->dst);
		int home = !strncmp(m->src, "~/", 2);

		if (!bundle_name_ok(name)) {
			fprintf(stderr, "spotrun launch: file_mounts: '%s' is not a "
				"destination (a path under the node's dir, no '..')\n",
				m->dst);
			bad = 1;
			continue;
		}
		if (home ? home_src(m, src) : mount_src(m, ctx, src)) {
			bad = 1;
			continue;
		}
		sr_err_clear(&e);
		b.owner_only = home;
		if (home ? bundle_add(&b, src, name, &e) :
		    bundle_add_at(&b, dfd, src, name, &e)) {
			fprintf(stderr, "spotrun launch: file_mounts.%s: %s\n", m->dst,
				e.msg);
			bad = 1;
		} else if (home) {
			fprintf(stderr, "spotrun launch: file_mounts.%s: uploading %s "
				"from your home (owner-only on the node)\n", m->dst,
				m->src);
		}
		b.owner_only = 0;
	}
	if (bad)
		goto out;
	sr_err_clear(&e);
	if (bundle_finish(&b, &e) ||
	    ctlc_post_raw(o->c, "/v1/uploads", "application/x-tar", b.buf, b.len,
			  120000, &reply, &e) < 0) {
		fprintf(stderr, "spotrun launch: uploading the job's files: %s\n",
			sr_err_str(&e, -EIO));
		goto out;
	}
	rc = json_object_set(body, "files", json_object_get(reply, "upload")) ?
	     -1 : 0;
	if (rc)
		fprintf(stderr, "spotrun launch: the upload's reply has no id\n");
out:
	if (dfd >= 0)
		close(dfd);
	json_decref(reply);
	bundle_free(&b);
	return rc;
}
