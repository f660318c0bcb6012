/*
 * recon.h - the reconciler as the rest of lib/ctl sees it: its thread and
 * passes (reconcile.c), the policies' memory (polcache.c), capacity marks
 * (recon_place.c), node silence (recon_nodes.c) and the event hooks fired
 * after a commit.  Its own files share recon_int.h besides.
 */
#ifndef SR_CTL_RECON_H
#define SR_CTL_RECON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct ctl;
struct store;

/* One job's live policy memory (polcache.c).  Owned by the reconciler
 * thread; `state` is `len` bytes of the policy's state, released with
 * place_state_free(). */
struct ctl_pol {
	int64_t job;
	void *state;
	size_t len;
	int move_pool; /* the spot pool a move of the gang was decided for
			  (maybe_migrate), until its placement; -1 none */
};

/* Release c->hbseen, c->unseen and c->spared (recon_nodes.c). */
void ctl__silence_free(struct ctl *c);

/* Policy state cache (polcache.c, reconciler thread only).  A policy's
 * state may own heap memory (policy_ops.destroy), so it lives here, in
 * this process, and never travels through the database as bytes.
 * ctl__pol_get: the job's entry, or NULL.  ctl__pol_put: take ownership
 * of `state` for the job (releasing any previous one); -ENOMEM leaves
 * `state` with the caller.  ctl__pol_prune: release the entries of jobs
 * not in `live` (ascending ids).  ctl__pol_clear: release all. */
struct ctl_pol *ctl__pol_get(struct ctl *c, int64_t job);
int ctl__pol_put(struct ctl *c, int64_t job, void *state, size_t len);
void ctl__pol_prune(struct ctl *c, const int64_t *live, size_t n);
void ctl__pol_clear(struct ctl *c);

/* Capacity marks (recon_place.c, reconciler thread only).  _mark: a
 * launch in `pool` failed for lack of capacity, or the cloud noticed a
 * node there (reclaiming it); the pool counts as without spot for one
 * policy tick.  _open: the pool sells spot now -
 * the market view says so and no mark holds. */
void ctl__pool_mark(struct ctl *c, int pool);
bool ctl__spot_open(struct ctl *c, int pool);

/* Reconciler (reconcile.c). */
void *ctl__reconcile_main(void *arg);
/* One pass over every job and node; for tests. */
int ctl__reconcile_once(struct ctl *c);

/* Fire event hooks for committed events (reconcile.c). */
void ctl__hooks_run(struct ctl *c, struct store *db);
void ctl__hooks_call(struct ctl *c, const json_t *ev);
void ctl__ticks_call(struct ctl *c, struct store *s);
size_t ctl__hooks_count(void);

#endif
