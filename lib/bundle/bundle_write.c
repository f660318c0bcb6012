/*
 * bundle_write.c - build a job's files archive from paths the caller
 * can read (bundle.h: the format and what is refused).
 *
 * The source's root is opened once (bundle_add: by its path;
 * bundle_add_at: beneath a directory the caller holds open, openat2
 * RESOLVE_BENEATH); every entry below is reached from its parent's
 * descriptor with *at() calls, never by a path, so a directory swapped
 * for a link after it was checked is not read through.  The walk never
 * follows a symbolic link below the root: each entry is lstat'ed
 * (fstatat AT_SYMLINK_NOFOLLOW), opened with O_NOFOLLOW and checked to
 * be what was lstat'ed; a link is stored as a link (its target checked
 * to stay in the tree); a directory's entries are read in name order so
 * the same tree makes the same archive.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

/* One walk of bundle_add/bundle_add_at: the tree's root as a path (for
 * messages, the refused check and where links lead) and as the
 * descriptor every entry is reached from. */
struct walk {
	struct bundle *b;
	const char *root;   /* canonical: where the root's descriptor is */
	struct stat *refused_st; /* the refused dirs that exist (dev, ino) */
	size_t nrefused;
};

static int add_at(struct walk *w, int dfd, const char *entry, const char *rel,
		  const char *name, int depth, struct sr_err *e);

/* A directory (dev, ino) that is one of the refused: a link or a bind
 * mount of the state dir has another path but the same inode. */
static int refused_dir(const struct walk *w, const struct stat *sb)
{
	for (size_t i = 0; i < w->nrefused; i++)
		if (w->refused_st[i].st_dev == sb->st_dev &&
		    w->refused_st[i].st_ino == sb->st_ino)
			return 1;
	return 0;
}

/* The link `entry` of directory dfd, followed to the end (through other
 * links too), stays under the root - or its target does not exist (then
 * the check of its text, bundle__link_inside, is all there is). */
static int resolves_inside(const struct walk *w, int dfd, const char *entry)
{
	char at[4352], *rp;
	size_t n = strlen(w->root);
	int ok;

	snprintf(at, sizeof at, "/proc/self/fd/%d/%s", dfd, entry);
	rp = realpath(at, NULL);
	if (!rp)
		return 1;
	ok = !strncmp(rp, w->root, n) && (rp[n] == '/' || rp[n] == '\0' ||
					  !strcmp(w->root, "/"));
	free(rp);
	return ok;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of the open directory fd (taken: closed here), in name
 * order, each reached from fd. */
static int add_dir(struct walk *w, int fd, const char *rel, const char *name,
		   const char *path, int depth, struct sr_err *e)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	char **v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (!d) {
		rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		close(fd);
		return rc;
	}
	rc = header(w->b, name, '5', w->b->owner_only ? 0700 : 0755, 0, NULL, e);
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
	if (!rc && n)
		qsort(v, n, sizeof *v, cmp_names);
	for (size_t i = 0; !rc && i < n; i++) {
		char *r = NULL, *a = NULL;

		if (asprintf(&r, "%s%s%s", rel, *rel ? "/" : "", v[i]) < 0 ||
		    asprintf(&a, "%s/%s", name, v[i]) < 0)
			rc = sr_err_set(e, -ENOMEM, "out of memory");
		else
			rc = add_at(w, dirfd(d), v[i], r, a, depth + 1, e);
		free(r);
		free(a);
	}
	closedir(d);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return rc;
}

/* The regular file open at fd (taken: closed here), whose lstat was sb. */
static int add_file(struct walk *w, int fd, const struct stat *sb,
		    const char *name, const char *path, struct sr_err *e)
{
	struct stat now;
	int rc;

	if (fstat(fd, &now) < 0 || !S_ISREG(now.st_mode) ||
	    now.st_dev != sb->st_dev || now.st_ino != sb->st_ino)
		rc = sr_err_set(e, -EAGAIN, "%s: changed while it was read", path);
	else
		rc = header(w->b, name, '0', (now.st_mode & S_IXUSR ? 0755 : 0644) &
			    (w->b->owner_only || !(now.st_mode & 077) ? 0700 : 0777),
			    (uint64_t)now.st_size, NULL, e);
	if (!rc)
		rc = put_file(w->b, fd, path, (uint64_t)now.st_size, e);
	close(fd);
	return rc;
}

/* The link `entry` of dfd, stored as a link when it stays in the tree. */
static int add_link(struct walk *w, int dfd, const char *entry,
		    const char *rel, const char *name, const char *path,
		    struct sr_err *e)
{
	char target[101];
	ssize_t n = readlinkat(dfd, entry, target, sizeof target - 1);

	if (n < 0)
		return sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
	if ((size_t)n >= sizeof target - 1)
		return sr_err_set(e, -ENAMETOOLONG, "%s: a link target longer "
				  "than 99 bytes", path);
	target[n] = '\0';
	if (!bundle__link_inside(rel, target) || !resolves_inside(w, dfd, entry))
		return sr_err_set(e, -EPERM, "%s: a symbolic link to '%s', "
				  "which leaves %s; a job's files may only link "
				  "inside their own tree", path, target, w->root);
	return header(w->b, name, '2', 0755, 0, target, e);
}

/* openat(dfd, entry, flags), where entry "" is dfd itself (the root, an
 * O_PATH descriptor: reopened through its /proc/self/fd link). */
static int open_entry(int dfd, const char *entry, int flags)
{
	char at[64];

	if (*entry)
		return openat(dfd, entry, flags);
	if (flags & O_DIRECTORY)
		return openat(dfd, ".", flags & ~O_NOFOLLOW);
	snprintf(at, sizeof at, "/proc/self/fd/%d", dfd);
	return open(at, flags & ~O_NOFOLLOW);
}

/* Entry `entry` of the directory open at dfd (the tree's path rel),
 * never following a link: lstat, then open with O_NOFOLLOW and check it
 * is what was lstat'ed. */
static int add_at(struct walk *w, int dfd, const char *entry, const char *rel,
		  const char *name, int depth, struct sr_err *e)
{
	char *path = NULL;
	struct stat sb;
	int rc = 0, fd;

	if (depth > DEPTH_MAX)
		return sr_err_set(e, -ELOOP, "%s/%s: nested deeper than %d "
				  "directories", w->root, rel, DEPTH_MAX);
	if (asprintf(&path, "%s%s%s", w->root, *rel ? "/" : "", rel) < 0)
		return sr_err_set(e, -ENOMEM, "out of memory");
	if (refused(w->b, path)) {
		rc = sr_err_set(e, -EPERM, "%s: inside spotrund's state dir; a "
				"job's files may not include it", path);
		goto out;
	}
	if (fstatat(dfd, entry, &sb, AT_SYMLINK_NOFOLLOW |
		    (*entry ? 0 : AT_EMPTY_PATH)) < 0) {
		rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (S_ISDIR(sb.st_mode)) {
		struct stat now;

		if (refused_dir(w, &sb)) {
			rc = sr_err_set(e, -EPERM, "%s: spotrund's state dir; a "
					"job's files may not include it", path);
			goto out;
		}
		fd = open_entry(dfd, entry, O_RDONLY | O_DIRECTORY |
				O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &now) < 0 || now.st_ino != sb.st_ino ||
		    now.st_dev != sb.st_dev) {
			rc = sr_err_set(e, fd < 0 ? -errno : -EAGAIN, "%s: %s", path,
					fd < 0 ? strerror(errno) :
					"changed while it was read");
			if (fd >= 0)
				close(fd);
			goto out;
		}
		rc = add_dir(w, fd, rel, name, path, depth, e);
	} else if (S_ISREG(sb.st_mode)) {
		fd = open_entry(dfd, entry, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
				O_NOCTTY | O_CLOEXEC);
		if (fd < 0) {
			rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
			goto out;
		}
		rc = add_file(w, fd, &sb, name, path, e);
	} else if (S_ISLNK(sb.st_mode)) {
		rc = add_link(w, dfd, entry, rel, name, path, e);
	} else if (S_ISSOCK(sb.st_mode) || S_ISFIFO(sb.st_mode)) {
		if (w->b->note) {
			char msg[4200];

			snprintf(msg, sizeof msg, "%s: a %s, not uploaded", path,
				 S_ISSOCK(sb.st_mode) ? "socket" : "FIFO");
			w->b->note(w->b->note_ud, msg);
		}
	} else {
		rc = sr_err_set(e, -EPERM, "%s: a device; a job's files are files, "
				"directories and links", path);
	}
out:
	free(path);
	return rc;
}

/* Add what the O_PATH descriptor pfd (taken: closed here) holds as
 * `name`, shown as `src` in messages.  Its entries are reached from it
 * with *at() calls only. */
static int add_root(struct bundle *b, int pfd, const char *src,
		    const char *name, struct sr_err *e)
{
	size_t len = b->len, entries = b->entries, nref = 0;
	char at[64], root[PATH_MAX];
	struct stat rs[8];
	struct walk w = { .b = b, .root = root, .refused_st = rs };
	ssize_t n;
	int rc;

	snprintf(at, sizeof at, "/proc/self/fd/%d", pfd);
	n = readlink(at, root, sizeof root - 1);
	if (n < 0 || (size_t)n >= sizeof root - 1) {
		rc = sr_err_set(e, n < 0 ? -errno : -ENAMETOOLONG, "%s: %s", src,
				n < 0 ? strerror(errno) : "path too long");
		close(pfd);
		return rc;
	}
	root[n] = '\0';
	for (size_t i = 0; b->refuse && b->refuse[i] && nref < 8; i++)
		if (stat(b->refuse[i], &rs[nref]) == 0)
			nref++;
	w.nrefused = nref;
	if (refused(b, root))
		rc = sr_err_set(e, -EPERM, "%s: inside spotrund's state dir; a "
				"job's files may not include it", src);
	else
		rc = add_at(&w, pfd, "", "", name, 0, e);
	close(pfd);
	if (rc) {
		b->len = len;      /* nothing of a failed add is kept */
		b->entries = entries;
	}
	return rc;
}

int bundle_add(struct bundle *b, const char *src, const char *name,
	       struct sr_err *e)
{
	int fd = open(src, O_PATH | O_CLOEXEC);

	if (fd < 0)
		return sr_err_set(e, -errno, "%s: %s", src, strerror(errno));
	return add_root(b, fd, src, name, e);
}

int bundle_add_at(struct bundle *b, int dirfd, const char *rel,
		  const char *name, struct sr_err *e)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);

	if (fd < 0 && errno == EXDEV)
		return sr_err_set(e, -EPERM, "%s: leads out of the job's "
				  "directory", rel);
	if (fd < 0)
		return sr_err_set(e, -errno, "%s: %s", rel, strerror(errno));
	return add_root(b, (int)fd, rel, name, e);
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
