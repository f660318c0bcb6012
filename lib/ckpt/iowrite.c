/*
 * iowrite.c - one io_uring per writing thread, and the shard writer.
 *
 * A batch of files is written from the staging image in chunks (default
 * 8 MiB) with up to `depth` requests in flight, the files one after the
 * other through the same queue: it does not drain at a file boundary, so
 * the next file's first writes go out while the previous file's last ones
 * are still in flight.  Each chunk is handed to the file's feed callback
 * (the XXH3 hashers) just before it is submitted, so hashing overlaps the
 * writes already in flight.  The aligned body goes through the O_DIRECT
 * descriptor when there is one; the unaligned tail (and everything,
 * without O_DIRECT) through the buffered one.  A file marked `sync` gets
 * its fsync submitted on the same queue as soon as its last write
 * completed, while the next file's writes go on; the caller makes the
 * last files durable in one round with ckpt__io_fsync_all.
 *
 * What keeps the kernel's share of a write small (issue 29):
 *  - the caller preallocates each file (fallocate), so a direct write is
 *    an overwrite of allocated blocks that ext4 and XFS issue at once from
 *    the submitting thread.  A write past the end of the file instead
 *    takes the inode lock exclusively and completes synchronously: io_uring
 *    hands every such request to a worker thread (iou-wrk), the workers
 *    queue on the inode lock, and the device sees one request at a time;
 *  - the staging buffer is registered with the ring (fixed buffers), so a
 *    request does not pin and unpin its pages each time;
 *  - the files are in the ring's file table (fixed files).
 * Without io_uring (ENOSYS, seccomp, io_uring_disabled, SPOTCKPT_NO_URING)
 * the same loop runs with pwrite(2) and fsync(2).
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "io.h"
#include "common/timeutil.h"

int ckpt__io_new(uint32_t depth, uint32_t chunk, struct ckpt_io **out)
{
	struct ckpt_io *io = calloc(1, sizeof *io);

	*out = NULL;
	if (!io)
		return -ENOMEM;
	io->depth = depth ? depth : 8;
	if (io->depth > CKPT_IO_MAX_DEPTH)
		io->depth = CKPT_IO_MAX_DEPTH;
	io->chunk = chunk ? chunk : 8u << 20;
	io->chunk = (io->chunk + 4095) / 4096 * 4096;
	if (!getenv("SPOTCKPT_NO_URING") &&
	    io_uring_queue_init(io->depth, &io->ring, 0) == 0) {
		io->have_ring = 1;
		io->fixed_files = io_uring_register_files_sparse(
			&io->ring, CKPT_IO_FILE_SLOTS) == 0;
	}
	*out = io;
	return 0;
}

void ckpt__io_free(struct ckpt_io *io)
{
	if (!io)
		return;
	if (io->have_ring)
		io_uring_queue_exit(&io->ring); /* drops registrations too */
	if (io->bounce && !io->bounce_ext)
		munmap(io->bounce, io->bounce_bytes);
	free(io);
}

int ckpt__io_uring_used(const struct ckpt_io *io)
{
	return io && io->have_ring;
}

void ckpt__io_unregister_buffer(struct ckpt_io *io)
{
	if (!io || !io->reg_base)
		return;
	io_uring_unregister_buffers(&io->ring);
	io->reg_base = NULL;
	io->reg_len = 0;
}

int ckpt__io_register_buffer(struct ckpt_io *io, const uint8_t *buf,
			     uint64_t n)
{
	struct iovec iov[64];
	unsigned k = 0;
	int rc;

	if (!io || !io->have_ring)
		return -ENOSYS;
	if (io->reg_base == buf && io->reg_len == n)
		return 0;
	ckpt__io_unregister_buffer(io);
	if (!buf || n == 0 || (n + CKPT_IO_REG_PIECE - 1) / CKPT_IO_REG_PIECE > 64)
		return -EINVAL;
	for (uint64_t off = 0; off < n; off += CKPT_IO_REG_PIECE, k++) {
		iov[k].iov_base = (void *)(buf + off);
		iov[k].iov_len = n - off < CKPT_IO_REG_PIECE ? n - off
							     : CKPT_IO_REG_PIECE;
	}
	rc = io_uring_register_buffers(&io->ring, iov, k);
	if (rc)
		return rc;
	io->reg_base = buf;
	io->reg_len = n;
	return 0;
}

int ckpt__pwrite_all(int fd, const uint8_t *p, uint64_t n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwrite(fd, p, n > (1u << 30) ? (1u << 30) : n,
				   (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		p += w;
		n -= (uint64_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* The rate cap: before handing out byte `sent` of a batch that started
 * at t0_ns, sleep until it is due at max_bytes_per_s. */
static void throttle(const struct ckpt_io *io, int64_t t0_ns, uint64_t sent)
{
	int64_t due, now;

	if (!io->max_bytes_per_s || sent == 0)
		return;
	due = t0_ns + (int64_t)((double)sent / (double)io->max_bytes_per_s * 1e9);
	now = sr_time_mono_ns();
	if (due > now) {
		struct timespec ts = { (time_t)((due - now) / 1000000000),
				       (long)((due - now) % 1000000000) };

		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
}

/* Bytes of f sent through fd_dir (the rest, the tail, through fd_buf). */
static uint64_t body_of(const struct ckpt_wfile *f)
{
	if (f->fd_dir >= 0 && f->d.direct)
		return f->len / f->d.off_align * f->d.off_align;
	return f->len;
}

static int open_file(struct ckpt_wfile *f, struct ckpt_prof *prof)
{
	int rc;

	ckpt__prof_enter(prof, SPOTCKPT_WP_PREPARE);
	f->fd_buf = f->fd_dir = -1;
	rc = f->open(f->ud, f);
	return rc;
}

/* Feed and write the unaligned tail of f (after its body). */
static int write_tail(struct ckpt_wfile *f, struct ckpt_prof *prof)
{
	uint64_t body = body_of(f);

	if (body >= f->len)
		return 0;
	ckpt__prof_enter(prof, SPOTCKPT_WP_HASH);
	f->feed(f->ud, body, f->buf + body, f->len - body);
	ckpt__prof_enter(prof, SPOTCKPT_WP_SUBMIT);
	if (prof)
		prof->writes++;
	return ckpt__pwrite_all(f->fd_buf, f->buf + body, f->len - body, body);
}

/* Plain pwrite loop, used without io_uring. */
static int write_sync(struct ckpt_io *io, struct ckpt_wfile *f, size_t n,
		      atomic_int *cancel, struct ckpt_prof *prof,
		      size_t *failed)
{
	int64_t t0 = sr_time_mono_ns();
	uint64_t sent = 0;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++) {
		uint64_t body;

		*failed = i;
		rc = open_file(&f[i], prof);
		body = rc ? 0 : body_of(&f[i]);
		for (uint64_t off = 0; rc == 0 && off < body;) {
			uint64_t k = body - off < io->chunk ? body - off : io->chunk;
			int fd = f[i].fd_dir >= 0 && f[i].d.direct ? f[i].fd_dir
								   : f[i].fd_buf;

			if (cancel && atomic_load(cancel)) {
				rc = -ECANCELED;
				break;
			}
			throttle(io, t0, sent);
			ckpt__prof_enter(prof, SPOTCKPT_WP_HASH);
			f[i].feed(f[i].ud, off, f[i].buf + off, k);
			ckpt__prof_enter(prof, SPOTCKPT_WP_SUBMIT);
			rc = ckpt__pwrite_all(fd, f[i].buf + off, k, off);
			if (prof)
				prof->writes++;
			off += k;
			sent += k;
		}
		if (rc == 0)
			rc = write_tail(&f[i], prof);
		if (rc == 0 && f[i].sync) {
			ckpt__prof_enter(prof, SPOTCKPT_WP_WAIT);
			if (prof)
				prof->fsyncs++;
			if (fsync(f[i].fd_buf) != 0)
				rc = -errno;
		}
		if (rc == 0 && f[i].done)
			f[i].done(f[i].ud, &f[i]);
	}
	return rc;
}

/* ---- the io_uring loop ----------------------------------------------------- */
struct wreq {
	size_t file;
	uint64_t off, len;
	int fsync;
};

struct wfstate {
	uint32_t pending;     /* requests in flight */
	uint8_t submitted;    /* every byte sent (body and tail) */
	uint8_t fsync_sent, finished;
	uint8_t fixed;        /* its write fd is in the ring's file table */
};

struct wloop {
	struct ckpt_io *io;
	struct ckpt_wfile *f;
	struct wfstate *st;
	struct ckpt_prof *prof;
	struct wreq req[CKPT_IO_MAX_DEPTH];
	uint32_t free_ids[CKPT_IO_MAX_DEPTH], nfree, inflight;
	int broken;           /* a submit failed: nothing left to wait for */
};

/* Take file k's descriptor out of the ring's table: a table entry holds
 * the file open, so a deleted shard's blocks would stay allocated. */
static void unfix(struct wloop *w, size_t k)
{
	int none = -1;

	if (!w->st[k].fixed)
		return;
	io_uring_register_files_update(&w->io->ring,
				       (unsigned)(k % CKPT_IO_FILE_SLOTS), &none, 1);
	w->st[k].fixed = 0;
}

static struct io_uring_sqe *take(struct wloop *w, size_t file, uint64_t off,
				 uint64_t len, int is_fsync)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&w->io->ring);
	uint32_t id;

	if (!sqe)
		return NULL;
	id = w->free_ids[--w->nfree];
	w->req[id] = (struct wreq){ file, off, len, is_fsync };
	io_uring_sqe_set_data64(sqe, id);
	w->st[file].pending++;
	w->inflight++;
	return sqe;
}

/* Submit the write of f's bytes [off, off+len) on fd. */
static int submit_write(struct wloop *w, size_t i, int fd, uint64_t off,
			uint64_t len)
{
	struct ckpt_io *io = w->io;
	const uint8_t *p = w->f[i].buf + off;
	struct io_uring_sqe *sqe = take(w, i, off, len, 0);
	int rc;

	if (!sqe)
		return -EBUSY;
	if (io->reg_base && p >= io->reg_base &&
	    p + len <= io->reg_base + io->reg_len &&
	    (uint64_t)(p - io->reg_base) / CKPT_IO_REG_PIECE ==
	    (uint64_t)(p + len - 1 - io->reg_base) / CKPT_IO_REG_PIECE) {
		io_uring_prep_write_fixed(sqe, fd, p, (unsigned)len, off,
			(int)((uint64_t)(p - io->reg_base) / CKPT_IO_REG_PIECE));
		if (w->prof)
			w->prof->fixed_buffers = 1;
	} else {
		io_uring_prep_write(sqe, fd, p, (unsigned)len, off);
	}
	if (w->st[i].fixed) {
		sqe->fd = (int)(i % CKPT_IO_FILE_SLOTS);
		sqe->flags |= IOSQE_FIXED_FILE;
	}
	rc = io_uring_submit(&io->ring);
	if (w->prof)
		w->prof->writes++;
	if (rc < 0)
		w->broken = 1;
	return rc < 0 ? rc : 0;
}

/* Files [lo, hi) fully sent: fsync those that want it once their writes
 * completed, finish the others. */
static int finish_ready(struct wloop *w, size_t lo, size_t hi)
{
	int rc = 0;

	for (size_t k = lo; k < hi; k++) {
		struct wfstate *s = &w->st[k];
		struct io_uring_sqe *sqe;

		if (!s->submitted || s->pending || s->finished)
			continue;
		if (w->f[k].sync && !s->fsync_sent) {
			if (w->nfree == 0)
				break;
			sqe = take(w, k, 0, 0, 1);
			if (!sqe)
				break;
			io_uring_prep_fsync(sqe, w->f[k].fd_buf, 0);
			s->fsync_sent = 1;
			if (w->prof)
				w->prof->fsyncs++;
			rc = io_uring_submit(&w->io->ring);
			if (rc < 0) {
				w->broken = 1;
				return rc;
			}
			rc = 0;
			continue;
		}
		s->finished = 1;
		unfix(w, k);
		if (w->f[k].done)
			w->f[k].done(w->f[k].ud, &w->f[k]);
	}
	return rc;
}

/* Wait for one request; a short write is finished with pwrite. */
static int reap_one(struct wloop *w, size_t *file)
{
	struct io_uring_cqe *cqe;
	struct wreq *q;
	int rc, res;
	uint32_t id;

	do
		rc = io_uring_wait_cqe(&w->io->ring, &cqe);
	while (rc == -EINTR);
	if (rc < 0) {
		w->broken = 1;
		return rc;
	}
	id = (uint32_t)io_uring_cqe_get_data64(cqe);
	res = cqe->res;
	io_uring_cqe_seen(&w->io->ring, cqe);
	q = &w->req[id];
	*file = q->file;
	w->free_ids[w->nfree++] = id;
	w->inflight--;
	w->st[q->file].pending--;
	if (res < 0)
		return res;
	if (!q->fsync && (uint64_t)res < q->len)
		return ckpt__pwrite_all(w->f[q->file].fd_buf,
					w->f[q->file].buf + q->off + res,
					q->len - (uint64_t)res,
					q->off + (uint64_t)res);
	return 0;
}

static int write_ring(struct ckpt_io *io, struct ckpt_wfile *f, size_t n,
		      atomic_int *cancel, struct ckpt_prof *prof,
		      size_t *failed)
{
	struct wloop *w = calloc(1, sizeof *w);
	size_t fi = 0, fin = 0;       /* file being sent; oldest unfinished */
	uint64_t off = 0, body = 0, sent = 0;
	int64_t t0 = sr_time_mono_ns();
	int opened = 0, rc = 0;

	if (!w)
		return -ENOMEM;
	w->st = calloc(n ? n : 1, sizeof *w->st);
	if (!w->st) {
		free(w);
		return -ENOMEM;
	}
	w->io = io;
	w->f = f;
	w->prof = prof;
	w->nfree = io->depth;
	for (uint32_t i = 0; i < io->depth; i++)
		w->free_ids[i] = i;
	while (rc == 0 && (fi < n || w->inflight > 0 || fin < n)) {
		/* send chunks while there is room */
		while (rc == 0 && fi < n && w->nfree > 0) {
			struct ckpt_wfile *cur = &f[fi];
			uint64_t k;
			int fd;

			if (!opened) {
				*failed = fi;
				rc = open_file(cur, prof);
				if (rc)
					break;
				opened = 1;
				off = 0;
				body = body_of(cur);
				fd = cur->fd_dir >= 0 && cur->d.direct ? cur->fd_dir
								       : cur->fd_buf;
				w->st[fi].fixed = io->fixed_files &&
					io_uring_register_files_update(&io->ring,
						(unsigned)(fi % CKPT_IO_FILE_SLOTS),
						&fd, 1) == 1;
			}
			if (off >= body) { /* body sent: the tail, next file */
				*failed = fi;
				rc = write_tail(cur, prof);
				if (rc)
					break;
				w->st[fi].submitted = 1;
				fi++;
				opened = 0;
				continue;
			}
			if (cancel && atomic_load(cancel)) {
				rc = -ECANCELED;
				break;
			}
			k = body - off < io->chunk ? body - off : io->chunk;
			throttle(io, t0, sent);
			ckpt__prof_enter(prof, SPOTCKPT_WP_HASH);
			cur->feed(cur->ud, off, cur->buf + off, k);
			ckpt__prof_enter(prof, SPOTCKPT_WP_SUBMIT);
			fd = cur->fd_dir >= 0 && cur->d.direct ? cur->fd_dir
							       : cur->fd_buf;
			*failed = fi;
			rc = submit_write(w, fi, fd, off, k);
			off += k;
			sent += k;
		}
		if (rc == 0)
			rc = finish_ready(w, fin, fi);
		while (fin < fi && w->st[fin].finished)
			fin++;
		if (rc || w->inflight == 0) {
			if (fi >= n && fin >= n)
				break;
			if (rc)
				break;
			continue; /* a file finished; the loop sends more */
		}
		ckpt__prof_enter(prof, SPOTCKPT_WP_WAIT);
		{
			size_t file = 0;
			int r = reap_one(w, &file);

			if (r) {
				rc = r;
				*failed = file;
			}
		}
	}
	/* an error: drain what is in flight (the buffers must not be reused
	 * under the device) */
	ckpt__prof_enter(prof, SPOTCKPT_WP_WAIT);
	while (w->inflight > 0 && !w->broken) {
		struct io_uring_cqe *cqe;
		int r = io_uring_wait_cqe(&io->ring, &cqe);

		if (r == -EINTR)
			continue;
		if (r < 0)
			break; /* the ring failed: nothing more will complete */
		io_uring_cqe_seen(&io->ring, cqe);
		w->inflight--;
	}
	for (size_t k = 0; k < n; k++)
		unfix(w, k);
	free(w->st);
	free(w);
	return rc;
}

int ckpt__io_write_files(struct ckpt_io *io, struct ckpt_wfile *f, size_t n,
			 atomic_int *cancel, struct ckpt_prof *prof,
			 size_t *failed)
{
	size_t dummy;

	if (!failed)
		failed = &dummy;
	*failed = 0;
	for (size_t i = 0; i < n; i++)
		f[i].fd_buf = f[i].fd_dir = -1;
	if (io->have_ring)
		return write_ring(io, f, n, cancel, prof, failed);
	return write_sync(io, f, n, cancel, prof, failed);
}

int ckpt__io_fsync_all(struct ckpt_io *io, const int *fds, size_t n,
		       struct ckpt_prof *prof, size_t *failed)
{
	size_t next = 0, dummy;
	uint32_t inflight = 0;
	int rc = 0;

	if (!failed)
		failed = &dummy;
	*failed = 0;
	ckpt__prof_enter(prof, SPOTCKPT_WP_FSYNC);
	if (prof)
		prof->fsyncs += n;
	if (!io || !io->have_ring) {
		for (size_t i = 0; i < n; i++) {
			if (fsync(fds[i]) != 0 && rc == 0) {
				rc = -errno;
				*failed = i;
			}
		}
		return rc;
	}
	while (next < n || inflight > 0) {
		struct io_uring_cqe *cqe;
		int r;

		if (next < n && inflight < io->depth) {
			while (next < n && inflight < io->depth) {
				struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);

				if (!sqe)
					break;
				io_uring_prep_fsync(sqe, fds[next], 0);
				io_uring_sqe_set_data64(sqe, next);
				next++;
				inflight++;
			}
			r = io_uring_submit(&io->ring);
			if (r < 0 && rc == 0)
				rc = r;
		}
		do
			r = io_uring_wait_cqe(&io->ring, &cqe);
		while (r == -EINTR);
		if (r < 0)
			return rc ? rc : r; /* the ring failed: nothing to drain */
		if (cqe->res < 0 && rc == 0) {
			rc = cqe->res;
			*failed = (size_t)io_uring_cqe_get_data64(cqe);
		}
		io_uring_cqe_seen(&io->ring, cqe);
		inflight--;
	}
	return rc;
}
