/*
 * ioread.c - reading a stream of byte ranges, in order, in parallel chunks.
 *
 * A thread's reads are a stream of ranges (a run of tensors of one shard
 * file each) that a source hands out one at a time.  Each range is widened
 * to the O_DIRECT alignment and read in `chunk`-sized requests, up to
 * `depth` in flight, into the io's read buffers (huge pages, see
 * bounce_alloc).  Chunks are handed to the range's sink strictly in file
 * order (the hashers need order), each completed chunk's slot then being
 * reused for the next request.  The queue does not drain between ranges:
 * once a range is fully submitted the next one is asked for and its first
 * chunks go out while the previous range's last chunks are still being
 * read and hashed, so a thread keeps the device as busy across the
 * boundary as within a range.
 *
 *   ranges:   | A ................ | B ......... | C ....
 *   in flight:          [A7 A8 B1 B2 B3 B4 B5 B6]      (depth 8)
 *   delivered: A1..A6 to A's sink; A finished after A8, then B's sink
 *
 * A range that names an image of its file (ckpt_read_range.dst) is read
 * straight into it instead: each request at its own place, no slot to
 * free, the sink handed pointers into the image (a verified restore then
 * copies nothing until every tensor has been checked, reader.c).
 *
 * Ranges live in a FIFO from `next` to `finish`: every range the source
 * returned is finished exactly once, in order, with 0 when its last byte
 * reached its sink, or with the error that stopped the stream (the range
 * that failed gets the error, the ones after it -ECANCELED).
 *
 * Without O_DIRECT the same path reads through the page cache; without
 * io_uring it falls back to pread(2), one range after the other.
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

/* A range between next() and finish(). */
struct rrange {
	struct ckpt_read_range r;
	uint8_t *dst;             /* r.dst when the reads fit it, else NULL */
	int fd_buf, fd_dir, fd;   /* fd: where the reads go */
	uint64_t a0, a1, next;    /* aligned bounds; next offset to submit */
	uint64_t nsub, ndone;     /* requests submitted / delivered */
	int rc;                   /* error that ended the range, if any */
};

/* Every range in the FIFO but the newest has a request in flight, so
 * depth + 1 slots always suffice; a run of empty ranges waits for room. */
#define RANGES_MAX (CKPT_IO_MAX_DEPTH + 1)

struct rreq {
	uint64_t off;   /* aligned file offset of the request */
	uint64_t len;   /* bytes requested */
	int64_t res;    /* bytes read or -errno; INT64_MIN while in flight */
	uint64_t range; /* index of its range in the FIFO */
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
static int deliver(const struct rreq *q, const uint8_t *p,
		   const struct ckpt_read_range *r)
{
	uint64_t end = r->off + r->len;
	uint64_t lo = q->off > r->off ? q->off : r->off;
	uint64_t hi = q->off + q->len < end ? q->off + q->len : end;

	if (hi <= lo)
		return 0;
	return r->sink(r->ud, lo, p + (lo - q->off), hi - lo);
}

/* Open g's file (O_DIRECT when it can) and set its aligned bounds. */
static int range_open(struct rrange *g)
{
	struct ckpt_dio d = { 0 };
	struct stat st;

	g->fd_buf = open(g->r.path, O_RDONLY | O_CLOEXEC);
	if (g->fd_buf < 0)
		return -errno;
	if (fstat(g->fd_buf, &st) != 0 ||
	    (uint64_t)st.st_size < g->r.off + g->r.len)
		return -SR_ECORRUPT;
	if (!getenv("SPOTCKPT_NO_DIRECT"))
		g->fd_dir = open(g->r.path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (g->fd_dir >= 0)
		ckpt__dio_probe(g->fd_dir, &d);
	if (!d.direct)
		d.off_align = 4096;
	g->fd = d.direct ? g->fd_dir : g->fd_buf;
	g->a0 = g->r.off / d.off_align * d.off_align;
	g->a1 = (g->r.off + g->r.len + d.off_align - 1) / d.off_align *
		d.off_align;
	g->next = g->a0;
	/* straight into the caller's image when every read fits it */
	if (g->r.dst && g->a1 <= g->r.dst_len &&
	    !((uintptr_t)(g->r.dst + g->a0) & ((d.direct ? d.mem_align : 1) - 1)))
		g->dst = g->r.dst;
	return 0;
}

static void range_close(struct rrange *g)
{
	if (g->fd_dir >= 0)
		close(g->fd_dir);
	if (g->fd_buf >= 0)
		close(g->fd_buf);
	g->fd_dir = g->fd_buf = -1;
}

/* Ask the source for the next range into g; 1 = got one (opened, or
 * with g->rc set when it could not be), 0 = none left, < 0 = error. */
static int range_next(const struct ckpt_read_src *src, struct rrange *g)
{
	int n;

	memset(g, 0, sizeof *g);
	g->fd_buf = g->fd_dir = -1;
	n = src->next(src->ud, &g->r);
	if (n > 0)
		g->rc = range_open(g);
	return n;
}

/* Where request q (in `slot`) of range g reads to. */
static uint8_t *req_buf(const struct ckpt_io *io, uint32_t slot,
			const struct rreq *q, const struct rrange *g)
{
	return g->dst ? g->dst + q->off : io->bounce + (uint64_t)slot * io->chunk;
}

static int submit_read(struct ckpt_io *io, uint32_t slot, struct rreq *q,
		       const struct rrange *g)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);

	if (!sqe)
		return -EBUSY;
	q->res = INT64_MIN;
	io_uring_prep_read(sqe, g->fd, req_buf(io, slot, q, g),
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

/* Wait for request q (in `slot`) of range g and hand its bytes over. */
static int complete_one(struct ckpt_io *io, struct rreq *reqs, uint32_t slot,
			struct rrange *g)
{
	struct rreq *q = &reqs[slot];
	uint8_t *p = req_buf(io, slot, q, g);
	int rc = 0;

	if (q->res < 0) {
		rc = (int)q->res;
	} else if ((uint64_t)q->res < q->len) {
		uint64_t got = 0;

		/* short (EOF or odd fs): finish buffered */
		rc = pread_full(g->fd_buf, p + q->res, q->len - (uint64_t)q->res,
				q->off + (uint64_t)q->res, &got);
		q->len = (uint64_t)q->res + got;
	}
	if (rc == 0)
		rc = deliver(q, p, &g->r);
	g->ndone++;
	return rc;
}

static int stream_ring(struct ckpt_io *io, const struct ckpt_read_src *src)
{
	struct rreq reqs[CKPT_IO_MAX_DEPTH];
	struct rrange rg[RANGES_MAX];
	uint64_t rhead = 0, rtail = 0; /* ranges [rhead, rtail) are open */
	uint64_t head = 0, nsub = 0;   /* requests [head, nsub) in flight */
	uint64_t failed = UINT64_MAX;  /* the range the error belongs to */
	int rc = 0, more = 1, broken = 0;

	while (rc == 0) {
		/* fill the queue, asking for the next range when one is done */
		while (rc == 0 && nsub - head < io->depth) {
			struct rrange *g = rtail > rhead ? &rg[(rtail - 1) % RANGES_MAX]
							 : NULL;
			uint32_t slot = (uint32_t)(nsub % io->depth);
			struct rreq *q = &reqs[slot];
			int n;

			if (g && g->next < g->a1) {
				q->off = g->next;
				q->len = g->a1 - g->next < io->chunk ? g->a1 - g->next
								      : io->chunk;
				q->range = rtail - 1;
				rc = submit_read(io, slot, q, g);
				if (rc) {
					failed = rtail - 1;
					break;
				}
				g->next += q->len;
				g->nsub++;
				nsub++;
				continue;
			}
			if (!more || rtail - rhead == RANGES_MAX)
				break;
			n = range_next(src, &rg[rtail % RANGES_MAX]);
			if (n <= 0) {
				more = 0;
				rc = n;
				break;
			}
			rtail++;
			if (rg[(rtail - 1) % RANGES_MAX].rc)
				more = 0; /* it fails in its turn, below */
		}
		/* finish the ranges whose every byte reached the sink */
		while (rhead < rtail) {
			struct rrange *g = &rg[rhead % RANGES_MAX];
			int frc;

			if (g->next < g->a1 || g->ndone < g->nsub)
				break;
			if (g->rc) { /* could not be opened */
				if (rc == 0) {
					rc = g->rc;
					failed = rhead;
				}
				break;
			}
			frc = src->finish(src->ud, &g->r, 0);
			range_close(g);
			rhead++;
			if (frc) {
				rc = rc ? rc : frc;
				break;
			}
		}
		if (rc)
			break;
		if (head == nsub) {
			if (!more)
				break; /* every range finished */
			continue; /* a run of empty ranges filled the FIFO */
		}
		{
			uint32_t slot = (uint32_t)(head % io->depth);
			uint64_t gi = reqs[slot].range;

			rc = wait_slot(io, reqs, slot);
			if (rc) {
				broken = 1; /* ring broken: cannot drain */
			} else {
				rc = complete_one(io, reqs, slot,
						  &rg[gi % RANGES_MAX]);
				head++;
			}
			if (rc)
				failed = gi;
		}
	}
	/* drain anything still in flight before the buffers are reused */
	for (; !broken && head < nsub; head++) {
		if (wait_slot(io, reqs, (uint32_t)(head % io->depth)))
			break;
	}
	for (; rhead < rtail; rhead++) {
		struct rrange *g = &rg[rhead % RANGES_MAX];

		src->finish(src->ud, &g->r, rhead == failed ? rc : -ECANCELED);
		range_close(g);
	}
	return rc;
}

/* pread(2) without io_uring: one chunk at a time, one range at a time. */
static int stream_sync(struct ckpt_io *io, const struct ckpt_read_src *src)
{
	struct rrange g;
	int rc = 0, n;

	for (n = range_next(src, &g); n > 0; n = range_next(src, &g)) {
		rc = g.rc;
		for (uint64_t at = g.a0; rc == 0 && at < g.a1;) {
			struct rreq q = { .off = at };
			uint64_t got = 0;

			uint8_t *p = g.dst ? g.dst + at : io->bounce;

			q.len = g.a1 - at < io->chunk ? g.a1 - at : io->chunk;
			rc = pread_full(g.fd_buf, p, q.len, at, &got);
			q.len = got;
			if (rc == 0)
				rc = deliver(&q, p, &g.r);
			if (got == 0)
				break;
			at += got;
		}
		rc = src->finish(src->ud, &g.r, rc);
		range_close(&g);
		if (rc)
			return rc;
	}
	return n;
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

int ckpt__io_read_stream(struct ckpt_io *io, const struct ckpt_read_src *src)
{
	if (!io->bounce) {
		int rc = bounce_alloc(io);

		if (rc)
			return rc;
	}
	return io->have_ring ? stream_ring(io, src) : stream_sync(io, src);
}
