/*
 * engine.h - the engine's state, shared by engine.c and save.c (private).
 *
 * Slot state machine (one slot = one staged copy of the whole state):
 *
 *            save (copy done)            writer picks lowest seq
 *   FREE ----------------------> STAGED -------------------------> WRITING
 *     |  save (lazy)                ^  \ coalesce / save_final drop    |
 *     +-----------> COPYING --------+   \-----------> FREE             |
 *                   (pool done hook)                                   |
 *     ^--------------------- commit done / failed / cancelled ---------+
 *
 * Locks: `api` serialises public calls and is held through a tier-1 copy;
 * `mu` guards slots, counters and the writer's state and is never held
 * across a copy or I/O, so stats queries never wait for a save.  Lock
 * order: api before mu.  The writer thread takes only mu.
 */
#ifndef SPOTCKPT_ENGINE_H
#define SPOTCKPT_ENGINE_H

#include "internal.h"

#define CKPT_MAX_SLOTS 8

enum slot_state { SLOT_FREE, SLOT_COPYING, SLOT_STAGED, SLOT_WRITING };

struct slot {
	int state;
	uint64_t seq;               /* order of acceptance */
	int64_t step;
	char *meta;                 /* user metadata, grown as needed */
	size_t meta_cap;
	struct ckpt_layout *l;      /* layout of the image (a reference) */
	uint8_t *base;              /* image in the staging buffer */
	int64_t t_start;            /* mono ns when the copy started */
	int copy_rc;                /* CUDA copy result */
	struct spotckpt *e;         /* back pointer for the pool hook */
};

struct spotckpt {
	char *dir;
	struct ckpt_stripes stripes; /* dir and the others; lanes (set at open) */
	struct spotckpt_opts o;
	pthread_mutex_t api, mu;
	pthread_cond_t cv;

	/* registration (under api) */
	struct ckpt_tensor *reg;
	size_t nreg, capreg;
	int dirty;
	struct ckpt_layout *layout; /* for the current registration */
	struct ckpt_seg *segs;      /* scratch, one per registered tensor */

	/* staging (under api; slot fields under mu) */
	struct ckpt_staging stg;
	uint64_t slot_bytes;
	int nslots;
	struct slot slots[CKPT_MAX_SLOTS];
	struct ckpt_pool *pool;
	int lazy_slot;              /* slot being copied lazily, or -1 */
	struct ckpt_prefault *pf;   /* spotckpt_prefault's thread, or NULL */

	/* writer (under mu) */
	pthread_t writer;
	int writer_started, stop;
	uint64_t seq;               /* last seq handed out */
	uint64_t accepted;          /* seq of the newest accepted save */
	uint64_t finished;          /* seq of the newest finished save */
	int last_rc;                /* result of that save */
	char last_msg[SR_ERR_MSG_MAX];
	atomic_int cancel;
	/* spotckpt_abandon_final (under mu): the steps given up (the newest
	 * CKPT_ABANDON_MAX, -1 unused); the step of the save_final in
	 * progress, -1, whose write final_cancel stops; the step the writer
	 * is writing, -1, and whether an abandon set `cancel` for it */
	int64_t abandoned[4];
	int64_t final_step, writing_step;
	int cancel_by_abandon;
	atomic_int final_cancel;
	struct ckpt_io *io;         /* the writer's; its rate cap under mu */
	struct ckpt_place place;    /* background placement (writes under mu) */

	/* CUDA (under api) */
	const struct ckpt_cuda_ops *cu;
	void *stream, *event;

	struct spotckpt_stats st;   /* under mu */
	struct spotckpt_write_profile wprof; /* last commit's, under mu */
	int64_t skipped_step;       /* newest save dropped by back-pressure
				     * (under mu), -1 */
	/* the newest final save put straight into the store
	 * (SPOTCKPT_FINAL_STORE_ONLY): its step, -1, and its manifest
	 * (malloc'd); under mu */
	int64_t stored_step;
	char *stored_manifest;
	size_t stored_mlen;
	/* and its image, for spotckpt_final_keep (final_keep.c): the slot's
	 * layout (a reference, or NULL) and seq; the image is slots[0]'s
	 * until a later save takes that slot (its seq then differs) */
	struct ckpt_layout *stored_layout;
	uint64_t stored_seq;
	void *up;                   /* tier 3: the backend's uploader
				     * (backend.h) or NULL; set under api and
				     * mu, freed by close */
};

/* save.c */
/* Was `step` given up by spotckpt_abandon_final?  (mu held) */
int ckpt__abandoned(const struct spotckpt *e, int64_t step);
void ckpt__writer_finish(struct spotckpt *e, struct slot *s, int rc,
			 const struct ckpt_commit_res *res,
			 const struct sr_err *err);
/* final_store.c: a final save's image (slot s, copied) into the store,
 * tier 2 never written (api held; SPOTCKPT_FINAL_STORE_ONLY).  Fills
 * res (stored = 1) and keeps the manifest for spotckpt_final_manifest. */
int ckpt__final_to_store(struct spotckpt *e, struct slot *s,
			 int64_t deadline_mono_ns, struct ckpt_commit_res *res,
			 struct sr_err *err);
/* prof.c: the public profile of a commit. */
void ckpt__prof_publish(const struct ckpt_commit_res *res,
			struct spotckpt_write_profile *out);
int ckpt__engine_wait_staged(struct spotckpt *e);   /* api held */
/* api held: staging memory of at least `bytes` for a restore to borrow
 * when e has none and no staging budget (save.c), mapped lazily (the
 * restore faults it in; ckpt__staging_settle after it); 0 or -ENOMEM. */
int ckpt__engine_reserve(struct spotckpt *e, uint64_t bytes);
int ckpt__engine_wait_all(struct spotckpt *e);      /* api held */

/* prefault.c: stop and join spotckpt_prefault's thread, if any (api
 * held); the staging stays lazy where it had not reached. */
void ckpt__prefault_stop(struct spotckpt *e);

/* remote.c: tier 3 through the backend (no-ops without one) */
void ckpt__remote_offer(struct spotckpt *e, int64_t step); /* mu held */
/* Wait up to timeout_ms for the newest committed step to be in the
 * store; the error (errmsg) says which step is where. */
int ckpt__remote_drain(struct spotckpt *e, int64_t timeout_ms);
void ckpt__remote_stop(struct spotckpt *e);
/* Where spotckpt_restore reads from: the directory, or the store when it
 * holds a newer committed step.  A store that does not answer is an
 * error. */
int ckpt__restore_source(struct spotckpt *e, int64_t max_step,
			 const char **src);

#endif
