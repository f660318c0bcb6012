/*
 * commit.c - writing a checkpoint directory so that a crash never leaves a
 * torn one under a committed name, and retention.
 *
 * Names in DIR:
 *   step-NNNNNNNN/         committed (N in decimal, at least 8 digits)
 *   step-NNNNNNNN.<x>/     anything with a suffix is uncommitted scratch:
 *                          .tmp (being written), .del.tmp (being deleted)
 *
 * Commit sequence for step N:
 *   1. mkdir step-N.tmp/ (a leftover from a crash is removed first)
 *   2. write each shard file (O_EXCL, preallocated), hashing as it goes;
 *      fsync each as soon as its writes completed, except the last few
 *   3. write manifest.json (O_EXCL)
 *   4. fsync, in one concurrent round, the last shards, manifest.json and
 *      step-N.tmp/ (so its directory entries are durable): on a
 *      journalling file system the round shares one journal commit
 *   5. rename step-N.tmp -> step-N (RENAME_NOREPLACE; if step-N already
 *      exists, RENAME_EXCHANGE swaps them and the old one is deleted)
 *   6. fsync DIR, making the rename durable: the commit point
 *   7. retention: for each checkpoint beyond the newest `keep`, rename it
 *      to step-M.del.tmp, fsync DIR, then delete its files.
 *
 * Why this is crash-consistent.  A reader only looks at directories named
 * step-N with no suffix.  Such a name comes into existence only through
 * the rename of step 5 (or the exchange, which is equally atomic), and
 * rename is atomic across a crash on the journalled file systems we
 * support: after a crash the directory is found under the old name or the
 * new one, never both or neither.  Everything under it - every shard's
 * data and size, the manifest, the directory entries - was made durable
 * by the fsyncs of steps 2 and 4, all complete before the rename is
 * issued, so when the new name survives, so does complete content.  The
 * manifest is written after every shard, so even a directory renamed by something else is only trusted
 * with a manifest whose own checksum verifies and whose shard sizes and
 * per-tensor XXH3 checksums match.  Step 6 orders the commit before
 * retention: an older checkpoint is deleted only after the newer one's
 * rename is durable, so at every instant at least one complete checkpoint
 * is reachable (the newest committed one is never a deletion victim).
 * Deletion itself first renames the victim to a scratch name, so a
 * half-deleted checkpoint is never visible as committed.  Anything a crash
 * leaves under a scratch name is removed by the next engine's open.
 * Data damaged after commit (bit rot, a disk that lied about fsync) is
 * caught by the checksums at restore, which then falls back to the
 * previous checkpoint.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "internal.h"
#include "io.h"
#include "common/log.h"
#include "common/timeutil.h"

void (*ckpt__test_before_commit)(int64_t step);

int ckpt__parse_dirname(const char *s, int64_t *step, int *tmp)
{
	int64_t v = 0;
	const char *p = s + 5;

	if (strncmp(s, "step-", 5) || *p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	if (*p != '\0' && *p != '.')
		return -1;
	*step = v;
	*tmp = *p == '.';
	return 0;
}

int ckpt__rmdir_flat(int parentfd, const char *name)
{
	int fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *de;
	int rc = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	for (de = readdir(d); de; de = readdir(d)) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(fd, de->d_name, 0) != 0 && errno != ENOENT)
			rc = -errno;
	}
	closedir(d);
	if (unlinkat(parentfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		rc = -errno;
	return rc;
}

static int cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

int ckpt__scan(const char *dir, int64_t **steps, size_t *n, int with_tmp,
	       int **tmpflags)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int64_t *v = NULL;
	size_t cnt = 0, cap = 0;

	*steps = NULL;
	*n = 0;
	if (tmpflags)
		*tmpflags = NULL;
	if (!d)
		return -errno;
	for (de = readdir(d); de; de = readdir(d)) {
		int64_t s;
		int tmp;

		if (ckpt__parse_dirname(de->d_name, &s, &tmp) || (tmp && !with_tmp))
			continue;
		if (cnt == cap) {
			int64_t *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof *v);

			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		/* encode the tmp flag in the low bit of a doubled step */
		v[cnt++] = s * 2 + (tmp ? 0 : 1);
	}
	closedir(d);
	if (cnt > 1)
		qsort(v, cnt, sizeof *v, cmp_desc);
	if (tmpflags && cnt) {
		*tmpflags = calloc(cnt, sizeof **tmpflags);
		if (!*tmpflags) {
			free(v);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < cnt; i++) {
		if (tmpflags)
			(*tmpflags)[i] = !(v[i] & 1);
		v[i] /= 2;
	}
	*steps = v;
	*n = cnt;
	return 0;
}

void ckpt__cleanup_tmp(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int dfd;

	if (!d)
		return;
	dfd = dirfd(d);
	for (de = readdir(d); de; de = readdir(d)) {
		int64_t s;
		int tmp;

		if (ckpt__parse_dirname(de->d_name, &s, &tmp) == 0 && tmp) {
			sr_info("ckpt", "removing incomplete checkpoint",
				"dir=%s name=%s", dir, de->d_name);
			ckpt__rmdir_flat(dfd, de->d_name);
		}
	}
	fsync(dfd);
	closedir(d);
}

void ckpt__retention(const char *dir, int keep, int64_t protect)
{
	int64_t *steps = NULL;
	size_t n = 0;
	int dfd = -1, kept = 0;

	if (ckpt__scan(dir, &steps, &n, 0, NULL))
		return;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (size_t i = 0; dfd >= 0 && i < n; i++) {
		char name[48], del[64];

		if (kept < keep || steps[i] == protect) {
			kept++;
			continue;
		}
		snprintf(name, sizeof name, "step-%08" PRId64, steps[i]);
		snprintf(del, sizeof del, "%s.del.tmp", name);
		if (renameat(dfd, name, dfd, del) != 0)
			continue;
		fsync(dfd);
		ckpt__rmdir_flat(dfd, del);
		sr_debug("ckpt", "retention removed checkpoint", "dir=%s step=%"
			 PRId64, dir, steps[i]);
	}
	if (dfd >= 0)
		close(dfd);
	free(steps);
}

/* The hasher, fed in file order: each tensor's bytes. */
struct hasher {
	XXH3_state_t tensor;
	struct ckpt_layout *l;
	uint32_t k, end;  /* current tensor, one past the shard's last */
	int open;         /* tensor state reset and in use */
};

static void feed_hasher(struct hasher *h, uint64_t off, const uint8_t *p,
			uint64_t n)
{
	uint64_t end = off + n;

	while (h->k < h->end) {
		struct ckpt_tensor *t = &h->l->t[h->k];
		uint64_t tb = t->offset, te = tb + t->nbytes;
		uint64_t lo = tb > off ? tb : off, hi = te < end ? te : end;

		if (tb > end)
			break;
		if (!h->open) {
			XXH3_64bits_reset(&h->tensor);
			h->open = 1;
		}
		if (hi > lo)
			ckpt__hash_update(&h->tensor, p + (lo - off), hi - lo);
		if (te > end)
			break;
		t->xxh3 = XXH3_64bits_digest(&h->tensor);
		h->open = 0;
		h->k++;
	}
}

/* One shard file being written: where it goes and its hasher. */
struct shard_out {
	struct hasher *h;        /* in the 64-byte aligned hasher array */
	struct ckpt_shard *sh;
	int dirfd;               /* the directory it is created in */
	int want_direct;
	int preallocated;
	struct sr_err *e;
};

static void feed(void *ud, uint64_t off, const uint8_t *p, uint64_t n)
{
	feed_hasher(((struct shard_out *)ud)->h, off, p, n);
}

/* Preallocate the whole file: a direct write into allocated blocks is an
 * overwrite the file system issues at once (iowrite.c).  Returns 0 also
 * where the file system cannot preallocate (*done stays 0). */
static int preallocate(int fd, uint64_t n, int *done)
{
	int rc;

	do
		rc = fallocate(fd, 0, 0, (off_t)n);
	while (rc != 0 && errno == EINTR);
	if (rc == 0) {
		*done = 1;
		return 0;
	}
	if (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL)
		return 0;
	return -errno;
}

static int open_shard(void *ud, struct ckpt_wfile *f)
{
	struct shard_out *so = ud;
	int rc;

	rc = ckpt__dio_open_write(so->dirfd, so->sh->file, so->want_direct,
				  &f->fd_buf, &f->fd_dir, &f->d);
	if (rc)
		return sr_err_set(so->e, rc, "%s: create: %s", so->sh->file,
				  sr_strerror(rc));
	rc = preallocate(f->fd_buf, so->sh->file_bytes, &so->preallocated);
	if (rc)
		return sr_err_set(so->e, rc, "%s: preallocate %" PRIu64 " bytes:"
				  " %s", so->sh->file, so->sh->file_bytes,
				  sr_strerror(rc));
	return 0;
}

/* A shard's last byte is written (and, if it was to be synced, durable):
 * its O_DIRECT descriptor is no longer needed, nor a synced one's. */
static void shard_done(void *ud, struct ckpt_wfile *f)
{
	(void)ud;
	if (f->fd_dir >= 0)
		close(f->fd_dir);
	f->fd_dir = -1;
	if (f->sync && f->fd_buf >= 0)
		close(f->fd_buf); /* fsync'ed: close cannot lose data */
	if (f->sync)
		f->fd_buf = -1;
}

/* Shards fsync'ed as they complete, all but the last few: those join the
 * manifest and the directory in the final concurrent round, and no more
 * descriptors than this stay open however many shards there are. */
#define SYNC_LAST 4

/* Steps 2-4 for the shards: write them all, hashing as they go (fills the
 * layout's tensor and shard hashes), fsync all but the last SYNC_LAST on
 * the way.  wf[i].fd_buf of the last ones stays open for the caller's
 * round; the caller closes what is left open in wf. */
static int write_shards(struct ckpt_io *io, int tfd, struct ckpt_layout *l,
			const uint8_t *image, const struct ckpt_commit_opts *o,
			struct ckpt_wfile *wf, struct shard_out *so,
			struct hasher *h, struct ckpt_commit_res *res,
			struct sr_err *e)
{
	size_t failed = 0;
	int rc;

	for (size_t i = 0; i < l->ns; i++) {
		struct ckpt_shard *sh = &l->s[i];

		memset(&h[i], 0, sizeof h[i]);
		h[i].l = l;
		h[i].k = sh->first;
		h[i].end = sh->first + sh->count;
		so[i] = (struct shard_out){ .h = &h[i], .sh = sh, .dirfd = tfd,
					    .want_direct = o->direct, .e = e };
		/* the header region of the image is copied in by the engine */
		wf[i] = (struct ckpt_wfile){ .buf = image + sh->img_off,
					     .len = sh->file_bytes,
					     .sync = i + SYNC_LAST < l->ns,
					     .feed = feed, .ud = &so[i],
					     .open = open_shard, .done = shard_done,
					     .fd_buf = -1, .fd_dir = -1 };
	}
	rc = ckpt__io_write_files(io, wf, l->ns, o->cancel, &res->prof, &failed);
	if (rc) {
		if (!e->msg[0])
			sr_err_set(e, rc, "%s: write: %s", l->s[failed].file,
				   sr_strerror(rc));
		return rc;
	}
	for (size_t i = 0; i < l->ns; i++) {
		struct ckpt_shard *sh = &l->s[i];

		sh->header_xxh3 = XXH3_64bits(image + sh->img_off, sh->data_start);
		sh->xxh3 = ckpt__shard_hash(l, sh);
		res->bytes += sh->file_bytes;
		res->direct_used |= wf[i].d.direct;
		res->preallocated |= so[i].preallocated;
	}
	return 0;
}

/* Step 3: the manifest, written (its fsync is in the final round). */
static int write_manifest(int tfd, int64_t step, const char *meta,
			  struct ckpt_layout *l, int *fd_out, uint64_t *bytes,
			  struct sr_err *e)
{
	char *buf = NULL;
	size_t len = 0;
	int fd = -1, rc;

	rc = ckpt__manifest_render(step, sr_time_real_ns(), l, meta, &buf, &len, e);
	if (rc)
		goto out;
	fd = openat(tfd, CKPT_MANIFEST, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		    0644);
	if (fd < 0) {
		rc = sr_err_set(e, -errno, "%s: create: %s", CKPT_MANIFEST,
				strerror(errno));
		goto out;
	}
	rc = ckpt__pwrite_all(fd, (const uint8_t *)buf, len, 0);
	if (rc)
		sr_err_set(e, rc, "%s: write: %s", CKPT_MANIFEST, sr_strerror(rc));
	*bytes += len;
out:
	*fd_out = fd;
	free(buf);
	return rc;
}

/* Step 5: move tmp to final, replacing an existing final atomically. */
static int publish(int dfd, const char *tmp, const char *final,
		   struct sr_err *e)
{
	if (renameat2(dfd, tmp, dfd, final, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno == EEXIST &&
	    renameat2(dfd, tmp, dfd, final, RENAME_EXCHANGE) == 0) {
		ckpt__rmdir_flat(dfd, tmp); /* now holds the replaced one */
		return 0;
	}
	if (errno == EINVAL || errno == ENOSYS) { /* no renameat2 flags */
		if (renameat(dfd, tmp, dfd, final) == 0)
			return 0;
	}
	return sr_err_set(e, -errno, "rename %s -> %s: %s", tmp, final,
			  strerror(errno));
}

/* Close what write_shards and write_manifest left open; a failed close
 * of a file that is not yet durable fails the commit. */
static int close_all(struct ckpt_wfile *wf, size_t n, int *mfd,
		     struct ckpt_layout *l, struct sr_err *e)
{
	int rc = 0;

	for (size_t i = 0; wf && i < n; i++) {
		if (wf[i].fd_dir >= 0)
			close(wf[i].fd_dir);
		if (wf[i].fd_buf >= 0 && close(wf[i].fd_buf) != 0 && rc == 0)
			rc = sr_err_set(e, -errno, "%s: close: %s", l->s[i].file,
					strerror(errno));
		wf[i].fd_buf = wf[i].fd_dir = -1;
	}
	if (*mfd >= 0 && close(*mfd) != 0 && rc == 0)
		rc = sr_err_set(e, -errno, "%s: close: %s", CKPT_MANIFEST,
				strerror(errno));
	*mfd = -1;
	return rc;
}

/* Step 4: one concurrent round of fsyncs: the shards not synced on the
 * way, the manifest and the directory. */
static int fsync_round(struct ckpt_io *io, struct ckpt_wfile *wf,
		       const struct ckpt_layout *l, int mfd, int tfd,
		       const char *tmp, struct ckpt_prof *prof, struct sr_err *e)
{
	int fds[SYNC_LAST + 2];
	const char *what[SYNC_LAST + 2];
	size_t k = 0, failed = 0;
	int rc;

	for (size_t i = 0; i < l->ns; i++) {
		if (!wf[i].sync && wf[i].fd_buf >= 0 && k < SYNC_LAST) {
			what[k] = l->s[i].file;
			fds[k++] = wf[i].fd_buf;
		}
	}
	what[k] = CKPT_MANIFEST;
	fds[k++] = mfd;
	what[k] = tmp;
	fds[k++] = tfd;
	rc = ckpt__io_fsync_all(io, fds, k, prof, &failed);
	if (rc)
		sr_err_set(e, rc, "%s: fsync: %s", what[failed], sr_strerror(rc));
	return rc;
}

int ckpt__commit(struct ckpt_io *io, const char *dir, int64_t step,
		 const char *meta_json, struct ckpt_layout *l,
		 const uint8_t *image, const struct ckpt_commit_opts *o,
		 struct ckpt_commit_res *res, struct sr_err *e)
{
	char tmp[64], final[40];
	struct ckpt_wfile *wf = NULL;
	struct shard_out *so = NULL;
	struct hasher *h = NULL;
	struct ckpt_prof *prof = &res->prof;
	int dfd = -1, tfd = -1, mfd = -1, rc;
	int64_t t0 = sr_time_mono_ns();

	memset(res, 0, sizeof *res);
	ckpt__prof_start(prof, SPOTCKPT_WP_PREPARE);
	if (ckpt__test_before_commit)
		ckpt__test_before_commit(step);
	res->uring_used = ckpt__io_uring_used(io);
	snprintf(final, sizeof final, "step-%08" PRId64, step);
	snprintf(tmp, sizeof tmp, "%s.tmp", final);
	wf = calloc(l->ns ? l->ns : 1, sizeof *wf);
	so = calloc(l->ns ? l->ns : 1, sizeof *so);
	/* XXH3 states want 64-byte alignment; too big for some stacks */
	if (!wf || !so ||
	    posix_memalign((void **)&h, 64, (l->ns ? l->ns : 1) * sizeof *h)) {
		h = NULL;
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		rc = sr_err_set(e, -errno, "%s: %s", dir, strerror(errno));
		goto out;
	}
	rc = ckpt__rmdir_flat(dfd, tmp);
	if (mkdirat(dfd, tmp, 0755) != 0) {
		/* a leftover we could not remove: its removal's failure is the
		 * cause (EROFS, EACCES), not the EEXIST it leads to */
		if (errno == EEXIST && rc < 0)
			rc = sr_err_set(e, rc, "%s/%s: cannot remove the leftover "
					"of an earlier save: %s", dir, tmp,
					strerror(-rc));
		else
			rc = sr_err_set(e, -errno, "%s/%s: mkdir: %s", dir, tmp,
					strerror(errno));
		goto out;
	}
	tfd = openat(dfd, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0) {
		rc = sr_err_set(e, -errno, "%s/%s: %s", dir, tmp, strerror(errno));
		goto out;
	}
	rc = write_shards(io, tfd, l, image, o, wf, so, h, res, e);
	if (rc)
		goto out;
	ckpt__prof_enter(prof, SPOTCKPT_WP_MANIFEST);
	rc = write_manifest(tfd, step, meta_json, l, &mfd, &res->bytes, e);
	if (rc)
		goto out;
	rc = fsync_round(io, wf, l, mfd, tfd, tmp, prof, e);
	if (rc == 0)
		rc = close_all(wf, l->ns, &mfd, l, e);
	if (rc)
		goto out;
	ckpt__prof_enter(prof, SPOTCKPT_WP_PUBLISH);
	rc = publish(dfd, tmp, final, e);
	if (rc)
		goto out;
	prof->fsyncs++;
	if (fsync(dfd) != 0) {
		rc = sr_err_set(e, -errno, "%s: fsync: %s", dir, strerror(errno));
		goto out;
	}
	res->commit_ns = sr_time_mono_ns() - t0;
	ckpt__prof_enter(prof, SPOTCKPT_WP_RETENTION);
	ckpt__retention(dir, o->keep, step);
out:
	ckpt__prof_enter(prof, -1);
	{
		struct sr_err ignored = { 0 }; /* rc already tells */

		close_all(wf, wf ? l->ns : 0, &mfd, l, &ignored);
	}
	if (tfd >= 0)
		close(tfd);
	if (rc && dfd >= 0) {
		ckpt__rmdir_flat(dfd, tmp);
		sr_err_prefix(e, "%s step %" PRId64, dir, step);
	}
	if (dfd >= 0)
		close(dfd);
	free(h);
	free(so);
	free(wf);
	return rc;
}
