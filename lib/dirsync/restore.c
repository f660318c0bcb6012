/*
 * restore.c - a synced directory read back: the newest sound round into
 * the directory (MOUNT / MOUNT_CACHED at start), a bucket's plain objects
 * into it (COPY), and the rounds listed (`spotrun ckpt ls`).
 *
 * Every file is written under the directory's descriptor, never through
 * a link: parents are opened (or made) one segment at a time with
 * O_NOFOLLOW|O_DIRECTORY; the bytes go to ".spotrun-tmp-*" in the final
 * parent (O_EXCL), are checked against the manifest's SHA-256 and size,
 * fsync'd; only when EVERY file of the round checked out are they renamed
 * into place (then the parents fsync'd).  A round with a missing or
 * damaged object leaves the directory as it was, and the previous round
 * is tried.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "dirsync.h"
#include "dirsync_int.h"
#include "common/log.h"

/* The parent directory of `path` under dirfd, made when missing (mkdir),
 * no link followed: an fd, *base = the last segment (inside buf). */
static int parent_at(int dirfd, const char *path, char *buf, size_t n,
		     const char **base, int make, struct sr_err *e)
{
	char *seg, *next;
	int fd = dup(dirfd), nfd;

	if (fd < 0)
		return sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
	snprintf(buf, n, "%s", path);
	for (seg = buf; (next = strchr(seg, '/')); seg = next) {
		*next++ = '\0';
		nfd = openat(fd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT && make &&
		    (mkdirat(fd, seg, 0755) == 0 || errno == EEXIST))
			nfd = openat(fd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				     O_CLOEXEC);
		if (nfd < 0) {
			int err = errno;

			close(fd);
			return sr_err_set(e, -err, "%s: directory '%s': %s", path,
					  seg, err == ELOOP || err == ENOTDIR ?
					  "not a directory (a link is never "
					  "followed)" : strerror(err));
		}
		close(fd);
		fd = nfd;
	}
	*base = seg;
	return fd;
}

struct staged {
	char *path;          /* relative final path (owned) */
	char tmp[64];        /* name in the parent */
};

struct stage {
	struct staged *v;
	size_t n;
};

static void stage_drop(int dirfd, struct stage *s)
{
	char buf[DIRSYNC_PATH_MAX + 1];
	const char *base;

	for (size_t i = 0; i < s->n; i++) {
		int pfd = parent_at(dirfd, s->v[i].path, buf, sizeof buf, &base,
				    0, NULL);

		if (pfd >= 0) {
			unlinkat(pfd, s->v[i].tmp, 0);
			close(pfd);
		}
		free(s->v[i].path);
	}
	free(s->v);
	memset(s, 0, sizeof *s);
}

/* Rename every staged file into place: 0, or the first failure (the rest
 * are still renamed; what failed stays staged and is dropped). */
static int stage_commit(int dirfd, struct stage *s, struct sr_err *e)
{
	char buf[DIRSYNC_PATH_MAX + 1];
	const char *base;
	int rc = 0;

	for (size_t i = 0; i < s->n; i++) {
		int pfd = parent_at(dirfd, s->v[i].path, buf, sizeof buf, &base,
				    0, e);

		if (pfd < 0) {
			rc = rc ? rc : pfd;
			continue;
		}
		if (renameat(pfd, s->v[i].tmp, pfd, base) < 0) {
			if (!rc)
				rc = sr_err_set(e, -errno, "%s: %s", s->v[i].path,
						strerror(errno));
			unlinkat(pfd, s->v[i].tmp, 0);
		}
		fsync(pfd);
		close(pfd);
		free(s->v[i].path);
	}
	free(s->v);
	memset(s, 0, sizeof *s);
	return rc;
}

struct sink {
	int fd;
	EVP_MD_CTX *x;
	uint64_t got;
};

static int sink_fn(void *ud, uint64_t pos, const void *p, size_t n)
{
	struct sink *k = ud;

	if (pos == 0) { /* first call, or a retried request from the start */
		EVP_DigestInit_ex(k->x, EVP_sha256(), NULL);
		k->got = 0;
	}
	if (pos != k->got)
		return -EIO;
	for (size_t off = 0; off < n;) {
		ssize_t w = pwrite(k->fd, (const char *)p + off, n - off,
				   (off_t)(pos + off));

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		off += (size_t)w;
	}
	EVP_DigestUpdate(k->x, p, n);
	k->got += n;
	return 0;
}

/* Download key (size bytes) into a staged file for path; with sha (hex),
 * check it.  Appends to *s on success. */
static int fetch_one(struct objstore *os, int dirfd, const char *path,
		     const char *key, uint64_t size, const char *sha,
		     uint32_t mode, struct stage *s, struct sr_err *e)
{
	static unsigned seq;
	char buf[DIRSYNC_PATH_MAX + 1], hex[65];
	const char *base;
	struct sink k = { .fd = -1 };
	unsigned char d[32];
	unsigned int dl = 0;
	struct staged *nv;
	int pfd, rc;

	pfd = parent_at(dirfd, path, buf, sizeof buf, &base, 1, e);
	if (pfd < 0)
		return pfd;
	nv = realloc(s->v, (s->n + 1) * sizeof *s->v);
	if (!nv) {
		close(pfd);
		return sr_err_set(e, -ENOMEM, "restore: out of memory");
	}
	s->v = nv;
	snprintf(s->v[s->n].tmp, sizeof s->v[s->n].tmp, DIRSYNC_LOCAL_PREFIX
		 "tmp-%d-%u", (int)getpid(), __atomic_add_fetch(&seq, 1,
							      __ATOMIC_RELAXED));
	k.fd = openat(pfd, s->v[s->n].tmp, O_WRONLY | O_CREAT | O_EXCL |
		      O_NOFOLLOW | O_CLOEXEC, 0600);
	if (k.fd < 0) {
		rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		close(pfd);
		return rc;
	}
	if (!(s->v[s->n].path = strdup(path))) {
		rc = sr_err_set(e, -ENOMEM, "restore: out of memory");
		goto fail;
	}
	s->n++; /* dropped with the stage from here on */
	k.x = EVP_MD_CTX_new();
	if (!k.x) {
		rc = sr_err_set(e, -ENOMEM, "restore: out of memory");
		goto out;
	}
	EVP_DigestInit_ex(k.x, EVP_sha256(), NULL);
	if (size > 0) {
		rc = objstore_get_range_to(os, key, 0, size, sink_fn, &k, e);
		if (rc < 0) {
			sr_err_prefix(e, "%s", path);
			goto out;
		}
	}
	EVP_DigestFinal_ex(k.x, d, &dl);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	if (k.got != size || (sha && strcmp(hex, sha))) {
		rc = sr_err_set(e, -SR_ECHECKSUM, "%s: object %s does not match "
				"the manifest (%llu bytes, sha256 %.12s...)", path,
				key, (unsigned long long)k.got, hex);
		goto out;
	}
	if (fchmod(k.fd, mode & 07777) < 0 || fsync(k.fd) < 0) {
		rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
	goto out;
fail:
	unlinkat(pfd, s->v[s->n].tmp, 0);
out:
	EVP_MD_CTX_free(k.x);
	close(k.fd);
	close(pfd);
	return rc;
}

static int read_round(struct objstore *os, int64_t round,
		      struct dirsync_round *r, struct sr_err *e)
{
	char key[128], *buf = NULL;
	size_t len = 0;
	int rc;

	dirsync_round_key(round, key, sizeof key);
	rc = objstore_get(os, key, DIRSYNC_MANIFEST_MAX, &buf, &len, e);
	if (rc == 0)
		rc = dirsync_manifest_decode(buf, len, key, r, e);
	free(buf);
	if (rc == 0 && r->round != round) {
		dirsync_round_free(r);
		rc = sr_err_set(e, -SR_ECORRUPT, "%s: names round %" PRId64,
				key, r->round);
	}
	return rc;
}

/* What a restored file looks like now, for the engine's cache. */
static int remember(struct dirsync *d, const struct dirsync_round *r)
{
	struct dirsync_known *v = calloc(r->n ? r->n : 1, sizeof *v);
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < r->n; i++) {
		struct sr_err e;
		struct stat sb;
		int fd = dirsync_open_at(d->o.dirfd, r->files[i].path, &e);

		if (fd < 0)
			continue;
		if (fstat(fd, &sb) == 0 && (uint64_t)sb.st_size == r->files[i].size &&
		    (v[n].st.path = strdup(r->files[i].path))) {
			dirsync__stat_of(&sb, &v[n].st);
			memcpy(v[n].sha, r->files[i].sha256, 65);
			n++;
		}
		close(fd);
	}
	/* r's files are sorted by path, so v is too */
	dirsync__known_free(d->known, d->nknown);
	d->known = v;
	d->nknown = n;
	return 0;
}

int dirsync_restore(struct dirsync *d, int64_t *round, struct sr_err *e)
{
	struct objstore_list l = { 0 };
	int64_t *rounds = NULL;
	size_t nr = 0;
	int rc;

	*round = -1;
	rc = objstore_list(d->s, DIRSYNC_META "/rounds/", &l, e);
	if (rc < 0)
		return rc;
	rc = dirsync_rounds_of(&l, &rounds, &nr);
	objstore_list_free(&l);
	if (rc < 0)
		return sr_err_set(e, rc, "restore: out of memory");
	for (size_t i = nr; i-- > 0;) {
		struct dirsync_round r;
		struct stage s = { 0 };
		char key[128];
		struct sr_err why;

		sr_err_clear(&why);
		if (read_round(d->s, rounds[i], &r, &why) < 0) {
			sr_warn("dirsync", "round skipped", "uri=\"%s\" round=%"
				PRId64 " error=\"%s\"", d->o.uri, rounds[i], why.msg);
			continue;
		}
		rc = 0;
		for (size_t f = 0; rc == 0 && f < r.n; f++) {
			dirsync_object_key(r.files[f].sha256, key, sizeof key);
			rc = fetch_one(d->s, d->o.dirfd, r.files[f].path, key,
				       r.files[f].size, r.files[f].sha256,
				       r.files[f].mode, &s, &why);
		}
		if (rc < 0) {
			stage_drop(d->o.dirfd, &s);
			dirsync_round_free(&r);
			if (rc == -ENOMEM || rc == -ENOSPC || rc == -EDQUOT ||
			    rc == -EACCES || rc == -ELOOP || rc == -ENOTDIR) {
				/* the node's side: an older round fares no better */
				sr_err_set(e, rc, "round %" PRId64 ": %s", rounds[i],
					   why.msg);
				goto out;
			}
			sr_warn("dirsync", "round not restorable, trying the "
				"previous one", "uri=\"%s\" round=%" PRId64
				" error=\"%s\"", d->o.uri, rounds[i], why.msg);
			continue;
		}
		rc = stage_commit(d->o.dirfd, &s, e);
		if (rc < 0) {
			dirsync_round_free(&r);
			goto out;
		}
		dirsync_round_free(&d->last);
		d->last = r;
		if (dirsync__have_set(d, &d->last) < 0 || remember(d, &d->last) < 0) {
			rc = sr_err_set(e, -ENOMEM, "restore: out of memory");
			goto out;
		}
		d->st.restored = d->st.round = r.round;
		d->st.files = r.n;
		d->st.bytes = r.bytes;
		*round = r.round;
		rc = 0;
		goto out;
	}
	rc = 0; /* no sound round: nothing written */
out:
	free(rounds);
	return rc;
}

int dirsync_copy(struct objstore *s, int dirfd, uint64_t *files,
		 uint64_t *bytes, struct sr_err *e)
{
	struct objstore_list l = { 0 };
	struct stage st = { 0 };
	int rc;

	*files = *bytes = 0;
	rc = objstore_list(s, "", &l, e);
	if (rc < 0)
		return rc;
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		const char *key = l.v[i].key;
		size_t kl = strlen(key);
		struct sr_err why;

		if (!strncmp(key, DIRSYNC_META "/", strlen(DIRSYNC_META) + 1) ||
		    (kl && key[kl - 1] == '/'))
			continue; /* the sync's own objects; folder markers */
		if (dirsync_path_check(key, &why) < 0) {
			sr_warn("dirsync", "object not copied", "key=\"%s\" "
				"error=\"%s\"", key, why.msg);
			continue;
		}
		rc = fetch_one(s, dirfd, key, key, l.v[i].size, NULL, 0644, &st, e);
		if (rc == 0) {
			(*files)++;
			*bytes += l.v[i].size;
		}
	}
	if (rc < 0)
		stage_drop(dirfd, &st);
	else
		rc = stage_commit(dirfd, &st, e);
	objstore_list_free(&l);
	return rc;
}

void dirsync_listed_free(struct dirsync_listed *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		dirsync_round_free(&v[i].r);
		free(v[i].error);
	}
	free(v);
}

int dirsync_list(const char *uri, struct dirsync_listed **out, size_t *n,
		 struct sr_err *e)
{
	struct objstore_cfg cfg;
	struct objstore *s = NULL;
	struct objstore_list l = { 0 };
	struct dirsync_listed *v = NULL;
	int64_t *rounds = NULL;
	size_t nr = 0;
	int rc;

	*out = NULL;
	*n = 0;
	objstore_cfg_default(&cfg);
	rc = objstore_open(uri, &cfg, &s, e);
	if (rc < 0)
		return rc;
	rc = objstore_list(s, DIRSYNC_META "/rounds/", &l, e);
	if (rc < 0)
		goto out;
	rc = dirsync_rounds_of(&l, &rounds, &nr);
	if (rc < 0 || !(v = calloc(nr ? nr : 1, sizeof *v))) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nr; i++) {
		struct dirsync_listed *x = &v[i];
		struct sr_err why;

		sr_err_clear(&why);
		if (read_round(s, rounds[nr - 1 - i], &x->r, &why) < 0) {
			x->r.round = rounds[nr - 1 - i];
			x->error = strdup(why.msg);
		}
	}
	*out = v;
	*n = nr;
	v = NULL;
	rc = 0;
out:
	free(v);
	free(rounds);
	objstore_list_free(&l);
	objstore_close(s);
	return rc;
}

int dirsync_present(const char *uri, struct sr_err *e)
{
	struct objstore_cfg cfg;
	struct objstore *s = NULL;
	struct objstore_list l = { 0 };
	int rc;

	objstore_cfg_default(&cfg);
	rc = objstore_open(uri, &cfg, &s, e);
	if (rc == 0)
		rc = objstore_list(s, DIRSYNC_META "/rounds/", &l, e);
	if (rc == 0)
		rc = l.n > 0;
	objstore_list_free(&l);
	objstore_close(s);
	return rc;
}
