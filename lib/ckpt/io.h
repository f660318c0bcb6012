/*
 * io.h - the io_uring context shared by iowrite.c and ioread.c (private).
 */
#ifndef SPOTCKPT_IO_H
#define SPOTCKPT_IO_H

#include <liburing.h>
#include <stdint.h>

#define CKPT_IO_MAX_DEPTH 64

struct ckpt_io {
	struct io_uring ring;
	int have_ring;
	uint32_t depth;     /* requests in flight */
	uint32_t chunk;     /* bytes per request, multiple of 4096 */
	uint8_t *bounce;    /* reads: mmap'd, huge pages when the kernel can,
			     * or the caller's (bounce_ext) */
	uint64_t bounce_bytes;
	int bounce_ext;     /* bounce is borrowed: not unmapped by io_free */
	uint64_t max_bytes_per_s; /* writes: rate cap, 0 = none */
	const uint8_t *reg_base;  /* writes: registered memory, or NULL */
	uint64_t reg_len;         /* its bytes, in CKPT_IO_REG_PIECE pieces */
	int fixed_files;          /* a sparse table of CKPT_IO_FILE_SLOTS */
};

/* io_uring takes registered buffers of at most 1 GiB each. */
#define CKPT_IO_REG_PIECE (1ull << 30)
/* Files of a write batch take slot k % CKPT_IO_FILE_SLOTS of the ring's
 * file table; at most depth (<= 64) files have writes in flight. */
#define CKPT_IO_FILE_SLOTS 128

int ckpt__pwrite_all(int fd, const uint8_t *p, uint64_t n, uint64_t off);

#endif
