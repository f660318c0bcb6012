/*
 * undo.c - a restore that fails leaves the caller's tensors as they were.
 *
 * DESIGN.  Data is scattered into the destinations as it is read, hashed
 * on the way (the fused hash + copy of hashcopy.c), so a restore runs at
 * the disk's speed; a tensor's checksum is known only once its last byte
 * has arrived.  Before the first byte of a tensor is written, its
 * destination's current contents are copied aside (ckpt__undo_save);
 * if anything fails - a checksum, a short file, a store error - every
 * tensor saved so far is copied back (ckpt__undo_rollback).
 *
 * Used where "verify first, then place" (placeall.c, a local checkpoint
 * into host memory) does not apply: reads from an object store, CUDA
 * destinations, and SPOTCKPT_RESTORE_KEEP=1 (the bench's side-by-side
 * arm).  Saving the old contents overlaps the reads (it runs in the
 * reading threads while the I/O queue is full) and costs memory
 * bandwidth only; the copy back is paid only when a restore fails.
 * Destinations marked SPOTCKPT_DEST_SCRATCH (buffers the caller allocated
 * for this restore) are not saved.
 *
 * Host destinations read from local files are kept block by block
 * (ckpt__undo_keep_at with ckpt__hash_copy_keep): each 64 KiB of the
 * destination is copied aside just before the read overwrites it, so the
 * cost is spread over the read; a whole-tensor copy at the first byte
 * made the reading thread stop submitting for as long as it took (a
 * 128 MiB tensor: tens of ms of an empty queue).  kept[t] is how much of
 * tensor t is aside from its start; rollback puts that much back.
 *
 * Memory: one buffer as large as the saved destinations, borrowed (the
 * engine's idle staging slot) or mapped here (huge pages where the kernel
 * gives them) and faulted in by the threads that save into it.  CUDA
 * destinations are saved and put back with device copies.
 *
 * Threads: save() may be called from any thread for any tensor; the
 * first caller for a tensor copies it, a concurrent one for the same
 * tensor waits until that copy is done (a remote tensor may be fetched by
 * several ranged GETs at once).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

enum { U_NONE, U_SAVING, U_SAVED };

struct ckpt_undo {
	const struct ckpt_layout *l;
	const struct spotckpt_dest *const *map;
	uint8_t *buf;
	uint64_t bytes;
	int mapped;
	uint64_t *off;          /* per tensor: its place in buf */
	atomic_int *state;      /* per tensor: U_* (whole-tensor saves) */
	uint64_t *kept;         /* per tensor: bytes kept block by block */
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

static int wanted(const struct spotckpt_dest *d, const struct ckpt_tensor *t)
{
	return d && t->nbytes && !(d->flags & SPOTCKPT_DEST_SCRATCH);
}

int ckpt__undo_new(const struct ckpt_layout *l,
		   const struct spotckpt_dest *const *map, uint8_t *borrow,
		   uint64_t borrow_n, struct ckpt_undo **out)
{
	struct ckpt_undo *u = calloc(1, sizeof *u);
	uint64_t total = 0;

	*out = NULL;
	if (!u)
		return -ENOMEM;
	u->l = l;
	u->map = map;
	u->off = calloc(l->nt + 1, sizeof *u->off);
	u->state = calloc(l->nt + 1, sizeof *u->state);
	u->kept = calloc(l->nt + 1, sizeof *u->kept);
	pthread_mutex_init(&u->mu, NULL);
	pthread_cond_init(&u->cv, NULL);
	if (!u->off || !u->state || !u->kept) {
		ckpt__undo_free(u);
		return -ENOMEM;
	}
	for (size_t i = 0; i < l->nt; i++) {
		atomic_init(&u->state[i], U_NONE);
		u->off[i] = total;
		if (wanted(map[i], &l->t[i]))
			total += (l->t[i].nbytes + 63) & ~(uint64_t)63;
	}
	u->bytes = total;
	if (total && borrow && borrow_n >= total) {
		u->buf = borrow;
	} else if (total) {
		void *p = mmap(NULL, total, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED) {
			ckpt__undo_free(u);
			return -ENOMEM;
		}
		madvise(p, total, MADV_HUGEPAGE); /* 512 faults per GiB, not 262144 */
		u->buf = p;
		u->mapped = 1;
	}
	*out = u;
	return 0;
}

int ckpt__undo_save(struct ckpt_undo *u, uint32_t t)
{
	const struct spotckpt_dest *d;
	int expect = U_NONE, rc = 0;

	if (!u || !wanted(u->map[t], &u->l->t[t]) ||
	    atomic_load(&u->state[t]) == U_SAVED)
		return 0;
	if (!atomic_compare_exchange_strong(&u->state[t], &expect, U_SAVING)) {
		/* another thread copies it: wait until it is saved */
		pthread_mutex_lock(&u->mu);
		while (atomic_load(&u->state[t]) != U_SAVED)
			pthread_cond_wait(&u->cv, &u->mu);
		pthread_mutex_unlock(&u->mu);
		return 0;
	}
	d = u->map[t];
	if (d->device == SPOTCKPT_DEV_CUDA) {
		const struct ckpt_cuda_ops *cu = ckpt__cuda();

		if (!cu || cu->memcpy(u->buf + u->off[t], d->ptr,
				      u->l->t[t].nbytes, CKPT_CUDA_D2H))
			rc = -SR_EUNSUPPORTED;
	} else {
		memcpy(u->buf + u->off[t], d->ptr, u->l->t[t].nbytes);
	}
	pthread_mutex_lock(&u->mu);
	/* a failed device copy saved nothing: the tensor must not be
	 * written (the caller stops), and rollback leaves it alone */
	atomic_store(&u->state[t], rc ? U_NONE : U_SAVED);
	pthread_cond_broadcast(&u->cv);
	pthread_mutex_unlock(&u->mu);
	return rc;
}

uint8_t *ckpt__undo_keep_at(struct ckpt_undo *u, uint32_t t, uint64_t off,
			    uint64_t n)
{
	uint64_t k;

	if (!u || !wanted(u->map[t], &u->l->t[t]) ||
	    atomic_load(&u->state[t]) == U_SAVED || n == 0)
		return NULL;
	k = u->kept[t];
	if (off + n <= k)
		return NULL; /* aside already */
	if (off != k) {
		/* out of order (no caller does this): keep everything up to
		 * the range's end now; bytes past kept were never written */
		memcpy(u->buf + u->off[t] + k, (const uint8_t *)u->map[t]->ptr + k,
		       off + n - k);
		u->kept[t] = off + n;
		return NULL;
	}
	u->kept[t] = off + n;
	return u->buf + u->off[t] + off;
}

int ckpt__undo_borrowed(const struct ckpt_undo *u)
{
	return u && u->bytes && !u->mapped;
}

void ckpt__undo_rollback(struct ckpt_undo *u)
{
	if (!u)
		return;
	for (size_t t = 0; t < u->l->nt; t++) {
		const struct spotckpt_dest *d = u->map[t];

		if (atomic_load(&u->state[t]) != U_SAVED) {
			if (u->kept[t]) /* host memory, kept block by block */
				memcpy(d->ptr, u->buf + u->off[t], u->kept[t]);
			u->kept[t] = 0;
			continue;
		}
		if (d->device == SPOTCKPT_DEV_CUDA) {
			const struct ckpt_cuda_ops *cu = ckpt__cuda();

			if (cu)
				cu->memcpy(d->ptr, u->buf + u->off[t],
					   u->l->t[t].nbytes, CKPT_CUDA_H2D);
		} else {
			memcpy(d->ptr, u->buf + u->off[t], u->l->t[t].nbytes);
		}
		atomic_store(&u->state[t], U_NONE);
	}
}

void ckpt__undo_free(struct ckpt_undo *u)
{
	if (!u)
		return;
	if (u->mapped)
		munmap(u->buf, u->bytes);
	pthread_mutex_destroy(&u->mu);
	pthread_cond_destroy(&u->cv);
	free(u->off);
	free(u->state);
	free(u->kept);
	free(u);
}
