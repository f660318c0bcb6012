/*
 * iowrite.c - one io_uring per writing thread, and the shard writer.
 *
 * A file is written from the staging image in chunks (default 4 MiB) with
 * up to `depth` writes in flight.  Each chunk is handed to the feed
 * callback (the XXH3 hashers) just before it is submitted, so hashing
 * overlaps the writes already in flight.  The aligned body goes through
 * the O_DIRECT descriptor when there is one; the unaligned tail (and
 * everything, without O_DIRECT) through the buffered one.  Without
 * io_uring (ENOSYS, seccomp, io_uring_disabled) the same loop runs with
 * pwrite(2).
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
	io->chunk = chunk ? chunk : 4u << 20;
	io->chunk = (io->chunk + 4095) / 4096 * 4096;
	if (!getenv("SPOTCKPT_NO_URING") &&
	    io_uring_queue_init(io->depth, &io->ring, 0) == 0)
		io->have_ring = 1;
	*out = io;
	return 0;
}

void ckpt__io_free(struct ckpt_io *io)
{
	if (!io)
		return;
	if (io->have_ring)
		io_uring_queue_exit(&io->ring);
	if (io->bounce && !io->bounce_ext)
		munmap(io->bounce, io->bounce_bytes);
	free(io);
}

int ckpt__io_uring_used(const struct ckpt_io *io)
{
	return io && io->have_ring;
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

/* The rate cap: before handing out bytes [off, ...) of a write that
 * started at t0_ns, sleep until off bytes are due at max_bytes_per_s. */
static void throttle(const struct ckpt_io *io, int64_t t0_ns, uint64_t off)
{
	int64_t due, now;

	if (!io->max_bytes_per_s || off == 0)
		return;
	due = t0_ns + (int64_t)((double)off / (double)io->max_bytes_per_s * 1e9);
	now = sr_time_mono_ns();
	if (due > now) {
		struct timespec ts = { (time_t)((due - now) / 1000000000),
				       (long)((due - now) % 1000000000) };

		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
}

/* Plain pwrite loop, used without io_uring. */
static int write_sync(struct ckpt_io *io, int fd, const uint8_t *buf,
		      uint64_t len, ckpt_feed_fn feed, void *ud,
		      atomic_int *cancel)
{
	int64_t t0 = sr_time_mono_ns();

	for (uint64_t off = 0; off < len;) {
		uint64_t n = len - off < io->chunk ? len - off : io->chunk;
		int rc;

		if (cancel && atomic_load(cancel))
			return -ECANCELED;
		throttle(io, t0, off);
		feed(ud, off, buf + off, n);
		rc = ckpt__pwrite_all(fd, buf + off, n, off);
		if (rc)
			return rc;
		off += n;
	}
	return 0;
}

struct wslot { uint64_t off, len; };

/* Wait for one write; finishes a short write with pwrite.  *id gets the
 * slot freed, or UINT32_MAX if the ring itself failed. */
static int reap_one(struct ckpt_io *io, int fd_buf, const uint8_t *buf,
		    const struct wslot *slots, uint32_t *id)
{
	struct io_uring_cqe *cqe;
	int rc, res;

	*id = UINT32_MAX;
	do
		rc = io_uring_wait_cqe(&io->ring, &cqe);
	while (rc == -EINTR);
	if (rc < 0)
		return rc;
	*id = (uint32_t)io_uring_cqe_get_data64(cqe);
	res = cqe->res;
	io_uring_cqe_seen(&io->ring, cqe);
	if (res < 0)
		return res;
	if ((uint64_t)res < slots[*id].len)
		return ckpt__pwrite_all(fd_buf, buf + slots[*id].off + res,
					slots[*id].len - (uint64_t)res,
					slots[*id].off + (uint64_t)res);
	return 0;
}

static int write_ring(struct ckpt_io *io, int fd, int fd_buf,
		      const uint8_t *buf, uint64_t len, ckpt_feed_fn feed,
		      void *ud, atomic_int *cancel)
{
	struct wslot slots[CKPT_IO_MAX_DEPTH];
	uint32_t free_ids[CKPT_IO_MAX_DEPTH], nfree = io->depth, inflight = 0;
	uint64_t off = 0;
	int64_t t0 = sr_time_mono_ns();
	int rc = 0;

	for (uint32_t i = 0; i < io->depth; i++)
		free_ids[i] = i;
	while (off < len || inflight > 0) {
		while (rc == 0 && off < len && nfree > 0) {
			uint64_t n = len - off < io->chunk ? len - off : io->chunk;
			struct io_uring_sqe *sqe;
			uint32_t id = free_ids[--nfree];

			if (cancel && atomic_load(cancel)) {
				rc = -ECANCELED;
				nfree++;
				break;
			}
			throttle(io, t0, off);
			feed(ud, off, buf + off, n);
			sqe = io_uring_get_sqe(&io->ring);
			slots[id].off = off;
			slots[id].len = n;
			io_uring_prep_write(sqe, fd, buf + off, (unsigned)n, off);
			io_uring_sqe_set_data64(sqe, id);
			io_uring_submit(&io->ring);
			inflight++;
			off += n;
		}
		if (inflight == 0)
			break;
		{
			uint32_t id;
			int r = reap_one(io, fd_buf, buf, slots, &id);

			if (id == UINT32_MAX)
				return rc ? rc : r; /* ring broken: cannot drain */
			inflight--;
			free_ids[nfree++] = id;
			if (r && rc == 0)
				rc = r;
		}
		if (rc && off < len)
			off = len; /* stop submitting; drain what is in flight */
	}
	return rc;
}

int ckpt__io_write_file(struct ckpt_io *io, int fd_buf, int fd_dir,
			const struct ckpt_dio *d, const uint8_t *buf,
			uint64_t len, ckpt_feed_fn feed, void *ud,
			atomic_int *cancel)
{
	uint64_t body = len;
	int fd = fd_buf, rc;

	if (fd_dir >= 0 && d->direct) {
		fd = fd_dir;
		body = len / d->off_align * d->off_align;
	}
	if (io->have_ring)
		rc = write_ring(io, fd, fd_buf, buf, body, feed, ud, cancel);
	else
		rc = write_sync(io, fd, buf, body, feed, ud, cancel);
	if (rc == 0 && body < len) {
		feed(ud, body, buf + body, len - body);
		rc = ckpt__pwrite_all(fd_buf, buf + body, len - body, body);
	}
	if (rc == 0 && fsync(fd_buf) != 0)
		rc = -errno;
	return rc;
}
