/*
 * save.c - the save paths: tier-1 copy into a staging slot, back-pressure,
 * lazy mode, and the synchronous final save.
 *
 * Hot path of spotckpt_save (nothing allocated unless the registration
 * changed or the metadata outgrew its buffer):
 *   1. wait for the previous lazy copy (it reads the same tensors);
 *   2. pick a slot: a FREE one; else, by back-pressure mode, wait for one
 *      (BLOCK), take the newest STAGED one (COALESCE), or drop this save
 *      (SKIP, and COALESCE when nothing is pending);
 *   3. copy the shard headers, queue CUDA tensors on the engine's stream,
 *      and split the host tensors between the copy threads;
 *   4. return at once (lazy) or when the copy is done.  The pool's done
 *      hook marks the slot STAGED and wakes the writer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "common/log.h"
#include "common/timeutil.h"

static int ensure_layout(struct spotckpt *e)
{
	struct ckpt_layout *l;
	struct ckpt_seg *segs;
	uint64_t shard_bytes;

	if (!e->dirty && e->layout)
		return 0;
	if (e->nreg == 0)
		return ckpt__fail(-SR_ECONFLICT, "save: no tensor registered");
	shard_bytes = e->o.shard_bytes;
	if (!shard_bytes && e->stripes.n > 1) { /* a shard or more per disk */
		uint64_t state = 0;

		for (size_t i = 0; i < e->nreg; i++)
			state += e->reg[i].nbytes;
		shard_bytes = ckpt__stripes_shard_bytes(state, e->stripes.n);
	}
	l = ckpt__layout_build(e->reg, e->nreg, shard_bytes);
	if (!l)
		return ckpt__fail(-ENOMEM, "save: out of memory building layout");
	segs = realloc(e->segs, e->nreg * sizeof *segs);
	if (!segs) {
		ckpt__layout_unref(l);
		return -ENOMEM;
	}
	e->segs = segs;
	ckpt__layout_unref(e->layout);
	e->layout = l;
	e->dirty = 0;
	pthread_mutex_lock(&e->mu);
	e->st.state_bytes = l->state_bytes;
	pthread_mutex_unlock(&e->mu);
	return 0;
}

static int all_free(struct spotckpt *e)
{
	for (int i = 0; i < e->nslots; i++) {
		if (e->slots[i].state != SLOT_FREE)
			return 0;
	}
	return 1;
}

/* (Re)allocate the staging buffer when the layout no longer fits. */
static int ensure_staging(struct spotckpt *e)
{
	uint64_t need = e->layout->image_bytes, budget = e->o.staging_bytes;
	int want_pin = e->layout->has_cuda, n = 1, rc;

	ckpt__prefault_stop(e);
	if (e->stg.base && need <= e->slot_bytes && (!want_pin || e->stg.pinned)) {
		ckpt__staging_settle(&e->stg); /* prefaulted, no restore came */
		return 0;
	}
	if (budget && need > budget)
		return ckpt__fail(-ENOBUFS, "save: the state needs %" PRIu64
				  " staging bytes but the budget is %" PRIu64,
				  need, budget);
	if (budget) {
		uint64_t k = budget / need;

		n = k > CKPT_MAX_SLOTS ? CKPT_MAX_SLOTS : (int)k;
	}
	pthread_mutex_lock(&e->mu);
	while (!all_free(e))
		pthread_cond_wait(&e->cv, &e->mu);
	/* under mu: the writer thread scans the slots (found by TSan) */
	e->slot_bytes = 0;
	e->nslots = 0;
	/* the writer is idle: its rings must let go of the old pages */
	ckpt__io_unregister_buffer(e->io);
	ckpt__lanes_unregister(e->stripes.lanes);
	pthread_mutex_unlock(&e->mu);
	ckpt__staging_free(&e->stg);
	rc = ckpt__staging_alloc(&e->stg, need * (uint64_t)n, want_pin, e->pool);
	pthread_mutex_lock(&e->mu);
	if (rc == 0) {
		e->slot_bytes = need;
		e->nslots = n;
		for (int i = 0; i < n; i++) {
			e->slots[i].base = e->stg.base + need * (uint64_t)i;
			e->slots[i].e = e;
		}
	}
	e->st.staging_bytes = e->stg.bytes;
	pthread_mutex_unlock(&e->mu);
	return rc;
}

int ckpt__engine_reserve(struct spotckpt *e, uint64_t bytes)
{
	int rc;

	/* a staging budget chooses its own slots: left to the first save */
	if (e->stg.base || e->o.staging_bytes || bytes == 0)
		return 0;
	bytes = (bytes + (2ull << 20) - 1) & ~((2ull << 20) - 1);
	rc = ckpt__staging_alloc_lazy(&e->stg, bytes); /* the restore fills it */
	pthread_mutex_lock(&e->mu);
	if (rc == 0) {
		e->slot_bytes = bytes;
		e->nslots = 1;
		e->slots[0].base = e->stg.base;
		e->slots[0].e = e;
	}
	e->st.staging_bytes = e->stg.bytes;
	pthread_mutex_unlock(&e->mu);
	return rc;
}

SPOTCKPT_API int spotckpt_prepare(struct spotckpt *e)
{
	int rc;

	if (!e)
		return ckpt__fail(-EINVAL, "prepare: NULL engine");
	pthread_mutex_lock(&e->api);
	ckpt__engine_wait_staged(e);
	rc = ensure_layout(e);
	if (rc == 0)
		rc = ensure_staging(e);
	pthread_mutex_unlock(&e->api);
	return rc;
}

static int check_meta(const char *meta)
{
	json_error_t je;
	json_t *v;
	int ok;

	if (!meta || !*meta)
		return 0;
	v = json_loads(meta, 0, &je);
	ok = v && json_is_object(v);
	json_decref(v);
	if (!ok)
		return ckpt__fail(-EINVAL, "metadata: expected a JSON object%s%s",
				  v ? "" : ": ", v ? "" : je.text);
	return 0;
}

static int slot_set_meta(struct slot *s, const char *meta)
{
	size_t n = strlen(meta && *meta ? meta : "{}") + 1;

	if (n > s->meta_cap) {
		char *p = realloc(s->meta, n);

		if (!p)
			return -ENOMEM;
		s->meta = p;
		s->meta_cap = n;
	}
	memcpy(s->meta, meta && *meta ? meta : "{}", n);
	return 0;
}

/* Pool hook: the copy of slot s is done (runs in a copy thread). */
static void copy_done(void *ud)
{
	struct slot *s = ud;
	struct spotckpt *e = s->e;
	int rc = 0;

	if (s->l->has_cuda) {
		rc = e->cu->stream_sync(e->stream);
		if (rc)
			rc = -SR_EUNSUPPORTED;
	}
	pthread_mutex_lock(&e->mu);
	s->copy_rc = rc;
	e->st.last_copy_ns = sr_time_mono_ns() - s->t_start;
	if (rc) {
		s->state = SLOT_FREE;
		ckpt__layout_unref(s->l);
		s->l = NULL;
		e->st.saves_failed++;
		e->last_rc = rc;
		snprintf(e->last_msg, sizeof e->last_msg, "CUDA copy failed");
	} else if (s->state == SLOT_COPYING) {
		s->state = SLOT_STAGED;
		e->st.saves_staged++;
	}
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

/* Copy the registered state into slot s; returns without waiting. */
static int start_copy(struct spotckpt *e, struct slot *s, ckpt_done_fn done)
{
	const struct ckpt_layout *l = s->l;
	size_t n = 0;

	for (size_t i = 0; i < l->ns; i++)
		memcpy(s->base + l->s[i].img_off, l->s[i].header,
		       l->s[i].data_start);
	if (l->has_cuda) {
		int rc = e->cu->event_record(e->event, NULL);

		if (rc == 0)
			rc = e->cu->stream_wait_event(e->stream, e->event, 0);
		for (size_t i = 0; rc == 0 && i < l->nt; i++) {
			if (l->t[i].device == SPOTCKPT_DEV_CUDA && l->t[i].nbytes)
				rc = e->cu->memcpy_async(s->base + l->t[i].img_off,
							 l->t[i].ptr, l->t[i].nbytes,
							 CKPT_CUDA_D2H, e->stream);
		}
		if (rc) {
			e->cu->stream_sync(e->stream); /* nothing left in flight */
			return ckpt__fail(-SR_EUNSUPPORTED, "save: cudaMemcpyAsync:"
					  " %s", e->cu->get_error_string(rc));
		}
	}
	for (size_t i = 0; i < l->nt; i++) {
		if (l->t[i].device != SPOTCKPT_DEV_CPU || !l->t[i].nbytes)
			continue;
		e->segs[n].dst = s->base + l->t[i].img_off;
		e->segs[n].src = l->t[i].ptr;
		e->segs[n].n = l->t[i].nbytes;
		n++;
	}
	ckpt__pool_start(e->pool, e->segs, n, done, s);
	return 0;
}

int ckpt__engine_wait_staged(struct spotckpt *e)
{
	int rc;

	if (e->lazy_slot < 0)
		return 0;
	ckpt__pool_wait(e->pool);
	rc = e->slots[e->lazy_slot].copy_rc;
	e->lazy_slot = -1;
	return rc;
}

int ckpt__engine_wait_all(struct spotckpt *e)
{
	uint64_t target;
	int rc, busy;

	ckpt__engine_wait_staged(e);
	pthread_mutex_lock(&e->mu);
	target = e->accepted;
	do {
		busy = 0;
		for (int i = 0; i < e->nslots; i++) {
			if (e->slots[i].state != SLOT_FREE &&
			    e->slots[i].seq <= target)
				busy = 1;
		}
		if (busy)
			pthread_cond_wait(&e->cv, &e->mu);
	} while (busy);
	rc = e->last_rc;
	if (rc)
		ckpt__fail(rc, "%s", e->last_msg);
	pthread_mutex_unlock(&e->mu);
	return rc;
}

void ckpt__writer_finish(struct spotckpt *e, struct slot *s, int rc,
			 const struct ckpt_commit_res *res,
			 const struct sr_err *err)
{
	int64_t step;

	pthread_mutex_lock(&e->mu);
	if (rc == -ECANCELED) {
		sr_info("ckpt", "write cancelled (a final checkpoint, or a step given up)",
			"dir=%s step=%" PRId64, e->dir, s->step);
	} else if (rc) {
		e->st.saves_failed++;
		e->last_rc = rc;
		snprintf(e->last_msg, sizeof e->last_msg, "%s", sr_err_str(err, rc));
		sr_error("ckpt", "checkpoint write failed", "dir=%s step=%" PRId64
			 " err=\"%s\"", e->dir, s->step, e->last_msg);
	} else if (res->stored) {
		/* in the store only (final_store.c): not tier 2's step */
		e->st.saves_committed++;
		e->last_rc = 0;
		e->last_msg[0] = '\0';
	} else {
		e->st.saves_committed++;
		e->st.last_saved_step = s->step;
		e->st.last_write_ns = res->commit_ns;
		ckpt__prof_publish(res, &e->wprof);
		e->st.last_write_bytes = res->bytes;
		e->st.bytes_written += res->bytes;
		e->st.direct_io_used = res->direct_used;
		e->st.uring_used = res->uring_used;
		e->last_rc = 0;
		e->last_msg[0] = '\0';
		ckpt__remote_offer(e, s->step); /* never blocks */
	}
	if (s->seq > e->finished)
		e->finished = s->seq;
	step = s->step;
	s->state = SLOT_FREE;
	ckpt__layout_unref(s->l);
	s->l = NULL;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	if (rc == 0 && !res->stored)
		ckpt__progress_committed(step);
}

/* A save's stall: into the stats, and (accepted saves) the progress
 * report. */
static void note_stall(struct spotckpt *e, int64_t t0, int64_t step)
{
	int64_t d = sr_time_mono_ns() - t0;

	pthread_mutex_lock(&e->mu);
	e->st.last_stall_ns = d;
	e->st.total_stall_ns += d;
	if (d > e->st.max_stall_ns)
		e->st.max_stall_ns = d;
	pthread_mutex_unlock(&e->mu);
	if (step >= 0)
		ckpt__progress_saved(step, (double)d / 1e6);
}

/* Choose a slot under back-pressure (mu held).  Returns an index, or -1
 * when the save is to be skipped.  *outcome tells what happened. */
static int pick_slot(struct spotckpt *e, int32_t *outcome)
{
	for (;;) {
		int newest = -1;

		for (int i = 0; i < e->nslots; i++) {
			if (e->slots[i].state == SLOT_FREE)
				return i;
		}
		if (e->o.backpressure == SPOTCKPT_BP_BLOCK) {
			pthread_cond_wait(&e->cv, &e->mu);
			continue;
		}
		if (e->o.backpressure == SPOTCKPT_BP_COALESCE) {
			for (int i = 0; i < e->nslots; i++) {
				if (e->slots[i].state == SLOT_STAGED &&
				    (newest < 0 ||
				     e->slots[i].seq > e->slots[newest].seq))
					newest = i;
			}
			if (newest < 0) {
				/* nothing staged to replace (one slot, being
				 * written): wait for it rather than drop the
				 * newest save (issue 23) */
				pthread_cond_wait(&e->cv, &e->mu);
				continue;
			}
		}
		if (newest >= 0) {
			ckpt__layout_unref(e->slots[newest].l);
			e->slots[newest].l = NULL;
			e->st.saves_coalesced++;
			*outcome = SPOTCKPT_COALESCED;
			return newest;
		}
		e->st.saves_skipped++;
		*outcome = SPOTCKPT_SKIPPED;
		return -1;
	}
}

SPOTCKPT_API int spotckpt_save(struct spotckpt *e, int64_t step,
			       const char *meta_json, uint32_t flags,
			       int32_t *outcome)
{
	int32_t oc = SPOTCKPT_STAGED;
	struct slot *s;
	int64_t t0;
	int idx, rc;

	if (outcome)
		*outcome = SPOTCKPT_STAGED;
	if (!e || step < 0)
		return ckpt__fail(-EINVAL, "save: NULL engine or negative step");
	ckpt__errmsg_clear();
	rc = check_meta(meta_json);
	if (rc)
		return rc;
	pthread_mutex_lock(&e->api);
	t0 = sr_time_mono_ns();
	ckpt__engine_wait_staged(e);
	rc = ensure_layout(e);
	if (rc == 0)
		rc = ensure_staging(e);
	if (rc)
		goto out;
	pthread_mutex_lock(&e->mu);
	e->st.saves_requested++;
	idx = pick_slot(e, &oc);
	if (idx < 0) {
		if (step > e->skipped_step)
			e->skipped_step = step; /* close() says so */
		pthread_mutex_unlock(&e->mu);
		goto out;
	}
	s = &e->slots[idx];
	s->state = SLOT_COPYING;
	s->seq = ++e->seq;
	e->accepted = s->seq;
	s->step = step;
	s->t_start = t0;
	s->copy_rc = 0;
	s->l = ckpt__layout_ref(e->layout);
	pthread_mutex_unlock(&e->mu);
	rc = slot_set_meta(s, meta_json);
	if (rc == 0)
		rc = start_copy(e, s, copy_done);
	if (rc) {
		pthread_mutex_lock(&e->mu);
		s->state = SLOT_FREE;
		ckpt__layout_unref(s->l);
		s->l = NULL;
		pthread_cond_broadcast(&e->cv);
		pthread_mutex_unlock(&e->mu);
		goto out;
	}
	if (flags & SPOTCKPT_SAVE_LAZY) {
		e->lazy_slot = idx;
	} else {
		ckpt__pool_wait(e->pool);
		rc = s->copy_rc;
	}
out:
	note_stall(e, t0, rc == 0 && oc != SPOTCKPT_SKIPPED ? step : -1);
	pthread_mutex_unlock(&e->api);
	if (outcome)
		*outcome = oc;
	return ckpt__fail_default(rc, "save");
}

/* Drop staged saves and cancel the write in progress (api held). */
static void preempt_writer(struct spotckpt *e)
{
	pthread_mutex_lock(&e->mu);
	atomic_store(&e->cancel, 1);
	for (int i = 0; i < e->nslots; i++) {
		struct slot *s = &e->slots[i];

		if (s->state == SLOT_STAGED) {
			s->state = SLOT_FREE;
			ckpt__layout_unref(s->l);
			s->l = NULL;
			e->st.saves_coalesced++;
		}
	}
	while (!all_free(e))
		pthread_cond_wait(&e->cv, &e->mu);
	atomic_store(&e->cancel, 0);
	pthread_mutex_unlock(&e->mu);
}

SPOTCKPT_API int spotckpt_save_final_ex(struct spotckpt *e, int64_t step,
					const char *meta_json,
					int64_t deadline_mono_ns,
					uint32_t flags, int32_t *met_deadline)
{
	struct ckpt_commit_opts co = { 0 };
	struct ckpt_commit_res res = { 0 };
	struct sr_err err = { 0 };
	struct ckpt_io *io = NULL;
	struct slot *s = NULL;
	int64_t t0;
	int rc;

	if (met_deadline)
		*met_deadline = 0;
	if (!e || step < 0 || (flags & ~SPOTCKPT_FINAL_STORE_ONLY))
		return ckpt__fail(-EINVAL, "save_final: NULL engine, negative "
				  "step or unknown flags");
	rc = check_meta(meta_json);
	if (rc)
		return rc;
	pthread_mutex_lock(&e->api);
	t0 = sr_time_mono_ns();
	pthread_mutex_lock(&e->mu);
	e->st.saves_requested++;
	pthread_mutex_unlock(&e->mu);
	ckpt__engine_wait_staged(e);
	preempt_writer(e);
	rc = ensure_layout(e);
	if (rc == 0)
		rc = ensure_staging(e);
	if (rc == 0)
		rc = ckpt__io_new((uint32_t)e->o.io_depth, e->o.io_chunk_bytes, &io);
	if (rc)
		goto out;
	pthread_mutex_lock(&e->mu);
	e->final_step = step;
	atomic_store(&e->final_cancel, ckpt__abandoned(e, step));
	s = &e->slots[0];
	s->state = SLOT_WRITING; /* the writer leaves it alone */
	s->seq = ++e->seq;
	e->accepted = s->seq;
	s->step = step;
	s->t_start = t0;
	s->l = ckpt__layout_ref(e->layout);
	pthread_mutex_unlock(&e->mu);
	rc = slot_set_meta(s, meta_json);
	if (rc == 0)
		rc = start_copy(e, s, NULL);
	if (rc == 0) {
		ckpt__pool_wait(e->pool);
		if (s->l->has_cuda && e->cu->stream_sync(e->stream))
			rc = ckpt__fail(-SR_EUNSUPPORTED, "save_final: CUDA copy "
					"failed");
	}
	note_stall(e, t0, rc == 0 ? step : -1);
	if (rc == 0 && atomic_load(&e->final_cancel))
		rc = ckpt__fail(-ECANCELED, "save_final: step %" PRId64
				" abandoned before its write", step);
	if (rc == 0 && (flags & SPOTCKPT_FINAL_STORE_ONLY) && e->up) {
		/* tier 3 alone: the node's disk goes with the node */
		rc = ckpt__final_to_store(e, s, deadline_mono_ns, &res, &err);
		if (rc)
			ckpt__fail_err(&err, rc);
	} else if (rc == 0) {
		co.direct = e->o.direct_io == SPOTCKPT_DIO_AUTO;
		co.cancel = &e->final_cancel;
		co.keep = e->o.keep;
		co.stripes = &e->stripes;
		co.reg_base = e->stg.base; /* the lanes' rings keep it */
		co.reg_len = e->stg.pinned ? 0 : e->stg.bytes;
		rc = ckpt__commit(io, e->dir, step, s->meta, s->l, s->base, &co,
				  &res, &err);
		if (rc)
			ckpt__fail_err(&err, rc);
	}
	ckpt__writer_finish(e, s, rc, &res, &err);
	pthread_mutex_lock(&e->mu);
	e->final_step = -1;
	pthread_mutex_unlock(&e->mu);
	if (met_deadline)
		*met_deadline = rc == 0 && (deadline_mono_ns == 0 ||
					    sr_time_mono_ns() <= deadline_mono_ns);
out:
	ckpt__io_free(io);
	pthread_mutex_unlock(&e->api);
	return rc;
}

SPOTCKPT_API int spotckpt_save_final(struct spotckpt *e, int64_t step,
				     const char *meta_json,
				     int64_t deadline_mono_ns,
				     int32_t *met_deadline)
{
	return spotckpt_save_final_ex(e, step, meta_json, deadline_mono_ns, 0,
				      met_deadline);
}

int ckpt__abandoned(const struct spotckpt *e, int64_t step)
{
	for (size_t i = 0; i < sizeof e->abandoned / sizeof e->abandoned[0]; i++)
		if (e->abandoned[i] == step)
			return 1;
	return 0;
}

SPOTCKPT_API int spotckpt_abandon_final(struct spotckpt *e, int64_t step)
{
	if (!e || step < 0)
		return ckpt__fail(-EINVAL, "abandon_final: NULL engine or "
				  "negative step");
	pthread_mutex_lock(&e->mu);
	if (!ckpt__abandoned(e, step)) {
		size_t n = sizeof e->abandoned / sizeof e->abandoned[0];

		memmove(e->abandoned + 1, e->abandoned,
			(n - 1) * sizeof e->abandoned[0]);
		e->abandoned[0] = step;
	}
	if (e->final_step == step)
		atomic_store(&e->final_cancel, 1);
	if (e->writing_step == step) {
		/* the writer's current write; cleared once it returns */
		e->cancel_by_abandon = 1;
		atomic_store(&e->cancel, 1);
	}
	pthread_mutex_unlock(&e->mu);
	sr_info("ckpt", "checkpoint step given up (abandon_final)",
		"dir=%s step=%" PRId64, e->dir, step);
	return 0;
}
