/*
 * file.c - the store interface over a directory (file:///dir): tier 3 on
 * a shared file system (NFS, a mounted bucket), and the reference the
 * network backends are tested against.  Keys are paths below the
 * directory; "a/b" is stored as DIR/a/b.
 *
 * An object appears whole or not at all: it is written to a temporary
 * name beside it (O_EXCL), fsynced, renamed over the key, and the
 * directory is fsynced.  Listing walks the tree (sorted by key).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "os_int.h"
#include "common/fsutil.h"

static void file_free(void *p)
{
	free(p);
}

static char *fpath(struct objstore *s, const char *key)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", s->u.prefix, key) < 0)
		return NULL;
	return p;
}

static int mkparent(const char *path)
{
	char *d = strdup(path), *sl;
	int rc = 0;

	if (!d)
		return -ENOMEM;
	sl = strrchr(d, '/');
	if (sl && sl != d) {
		*sl = 0;
		rc = sr_fs_mkdir_p(d, 0755);
	}
	free(d);
	return rc;
}

/* Write len bytes from buf, or from fd when buf is NULL, atomically. */
static int write_obj(struct objstore *s, const char *key, const void *buf,
		     int fd, uint64_t len, struct sr_err *e)
{
	char *path = fpath(s, key), *tmp = NULL;
	char chunk[1 << 16];
	uint64_t done = 0;
	int out = -1, rc;

	if (!path || asprintf(&tmp, "%s.%d.tmp", path, (int)getpid()) < 0) {
		free(path);
		return -ENOMEM;
	}
	rc = mkparent(path);
	if (rc) {
		sr_err_set(e, rc, "%s: cannot create its directory", path);
		goto out;
	}
	unlink(tmp);
	out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0) {
		rc = sr_err_set(e, -errno, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	while (done < len) {
		size_t n = len - done > sizeof chunk ? sizeof chunk
						     : (size_t)(len - done);
		const void *p = buf ? (const char *)buf + done : chunk;
		ssize_t w;

		if (s->cancel && atomic_load(s->cancel)) {
			rc = sr_err_set(e, -ECANCELED, "%s: cancelled", path);
			goto out;
		}
		if (!buf) {
			ssize_t r = pread(fd, chunk, n, (off_t)done);

			if (r <= 0) {
				rc = sr_err_set(e, r < 0 ? -errno : -EIO,
						"%s: source read failed", key);
				goto out;
			}
			n = (size_t)r;
		}
		w = write(out, p, n);
		if (w < 0) {
			rc = sr_err_set(e, -errno, "%s: %s", tmp, strerror(errno));
			goto out;
		}
		done += (uint64_t)w;
	}
	if (fsync(out) != 0) {
		rc = sr_err_set(e, -errno, "%s: fsync: %s", tmp, strerror(errno));
		goto out;
	}
	close(out);
	out = -1;
	if (rename(tmp, path) != 0) {
		rc = sr_err_set(e, -errno, "%s: rename: %s", path, strerror(errno));
		goto out;
	}
	rc = sr_fs_fsync_parent(path);
out:
	if (out >= 0)
		close(out);
	if (rc)
		unlink(tmp);
	free(tmp);
	free(path);
	return rc;
}

static int file_put(struct objstore *s, const char *key, const void *buf,
		    size_t len, struct sr_err *e)
{
	return write_obj(s, key, buf ? buf : "", -1, len, e);
}

static int file_put_src(struct objstore *s, const char *key,
			const struct os_src *src, uint64_t size, uint64_t *sent,
			struct sr_err *e)
{
	int rc = write_obj(s, key, src->mem, src->fd, size, e);

	if (rc == 0 && sent)
		*sent += size;
	return rc;
}

static int file_get_range(struct objstore *s, const char *key, uint64_t off,
			  uint64_t len, void *dst, objstore_sink_fn sink, void *ud,
			  struct sr_err *e)
{
	char *path = fpath(s, key), *chunk = NULL;
	uint64_t got = 0;
	int fd, rc = 0;

	if (!path)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = sr_err_set(e, errno == ENOENT ? -SR_ENOTFOUND : -errno,
				"%s: %s", path, strerror(errno));
		goto out;
	}
	if (sink) {
		chunk = malloc(1u << 20);
		if (!chunk) {
			rc = -ENOMEM;
			close(fd);
			goto out;
		}
	}
	while (got < len) {
		size_t want = len - got;
		ssize_t r;

		if (sink && want > (1u << 20))
			want = 1u << 20;
		r = pread(fd, sink ? chunk : (char *)dst + got, want,
			  (off_t)(off + got));
		if (r <= 0) {
			rc = sr_err_set(e, r < 0 ? -errno : -SR_ECORRUPT,
					"%s: short object", path);
			break;
		}
		if (sink) {
			rc = sink(ud, got, chunk, (size_t)r);
			if (rc)
				break;
		}
		got += (uint64_t)r;
	}
	close(fd);
out:
	free(chunk);
	free(path);
	return rc;
}

static int file_get(struct objstore *s, const char *key, size_t max,
		    char **out, size_t *len, struct sr_err *e)
{
	char *path = fpath(s, key);
	int rc;

	if (!path)
		return -ENOMEM;
	rc = sr_fs_read_file(path, max, out, len, e);
	if (rc == -ENOENT)
		rc = -SR_ENOTFOUND;
	free(path);
	return rc;
}

static int cmp_obj(const void *a, const void *b)
{
	return strcmp(((const struct objstore_obj *)a)->key,
		      ((const struct objstore_obj *)b)->key);
}

/* Add the files under DIR/rel whose key starts with sub. */
static int walk(struct objstore *s, const char *rel, const char *sub,
		struct objstore_list *out, int depth)
{
	char *dir = NULL;
	DIR *d;
	struct dirent *de;
	int rc = 0;

	if (depth > 8)
		return 0;
	if (asprintf(&dir, "%s%s%s", s->u.prefix, *rel ? "/" : "", rel) < 0)
		return -ENOMEM;
	d = opendir(dir);
	if (!d) {
		rc = errno == ENOENT && *rel ? 0 : -errno;
		free(dir);
		return rc == -ENOENT ? 0 : rc;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		char *key = NULL;
		struct stat st;
		size_t kl;

		if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp"))
			continue;
		if (asprintf(&key, "%s%s%s", rel, *rel ? "/" : "", de->d_name) < 0)
			return -ENOMEM;
		kl = strlen(key);
		if (fstatat(dirfd(d), de->d_name, &st, 0) == 0) {
			size_t m = kl < strlen(sub) ? kl : strlen(sub);

			if (strncmp(key, sub, m) == 0) {
				if (S_ISDIR(st.st_mode))
					rc = walk(s, key, sub, out, depth + 1);
				else if (S_ISREG(st.st_mode) && kl >= strlen(sub))
					rc = objstore__list_add(out, key, kl,
								(uint64_t)st.st_size);
			}
		}
		free(key);
	}
	closedir(d);
	free(dir);
	return rc;
}

static int file_list(struct objstore *s, const char *sub,
		     struct objstore_list *out, struct sr_err *e)
{
	size_t before = out->n;
	int rc = walk(s, "", sub, out, 0);

	if (rc)
		return sr_err_set(e, rc, "%s: cannot list: %s", s->u.prefix,
				  sr_strerror(rc));
	if (out->n > before)
		qsort(out->v + before, out->n - before, sizeof *out->v, cmp_obj);
	return 0;
}

static int file_del(struct objstore *s, const char *const *keys, size_t n,
		    struct sr_err *e)
{
	for (size_t i = 0; i < n; i++) {
		char *path = fpath(s, keys[i]), *sl;

		if (!path)
			return -ENOMEM;
		if (unlink(path) != 0 && errno != ENOENT) {
			int rc = sr_err_set(e, -errno, "%s: %s", path,
					    strerror(errno));

			free(path);
			return rc;
		}
		/* drop a directory the deletion emptied (step-N/) */
		sl = strrchr(path, '/');
		if (sl && sl > path + strlen(s->u.prefix)) {
			*sl = 0;
			rmdir(path);
		}
		free(path);
	}
	return 0;
}

static const struct objstore_ops file_ops = {
	.put = file_put, .put_src = file_put_src, .get_range = file_get_range,
	.get = file_get, .list = file_list, .del = file_del,
	.abort_stale = NULL, .free_impl = file_free,
};

int objstore__file_open(struct objstore *s, struct sr_err *e)
{
	int rc;

	if (!s->u.prefix || s->u.prefix[0] == 0)
		return sr_err_set(e, -EINVAL, "file URI: empty path");
	rc = sr_fs_mkdir_p(s->u.prefix, 0755);
	if (rc)
		return sr_err_set(e, rc, "%s: cannot create: %s", s->u.prefix,
				  sr_strerror(rc));
	s->ops = &file_ops;
	s->impl = NULL;
	return 0;
}
