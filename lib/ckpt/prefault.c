/*
 * prefault.c - the staging memory of the coming restore, faulted in on a
 * thread before the restore is called (spotckpt_prefault).
 *
 * A job's first restore reads into staging memory the process has never
 * touched.  On a VM whose freed memory goes back to its host (free page
 * reporting: the 2-vCPU development VM, a Firecracker guest) the first
 * touch of each 4 KiB costs a fault in the host as well, 1-2.5 CPU-s per
 * GiB, and the restore's reading threads pay it (docs/notes/checkpoint.md,
 * session 23).  Nothing in the restore can avoid it: the all-or-nothing
 * promise needs a GiB beside the destinations for a GiB restored.  What
 * can move is when: a job that opens its engine before it builds its
 * model lets this thread fault the memory in meanwhile.  The memory is
 * the engine's lazily mapped staging (ckpt__engine_reserve), sized to the
 * newest checkpoint as the restore would size it; the restore, a save or
 * close stops the thread (ckpt__prefault_stop) and the reads fault in
 * whatever it had not reached.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "engine.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define PREFAULT_CHUNK (8ull << 20) /* the stop is seen within one chunk */

struct ckpt_prefault {
	pthread_t th;
	uint8_t *base;
	uint64_t bytes;
	atomic_int stop;
};

static void *prefault_thread(void *arg)
{
	struct ckpt_prefault *pf = arg;

	for (uint64_t off = 0; off < pf->bytes && !atomic_load(&pf->stop);
	     off += PREFAULT_CHUNK) {
		uint64_t n = pf->bytes - off < PREFAULT_CHUNK ? pf->bytes - off
							      : PREFAULT_CHUNK;

		if (madvise(pf->base + off, n, MADV_POPULATE_WRITE) != 0)
			break; /* an old kernel: the reads fault it in */
	}
	return NULL;
}

void ckpt__prefault_stop(struct spotckpt *e)
{
	struct ckpt_prefault *pf = e->pf;

	if (!pf)
		return;
	atomic_store(&pf->stop, 1);
	pthread_join(pf->th, NULL);
	free(pf);
	e->pf = NULL;
}

SPOTCKPT_API int spotckpt_prefault(struct spotckpt *e, int64_t step)
{
	struct spotckpt_reader *r = NULL;
	struct ckpt_prefault *pf = NULL;
	int rc;

	if (!e)
		return ckpt__fail(-EINVAL, "prefault: NULL engine");
	rc = spotckpt_reader_open(e->dir, step, -1, 0, &r);
	if (rc)
		return rc; /* its message: no checkpoint, or why not */
	pthread_mutex_lock(&e->api);
	if (e->pf || e->stg.base || e->o.staging_bytes)
		goto out; /* under way, or memory there (or sized by a save) */
	rc = ckpt__engine_reserve(e, ckpt__reader_borrow_need(r));
	if (rc) {
		rc = ckpt__fail(rc, "prefault: no memory for the staging of "
				"step %" PRId64, spotckpt_reader_step(r));
		goto out;
	}
	pf = calloc(1, sizeof *pf);
	if (!pf)
		goto out; /* best effort: the restore faults it in */
	pf->base = e->stg.base;
	pf->bytes = e->stg.bytes;
	atomic_init(&pf->stop, 0);
	if (pthread_create(&pf->th, NULL, prefault_thread, pf) != 0) {
		free(pf);
		goto out;
	}
	e->pf = pf; /* owned by e until ckpt__prefault_stop */
out:
	pthread_mutex_unlock(&e->api);
	spotckpt_reader_close(r);
	return rc;
}
