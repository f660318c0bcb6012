/*
 * staging.c - the host staging buffer: allocated once, pre-faulted.
 *
 * A fresh buffer costs a page fault per 4 KiB on first touch, which made a
 * copy into new memory about 15x slower than into faulted memory here.  So
 * the buffer is mapped once, asked for transparent huge pages, and
 * populated up front: MADV_POPULATE_WRITE (Linux 5.14+), else by touching
 * every page with the copy threads.  mlock is tried so that the pages stay
 * resident; failing it (RLIMIT_MEMLOCK) is not an error.  With CUDA the
 * buffer comes from cudaHostAlloc (pinned, so cudaMemcpyAsync from the
 * device is a true DMA) and is touched the same way.
 *
 * A restore at a job's start (spotckpt_reader_read_all_with, before any
 * save) makes the engine's staging memory (ckpt__engine_reserve) and
 * reads the checkpoint's image into it (or keeps the destinations' old
 * bytes there) instead of mapping memory of its own: the process faults
 * that memory in once, not once for the restore and again for the first
 * save.  That memory is mapped lazily (ckpt__staging_alloc_lazy): the
 * restore's reads fault it in on the reading threads while the device
 * works, instead of a populate of the whole buffer before the first read;
 * ckpt__staging_settle then faults in what is left and mlocks it.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

int ckpt__staging_alloc(struct ckpt_staging *s, uint64_t bytes, int use_cuda,
			struct ckpt_pool *pool)
{
	const struct ckpt_cuda_ops *cu = use_cuda ? ckpt__cuda() : NULL;
	struct ckpt_seg seg;
	void *p = NULL;
	int populated = 0;

	memset(s, 0, sizeof *s);
	if (bytes == 0)
		return 0;
	if (cu) {
		if (cu->malloc_host(&p, bytes, 0) != 0 || !p)
			return ckpt__fail(-ENOMEM, "cudaHostAlloc of %llu bytes "
					  "failed", (unsigned long long)bytes);
		s->pinned = 1;
	} else {
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return ckpt__fail(-ENOMEM, "staging: mmap of %llu bytes: %s",
					  (unsigned long long)bytes,
					  strerror(errno));
		madvise(p, bytes, MADV_HUGEPAGE);
		populated = madvise(p, bytes, MADV_POPULATE_WRITE) == 0;
	}
	if (!populated) {
		seg.dst = p;
		seg.src = NULL;
		seg.n = bytes;
		ckpt__pool_start(pool, &seg, 1, NULL, NULL);
		ckpt__pool_wait(pool);
	}
	if (!s->pinned)
		s->locked = mlock(p, bytes) == 0;
	s->base = p;
	s->bytes = bytes;
	return 0;
}

int ckpt__staging_alloc_lazy(struct ckpt_staging *s, uint64_t bytes)
{
	void *p;

	memset(s, 0, sizeof *s);
	if (bytes == 0)
		return 0;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return ckpt__fail(-ENOMEM, "staging: mmap of %llu bytes: %s",
				  (unsigned long long)bytes, strerror(errno));
	madvise(p, bytes, MADV_HUGEPAGE);
	s->base = p;
	s->bytes = bytes;
	s->lazy = 1;
	return 0;
}

void ckpt__staging_settle(struct ckpt_staging *s)
{
	if (!s || !s->base || !s->lazy)
		return;
	/* the pages the restore filled are there; this faults the rest (a
	 * failed restore's, say) so that a save's copy never stalls on them */
	(void)madvise(s->base, s->bytes, MADV_POPULATE_WRITE);
	s->locked = mlock(s->base, s->bytes) == 0;
	s->lazy = 0;
}

void ckpt__staging_free(struct ckpt_staging *s)
{
	if (!s || !s->base)
		return;
	if (s->pinned) {
		const struct ckpt_cuda_ops *cu = ckpt__cuda();

		if (cu)
			cu->free_host(s->base);
	} else {
		if (s->locked)
			munlock(s->base, s->bytes);
		munmap(s->base, s->bytes);
	}
	memset(s, 0, sizeof *s);
}
