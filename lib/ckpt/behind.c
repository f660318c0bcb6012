/*
 * behind.c - a verified restore placed behind its reads: each tensor goes
 * into its destination as soon as its checksum matched, while the reads
 * of the next ones go on, and comes back out if the restore fails later.
 * Not the default (SPOTCKPT_RESTORE_BEHIND=1 asks for it): on the 2-core
 * VM, quiet, the swaps took 0.5 CPU-s per GiB from the reads and the
 * restore ran at 0.55 of a raw read against verify first's 0.75
 * (docs/notes/checkpoint.md); a machine with cores to spare may differ.
 *
 * DESIGN.  Verify first (placeall.c) writes no destination before the
 * last tensor matched, so its copy of the whole state comes after the
 * device is done: on the 2-core VM 0.055-0.06 s per GiB quiet, a fifth
 * of a restore that the raw read it is compared with does not have
 * (docs/notes/checkpoint.md, "Where a verified restore's time goes").
 * Here placer threads take each tensor the reading threads verified
 * (ckpt__behind_push, from the sink, after the tensor's XXH3 matched in
 * the image) and SWAPS it with its destination, 64 bytes at a time with
 * streaming stores: the destination gets the checked bytes, the image
 * gets the destination's old ones.  What is left when the last read is
 * done - tensors the placer had not reached yet, and every tensor's
 * unaligned edges (below) - is copied then, on every core
 * (ckpt__behind_finish with ok = 1; nothing needs keeping any more).  If
 * the restore fails instead (ok = 0), the placer stops between two
 * pieces and every byte it swapped is copied back from the image, so
 * the destinations hold what they held before the call, as issue 23
 * asks; a tensor that did not match was never written at all, unlike
 * the keep (undo.c) which writes bytes before they are checked.
 *
 * Edges.  A tensor's bytes in the file need not start or end on the
 * O_DIRECT alignment (<= 4096, dio.c), and a job's reads are widened to
 * it, so the page holding the end of one tensor can be read again into
 * the image by the job that starts at the next tensor - after the first
 * tensor was swapped, which would overwrite the old bytes kept there.
 * So only a tensor's interior - the file's 4096-byte pages wholly inside
 * it, never read by another job - is swapped; its head and tail (under
 * 4 KiB each) are copied at the finish, after every read.
 *
 * Threads: the reading threads push (any order, any thread); up to 4
 * placer threads (one per core) swap, at the process's priority: a
 * placer at SCHED_IDLE or nice 19 got so little CPU on a busy machine
 * that the finish waited on the piece it held for long (a TSan test took
 * minutes); the reading threads sleep on the device most of the time
 * and, woken, preempt a placer.  A tensor's interior is claimed in
 * pieces through its cursor
 * (claimed[t]), by its placer or, at the finish, by the caller, so the
 * finish never waits for a starved placer's tensor, only for the piece
 * it is in.  mu guards the queue and the state.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

/* Claimed at a time: the finish waits for at most one piece per placer
 * (a 256 KiB swap is about 0.05 ms of CPU). */
#define BEHIND_PIECE (256ull << 10)
#define BEHIND_EDGE CKPT_IMG_ALIGN
#define PLACERS_MAX 4

struct ckpt_behind {
	const struct ckpt_layout *l;
	const struct spotckpt_dest *const *map;
	uint8_t *stage;
	uint64_t *base;      /* image offset of each shard */
	uint32_t *q;         /* verified tensors not yet taken */
	size_t qhead, qtail;
	/* interior bytes claimed, per tensor, from its start: every claimed
	 * piece is placed by whoever claimed it before that one returns */
	atomic_uint_fast64_t *claimed;
	struct ckpt_place_seg *segs; /* finish's list, made at the start
				      * so that finishing cannot fail */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_int state;    /* BH_RUN, BH_FINAL (all matched), BH_ABORT */
	int busy;            /* placers holding a tensor */
	int nth;
	pthread_t th[PLACERS_MAX];
};

enum { BH_RUN, BH_FINAL, BH_ABORT };

/* Tensor t's interior: [*lo, *hi) of its bytes (0 <= lo <= hi <= n). */
static void interior(const struct ckpt_tensor *x, uint64_t *lo, uint64_t *hi)
{
	uint64_t a = (x->offset + BEHIND_EDGE - 1) / BEHIND_EDGE * BEHIND_EDGE;
	uint64_t b = (x->offset + x->nbytes) / BEHIND_EDGE * BEHIND_EDGE;

	*lo = *hi = 0;
	if (b > a) {
		*lo = a - x->offset;
		*hi = b - x->offset;
	}
}

static uint8_t *img_of(const struct ckpt_behind *b, uint32_t t)
{
	const struct ckpt_tensor *x = &b->l->t[t];

	return b->stage + b->base[x->shard] + x->offset;
}

static int is_scratch(const struct spotckpt_dest *d)
{
	return (d->flags & SPOTCKPT_DEST_SCRATCH) != 0;
}

/* Place tensor t's interior piece by piece until none is left to claim
 * or the restore failed. */
static void place_tensor(struct ckpt_behind *b, uint32_t t)
{
	uint8_t *img = img_of(b, t), *dst = b->map[t]->ptr;
	int scratch = is_scratch(b->map[t]);
	uint64_t lo, hi;

	interior(&b->l->t[t], &lo, &hi);
	for (;;) {
		int st = atomic_load(&b->state);
		uint64_t at, n;

		if (st == BH_ABORT)
			return;
		at = atomic_fetch_add(&b->claimed[t], BEHIND_PIECE);
		if (at >= hi - lo)
			return;
		n = hi - lo - at < BEHIND_PIECE ? hi - lo - at : BEHIND_PIECE;
		at += lo;
		if (scratch || st == BH_FINAL) /* nothing to keep */
			ckpt__copy_stream(dst + at, img + at, n);
		else
			ckpt__swap_stream(dst + at, img + at, n);
	}
}

static void *placer_main(void *arg)
{
	struct ckpt_behind *b = arg;

	pthread_mutex_lock(&b->mu);
	for (;;) {
		uint32_t t;

		while (atomic_load(&b->state) == BH_RUN && b->qhead == b->qtail)
			pthread_cond_wait(&b->cv, &b->mu);
		if (atomic_load(&b->state) != BH_RUN)
			break; /* the finish takes what is left */
		t = b->q[b->qhead++];
		b->busy++;
		pthread_mutex_unlock(&b->mu);
		place_tensor(b, t);
		pthread_mutex_lock(&b->mu);
		b->busy--;
		pthread_cond_broadcast(&b->cv); /* ckpt__behind_wait_idle */
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

int ckpt__behind_start(const struct ckpt_layout *l,
		       const struct spotckpt_dest *const *map, uint8_t *stage,
		       struct ckpt_behind **out)
{
	struct ckpt_behind *b = calloc(1, sizeof *b);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int want = ncpu < 1 ? 1 : ncpu > PLACERS_MAX ? PLACERS_MAX : (int)ncpu;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	atomic_init(&b->state, BH_RUN);
	b->l = l;
	b->map = map;
	b->stage = stage;
	b->base = calloc(l->ns + 1, sizeof *b->base);
	b->q = calloc(l->nt + 1, sizeof *b->q);
	b->claimed = calloc(l->nt + 1, sizeof *b->claimed);
	/* at most a head, the rest of the interior and a tail per tensor */
	b->segs = calloc(3 * (size_t)l->nt + 1, sizeof *b->segs);
	if (!b->base || !b->q || !b->claimed || !b->segs) {
		ckpt__behind_free(b);
		return -ENOMEM;
	}
	for (size_t t = 0; t < l->nt; t++)
		atomic_init(&b->claimed[t], 0);
	for (size_t s = 1; s < l->ns; s++)
		b->base[s] = b->base[s - 1] + ckpt__shard_image_bytes(&l->s[s - 1]);
	/* no thread: everything is placed at the finish (verify first) */
	for (int i = 0; i < want; i++) {
		if (pthread_create(&b->th[b->nth], NULL, placer_main, b) == 0)
			b->nth++;
	}
	*out = b;
	return 0;
}

void ckpt__behind_push(struct ckpt_behind *b, uint32_t t)
{
	uint64_t lo, hi;

	if (!b || !b->map[t])
		return;
	interior(&b->l->t[t], &lo, &hi);
	if (hi == lo)
		return; /* all edge: copied at the finish */
	pthread_mutex_lock(&b->mu);
	if (b->qtail < b->l->nt) /* each tensor is verified once */
		b->q[b->qtail++] = t;
	pthread_cond_broadcast(&b->cv); /* a placer (and wait_idle) */
	pthread_mutex_unlock(&b->mu);
}

void ckpt__behind_wait_idle(struct ckpt_behind *b)
{
	pthread_mutex_lock(&b->mu);
	while (b->nth && atomic_load(&b->state) == BH_RUN &&
	       (b->qhead < b->qtail || b->busy))
		pthread_cond_wait(&b->cv, &b->mu);
	pthread_mutex_unlock(&b->mu);
}

static void stop(struct ckpt_behind *b, int state)
{
	pthread_mutex_lock(&b->mu);
	atomic_store(&b->state, state);
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

static void join_all(struct ckpt_behind *b)
{
	for (int i = 0; i < b->nth; i++)
		pthread_join(b->th[i], NULL);
	b->nth = 0;
}

/* Put back what the placers swapped: the image holds the old bytes of
 * each tensor's claimed interior (every claimed piece was placed: the
 * placers are joined). */
static void roll_back(struct ckpt_behind *b)
{
	for (uint32_t t = 0; t < b->l->nt; t++) {
		uint64_t lo, hi, n = atomic_load(&b->claimed[t]);

		if (!b->map[t] || !n || is_scratch(b->map[t]))
			continue;
		interior(&b->l->t[t], &lo, &hi);
		n = n < hi - lo ? n : hi - lo;
		ckpt__copy_stream((uint8_t *)b->map[t]->ptr + lo, img_of(b, t) + lo,
				  n);
	}
}

void ckpt__behind_finish(struct ckpt_behind *b, int ok, uint64_t *behind)
{
	const struct ckpt_layout *l = b->l;
	struct ckpt_place_seg *segs = b->segs;
	size_t n = 0;

	if (behind)
		*behind = 0;
	stop(b, ok ? BH_FINAL : BH_ABORT);
	if (!ok) {
		join_all(b);
		roll_back(b);
		return;
	}
	/* every tensor matched: copy what the placers have not claimed, on
	 * every core; a placer ends the piece it holds (copying from now) */
	for (uint32_t t = 0; t < l->nt; t++) {
		const struct ckpt_tensor *x = &l->t[t];
		uint8_t *dst = b->map[t] ? b->map[t]->ptr : NULL, *img;
		uint64_t lo, hi, at;

		if (!dst || !x->nbytes)
			continue;
		img = img_of(b, t);
		interior(x, &lo, &hi);
		/* claim the rest of the interior: placers stop at it */
		at = atomic_fetch_add(&b->claimed[t], hi - lo);
		at = at < hi - lo ? at : hi - lo;
		if (behind)
			*behind += at;
		if (lo > 0)
			segs[n++] = (struct ckpt_place_seg){ dst, img, lo };
		if (lo + at < hi)
			segs[n++] = (struct ckpt_place_seg){ dst + lo + at,
							     img + lo + at,
							     hi - lo - at };
		if (hi < x->nbytes)
			segs[n++] = (struct ckpt_place_seg){ dst + hi, img + hi,
							     x->nbytes - hi };
	}
	ckpt__place_segs(segs, n);
	join_all(b);
}

void ckpt__behind_free(struct ckpt_behind *b)
{
	if (!b)
		return;
	if (b->nth) { /* finish was not called: stop, put nothing back */
		stop(b, BH_ABORT);
		join_all(b);
	}
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
	free(b->segs);
	free(b->base);
	free(b->q);
	free(b->claimed);
	free(b);
}
