/*
 * commit.c - writing a checkpoint so that a crash never leaves a torn one
 * under a committed name.  Names and retention: retain.c; shards striped
 * over several directories: stripes.c.
 *
 * Commit sequence for step N:
 *   1. mkdir step-N.tmp/ (a leftover from a crash is removed first); with
 *      stripes, a fresh stripe-N-<random>/ in each other directory that
 *      gets shards
 *   2. write each shard file (O_EXCL, preallocated), hashing as it goes,
 *      each directory's shards by a lane of their own (lanes.c); fsync
 *      each as soon as its writes completed, except each lane's last few
 *   3. write manifest.json (O_EXCL), and in step-N.tmp/ a link to each
 *      striped shard
 *   4. fsync, in one concurrent round, the lanes' last shards,
 *      manifest.json, step-N.tmp/ (so its entries are durable) and each
 *      stripe directory and the directory holding it: on a journalling
 *      file system the round shares one journal commit
 *   5. rename step-N.tmp -> step-N (RENAME_NOREPLACE; if step-N already
 *      exists, RENAME_EXCHANGE swaps them and the old one is deleted)
 *   6. fsync DIR, making the rename durable: the commit point
 *   7. retention: for each checkpoint beyond the newest `keep`, rename it
 *      to step-M.del.tmp, fsync DIR, then delete its files; then the
 *      stripe directories no committed step links to.
 *
 * Why this is crash-consistent.  A reader only looks at directories named
 * step-N with no suffix.  Such a name comes into existence only through
 * the rename of step 5 (or the exchange, which is equally atomic), and
 * rename is atomic across a crash on the journalled file systems we
 * support: after a crash the directory is found under the old name or the
 * new one, never both or neither.  Everything under it - every shard's
 * data and size, the manifest, the directory entries, the links and what
 * they point to - was made durable by the fsyncs of steps 2 and 4, all
 * complete before the rename is issued, so when the new name survives, so
 * does complete content.  A stripe directory is new for every save and
 * never written again, so no committed step's shards change under it.  The
 * manifest is written after every shard, so even a directory renamed by
 * something else is only trusted with a manifest whose own checksum
 * verifies and whose shard sizes and per-tensor XXH3 checksums match.
 * Step 6 orders the commit before retention: an older checkpoint is
 * deleted only after the newer one's rename is durable, so at every
 * instant at least one complete checkpoint is reachable (the newest
 * committed one is never a deletion victim).  Deletion itself first
 * renames the victim to a scratch name, so a half-deleted checkpoint is
 * never visible as committed.  Anything a crash leaves under a scratch
 * name, and any stripe no committed step links to, is removed by the next
 * engine's open.  Data damaged after commit (bit rot, a disk that lied
 * about fsync, a lost disk) is caught at restore, which then falls back
 * to the previous checkpoint.
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
	struct sr_err *e;        /* its lane's */
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

/* Shards fsync'ed as they complete, all but each lane's last few: those
 * join the manifest and the directories in the final concurrent round,
 * and no more descriptors than this stay open however many shards. */
#define SYNC_LAST 4

/* One lane's part of a commit: the shards of one directory. */
struct lane_job {
	struct ckpt_wfile *wf;   /* its files, contiguous in the commit's */
	size_t n;
	int dirfd;               /* step-N.tmp/ (lane 0) or its stripe dir */
	int parentfd;            /* the directory holding that (lanes >= 1) */
	char stripe[64];         /* the stripe directory's name (lanes >= 1) */
	atomic_int *cancel;
	const uint8_t *reg_base; /* to register with a lane's own ring */
	uint64_t reg_len;
	struct ckpt_prof own, *prof; /* lane 0: the commit's */
	struct sr_err err;
	int rc;
};

static void lane_write(struct ckpt_io *io, void *arg)
{
	struct lane_job *j = arg;
	size_t failed = 0;

	if (j->prof == &j->own)
		ckpt__prof_start(j->prof, SPOTCKPT_WP_PREPARE);
	if (j->reg_len) /* best effort: without it each write pins pages */
		ckpt__io_register_buffer(io, j->reg_base, j->reg_len);
	j->rc = j->n ? ckpt__io_write_files(io, j->wf, j->n, j->cancel, j->prof,
					    &failed) : 0;
	if (j->rc && !j->err.msg[0])
		sr_err_set(&j->err, j->rc, "%s: write: %s",
			   ((struct shard_out *)j->wf[failed].ud)->sh->file,
			   sr_strerror(j->rc));
	if (j->prof == &j->own)
		ckpt__prof_enter(j->prof, -1);
}

/* Everything a commit allocates, opens and makes; freed by commit_free. */
struct commit {
	struct ckpt_layout *l;
	const struct ckpt_stripes *st;
	int nl;                  /* lanes */
	uint32_t *where;         /* shard -> lane */
	struct ckpt_wfile *wf;   /* by lane, then shard order */
	struct shard_out *so;
	struct hasher *h;
	struct lane_job *job;
	void **args;
	int dfd, tfd, mfd;
};

/* Steps 1 (stripe directories) and 2: every shard of every lane written,
 * hashed (the layout's tensor and shard hashes filled) and all but each
 * lane's last few fsync'ed. */
static int write_shards(struct commit *c, struct ckpt_io *io, int64_t step,
			const uint8_t *image, const struct ckpt_commit_opts *o,
			struct ckpt_commit_res *res, struct sr_err *e)
{
	struct ckpt_layout *l = c->l;
	size_t pos = 0;
	int rc = 0;

	if (c->nl > 1)
		ckpt__stripes_assign(l, c->nl, c->where);
	for (int k = 0; k < c->nl; k++) {
		struct lane_job *j = &c->job[k];
		size_t first = pos;

		j->parentfd = j->dirfd = -1;
		j->cancel = o->cancel;
		j->prof = k == 0 ? &res->prof : &j->own;
		if (k > 0 && o->reg_len) {
			j->reg_base = o->reg_base;
			j->reg_len = o->reg_len;
		}
		c->args[k] = j;
		for (size_t i = 0; i < l->ns; i++) {
			if (c->where[i] == (uint32_t)k)
				pos++;
		}
		j->wf = &c->wf[first];
		j->n = pos - first;
		if (k == 0)
			j->dirfd = c->tfd;
		else if (j->n > 0) {
			const char *d = c->st->dir[k];

			j->parentfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			rc = j->parentfd < 0 ? -errno :
			     ckpt__stripe_mkdir(j->parentfd, step, j->stripe,
						sizeof j->stripe);
			if (rc == 0) {
				j->dirfd = openat(j->parentfd, j->stripe,
						  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				rc = j->dirfd < 0 ? -errno : 0;
			}
			if (rc)
				return sr_err_set(e, rc, "%s: stripe directory: %s",
						  d, sr_strerror(rc));
		}
	}
	pos = 0;
	for (int k = 0; k < c->nl; k++) {
		size_t in_lane = 0, n = c->job[k].n;

		for (size_t i = 0; i < l->ns; i++) {
			struct ckpt_shard *sh = &l->s[i];

			if (c->where[i] != (uint32_t)k)
				continue;
			memset(&c->h[i], 0, sizeof c->h[i]);
			c->h[i].l = l;
			c->h[i].k = sh->first;
			c->h[i].end = sh->first + sh->count;
			c->so[i] = (struct shard_out){ .h = &c->h[i], .sh = sh,
				.dirfd = c->job[k].dirfd, .want_direct = o->direct,
				.e = &c->job[k].err };
			/* the header region of the image is copied in by the engine */
			c->wf[pos++] = (struct ckpt_wfile){
				.buf = image + sh->img_off, .len = sh->file_bytes,
				.sync = ++in_lane + SYNC_LAST <= n, .feed = feed,
				.ud = &c->so[i], .open = open_shard,
				.done = shard_done, .fd_buf = -1, .fd_dir = -1 };
		}
	}
	ckpt__lanes_run(c->nl > 1 ? c->st->lanes : NULL, io, lane_write, c->args);
	for (int k = 0; k < c->nl; k++) {
		res->lanes += c->job[k].n > 0;
		if (k > 0)
			ckpt__prof_add(&res->prof, &c->job[k].own);
		if (c->job[k].rc && rc == 0)
			rc = sr_err_set(e, c->job[k].rc, "%s", c->job[k].err.msg);
	}
	if (rc)
		return rc;
	for (size_t i = 0; i < l->ns; i++) {
		struct ckpt_shard *sh = &l->s[i];

		sh->header_xxh3 = XXH3_64bits(image + sh->img_off, sh->data_start);
		sh->xxh3 = ckpt__shard_hash(l, sh);
		res->bytes += sh->file_bytes;
		res->preallocated |= c->so[i].preallocated;
	}
	for (size_t i = 0; i < l->ns; i++)
		res->direct_used |= c->wf[i].d.direct;
	return 0;
}

/* Step 3: the manifest (its fsync is in the final round) and a link in
 * step-N.tmp/ to each striped shard. */
static int write_manifest(struct commit *c, int64_t step, const char *meta,
			  uint64_t *bytes, struct sr_err *e)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	for (size_t i = 0; i < c->l->ns; i++) {
		uint32_t k = c->where[i];
		char target[4200];

		if (k == 0)
			continue;
		snprintf(target, sizeof target, "%s/%s/%s", c->st->dir[k],
			 c->job[k].stripe, c->l->s[i].file);
		if (symlinkat(target, c->tfd, c->l->s[i].file) != 0)
			return sr_err_set(e, -errno, "%s: link to %s: %s",
					  c->l->s[i].file, target, strerror(errno));
	}
	rc = ckpt__manifest_render(step, sr_time_real_ns(), c->l, meta, &buf,
				   &len, e);
	if (rc)
		goto out;
	c->mfd = openat(c->tfd, CKPT_MANIFEST,
			O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (c->mfd < 0) {
		rc = sr_err_set(e, -errno, "%s: create: %s", CKPT_MANIFEST,
				strerror(errno));
		goto out;
	}
	rc = ckpt__pwrite_all(c->mfd, (const uint8_t *)buf, len, 0);
	if (rc)
		sr_err_set(e, rc, "%s: write: %s", CKPT_MANIFEST, sr_strerror(rc));
	*bytes += len;
out:
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
static int close_files(struct commit *c, struct sr_err *e)
{
	int rc = 0;

	for (size_t i = 0; c->wf && i < c->l->ns; i++) {
		if (c->wf[i].fd_dir >= 0)
			close(c->wf[i].fd_dir);
		if (c->wf[i].fd_buf >= 0 && close(c->wf[i].fd_buf) != 0 && rc == 0)
			rc = sr_err_set(e, -errno, "%s: close: %s",
					((struct shard_out *)c->wf[i].ud)->sh->file,
					strerror(errno));
		c->wf[i].fd_buf = c->wf[i].fd_dir = -1;
	}
	if (c->mfd >= 0 && close(c->mfd) != 0 && rc == 0)
		rc = sr_err_set(e, -errno, "%s: close: %s", CKPT_MANIFEST,
				strerror(errno));
	c->mfd = -1;
	return rc;
}

/* Step 4: one concurrent round of fsyncs: the shards not synced on the
 * way, the manifest, step-N.tmp/, and each stripe directory with the
 * directory holding it. */
static int fsync_round(struct commit *c, struct ckpt_io *io, const char *tmp,
		       struct ckpt_prof *prof, struct sr_err *e)
{
	size_t max = c->l->ns + 2 + 2 * (size_t)c->nl, k = 0, failed = 0;
	int *fds = malloc(max * sizeof *fds);
	const char **what = malloc(max * sizeof *what);
	int rc;

	if (!fds || !what) {
		rc = sr_err_set(e, -ENOMEM, "fsync: out of memory");
		goto out;
	}
	for (size_t i = 0; i < c->l->ns; i++) {
		if (c->wf[i].fd_buf >= 0) {
			what[k] = ((struct shard_out *)c->wf[i].ud)->sh->file;
			fds[k++] = c->wf[i].fd_buf;
		}
	}
	what[k] = CKPT_MANIFEST;
	fds[k++] = c->mfd;
	what[k] = tmp;
	fds[k++] = c->tfd;
	for (int j = 1; j < c->nl; j++) {
		if (c->job[j].dirfd < 0)
			continue;
		what[k] = c->job[j].stripe;
		fds[k++] = c->job[j].dirfd;
		what[k] = c->st->dir[j];
		fds[k++] = c->job[j].parentfd;
	}
	rc = ckpt__io_fsync_all(io, fds, k, prof, &failed);
	if (rc)
		sr_err_set(e, rc, "%s: fsync: %s", what[failed], sr_strerror(rc));
out:
	free(fds);
	free(what);
	return rc;
}

static int commit_alloc(struct commit *c, struct ckpt_layout *l,
			const struct ckpt_stripes *st)
{
	size_t ns = l->ns ? l->ns : 1;

	memset(c, 0, sizeof *c);
	c->l = l;
	c->st = st;
	c->nl = st && st->n > 1 ? st->n : 1;
	c->dfd = c->tfd = c->mfd = -1;
	c->where = calloc(ns, sizeof *c->where);
	c->wf = calloc(ns, sizeof *c->wf);
	c->so = calloc(ns, sizeof *c->so);
	c->job = calloc((size_t)c->nl, sizeof *c->job);
	c->args = calloc((size_t)c->nl, sizeof *c->args);
	/* XXH3 states want 64-byte alignment; too big for some stacks */
	if (posix_memalign((void **)&c->h, 64, ns * sizeof *c->h))
		c->h = NULL;
	for (int k = 0; c->job && k < c->nl; k++)
		c->job[k].parentfd = c->job[k].dirfd = -1;
	for (size_t i = 0; c->wf && i < ns; i++)
		c->wf[i].fd_buf = c->wf[i].fd_dir = -1;
	return c->where && c->wf && c->so && c->job && c->args && c->h ? 0
								       : -ENOMEM;
}

/* Close everything; on failure also remove the stripe directories. */
static void commit_free(struct commit *c, int failed)
{
	struct sr_err ignored = { 0 }; /* the commit's result already tells */

	close_files(c, &ignored);
	for (int k = 1; c->job && k < c->nl; k++) {
		struct lane_job *j = &c->job[k];

		if (j->dirfd >= 0)
			close(j->dirfd);
		if (failed && j->parentfd >= 0 && j->stripe[0])
			ckpt__rmdir_flat(j->parentfd, j->stripe);
		if (j->parentfd >= 0)
			close(j->parentfd);
	}
	if (c->tfd >= 0)
		close(c->tfd);
	free(c->h);
	free(c->args);
	free(c->job);
	free(c->so);
	free(c->wf);
	free(c->where);
}

int ckpt__commit(struct ckpt_io *io, const char *dir, int64_t step,
		 const char *meta_json, struct ckpt_layout *l,
		 const uint8_t *image, const struct ckpt_commit_opts *o,
		 struct ckpt_commit_res *res, struct sr_err *e)
{
	char tmp[64], final[40];
	struct ckpt_prof *prof = &res->prof;
	struct commit c;
	int rc;
	int64_t t0 = sr_time_mono_ns();

	memset(res, 0, sizeof *res);
	ckpt__prof_start(prof, SPOTCKPT_WP_PREPARE);
	if (ckpt__test_before_commit)
		ckpt__test_before_commit(step);
	res->uring_used = ckpt__io_uring_used(io);
	snprintf(final, sizeof final, "step-%08" PRId64, step);
	snprintf(tmp, sizeof tmp, "%s.tmp", final);
	rc = commit_alloc(&c, l, o->stripes);
	if (rc) {
		rc = sr_err_set(e, rc, "out of memory");
		goto out;
	}
	c.dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.dfd < 0) {
		rc = sr_err_set(e, -errno, "%s: %s", dir, strerror(errno));
		goto out;
	}
	rc = ckpt__rmdir_flat(c.dfd, tmp);
	if (mkdirat(c.dfd, tmp, 0755) != 0) {
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
	c.tfd = openat(c.dfd, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.tfd < 0) {
		rc = sr_err_set(e, -errno, "%s/%s: %s", dir, tmp, strerror(errno));
		goto out;
	}
	rc = write_shards(&c, io, step, image, o, res, e);
	if (rc)
		goto out;
	ckpt__prof_enter(prof, SPOTCKPT_WP_MANIFEST);
	rc = write_manifest(&c, step, meta_json, &res->bytes, e);
	if (rc == 0)
		rc = fsync_round(&c, io, tmp, prof, e);
	if (rc == 0)
		rc = close_files(&c, e);
	if (rc)
		goto out;
	ckpt__prof_enter(prof, SPOTCKPT_WP_PUBLISH);
	rc = publish(c.dfd, tmp, final, e);
	if (rc)
		goto out;
	prof->fsyncs++;
	if (fsync(c.dfd) != 0) {
		rc = sr_err_set(e, -errno, "%s: fsync: %s", dir, strerror(errno));
		goto out;
	}
	res->commit_ns = sr_time_mono_ns() - t0;
	ckpt__prof_enter(prof, SPOTCKPT_WP_RETENTION);
	ckpt__retention(dir, o->keep, step);
	ckpt__stripes_gc(o->stripes);
out:
	ckpt__prof_enter(prof, -1);
	commit_free(&c, rc != 0);
	if (rc && c.dfd >= 0) {
		ckpt__rmdir_flat(c.dfd, tmp);
		sr_err_prefix(e, "%s step %" PRId64, dir, step);
	}
	if (c.dfd >= 0)
		close(c.dfd);
	return rc;
}
