/*
 * ioread.c - reading a byte range of a file in order, in parallel chunks.
 *
 * The range is widened to the O_DIRECT alignment and read in `chunk`-sized
 * requests, up to `depth` in flight, into the io's read buffers (huge
 * pages, see bounce_alloc); chunks
 * are handed to the sink strictly in file order (the hashers need order),
 * each completed chunk's slot then being reused for the next request.
 * Without O_DIRECT the same path reads through the page cache; without
 * io_uring it falls back to pread(2).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "io.h"

struct rreq {
	uint64_t off;   /* aligned file offset of the request */
	uint64_t len;   /* bytes requested */
	int64_t res;    /* bytes read or -errno; INT64_MIN while in flight */
};

static int pread_full(int fd, uint8_t *p, uint64_t n, uint64_t off,
		      uint64_t *got)
{
	*got = 0;
	while (n > 0) {
		ssize_t r = pread(fd, p, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		p += r;
		n -= (uint64_t)r;
		off += (uint64_t)r;
		*got += (uint64_t)r;
	}
	return 0;
}

/* Deliver the useful part of request q (bytes [off, off+len) of the file
 * that it covers) to the sink. */
static int deliver(const struct rreq *q, const uint8_t *p, uint64_t off,
		   uint64_t len, ckpt_sink_fn sink, void *ud)
{
	uint64_t lo = q->off > off ? q->off : off;
	uint64_t hi = q->off + q->len < off + len ? q->off + q->len : off + len;

	if (hi <= lo)
		return 0;
	return sink(ud, lo, p + (lo - q->off), hi - lo);
}

static int submit_read(struct ckpt_io *io, int fd, uint32_t slot,
		       struct rreq *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);

	if (!sqe)
		return -EBUSY;
	q->res = INT64_MIN;
	io_uring_prep_read(sqe, fd, io->bounce + (uint64_t)slot * io->chunk,
			   (unsigned)q->len, q->off);
	io_uring_sqe_set_data64(sqe, slot);
	return io_uring_submit(&io->ring) < 0 ? -EIO : 0;
}

static int wait_slot(struct ckpt_io *io, struct rreq *reqs, uint32_t slot)
{
	while (reqs[slot].res == INT64_MIN) {
		struct io_uring_cqe *cqe;
		int rc = io_uring_wait_cqe(&io->ring, &cqe);

		if (rc == -EINTR)
			continue;
		if (rc < 0)
			return rc;
		reqs[io_uring_cqe_get_data64(cqe)].res = cqe->res;
		io_uring_cqe_seen(&io->ring, cqe);
	}
	return 0;
}

static int read_ring(struct ckpt_io *io, int fd, int fd_buf, uint64_t a0,
		     uint64_t a1, uint64_t off, uint64_t len, ckpt_sink_fn sink,
		     void *ud)
{
	struct rreq reqs[CKPT_IO_MAX_DEPTH];
	uint64_t next = a0, head = 0, nsub = 0;
	int rc = 0;

	while (rc == 0 && (head < nsub || next < a1)) {
		while (next < a1 && nsub - head < io->depth) {
			uint32_t slot = (uint32_t)(nsub % io->depth);

			reqs[slot].off = next;
			reqs[slot].len = a1 - next < io->chunk ? a1 - next : io->chunk;
			rc = submit_read(io, fd, slot, &reqs[slot]);
			if (rc)
				break;
			next += reqs[slot].len;
			nsub++;
		}
		if (rc || head == nsub)
			break;
		{
			uint32_t slot = (uint32_t)(head % io->depth);
			struct rreq *q = &reqs[slot];
			uint8_t *p = io->bounce + (uint64_t)slot * io->chunk;

			rc = wait_slot(io, reqs, slot);
			if (rc)
				return rc; /* ring broken: cannot drain */
			if (q->res < 0) {
				rc = (int)q->res;
			} else if ((uint64_t)q->res < q->len) {
				uint64_t got = 0;

				/* short (EOF or odd fs): finish buffered */
				rc = pread_full(fd_buf, p + q->res,
						q->len - (uint64_t)q->res,
						q->off + (uint64_t)q->res, &got);
				q->len = (uint64_t)q->res + got;
			}
			if (rc == 0)
				rc = deliver(q, p, off, len, sink, ud);
			head++;
		}
	}
	/* drain anything still in flight before the bounce buffer is reused */
	for (; head < nsub; head++) {
		int r = wait_slot(io, reqs, (uint32_t)(head % io->depth));

		if (r)
			return rc ? rc : r;
	}
	return rc;
}

static int read_sync(struct ckpt_io *io, int fd, uint64_t a0, uint64_t a1,
		     uint64_t off, uint64_t len, ckpt_sink_fn sink, void *ud)
{
	for (uint64_t at = a0; at < a1;) {
		struct rreq q = { .off = at };
		uint64_t got = 0;
		int rc;

		q.len = a1 - at < io->chunk ? a1 - at : io->chunk;
		rc = pread_full(fd, io->bounce, q.len, at, &got);
		if (rc)
			return rc;
		q.len = got;
		rc = deliver(&q, io->bounce, off, len, sink, ud);
		if (rc)
			return rc;
		if (got == 0)
			break;
		at += got;
	}
	return 0;
}

/* The read buffers: depth * chunk bytes of anonymous memory on transparent
 * huge pages.  An O_DIRECT read pins its buffer page by page and the
 * block layer splits a request at the device's segment limit, so with
 * 4 KiB pages a 4 MiB read became 1024 pinned pages and several device
 * requests (virtio-blk here: 254 segments each); on 2 MiB pages it is two
 * segments.  Measured on the development VM, restore went from 0.5-0.75
 * to 0.85-1.0 of a raw read into a huge-page buffer. */
#define HUGE_PAGE (2ull << 20)

static int bounce_alloc(struct ckpt_io *io)
{
	uint64_t n = (uint64_t)io->depth * io->chunk, map = n + HUGE_PAGE;
	uint8_t *p = mmap(NULL, map, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *a;

	if (p == MAP_FAILED)
		return -ENOMEM;
	/* trim to a 2 MiB-aligned start so that every huge page is whole */
	a = (uint8_t *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + n < p + map)
		munmap(a + n, (size_t)(p + map - (a + n)));
	madvise(a, n, MADV_HUGEPAGE); /* best effort */
	io->bounce = a;
	io->bounce_bytes = n;
	return 0;
}

int ckpt__io_borrow_buffer(struct ckpt_io *io, uint8_t *buf, uint64_t n)
{
	uint64_t fit = n / io->chunk;

	if (io->bounce || ((uintptr_t)buf & 4095) || fit < 2)
		return -ENOBUFS;
	if (fit < io->depth)
		io->depth = (uint32_t)fit; /* the ring keeps its size: fewer used */
	io->bounce = buf;
	io->bounce_bytes = (uint64_t)io->depth * io->chunk;
	io->bounce_ext = 1;
	return 0;
}

int ckpt__io_read_range(struct ckpt_io *io, const char *path, uint64_t off,
			uint64_t len, ckpt_sink_fn sink, void *ud)
{
	struct ckpt_dio d = { 0 };
	int fd_buf = -1, fd_dir = -1, rc;
	uint64_t a0, a1;
	struct stat st;

	if (!io->bounce) {
		rc = bounce_alloc(io);
		if (rc)
			return rc;
	}
	fd_buf = open(path, O_RDONLY | O_CLOEXEC);
	if (fd_buf < 0)
		return -errno;
	if (fstat(fd_buf, &st) != 0 || (uint64_t)st.st_size < off + len) {
		rc = -SR_ECORRUPT;
		goto out;
	}
	if (!getenv("SPOTCKPT_NO_DIRECT"))
		fd_dir = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd_dir >= 0)
		ckpt__dio_probe(fd_dir, &d);
	if (!d.direct)
		d.off_align = 4096;
	a0 = off / d.off_align * d.off_align;
	a1 = (off + len + d.off_align - 1) / d.off_align * d.off_align;
	if (io->have_ring)
		rc = read_ring(io, d.direct ? fd_dir : fd_buf, fd_buf, a0, a1,
			       off, len, sink, ud);
	else
		rc = read_sync(io, fd_buf, a0, a1, off, len, sink, ud);
out:
	if (fd_dir >= 0)
		close(fd_dir);
	close(fd_buf);
	return rc;
}
