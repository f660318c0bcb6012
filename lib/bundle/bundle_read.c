/*
 * bundle_read.c - check, list and unpack a job's files archive
 * (bundle.h has the format).
 *
 * Every header is checked before its entry is used: checksum, magic,
 * type, octal fields, name and link target, the data inside the buffer.
 * Unpacking opens each directory of an entry's path from dest down with
 * O_NOFOLLOW (creating the missing ones), so no entry is ever written
 * through a symbolic link - one planted by an earlier entry included.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle_int.h"

const char *bundle_mount_name(const char *dst)
{
	while (*dst == '/')
		dst++;
	return dst;
}

int bundle_name_ok(const char *name)
{
	size_t n = strlen(name), start = 0;

	if (!n || n > BUNDLE_NAME_MAX || name[0] == '/')
		return 0;
	for (size_t i = 0; i <= n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (i < n && (c < 0x20 || c == 0x7f))
			return 0;
		if (i < n && c != '/')
			continue;
		if (i == start || (i - start == 1 && name[start] == '.') ||
		    (i - start == 2 && name[start] == '.' && name[start + 1] == '.'))
			return 0;
		start = i + 1;
	}
	return 1;
}

int bundle__link_inside(const char *rel, const char *target)
{
	long depth = 0;
	const char *p;

	if (!*target || target[0] == '/')
		return 0;
	/* the directories above the link */
	for (p = rel; *p; p++)
		depth += *p == '/';
	for (p = target; *p;) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (--depth < 0)
				return 0;
		} else if (n && !(n == 1 && p[0] == '.')) {
			depth++;
		}
		p += n + (p[n] == '/');
	}
	return 1;
}

/* An octal field of w bytes (digits, then spaces or NULs). */
static int octal(const unsigned char *f, size_t w, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	while (i < w && f[i] == ' ')
		i++;
	if (i == w || f[i] < '0' || f[i] > '7')
		return -1;
	for (; i < w && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return -1;
		v = v * 8 + (uint64_t)(f[i] - '0');
	}
	for (; i < w; i++) {
		if (f[i] != ' ' && f[i] != '\0')
			return -1;
	}
	*out = v;
	return 0;
}

static int zero_block(const unsigned char *h)
{
	for (int i = 0; i < BUNDLE_BLOCK; i++) {
		if (h[i])
			return 0;
	}
	return 1;
}

/* Copy a NUL-padded field of w bytes into out (w + 1); -1 if a NUL is
 * followed by anything but NULs. */
static int field(const unsigned char *f, size_t w, char *out)
{
	size_t n = 0;

	while (n < w && f[n])
		n++;
	for (size_t i = n; i < w; i++) {
		if (f[i])
			return -1;
	}
	memcpy(out, f, n);
	out[n] = '\0';
	return 0;
}

static int parse_header(const unsigned char *h, struct bundle_entry *en,
			size_t at, struct sr_err *e)
{
	char name[101], prefix[156], full[258];
	uint64_t sum = 0, mode = 0;
	unsigned calc = 0;
	size_t n;

	for (int i = 0; i < BUNDLE_BLOCK; i++)
		calc += i >= BUNDLE_OFF_CHKSUM && i < BUNDLE_OFF_CHKSUM + 8 ? ' ' : h[i];
	if (octal(h + BUNDLE_OFF_CHKSUM, 8, &sum) || sum != calc)
		return sr_err_set(e, -SR_EPARSE, "files archive: header at byte %zu:"
				  " bad checksum (not a tar archive?)", at);
	if (memcmp(h + BUNDLE_OFF_MAGIC, "ustar", 5) ||
	    (h[BUNDLE_OFF_MAGIC + 5] != '\0' && h[BUNDLE_OFF_MAGIC + 5] != ' '))
		return sr_err_set(e, -SR_EPARSE, "files archive: header at byte %zu:"
				  " not ustar (use tar --format=ustar)", at);
	if (field(h + BUNDLE_OFF_NAME, 100, name) ||
	    field(h + BUNDLE_OFF_PREFIX, 155, prefix) ||
	    field(h + BUNDLE_OFF_LINK, 100, en->link))
		return sr_err_set(e, -SR_EPARSE, "files archive: header at byte %zu:"
				  " a name with a NUL inside", at);
	snprintf(full, sizeof full, "%s%s%s", prefix, *prefix ? "/" : "", name);
	n = strlen(full);
	while (n > 1 && full[n - 1] == '/') /* "dir/" */
		full[--n] = '\0';
	if (n > BUNDLE_NAME_MAX)
		return sr_err_set(e, -SR_EPARSE, "files archive: header at byte %zu:"
				  " a name over %d bytes", at, BUNDLE_NAME_MAX);
	memcpy(en->name, full, n + 1);
	switch (h[BUNDLE_OFF_TYPE]) {
	case '0':
	case '\0':
		en->type = BUNDLE_FILE;
		break;
	case '5':
		en->type = BUNDLE_DIR;
		break;
	case '2':
		en->type = BUNDLE_LINK;
		break;
	default:
		return sr_err_set(e, -SR_EPARSE, "files archive: '%s': type '%c' "
				  "(only files, directories and symbolic links)",
				  en->name, h[BUNDLE_OFF_TYPE] >= 0x20 &&
				  h[BUNDLE_OFF_TYPE] < 0x7f ? h[BUNDLE_OFF_TYPE] : '?');
	}
	if (!bundle_name_ok(en->name))
		return sr_err_set(e, -SR_EPARSE, "files archive: '%.*s': not a "
				  "relative path inside the archive (no '/' first, "
				  "no '..', no control character)", 255, en->name);
	if (octal(h + BUNDLE_OFF_SIZE, 12, &en->size) ||
	    octal(h + BUNDLE_OFF_MODE, 8, &mode))
		return sr_err_set(e, -SR_EPARSE, "files archive: '%s': bad size "
				  "or mode", en->name);
	en->mode = en->type == BUNDLE_FILE && !(mode & 0100) ? 0644 : 0755;
	if (!(mode & 077))
		en->mode &= 0700; /* owner-only stays so */
	if (en->type != BUNDLE_FILE)
		en->size = 0; /* a link's or a dir's "size" carries nothing */
	if (en->type == BUNDLE_LINK && !bundle__link_inside(en->name, en->link))
		return sr_err_set(e, -SR_EPARSE, "files archive: '%s': a link to "
				  "'%s', outside the archive", en->name, en->link);
	return 0;
}

int bundle_scan(const void *buf, size_t len,
		int (*fn)(void *ud, const struct bundle_entry *en,
			  struct sr_err *e),
		void *ud, struct sr_err *e)
{
	const unsigned char *p = buf;
	struct bundle_entry en;
	size_t at = 0, count = 0;
	int rc;

	if (len > BUNDLE_MAX_BYTES)
		return sr_err_set(e, -EFBIG, "files archive: %zu bytes, over the "
				  "%u MiB limit", len, BUNDLE_MAX_BYTES >> 20);
	for (;;) {
		uint64_t pad;

		if (len - at < BUNDLE_BLOCK)
			return sr_err_set(e, -SR_EPARSE, "files archive: ends at "
					  "byte %zu without its end blocks", at);
		if (zero_block(p + at)) {
			/* the end: the rest must be zeros too */
			for (size_t i = at; i < len; i++) {
				if (p[i])
					return sr_err_set(e, -SR_EPARSE, "files "
							  "archive: data after its "
							  "end (byte %zu)", i);
			}
			return 0;
		}
		if (++count > BUNDLE_MAX_ENTRIES)
			return sr_err_set(e, -EFBIG, "files archive: more than %d "
					  "entries", BUNDLE_MAX_ENTRIES);
		memset(&en, 0, sizeof en);
		rc = parse_header(p + at, &en, at, e);
		if (rc)
			return rc;
		at += BUNDLE_BLOCK;
		pad = (BUNDLE_BLOCK - en.size % BUNDLE_BLOCK) % BUNDLE_BLOCK;
		if (en.size > len - at || pad > len - at - en.size)
			return sr_err_set(e, -SR_EPARSE, "files archive: '%s': %llu "
					  "bytes, past the archive's end", en.name,
					  (unsigned long long)en.size);
		en.data = p + at;
		if (fn) {
			rc = fn(ud, &en, e);
			if (rc)
				return rc;
		}
		at += (size_t)(en.size + pad);
	}
}

struct has_ud {
	const char *name;
	int found;
};

static int has_fn(void *ud, const struct bundle_entry *en, struct sr_err *e)
{
	struct has_ud *h = ud;

	(void)e;
	h->found |= !strcmp(h->name, en->name);
	return 0;
}

int bundle_has(const void *buf, size_t len, const char *name,
	       struct sr_err *e)
{
	struct has_ud h = { name, 0 };
	int rc = bundle_scan(buf, len, has_fn, &h, e);

	return rc ? rc : h.found;
}

/* ---- unpack -------------------------------------------------------------- */

/* The directory that holds entry `name` under root, opened without
 * following a link, the missing ones made; *leaf gets the last component
 * (a pointer into path, a copy of name). */
static int open_parent(int root, char *path, const char **leaf, int *out,
		       unsigned dmode, const char *name, struct sr_err *e)
{
	char *slash, *comp = path;
	int fd = dup(root);

	if (fd < 0)
		return sr_err_set(e, -errno, "%s: %s", name, strerror(errno));
	while ((slash = strchr(comp, '/'))) {
		int nfd;

		*slash = '\0';
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			     O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT) {
			if (mkdirat(fd, comp, dmode) < 0 && errno != EEXIST) {
				close(fd);
				return sr_err_set(e, -errno, "%s: %s", name,
						  strerror(errno));
			}
			nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				     O_CLOEXEC);
		}
		if (nfd < 0) {
			int err = errno;

			close(fd);
			return sr_err_set(e, -err, "%s: %s: %s", name, comp,
					  err == ELOOP || err == ENOTDIR ?
					  "not a directory (a link in the way is "
					  "never followed)" : strerror(err));
		}
		close(fd);
		fd = nfd;
		comp = slash + 1;
	}
	*leaf = comp;
	*out = fd;
	return 0;
}

static int write_all(int fd, const char *p, uint64_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n > (1u << 20) ? (1u << 20) : (size_t)n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (uint64_t)w;
	}
	return 0;
}

struct unpack_ud {
	int root, home; /* home -1: "~/" entries go under root */
};

static int unpack_fn(void *ud, const struct bundle_entry *en, struct sr_err *e)
{
	const struct unpack_ud *u = ud;
	char path[BUNDLE_NAME_MAX + 1];
	const char *leaf = NULL, *rel = en->name;
	struct stat sb;
	int pfd = -1, fd, rc, base = u->root;

	if (!strcmp(rel, "~"))
		return 0; /* the home (or dest) itself */
	if (!strncmp(rel, "~/", 2)) {
		rel += 2;
		base = u->home >= 0 ? u->home : u->root;
		if (en->type == BUNDLE_LINK && !bundle__link_inside(rel, en->link))
			return sr_err_set(e, -SR_EPARSE, "files archive: '%s': a "
					  "link to '%s', outside the home", en->name,
					  en->link);
	}
	memcpy(path, rel, strlen(rel) + 1);
	rc = open_parent(base, path, &leaf, &pfd, en->mode & 077 ? 0755 : 0700,
			 en->name, e);
	if (rc)
		return rc;
	switch (en->type) {
	case BUNDLE_DIR:
		if (mkdirat(pfd, leaf, en->mode) < 0 &&
		    !(errno == EEXIST && fstatat(pfd, leaf, &sb,
						 AT_SYMLINK_NOFOLLOW) == 0 &&
		      S_ISDIR(sb.st_mode)))
			rc = sr_err_set(e, errno == EEXIST ? -EEXIST : -errno,
					"%s: %s", en->name, errno == EEXIST ?
					"exists and is not a directory" :
					strerror(errno));
		break;
	case BUNDLE_FILE:
		fd = openat(pfd, leaf, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
			    O_CLOEXEC, en->mode);
		if (fd < 0) {
			rc = sr_err_set(e, -errno, "%s: %s", en->name,
					errno == ELOOP ? "a link is in the way" :
					strerror(errno));
			break;
		}
		rc = write_all(fd, en->data, en->size);
		if (!rc && fchmod(fd, en->mode) < 0)
			rc = -errno;
		if (close(fd) < 0 && !rc)
			rc = -errno;
		if (rc)
			rc = sr_err_set(e, rc, "%s: %s", en->name, sr_strerror(rc));
		break;
	case BUNDLE_LINK:
		if (symlinkat(en->link, pfd, leaf) < 0)
			rc = sr_err_set(e, -errno, "%s: %s", en->name,
					strerror(errno));
		break;
	}
	close(pfd);
	return rc;
}

int bundle_unpack_home(const void *buf, size_t len, const char *dest,
		       const char *home, struct sr_err *e)
{
	struct unpack_ud u = { open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC), -1 };
	int rc = 0;

	if (u.root < 0)
		return sr_err_set(e, -errno, "%s: %s", dest, strerror(errno));
	if (home) {
		u.home = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (u.home < 0)
			rc = sr_err_set(e, -errno, "the home directory %s: %s", home,
					strerror(errno));
	}
	if (!rc)
		rc = bundle_scan(buf, len, NULL, NULL, e); /* all of it, first */
	if (!rc)
		rc = bundle_scan(buf, len, unpack_fn, &u, e);
	close(u.root);
	if (u.home >= 0)
		close(u.home);
	return rc;
}

int bundle_unpack(const void *buf, size_t len, const char *dest,
		  struct sr_err *e)
{
	return bundle_unpack_home(buf, len, dest, NULL, e);
}
