/*
 * scan.c - the synced directory as it is now, read without following any
 * link: every directory is opened relative to its parent's descriptor with
 * O_NOFOLLOW|O_DIRECTORY, every file with O_NOFOLLOW|O_NONBLOCK and checked
 * to be regular on its own descriptor (dirsync.h "Reading the directory").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "dirsync.h"
#include "dirsync_int.h"

void dirsync_scan_free(struct dirsync_scan *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].path);
	free(s->v);
	memset(s, 0, sizeof *s);
}

void dirsync__stat_of(const struct stat *sb, struct dirsync_stat *st)
{
	st->size = (uint64_t)sb->st_size;
	st->mode = sb->st_mode & 07777;
	st->mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec;
	st->ctime_ns = (int64_t)sb->st_ctim.tv_sec * 1000000000 + sb->st_ctim.tv_nsec;
	st->ino = sb->st_ino;
	st->dev = sb->st_dev;
}

int dirsync__grow(void **v, size_t *cap, size_t n, size_t elem)
{
	size_t nc;
	void *p;

	if (n < *cap)
		return 0;
	nc = *cap ? 2 * *cap : 64;
	p = realloc(*v, nc * elem);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = nc;
	return 0;
}

static int push(struct dirsync_scan *s, const char *rel, const struct stat *sb)
{
	struct dirsync_stat *st;

	if (dirsync__grow((void **)&s->v, &s->cap, s->n, sizeof *s->v) < 0)
		return -ENOMEM;
	st = &s->v[s->n];
	if (!(st->path = strdup(rel)))
		return -ENOMEM;
	dirsync__stat_of(sb, st);
	s->n++;
	return 0;
}

/* Walk the directory open as fd (consumed), its entries named rel/... */
static int walk(int fd, const char *rel, int depth, struct dirsync_scan *s,
		struct sr_err *e)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		rc = sr_err_set(e, -errno, "%s: %s", *rel ? rel : ".", strerror(errno));
		close(fd);
		return rc;
	}
	while (rc == 0 && (de = readdir(d))) {
		char path[DIRSYNC_PATH_MAX + 2];
		struct stat sb;
		int cfd, n;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strncmp(de->d_name, DIRSYNC_LOCAL_PREFIX,
			     strlen(DIRSYNC_LOCAL_PREFIX)))
			continue;
		n = snprintf(path, sizeof path, "%s%s%s", rel, *rel ? "/" : "",
			     de->d_name);
		if (n < 0 || (size_t)n >= sizeof path ||
		    dirsync_path_check(path, NULL) < 0) {
			s->skipped++;
			continue;
		}
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* gone since readdir */
			rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
			break;
		}
		if (S_ISDIR(sb.st_mode)) {
			if (depth >= DIRSYNC_MAX_DEPTH) {
				s->skipped++;
				continue;
			}
			cfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY |
				     O_NOFOLLOW | O_CLOEXEC);
			if (cfd < 0) {
				if (errno == ENOENT)
					continue;
				s->skipped++; /* replaced by a link meanwhile */
				continue;
			}
			rc = walk(cfd, path, depth + 1, s, e);
		} else if (S_ISREG(sb.st_mode)) {
			if (s->n >= DIRSYNC_MAX_FILES) {
				s->skipped++;
				continue;
			}
			if (push(s, path, &sb) < 0)
				rc = sr_err_set(e, -ENOMEM, "scan: out of memory");
		} else {
			s->skipped++; /* a link, FIFO, socket, device */
		}
	}
	closedir(d);
	return rc;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct dirsync_stat *)a)->path,
		      ((const struct dirsync_stat *)b)->path);
}

int dirsync_scan(int dirfd, struct dirsync_scan *out, struct sr_err *e)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc;

	memset(out, 0, sizeof *out);
	if (fd < 0)
		return sr_err_set(e, -errno, "scan: %s", strerror(errno));
	rc = walk(fd, "", 0, out, e);
	if (rc < 0) {
		dirsync_scan_free(out);
		return rc;
	}
	if (out->n)
		qsort(out->v, out->n, sizeof *out->v, by_path);
	return 0;
}

int dirsync_open_at(int dirfd, const char *path, struct sr_err *e)
{
	char buf[DIRSYNC_PATH_MAX + 1], *seg, *next;
	int fd = dup(dirfd), nfd;
	struct stat sb;

	if (fd < 0)
		return sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
	if (strlen(path) >= sizeof buf) {
		close(fd);
		return sr_err_set(e, -ENAMETOOLONG, "%.80s: path too long", path);
	}
	strcpy(buf, path);
	for (seg = buf; seg; seg = next) {
		next = strchr(seg, '/');
		if (next)
			*next++ = '\0';
		nfd = openat(fd, seg, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
			     (next ? O_DIRECTORY : O_NONBLOCK));
		close(fd);
		if (nfd < 0)
			return sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		fd = nfd;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return sr_err_set(e, -EINVAL, "%s: not a regular file", path);
	}
	return fd;
}

int dirsync_sha256_fd(int fd, uint64_t size, char hex[65], struct sr_err *e)
{
	return dirsync__sha256_fd_gated(fd, size, hex, NULL, NULL, e);
}

int dirsync__sha256_fd_gated(int fd, uint64_t size, char hex[65],
			     objstore_gate_fn gate, void *ud, struct sr_err *e)
{
	EVP_MD_CTX *x = EVP_MD_CTX_new();
	size_t bufsz = 1 << 20;
	unsigned char *buf = malloc(bufsz), d[32];
	unsigned int dl = 0;
	uint64_t off = 0;
	int rc = 0;

	if (!x || !buf || !EVP_DigestInit_ex(x, EVP_sha256(), NULL)) {
		rc = sr_err_set(e, -ENOMEM, "sha256: out of memory");
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (gate && off % (8u << 20) == 0)
			gate(ud);
		n = pread(fd, buf, bufsz, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = sr_err_set(e, -errno, "read: %s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		off += (uint64_t)n;
		if (off > size)
			break;
		EVP_DigestUpdate(x, buf, (size_t)n);
	}
	if (off != size) {
		rc = sr_err_set(e, -EAGAIN, "changed while read (%llu bytes, "
				"expected %llu)", (unsigned long long)off,
				(unsigned long long)size);
		goto out;
	}
	EVP_DigestFinal_ex(x, d, &dl);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
out:
	free(buf);
	EVP_MD_CTX_free(x);
	return rc;
}
