/*
 * fsutil.c - durable writes (see the protocol in fsutil.h), mkdir -p,
 * whole-file reads, rm -r.
 */
#include "fsutil.h"

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned tmp_counter;

int sr_fs_fsync_dir(const char *dir)
{
	int fd, rc = 0;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0 && errno != EINVAL) /* some fs refuse dir fsync */
		rc = -errno;
	close(fd);
	return rc;
}

int sr_fs_fsync_parent(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t n;

	if (slash == NULL)
		return sr_fs_fsync_dir(".");
	n = slash == path ? 1 : (size_t)(slash - path);
	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, n);
	dir[n] = '\0';
	return sr_fs_fsync_dir(dir);
}

int sr_fs_write_atomic(const char *path, const void *buf, size_t len,
		       mode_t mode, struct sr_err *e)
{
	char tmp[PATH_MAX];
	const char *p = buf, *what = "create temp file";
	int fd = -1, rc = 0, n;
	size_t left = len;

	n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.%u", path, (long)getpid(),
		     __atomic_fetch_add(&tmp_counter, 1, __ATOMIC_RELAXED));
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return sr_err_set(e, -ENAMETOOLONG, "%s: path too long", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0) {
		rc = -errno;
		goto fail;
	}
	what = "chmod";
	if (fchmod(fd, mode) < 0) {
		rc = -errno;
		goto fail;
	}
	what = "write";
	while (left > 0) {
		ssize_t w = write(fd, p, left);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = -errno;
			goto fail;
		}
		p += w;
		left -= (size_t)w;
	}
	what = "fsync";
	if (fsync(fd) < 0) {
		rc = -errno;
		goto fail;
	}
	what = "close";
	n = close(fd);
	fd = -1;
	if (n < 0) {
		rc = -errno;
		goto fail;
	}
	what = "rename";
	if (rename(tmp, path) < 0) {
		rc = -errno;
		goto fail;
	}
	rc = sr_fs_fsync_parent(path);
	if (rc < 0)
		return sr_err_set(e, rc, "%s: fsync directory: %s", path, sr_strerror(rc));
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return sr_err_set(e, rc, "%s: %s: %s", path, what, sr_strerror(rc));
}

int sr_fs_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);
	struct stat st;

	if (n == 0)
		return -EINVAL;
	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; ; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = c;
		if (c == '\0')
			break;
	}
	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* Read fd to its end (at most max bytes) into *out; path names it in
 * errors.  Closes fd. */
static int read_fd(int fd, const char *path, size_t max, char **out,
		   size_t *out_len, struct sr_err *e)
{
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0;
	int rc = 0;

	for (;;) {
		ssize_t r;

		if (len + 1 >= cap) {
			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap);
			if (nb == NULL) {
				rc = sr_err_set(e, -ENOMEM, "%s: out of memory", path);
				goto out;
			}
			buf = nb;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			sr_err_set(e, rc, "%s: read: %s", path, sr_strerror(rc));
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > max) {
			rc = sr_err_set(e, -EFBIG, "%s: larger than %zu bytes", path, max);
			goto out;
		}
	}
	buf[len] = '\0';
	*out = buf;
	buf = NULL;
	if (out_len != NULL)
		*out_len = len;
out:
	free(buf);
	close(fd);
	return rc;
}

int sr_fs_read_file(const char *path, size_t max, char **out,
		    size_t *out_len, struct sr_err *e)
{
	int fd, rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		return sr_err_set(e, rc, "%s: %s", path, sr_strerror(rc));
	}
	return read_fd(fd, path, max, out, out_len, e);
}

int sr_fs_read_regular_at(int dirfd, const char *name, const char *path,
			  size_t max, char **out, size_t *out_len,
			  struct sr_err *e)
{
	struct stat st;
	int fd, rc;

	*out = NULL;
	/* O_NONBLOCK: opening a FIFO must not wait for a writer */
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		if (rc == -ELOOP)
			return sr_err_set(e, rc, "%s: a symbolic link, not read",
					  path);
		return sr_err_set(e, rc, "%s: %s", path, sr_strerror(rc));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return sr_err_set(e, -EINVAL, "%s: not a regular file, not read",
				  path);
	}
	return read_fd(fd, path, max, out, out_len, e);
}

static int rm_one(const char *p, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(p);
	else
		unlink(p);
	return 0;
}

void sr_fs_rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
