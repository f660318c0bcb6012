/*
 * engine.c - engine lifecycle, tensor registration, the tier-2 writer
 * thread, and the status queries.  The save paths are in save.c; the slot
 * state machine and the locking rules are in engine.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "common/log.h"
#include "backend.h"
#include "common/timeutil.h"

SPOTCKPT_API void spotckpt_opts_init(struct spotckpt_opts *o)
{
	memset(o, 0, sizeof *o);
	o->keep = 2;
	o->backpressure = SPOTCKPT_BP_COALESCE;
	o->direct_io = SPOTCKPT_DIO_AUTO;
}

static int auto_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

/* The writer: commit STAGED slots in acceptance order. */
static void *writer_main(void *arg)
{
	struct spotckpt *e = arg;
	unsigned placed = 0;
	const uint8_t *reg_base;
	uint64_t reg_len;

	pthread_mutex_lock(&e->mu);
	for (;;) {
		struct slot *s = NULL;

		for (int i = 0; i < e->nslots; i++) {
			struct slot *c = &e->slots[i];

			if (c->state == SLOT_STAGED && (!s || c->seq < s->seq))
				s = c;
		}
		if (!s) {
			if (e->stop)
				break;
			pthread_cond_wait(&e->cv, &e->mu);
			continue;
		}
		s->state = SLOT_WRITING;
		e->writing_step = s->step;
		if (ckpt__abandoned(e, s->step)) {
			/* given up before its write: nothing to write */
			struct ckpt_commit_res none = { 0 };

			pthread_mutex_unlock(&e->mu);
			ckpt__writer_finish(e, s, -ECANCELED, &none, NULL);
			pthread_mutex_lock(&e->mu);
			e->writing_step = -1;
			continue;
		}
		reg_base = e->stg.base; /* set before the slot was staged */
		reg_len = e->stg.pinned ? 0 : e->stg.bytes;
		pthread_mutex_unlock(&e->mu);
		ckpt__place_apply(&e->place, &placed, 1);
		/* best effort: without it each write pins its pages */
		if (reg_len)
			ckpt__io_register_buffer(e->io, reg_base, reg_len);
		{
			struct ckpt_commit_opts co = {
				.direct = e->o.direct_io == SPOTCKPT_DIO_AUTO,
				.keep = e->o.keep, .cancel = &e->cancel,
				.stripes = &e->stripes, .reg_base = reg_base,
				.reg_len = reg_len };
			struct ckpt_commit_res res;
			struct sr_err err = { 0 };
			int rc = ckpt__commit(e->io, e->dir, s->step, s->meta,
					      s->l, s->base, &co, &res, &err);

			ckpt__writer_finish(e, s, rc, &res, &err);
		}
		pthread_mutex_lock(&e->mu);
		e->writing_step = -1;
		if (e->cancel_by_abandon) {
			/* an abandon's cancel was for that write alone */
			e->cancel_by_abandon = 0;
			atomic_store(&e->cancel, 0);
		}
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

SPOTCKPT_API int spotckpt_open(const struct spotckpt_opts *o,
			       struct spotckpt **out)
{
	struct spotckpt *e = NULL;
	struct ckpt_stripes stripes;
	const char *dir;
	int rc;

	if (out)
		*out = NULL;
	ckpt__errmsg_clear();
	dir = !o ? NULL : o->dir && *o->dir ? o->dir : o->ndirs && o->dirs ?
	      o->dirs[0] : NULL;
	if (!o || !out || !dir || !*dir || (o->ndirs && !o->dirs))
		return ckpt__fail(-EINVAL, "spotckpt_open: dir is required");
	if (ckpt__uri_is_remote(dir))
		return ckpt__fail(-EINVAL, "spotckpt_open: %s: tier 2 needs a "
				  "local directory; add the object store with "
				  "spotckpt_set_remote()", dir);
	if (o->keep < 1 || o->copy_threads < 0 || o->io_depth < 0 ||
	    o->backpressure < SPOTCKPT_BP_COALESCE ||
	    o->backpressure > SPOTCKPT_BP_BLOCK ||
	    o->direct_io < SPOTCKPT_DIO_AUTO || o->direct_io > SPOTCKPT_DIO_OFF)
		return ckpt__fail(-EINVAL, "spotckpt_open: keep must be >= 1 and "
				  "the enums in range");
	rc = ckpt__make_dir(ckpt__uri_local_path(dir));
	if (rc)
		return rc;
	rc = ckpt__stripes_open(ckpt__uri_local_path(dir), o->dirs, o->ndirs,
				&stripes);
	if (rc)
		return rc; /* with its message */
	e = calloc(1, sizeof *e);
	if (!e) {
		ckpt__stripes_close(&stripes);
		return ckpt__fail(-ENOMEM, "spotckpt_open: out of memory");
	}
	e->stripes = stripes;
	e->o = *o;
	e->o.dirs = NULL; /* the caller's; e->stripes has the copies */
	e->o.ndirs = 0;
	e->dir = strdup(ckpt__uri_local_path(dir));
	e->o.dir = e->dir;
	if (e->o.commit_timeout_ms <= 0)
		e->o.commit_timeout_ms = SPOTCKPT_COMMIT_TIMEOUT_MS;
	e->lazy_slot = -1;
	e->skipped_step = -1;
	e->st.last_saved_step = -1;
	atomic_init(&e->cancel, 0);
	e->final_step = e->writing_step = -1;
	e->stored_step = -1;
	for (size_t i = 0; i < sizeof e->abandoned / sizeof e->abandoned[0]; i++)
		e->abandoned[i] = -1;
	atomic_init(&e->final_cancel, 0);
	pthread_mutex_init(&e->api, NULL);
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	if (!e->dir) {
		rc = -ENOMEM;
		goto fail;
	}
	if (e->o.copy_threads == 0)
		e->o.copy_threads = auto_threads();
	rc = ckpt__pool_new(e->o.copy_threads, &e->pool);
	if (rc)
		goto fail;
	atomic_init(&e->place.gen, 0);
	ckpt__pool_set_place(e->pool, &e->place);
	rc = ckpt__io_new((uint32_t)e->o.io_depth, e->o.io_chunk_bytes, &e->io);
	if (rc == 0 && e->stripes.n > 1)
		rc = ckpt__lanes_new(e->stripes.n, (uint32_t)e->o.io_depth,
				     e->o.io_chunk_bytes, &e->place,
				     &e->stripes.lanes);
	if (rc)
		goto fail;
	ckpt__cleanup_tmp(e->dir);
	ckpt__stripes_gc(&e->stripes);
	rc = -pthread_create(&e->writer, NULL, writer_main, e);
	if (rc)
		goto fail;
	e->writer_started = 1;
	*out = e;
	return 0;
fail:
	spotckpt_close(e);
	return ckpt__fail(rc, "spotckpt_open: %s", sr_strerror(rc));
}

static void reg_free(struct spotckpt *e)
{
	for (size_t i = 0; i < e->nreg; i++)
		free(e->reg[i].name);
	e->nreg = 0;
	e->dirty = 1;
}

/* The newest save asked for was dropped by back-pressure: nothing holds
 * it, so no tier can; say so. */
static void warn_skipped(struct spotckpt *e)
{
	int64_t skipped, saved;

	pthread_mutex_lock(&e->mu);
	skipped = e->skipped_step;
	saved = e->st.last_saved_step;
	pthread_mutex_unlock(&e->mu);
	if (skipped > saved)
		sr_warn("ckpt", "the newest save was skipped by back-pressure "
			"(tier 2 was still writing); the newest checkpoint is an "
			"older step", "dir=%s skipped_step=%" PRId64
			" newest_step=%" PRId64, e->dir, skipped, saved);
}

SPOTCKPT_API int spotckpt_close_ex(struct spotckpt *e, int64_t timeout_ms)
{
	int rc = 0, rc3;

	if (!e)
		return 0;
	pthread_mutex_lock(&e->api);
	ckpt__prefault_stop(e);
	pthread_mutex_unlock(&e->api);
	if (e->writer_started) {
		pthread_mutex_lock(&e->api);
		rc = ckpt__engine_wait_all(e);
		pthread_mutex_unlock(&e->api);
		pthread_mutex_lock(&e->mu);
		e->stop = 1;
		pthread_cond_broadcast(&e->cv);
		pthread_mutex_unlock(&e->mu);
		pthread_join(e->writer, NULL);
	}
	warn_skipped(e);
	/* tier 3: the newest committed step, whole in the store, or an
	 * error saying where it is */
	rc3 = ckpt__remote_drain(e, timeout_ms < 0 ? e->o.commit_timeout_ms
					       : timeout_ms);
	if (rc == 0)
		rc = rc3;
	else if (rc3)
		sr_error("ckpt", "tier 3 incomplete at close", "err=\"%s\"",
			 spotckpt_errmsg());
	ckpt__remote_stop(e);
	ckpt__progress_flush();
	ckpt__pool_free(e->pool);
	for (int i = 0; i < CKPT_MAX_SLOTS; i++) {
		ckpt__layout_unref(e->slots[i].l);
		free(e->slots[i].meta);
	}
	ckpt__stripes_close(&e->stripes); /* lanes: idle, writer joined */
	ckpt__io_free(e->io); /* its ring holds the staging pages registered */
	e->io = NULL;
	ckpt__staging_free(&e->stg);
	if (e->cu && e->stream)
		e->cu->stream_destroy(e->stream);
	if (e->cu && e->event)
		e->cu->event_destroy(e->event);
	ckpt__layout_unref(e->layout);
	reg_free(e);
	free(e->reg);
	free(e->segs);
	free(e->stored_manifest);
	ckpt__layout_unref(e->stored_layout);
	free(e->dir);
	pthread_mutex_destroy(&e->api);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	free(e);
	return rc;
}

SPOTCKPT_API int spotckpt_close(struct spotckpt *e)
{
	return spotckpt_close_ex(e, -1);
}

static int cuda_init(struct spotckpt *e)
{
	const struct ckpt_cuda_ops *cu;
	int rc;

	if (e->cu)
		return 0;
	cu = ckpt__cuda();
	if (!cu)
		return ckpt__fail(-SR_EUNSUPPORTED, "CUDA tensor registered but "
				  "the CUDA runtime is not usable: %s",
				  ckpt__cuda_error());
	rc = cu->stream_create(&e->stream, 0x1 /* cudaStreamNonBlocking */);
	if (rc == 0)
		rc = cu->event_create(&e->event, 0x2 /* DisableTiming */);
	if (rc)
		return ckpt__fail(-SR_EUNSUPPORTED, "CUDA stream/event create: %s",
				  cu->get_error_string(rc));
	e->cu = cu;
	pthread_mutex_lock(&e->mu);
	e->st.cuda_loaded = 1;
	pthread_mutex_unlock(&e->mu);
	return 0;
}

static int reg_add(struct spotckpt *e, const char *name, const void *ptr,
		   int32_t dtype, int32_t ndim, const int64_t *shape,
		   int32_t device)
{
	struct ckpt_tensor *t;
	uint64_t nb;

	if (ckpt__name_check(name))
		return ckpt__fail(-EINVAL, "register: invalid tensor name (1-%d "
				  "printable ASCII bytes, no quote or backslash)",
				  CKPT_NAME_MAX);
	if (!spotckpt_dtype_size(dtype))
		return ckpt__fail(-EINVAL, "register %s: unknown dtype %d", name,
				  dtype);
	if (ndim < 0 || ndim > SPOTCKPT_MAX_NDIM || (ndim > 0 && !shape))
		return ckpt__fail(-EINVAL, "register %s: ndim %d out of range",
				  name, ndim);
	if (device != SPOTCKPT_DEV_CPU && device != SPOTCKPT_DEV_CUDA)
		return ckpt__fail(-EINVAL, "register %s: unknown device %d", name,
				  device);
	nb = ckpt__tensor_nbytes(dtype, ndim, shape);
	if (nb == UINT64_MAX)
		return ckpt__fail(-EINVAL, "register %s: negative or huge shape",
				  name);
	if (!ptr && nb > 0)
		return ckpt__fail(-EINVAL, "register %s: NULL pointer", name);
	for (size_t i = 0; i < e->nreg; i++) {
		if (!strcmp(e->reg[i].name, name))
			return ckpt__fail(-EEXIST, "register %s: name already "
					  "registered", name);
	}
	if (device == SPOTCKPT_DEV_CUDA) {
		int rc = cuda_init(e);

		if (rc)
			return rc;
	}
	if (e->nreg == e->capreg) {
		size_t cap = e->capreg ? e->capreg * 2 : 64;
		struct ckpt_tensor *n = realloc(e->reg, cap * sizeof *n);

		if (!n)
			return -ENOMEM;
		e->reg = n;
		e->capreg = cap;
	}
	t = &e->reg[e->nreg];
	memset(t, 0, sizeof *t);
	t->name = strdup(name);
	if (!t->name)
		return -ENOMEM;
	t->ptr = ptr;
	t->dtype = dtype;
	t->ndim = ndim;
	for (int32_t d = 0; d < ndim; d++)
		t->shape[d] = shape[d];
	t->nbytes = nb;
	t->device = device;
	e->nreg++;
	e->dirty = 1;
	return 0;
}

SPOTCKPT_API int spotckpt_register(struct spotckpt *e, const char *name,
				   const void *ptr, int32_t dtype,
				   int32_t ndim, const int64_t *shape,
				   int32_t device)
{
	int rc;

	if (!e)
		return ckpt__fail(-EINVAL, "register: NULL engine");
	ckpt__errmsg_clear();
	pthread_mutex_lock(&e->api);
	ckpt__engine_wait_staged(e);
	rc = reg_add(e, name, ptr, dtype, ndim, shape, device);
	pthread_mutex_unlock(&e->api);
	return ckpt__fail_default(rc, "register");
}

SPOTCKPT_API int spotckpt_clear(struct spotckpt *e)
{
	if (!e)
		return ckpt__fail(-EINVAL, "clear: NULL engine");
	pthread_mutex_lock(&e->api);
	ckpt__engine_wait_staged(e);
	reg_free(e);
	pthread_mutex_unlock(&e->api);
	return 0;
}

SPOTCKPT_API int spotckpt_wait_staged(struct spotckpt *e)
{
	int rc;

	if (!e)
		return ckpt__fail(-EINVAL, "wait_staged: NULL engine");
	pthread_mutex_lock(&e->api);
	rc = ckpt__engine_wait_staged(e);
	pthread_mutex_unlock(&e->api);
	return rc;
}

SPOTCKPT_API int spotckpt_wait(struct spotckpt *e)
{
	int rc;

	if (!e)
		return ckpt__fail(-EINVAL, "wait: NULL engine");
	pthread_mutex_lock(&e->api);
	rc = ckpt__engine_wait_all(e);
	pthread_mutex_unlock(&e->api);
	return ckpt__fail_default(rc, "wait");
}

SPOTCKPT_API int64_t spotckpt_last_saved_step(struct spotckpt *e)
{
	int64_t s;

	if (!e)
		return -1;
	pthread_mutex_lock(&e->mu);
	s = e->st.last_saved_step;
	pthread_mutex_unlock(&e->mu);
	return s;
}

SPOTCKPT_API int spotckpt_last_error(struct spotckpt *e, char *buf, size_t n)
{
	int rc;

	if (!e)
		return -EINVAL;
	pthread_mutex_lock(&e->mu);
	rc = e->last_rc;
	if (buf && n)
		snprintf(buf, n, "%s", e->last_msg);
	pthread_mutex_unlock(&e->mu);
	return rc;
}

SPOTCKPT_API int spotckpt_stats(struct spotckpt *e, struct spotckpt_stats *out)
{
	if (!e || !out)
		return -EINVAL;
	pthread_mutex_lock(&e->mu);
	*out = e->st;
	out->last_error = e->last_rc;
	pthread_mutex_unlock(&e->mu);
	return 0;
}
