/*
 * bundle_write.c - build a job's files archive from paths the caller
 * can read (bundle.h: the format and what is refused).
 *
 * The walk never follows a symbolic link below the source's root: each
 * entry is lstat'ed, a link is stored as a link (its target checked to
 * stay in the tree), a directory's entries are read in name order so the
 * same tree makes the same archive.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle_int.h"

#define END_BYTES (2 * BUNDLE_BLOCK)
#define DEPTH_MAX 64

static int grow(struct bundle *b, size_t n, struct sr_err *e)
{
	size_t nc;
	char *nb;

	if (b->len + n + END_BYTES > BUNDLE_MAX_BYTES)
		return sr_err_set(e, -EFBIG, "the job's files are larger than "
				  "%u MiB, the most spotrun uploads", BUNDLE_MAX_BYTES >> 20);
	if (b->len + n <= b->cap)
		return 0;
	nc = b->cap ? b->cap : 64 * 1024;
	while (nc < b->len + n)
		nc *= 2;
	nb = realloc(b->buf, nc);
	if (!nb)
		return sr_err_set(e, -ENOMEM, "out of memory");
	b->buf = nb;
	b->cap = nc;
	return 0;
}

/* One ustar header for `name` (split into prefix and name when longer
 * than 100 bytes). */
static int header(struct bundle *b, const char *name, char type, unsigned mode,
		  uint64_t size, const char *link, struct sr_err *e)
{
	size_t n = strlen(name), cut = 0;
	unsigned char *h;
	unsigned sum = 0;
	int rc;

	if (!bundle_name_ok(name))
		return sr_err_set(e, -EINVAL, "'%s': not a name the files archive "
				  "can hold (at most %d bytes, no control "
				  "character)", name, BUNDLE_NAME_MAX);
	if (n > 100) {
		/* the last '/' that leaves at most 100 bytes after it and at
		 * most 155 before it */
		for (size_t i = n - 1; i > 0 && !cut; i--) {
			if (name[i] == '/' && n - i - 1 <= 100 && i <= 155)
				cut = i;
		}
		if (!cut)
			return sr_err_set(e, -ENAMETOOLONG, "'%s': a name the files "
					  "archive cannot hold (a component is "
					  "too long)", name);
	}
	if (++b->entries > BUNDLE_MAX_ENTRIES)
		return sr_err_set(e, -EFBIG, "the job's files have more than %d "
				  "entries", BUNDLE_MAX_ENTRIES);
	rc = grow(b, BUNDLE_BLOCK, e);
	if (rc)
		return rc;
	h = (unsigned char *)b->buf + b->len;
	memset(h, 0, BUNDLE_BLOCK);
	if (cut) {
		memcpy(h + BUNDLE_OFF_PREFIX, name, cut);
		memcpy(h + BUNDLE_OFF_NAME, name + cut + 1, n - cut - 1);
	} else {
		memcpy(h + BUNDLE_OFF_NAME, name, n);
	}
	snprintf((char *)h + BUNDLE_OFF_MODE, 8, "%07o", mode);
	snprintf((char *)h + BUNDLE_OFF_UID, 8, "%07o", 0);
	snprintf((char *)h + BUNDLE_OFF_GID, 8, "%07o", 0);
	snprintf((char *)h + BUNDLE_OFF_SIZE, 12, "%011llo", (unsigned long long)size);
	snprintf((char *)h + BUNDLE_OFF_MTIME, 12, "%011o", 0);
	h[BUNDLE_OFF_TYPE] = (unsigned char)type;
	if (link)
		memcpy(h + BUNDLE_OFF_LINK, link, strlen(link));
	memcpy(h + BUNDLE_OFF_MAGIC, "ustar", 6);
	memcpy(h + BUNDLE_OFF_VERSION, "00", 2);
	memset(h + BUNDLE_OFF_CHKSUM, ' ', 8);
	for (int i = 0; i < BUNDLE_BLOCK; i++)
		sum += h[i];
	snprintf((char *)h + BUNDLE_OFF_CHKSUM, 8, "%06o", sum);
	b->len += BUNDLE_BLOCK;
	return 0;
}

static int refused(const struct bundle *b, const char *path)
{
	for (size_t i = 0; b->refuse && b->refuse[i]; i++) {
		size_t n = strlen(b->refuse[i]);

		if (!strncmp(path, b->refuse[i], n) &&
		    (path[n] == '/' || path[n] == '\0'))
			return 1;
	}
	return 0;
}

/* The file at fd, st_size bytes, appended with its padding. */
static int put_file(struct bundle *b, int fd, const char *path, uint64_t size,
		    struct sr_err *e)
{
	uint64_t got = 0;
	size_t pad = (size_t)((BUNDLE_BLOCK - size % BUNDLE_BLOCK) % BUNDLE_BLOCK);
	int rc = grow(b, (size_t)size + pad, e);

	if (rc)
		return rc;
	while (got < size) {
		ssize_t n = read(fd, b->buf + b->len + got, (size_t)(size - got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		if (n == 0)
			break;
		got += (uint64_t)n;
	}
	if (got != size)
		return sr_err_set(e, -EIO, "%s: changed while it was read", path);
	memset(b->buf + b->len + size, 0, pad);
	b->len += (size_t)size + pad;
	return 0;
}

static int add_path(struct bundle *b, const char *root, const char *rel,
		    const char *name, int depth, struct sr_err *e);

/* The link at path, followed to the end (through other links too), stays
 * under root - or its target does not exist (then the check of its text,
 * bundle__link_inside, is all there is). */
static int resolves_inside(const char *path, const char *root)
{
	char *rp = realpath(path, NULL);
	size_t n = strlen(root);
	int ok;

	if (!rp)
		return 1;
	ok = !strncmp(rp, root, n) && (rp[n] == '/' || rp[n] == '\0');
	free(rp);
	return ok;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory's entries, in name order. */
static int add_dir(struct bundle *b, const char *root, const char *rel,
		   const char *name, const char *path, int depth, struct sr_err *e)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char **v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (!d)
		return sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
	rc = header(b, name, '5', b->owner_only ? 0700 : 0755, 0, NULL, e);
	while (!rc && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 32;
			char **nv = realloc(v, nc * sizeof *nv);

			if (!nv) {
				rc = sr_err_set(e, -ENOMEM, "out of memory");
				break;
			}
			v = nv;
			cap = nc;
		}
		v[n] = strdup(de->d_name);
		if (!v[n])
			rc = sr_err_set(e, -ENOMEM, "out of memory");
		else
			n++;
	}
	closedir(d);
	if (!rc && n)
		qsort(v, n, sizeof *v, cmp_names);
	for (size_t i = 0; !rc && i < n; i++) {
		char *r = NULL, *a = NULL;

		if (asprintf(&r, "%s%s%s", rel, *rel ? "/" : "", v[i]) < 0 ||
		    asprintf(&a, "%s/%s", name, v[i]) < 0)
			rc = sr_err_set(e, -ENOMEM, "out of memory");
		else
			rc = add_path(b, root, r, a, depth + 1, e);
		free(r);
		free(a);
	}
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return rc;
}

static int add_path(struct bundle *b, const char *root, const char *rel,
		    const char *name, int depth, struct sr_err *e)
{
	char *path = NULL, target[101];
	struct stat sb;
	ssize_t n;
	int rc = 0, fd;

	if (depth > DEPTH_MAX)
		return sr_err_set(e, -ELOOP, "%s/%s: nested deeper than %d "
				  "directories", root, rel, DEPTH_MAX);
	if (asprintf(&path, "%s%s%s", root, *rel ? "/" : "", rel) < 0)
		return sr_err_set(e, -ENOMEM, "out of memory");
	if (refused(b, path)) {
		rc = sr_err_set(e, -EPERM, "%s: inside spotrund's state dir; a "
				"job's files may not include it", path);
		goto out;
	}
	if (lstat(path, &sb) < 0) {
		rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (S_ISDIR(sb.st_mode)) {
		rc = add_dir(b, root, rel, name, path, depth, e);
	} else if (S_ISREG(sb.st_mode)) {
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
			goto out;
		}
		rc = header(b, name, '0', (sb.st_mode & S_IXUSR ? 0755 : 0644) &
			    (b->owner_only || !(sb.st_mode & 077) ? 0700 : 0777),
			    (uint64_t)sb.st_size, NULL, e);
		if (!rc)
			rc = put_file(b, fd, path, (uint64_t)sb.st_size, e);
		close(fd);
	} else if (S_ISLNK(sb.st_mode)) {
		n = readlink(path, target, sizeof target - 1);
		if (n < 0) {
			rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
			goto out;
		}
		if ((size_t)n >= sizeof target - 1) {
			rc = sr_err_set(e, -ENAMETOOLONG, "%s: a link target longer "
					"than 99 bytes", path);
			goto out;
		}
		target[n] = '\0';
		if (!bundle__link_inside(rel, target) || !resolves_inside(path, root))
			rc = sr_err_set(e, -EPERM, "%s: a symbolic link to '%s', "
					"which leaves %s; a job's files may only "
					"link inside their own tree", path, target,
					root);
		else
			rc = header(b, name, '2', 0755, 0, target, e);
	} else if (S_ISSOCK(sb.st_mode) || S_ISFIFO(sb.st_mode)) {
		if (b->note) {
			char msg[4200];

			snprintf(msg, sizeof msg, "%s: a %s, not uploaded", path,
				 S_ISSOCK(sb.st_mode) ? "socket" : "FIFO");
			b->note(b->note_ud, msg);
		}
	} else {
		rc = sr_err_set(e, -EPERM, "%s: a device; a job's files are files, "
				"directories and links", path);
	}
out:
	free(path);
	return rc;
}

int bundle_add(struct bundle *b, const char *src, const char *name,
	       struct sr_err *e)
{
	size_t len = b->len, entries = b->entries;
	char *root = realpath(src, NULL);
	int rc;

	if (!root)
		return sr_err_set(e, -errno, "%s: %s", src, strerror(errno));
	if (refused(b, root))
		rc = sr_err_set(e, -EPERM, "%s: inside spotrund's state dir; a "
				"job's files may not include it", src);
	else
		rc = add_path(b, root, "", name, 0, e);
	free(root);
	if (rc) {
		b->len = len;      /* nothing of a failed add is kept */
		b->entries = entries;
	}
	return rc;
}

int bundle_finish(struct bundle *b, struct sr_err *e)
{
	size_t need = b->len + END_BYTES;
	char *nb;

	if (need > b->cap) {
		nb = realloc(b->buf, need);
		if (!nb)
			return sr_err_set(e, -ENOMEM, "out of memory");
		b->buf = nb;
		b->cap = need;
	}
	memset(b->buf + b->len, 0, END_BYTES);
	b->len = need;
	return 0;
}

void bundle_free(struct bundle *b)
{
	if (!b)
		return;
	free(b->buf);
	b->buf = NULL;
	b->len = b->cap = b->entries = 0;
}
