/*
 * placeall.c - a verified restore's last step: the checked image into the
 * caller's tensors.
 *
 * DESIGN.  A restore must leave the caller's tensors as they were when
 * it fails (issue 23).  reader.c does it one of three ways:
 *
 *  - verify first (the default for host destinations of a local
 *    checkpoint): every wanted byte is read into an image of the shard
 *    files - the engine's idle staging slot, or memory mapped for the
 *    read - and hashed there, straight from the device (the reads go
 *    into the image itself, ioread.c); no destination is touched until
 *    every tensor has matched its checksum.  Then the image is copied
 *    into the destinations (ckpt__place_all), on several threads with
 *    streaming stores.  A copy cannot fail, so once it starts the
 *    restore succeeds; before it, nothing was written.
 *  - placed behind the reads (behind.c, SPOTCKPT_RESTORE_BEHIND=1): as
 *    verify first, but each tensor that matched is swapped into its
 *    destination while the next ones are read, and swapped back if a
 *    later one fails; what is left at the end is copied by
 *    ckpt__place_segs here.  Slower than verify first on 2 cores (the
 *    swap's CPU competes with the reads).
 *  - keep (undo.c; tier-3 reads, CUDA destinations, or
 *    SPOTCKPT_RESTORE_KEEP=1): data goes to the destinations as it is
 *    read, each block's old bytes copied aside first and put back on
 *    failure.
 *
 * What each costs per byte restored (memory passes besides the device's
 * own write): verify first, the hash's read during the reads, then one
 * read and one write after the last read; keep, the hash's read, the
 * copy's write, and the keep's read and write, all during the reads
 * (docs/notes/checkpoint.md, "Verify first, then place").
 *
 * Threads: ckpt__place_all splits the concatenation of the tensors into
 * 8 MiB pieces taken from a shared cursor by up to PLACE_THREADS_MAX
 * threads (the calling one included), so a tensor larger than the rest
 * is shared too.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

#define PLACE_PIECE (8ull << 20)
#define PLACE_THREADS_MAX 4

uint64_t ckpt__shard_image_bytes(const struct ckpt_shard *sh)
{
	return (sh->file_bytes + CKPT_IMG_ALIGN - 1) &
	       ~(uint64_t)(CKPT_IMG_ALIGN - 1);
}

uint64_t ckpt__image_bytes(const struct ckpt_layout *l)
{
	uint64_t n = 0;

	for (size_t s = 0; s < l->ns; s++)
		n += ckpt__shard_image_bytes(&l->s[s]);
	return n;
}

struct place_job {
	const struct ckpt_place_seg *segs;
	size_t nsegs;
	uint64_t total;
	atomic_uint_fast64_t next; /* first byte not yet taken */
};

static void place_piece(const struct place_job *pj, uint64_t lo, uint64_t hi)
{
	uint64_t base = 0;

	for (size_t i = 0; i < pj->nsegs && base < hi; i++) {
		const struct ckpt_place_seg *g = &pj->segs[i];
		uint64_t sb = base, se = base + g->n;

		base = se;
		if (se <= lo)
			continue;
		uint64_t a = sb > lo ? sb : lo, b = se < hi ? se : hi;

		ckpt__copy_stream(g->dst + (a - sb), g->src + (a - sb), b - a);
	}
}

static void *place_thread(void *arg)
{
	struct place_job *pj = arg;

	for (;;) {
		uint64_t lo = atomic_fetch_add(&pj->next, PLACE_PIECE);

		if (lo >= pj->total)
			return NULL;
		place_piece(pj, lo, lo + PLACE_PIECE < pj->total ?
				    lo + PLACE_PIECE : pj->total);
	}
}

void ckpt__place_segs(const struct ckpt_place_seg *segs, size_t n)
{
	struct place_job pj = { .segs = segs, .nsegs = n };
	pthread_t th[PLACE_THREADS_MAX];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nth = 0, want;

	for (size_t i = 0; i < n; i++)
		pj.total += segs[i].n;
	atomic_init(&pj.next, 0);
	want = ncpu < 1 ? 1 : ncpu > PLACE_THREADS_MAX ? PLACE_THREADS_MAX
						       : (int)ncpu;
	if ((uint64_t)want > (pj.total + PLACE_PIECE - 1) / PLACE_PIECE)
		want = (int)((pj.total + PLACE_PIECE - 1) / PLACE_PIECE);
	for (int i = 1; i < want; i++) {
		if (pthread_create(&th[nth], NULL, place_thread, &pj) == 0)
			nth++;
	}
	place_thread(&pj); /* this thread too; any piece left is done here */
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
}

int ckpt__place_all(const struct ckpt_layout *l,
		    const struct spotckpt_dest *const *map, const uint8_t *stage)
{
	struct ckpt_place_seg *segs = calloc(l->nt + 1, sizeof *segs);
	uint64_t *base = calloc(l->ns + 1, sizeof *base);
	size_t n = 0;

	if (!segs || !base) {
		free(segs);
		free(base);
		return -ENOMEM;
	}
	for (size_t s = 1; s < l->ns; s++)
		base[s] = base[s - 1] + ckpt__shard_image_bytes(&l->s[s - 1]);
	for (size_t t = 0; t < l->nt; t++) {
		const struct ckpt_tensor *x = &l->t[t];

		if (!map[t] || !x->nbytes)
			continue;
		segs[n++] = (struct ckpt_place_seg){
			.dst = map[t]->ptr, .n = x->nbytes,
			.src = stage + base[x->shard] + x->offset };
	}
	ckpt__place_segs(segs, n);
	free(segs);
	free(base);
	return 0;
}
