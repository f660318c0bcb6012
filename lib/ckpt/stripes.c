/*
 * stripes.c - a checkpoint striped over several tier-2 directories (one
 * per disk): which directory each shard goes to, where its bytes live,
 * and removing what no committed step refers to.
 *
 * Layout.  dir[0] (the primary) holds every step-N/ directory with its
 * manifest.json exactly as unstriped; a shard striped to dir[k] (k >= 1)
 * lives in dir[k]/stripe-NNNNNNNN-<16 hex>/shard-XXXXX.safetensors and its
 * name in step-N/ is a symbolic link to that absolute path:
 *
 *   /nvme0/ck/step-00000100/manifest.json
 *   /nvme0/ck/step-00000100/shard-00000.safetensors      (a file)
 *   /nvme0/ck/step-00000100/shard-00001.safetensors  ->  /nvme1/ck/
 *                         stripe-00000100-5f1c0e9ad2b34471/shard-00001.safetensors
 *
 * So the shard files are byte for byte those of an unstriped checkpoint,
 * the manifest is unchanged, and every reader (the restore, a plain
 * safetensors reader, the tier-3 uploader, `spotrun ckpt verify`) finds
 * the shards through step-N/ without knowing about stripes.
 *
 * Commit (commit.c): the stripe directories are made with a fresh random
 * name per save, written and fsync'ed (files, the stripe directory and
 * dir[k] itself) in the same round as the primary's manifest and step-N.tmp
 * (which holds the links); only then is step-N.tmp renamed to step-N.  A
 * stripe directory is therefore never reachable before its content is
 * durable, and never written again once it is: a save of a step that
 * already exists gets new stripe directories, and the exchange of step-N
 * retires the old links with the old step.  A stripe directory that no
 * committed step links to (a writer killed before the rename, a step
 * removed by retention) is garbage: ckpt__stripes_gc removes it after each
 * commit and when an engine opens.  References are compared by device and
 * inode, so another path to the same directory (a bind mount) is not
 * mistaken for garbage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "common/log.h"
#include "common/random.h"

#define STRIPE_PREFIX "stripe-"

int ckpt__make_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0755) == 0)
		return 0;
	if (errno != EEXIST)
		return ckpt__fail(-errno, "%s: mkdir: %s", dir, strerror(errno));
	if (stat(dir, &st) != 0)
		return ckpt__fail(-errno, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return ckpt__fail(-ENOTDIR, "%s: not a directory", dir);
	return 0;
}

/* Split SPOTRUN_CKPT_DIRS (a:b:c) into v (pointers into buf). */
static size_t split_env(char *buf, const char **v, size_t max)
{
	size_t n = 0;
	char *save = NULL;

	for (char *t = strtok_r(buf, ":", &save); t && n < max;
	     t = strtok_r(NULL, ":", &save))
		v[n++] = t;
	return n;
}

static int same_dir(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int ckpt__stripes_open(const char *primary, const char *const *dirs,
		       uint32_t ndirs, struct ckpt_stripes *s)
{
	const char *v[CKPT_MAX_DIRS];
	char *env = NULL;
	size_t n = 0;
	int rc = 0;

	memset(s, 0, sizeof *s);
	if (ndirs > CKPT_MAX_DIRS)
		return ckpt__fail(-EINVAL, "spotckpt_open: %u directories; at most "
				  "%d", ndirs, CKPT_MAX_DIRS);
	if (ndirs > 0) {
		for (uint32_t k = 0; k < ndirs; k++) {
			if (!dirs[k] || !*dirs[k])
				return ckpt__fail(-EINVAL, "spotckpt_open: dirs[%u] "
						  "is empty", k);
			v[n++] = dirs[k];
		}
	} else if (getenv("SPOTRUN_CKPT_DIRS")) {
		env = strdup(getenv("SPOTRUN_CKPT_DIRS"));
		if (!env)
			return ckpt__fail(-ENOMEM, "spotckpt_open: out of memory");
		n = split_env(env, v, CKPT_MAX_DIRS);
		/* the list is about the directory it names first */
		if (n > 1 && !same_dir(v[0], primary)) {
			sr_debug("ckpt", "SPOTRUN_CKPT_DIRS is about another "
				 "directory; not striping", "dir=%s first=%s",
				 primary, v[0]);
			n = 0;
		}
	}
	if (n < 2)
		n = 0; /* one directory: no stripes */
	s->dir = calloc(n ? n : 1, sizeof *s->dir);
	if (!s->dir) {
		free(env);
		return ckpt__fail(-ENOMEM, "spotckpt_open: out of memory");
	}
	s->n = 1;
	s->dir[0] = realpath(primary, NULL);
	if (!s->dir[0])
		rc = ckpt__fail(-errno, "%s: %s", primary, strerror(errno));
	else if (n > 0 && ndirs > 0 && !same_dir(v[0], primary))
		rc = ckpt__fail(-EINVAL, "spotckpt_open: dirs[0] (%s) must be the "
				"directory dir names (%s)", v[0], primary);
	for (size_t k = 1; rc == 0 && k < n; k++) {
		rc = ckpt__make_dir(v[k]);
		if (rc)
			break;
		s->dir[k] = realpath(v[k], NULL);
		if (!s->dir[k]) {
			rc = ckpt__fail(-errno, "%s: %s", v[k], strerror(errno));
			break;
		}
		s->n = (int)k + 1;
		for (size_t j = 0; j < k; j++) {
			if (same_dir(s->dir[j], s->dir[k]))
				rc = ckpt__fail(-EINVAL, "spotckpt_open: %s and %s "
						"are the same directory", v[j], v[k]);
		}
	}
	free(env);
	if (rc)
		ckpt__stripes_close(s);
	return rc;
}

void ckpt__stripes_close(struct ckpt_stripes *s)
{
	if (!s || !s->dir)
		return;
	ckpt__lanes_free(s->lanes);
	for (int k = 0; k < s->n; k++)
		free(s->dir[k]);
	free(s->dir);
	memset(s, 0, sizeof *s);
}

void ckpt__stripes_assign(const struct ckpt_layout *l, int n, uint32_t *where)
{
	uint64_t load[CKPT_MAX_DIRS] = { 0 };

	for (size_t i = 0; i < l->ns; i++) {
		int best = 0;

		for (int k = 1; k < n; k++) {
			if (load[k] < load[best])
				best = k;
		}
		where[i] = (uint32_t)best;
		load[best] += l->s[i].file_bytes;
	}
}

uint64_t ckpt__stripes_shard_bytes(uint64_t state_bytes, int n)
{
	uint64_t per = (state_bytes + (uint64_t)n - 1) / (uint64_t)n;

	return per < (4ull << 30) ? (per ? per : 1) : (4ull << 30);
}

int ckpt__stripe_mkdir(int dirfd, int64_t step, char *name, size_t n)
{
	for (int tries = 0; tries < 8; tries++) {
		char id[17];
		int rc = sr_random_hex(id, 8);

		if (rc)
			return rc;
		snprintf(name, n, STRIPE_PREFIX "%08" PRId64 "-%s", step, id);
		if (mkdirat(dirfd, name, 0755) == 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* ---- garbage collection ------------------------------------------------------ */
struct ids {
	dev_t *dev;
	ino_t *ino;
	size_t n, cap;
};

static int ids_add(struct ids *s, dev_t d, ino_t i)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		dev_t *nd = realloc(s->dev, cap * sizeof *nd);

		if (!nd)
			return -ENOMEM;
		s->dev = nd;
		ino_t *ni = realloc(s->ino, cap * sizeof *ni);

		if (!ni)
			return -ENOMEM;
		s->ino = ni;
		s->cap = cap;
	}
	s->dev[s->n] = d;
	s->ino[s->n++] = i;
	return 0;
}

static int ids_has(const struct ids *s, dev_t d, ino_t i)
{
	for (size_t k = 0; k < s->n; k++) {
		if (s->dev[k] == d && s->ino[k] == i)
			return 1;
	}
	return 0;
}

/* Add the directory of every link target in committed step dir `name`. */
static int refs_of_step(int pfd, const char *name, struct ids *refs)
{
	struct dirent *de;
	int rc = 0, fd;
	DIR *d = ckpt__opendir_at(pfd, name, &rc);

	if (!d)
		return rc;
	fd = dirfd(d);
	for (de = readdir(d); rc == 0 && de; de = readdir(d)) {
		char target[PATH_MAX];
		ssize_t k;
		struct stat st;
		char *slash;

		if (de->d_type != DT_LNK && de->d_type != DT_UNKNOWN)
			continue;
		k = readlinkat(fd, de->d_name, target, sizeof target - 1);
		if (k <= 0)
			continue; /* not a link */
		target[k] = '\0';
		slash = strrchr(target, '/');
		if (!slash || slash == target)
			continue;
		*slash = '\0';
		if (stat(target, &st) == 0)
			rc = ids_add(refs, st.st_dev, st.st_ino);
	}
	closedir(d);
	return rc;
}

void ckpt__stripes_gc(const struct ckpt_stripes *s)
{
	struct ids refs = { 0 };
	int64_t *steps = NULL;
	size_t ns = 0;
	int pfd = -1, rc;

	if (!s || s->n < 2)
		return;
	rc = ckpt__scan(s->dir[0], &steps, &ns, 0, NULL);
	pfd = rc ? -1 : open(s->dir[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		goto out; /* cannot tell what is referenced: remove nothing */
	for (size_t i = 0; rc == 0 && i < ns; i++) {
		char name[48];

		snprintf(name, sizeof name, "step-%08" PRId64, steps[i]);
		rc = refs_of_step(pfd, name, &refs);
	}
	for (int k = 1; rc == 0 && k < s->n; k++) {
		DIR *d = opendir(s->dir[k]);
		struct dirent *de;

		if (!d)
			continue;
		for (de = readdir(d); de; de = readdir(d)) {
			struct stat st;

			if (strncmp(de->d_name, STRIPE_PREFIX, strlen(STRIPE_PREFIX)) ||
			    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
			    !S_ISDIR(st.st_mode) || ids_has(&refs, st.st_dev, st.st_ino))
				continue;
			sr_debug("ckpt", "removing a stripe no step refers to",
				 "dir=%s name=%s", s->dir[k], de->d_name);
			ckpt__rmdir_flat(dirfd(d), de->d_name);
		}
		closedir(d);
	}
out:
	if (pfd >= 0)
		close(pfd);
	free(steps);
	free(refs.dev);
	free(refs.ino);
}
