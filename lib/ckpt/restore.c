/*
 * restore.c - restore with fallback to older checkpoints, verify, list.
 *
 * The loop: open the newest checkpoint at or below max_step whose
 * manifest and headers are sound (the reader skips the others, logging
 * each), ask the caller where each tensor goes, read them all in parallel
 * with checksums, and if anything fails - a flipped bit, a torn shard, a
 * required tensor missing - log the file and tensor and try again below
 * that step.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "common/log.h"
#include "backend.h"

int ckpt__is_damage(int rc)
{
	return rc == -SR_ECHECKSUM || rc == -SR_ECORRUPT || rc == -SR_EPARSE ||
	       rc == -SR_ENOTFOUND || rc == -ENOENT || rc == -EIO;
}

int ckpt__restore_loop(const char *dir, int64_t max_step,
		       spotckpt_lookup_fn lookup, int (*check)(void *ud),
		       void *ud, uint8_t *buf, uint64_t buf_bytes,
		       int64_t *step)
{
	struct spotckpt_dest *dests = NULL;
	int rc;

	for (;;) {
		struct spotckpt_reader *r = NULL;
		int64_t nt, s;
		size_t n = 0;

		rc = spotckpt_reader_open(dir, SPOTCKPT_NEWEST, max_step, 0, &r);
		if (rc)
			break;
		s = spotckpt_reader_step(r);
		nt = spotckpt_reader_ntensors(r);
		if (buf)
			ckpt__reader_borrow_buffer(r, buf, buf_bytes);
		free(dests);
		dests = calloc((size_t)nt + 1, sizeof *dests);
		if (!dests) {
			spotckpt_reader_close(r);
			rc = -ENOMEM;
			break;
		}
		for (int64_t i = 0; i < nt; i++) {
			struct spotckpt_tensor_info info;
			struct spotckpt_dest d = { .index = i };
			int lr;

			spotckpt_reader_tensor(r, i, &info);
			lr = lookup(ud, &info, &d);
			if (lr < 0) {
				spotckpt_reader_close(r);
				free(dests);
				return lr;
			}
			if (lr == 0) {
				d.index = i;
				dests[n++] = d;
			}
		}
		if (check && check(ud)) {
			sr_warn("ckpt", "checkpoint lacks registered tensors, "
				"trying the previous one", "dir=%s step=%" PRId64
				" err=\"%s\"", dir, s, spotckpt_errmsg());
		} else {
			rc = spotckpt_reader_read_all(r, dests, n);
			if (rc == 0) {
				if (step)
					*step = s;
				spotckpt_reader_close(r);
				break;
			}
			if (!ckpt__is_damage(rc)) {
				spotckpt_reader_close(r);
				break;
			}
			sr_warn("ckpt", "checkpoint failed verification, trying "
				"the previous one", "dir=%s step=%" PRId64
				" err=\"%s\"", dir, s, spotckpt_errmsg());
		}
		spotckpt_reader_close(r);
		if (s == 0) {
			rc = ckpt__fail(-SR_ENOTFOUND, "%s: no valid checkpoint",
					dir);
			break;
		}
		max_step = s - 1;
	}
	free(dests);
	return rc;
}

SPOTCKPT_API int spotckpt_restore_cb(const char *dir, int64_t max_step,
				     spotckpt_lookup_fn lookup, void *ud,
				     int64_t *step)
{
	ckpt__errmsg_clear();
	if (!dir || !lookup)
		return ckpt__fail(-EINVAL, "restore_cb: NULL argument");
	return ckpt__restore_loop(dir, max_step, lookup, NULL, ud, NULL, 0,
				  step);
}

/* Engine restore: every registered tensor must be found, same shape. */
struct reg_match {
	struct spotckpt *e;
	size_t found;
	char missing[300];
};

static int reg_lookup(void *ud, const struct spotckpt_tensor_info *info,
		      struct spotckpt_dest *d)
{
	struct reg_match *m = ud;

	for (size_t i = 0; i < m->e->nreg; i++) {
		const struct ckpt_tensor *t = &m->e->reg[i];

		if (strcmp(t->name, info->name))
			continue;
		if (t->dtype != info->dtype || t->ndim != info->ndim ||
		    memcmp(t->shape, info->shape,
			   (size_t)t->ndim * sizeof t->shape[0])) {
			snprintf(m->missing, sizeof m->missing, "%s (dtype or "
				 "shape differs)", t->name);
			return 1;
		}
		d->ptr = (void *)t->ptr; /* restore writes registered memory */
		d->len = t->nbytes;
		d->device = t->device;
		m->found++;
		return 0;
	}
	return 1;
}

static int reg_check(void *ud)
{
	struct reg_match *m = ud;

	if (m->found == m->e->nreg) {
		m->found = 0;
		return 0;
	}
	if (!m->missing[0])
		snprintf(m->missing, sizeof m->missing, "%zu of %zu registered "
			 "tensors", m->e->nreg - m->found, m->e->nreg);
	ckpt__fail(-SR_ENOTFOUND, "missing tensor %s", m->missing);
	m->found = 0;
	m->missing[0] = '\0';
	return 1;
}

/* An idle staging slot to read through (api held, so no save can claim
 * it until the restore returns; the writer only frees slots).  The
 * staging buffer is resident (populated and locked when it was made), so
 * the reads fault in no fresh memory: on the development VM each restore
 * otherwise spent ~0.08 s per GiB zeroing new pages for its read buffers,
 * and more when the hypervisor had reclaimed them. */
static uint8_t *idle_slot(struct spotckpt *e, uint64_t *n)
{
	uint8_t *p = NULL;

	*n = 0;
	pthread_mutex_lock(&e->mu);
	for (int i = 0; i < e->nslots && !p; i++) {
		if (e->slots[i].state != SLOT_FREE)
			continue;
		/* slots after the first start at image_bytes multiples */
		p = (uint8_t *)(((uintptr_t)e->slots[i].base + 4095) &
				~(uintptr_t)4095);
		*n = e->slot_bytes - (uint64_t)(p - e->slots[i].base);
	}
	pthread_mutex_unlock(&e->mu);
	return p;
}

SPOTCKPT_API int spotckpt_restore(struct spotckpt *e, int64_t max_step,
				  int64_t *step)
{
	struct reg_match m = { .e = e };
	const char *src = NULL;
	int64_t got = -1;
	uint64_t nbuf = 0;
	uint8_t *buf;
	int rc;

	if (!e)
		return ckpt__fail(-EINVAL, "restore: NULL engine");
	ckpt__errmsg_clear();
	pthread_mutex_lock(&e->api);
	ckpt__engine_wait_staged(e);
	ckpt__prefault_stop(e);
	buf = idle_slot(e, &nbuf);
	if (e->nreg == 0)
		rc = ckpt__fail(-SR_ECONFLICT, "restore: no tensor registered");
	else
		rc = ckpt__restore_source(e, max_step, &src);
	if (rc == 0)
		rc = ckpt__restore_loop(src, max_step, reg_lookup, reg_check, &m,
					buf, nbuf, &got);
	ckpt__staging_settle(&e->stg); /* prefaulted in part: the rest */
	pthread_mutex_unlock(&e->api);
	/* what this process resumes from, for the node agent: 0 when there
	 * was nothing to restore (a fresh start) */
	if (rc == 0 || rc == -SR_ENOTFOUND)
		spotckpt_progress_restored(rc == 0 ? got : 0);
	if (rc == 0 && step)
		*step = got;
	return rc;
}

SPOTCKPT_API int spotckpt_reader_read_all_with(struct spotckpt_reader *r,
					       struct spotckpt *e,
					       const struct spotckpt_dest *d,
					       size_t n)
{
	uint64_t nbuf = 0;
	uint8_t *buf;
	int rc;

	if (!e || !r)
		return spotckpt_reader_read_all(r, d, n);
	pthread_mutex_lock(&e->api);
	ckpt__engine_wait_staged(e);
	ckpt__prefault_stop(e); /* the reads fault in what it left */
	buf = idle_slot(e, &nbuf);
	if (!buf && ckpt__engine_reserve(e, ckpt__reader_borrow_need(r)) == 0)
		buf = idle_slot(e, &nbuf);
	ckpt__reader_borrow_buffer(r, buf, nbuf);
	rc = spotckpt_reader_read_all(r, d, n);
	ckpt__reader_borrow_buffer(r, NULL, 0);
	ckpt__staging_settle(&e->stg); /* reserved just now: fault in the rest */
	pthread_mutex_unlock(&e->api);
	return rc;
}

SPOTCKPT_API int spotckpt_verify(const char *dir, int64_t step,
				 int64_t *step_out)
{
	struct spotckpt_reader *r = NULL;
	int64_t *steps = NULL;
	size_t n = 0;
	int rc;

	ckpt__errmsg_clear();
	if (!dir)
		return ckpt__fail(-EINVAL, "verify: NULL dir");
	dir = ckpt__uri_local_path(dir);
	if (step < 0 && ckpt__uri_is_remote(dir)) {
		struct sr_err e = { 0 };

		rc = ckpt_remote_backend.rd_newest(dir, &step, &e);
		if (rc)
			return ckpt__fail_err(&e, rc);
		if (step < 0)
			return ckpt__fail(-SR_ENOTFOUND, "%s: no committed "
					  "checkpoint", dir);
	}
	if (step < 0) {
		rc = ckpt__scan(dir, &steps, &n, 0, NULL);
		if (rc)
			return ckpt__fail(rc, "%s: %s", dir, sr_strerror(rc));
		if (n == 0) {
			free(steps);
			return ckpt__fail(-SR_ENOTFOUND, "%s: no committed "
					  "checkpoint", dir);
		}
		step = steps[0];
		free(steps);
	}
	if (step_out)
		*step_out = step;
	rc = spotckpt_reader_open(dir, step, SPOTCKPT_NEWEST,
				  SPOTCKPT_OPEN_VERIFY, &r);
	spotckpt_reader_close(r);
	return rc;
}

static uint64_t dir_bytes(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	uint64_t sum = 0;

	if (!d)
		return 0;
	for (de = readdir(d); de; de = readdir(d)) {
		struct stat st;

		if (fstatat(dirfd(d), de->d_name, &st, 0) == 0 &&
		    S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_size;
	}
	closedir(d);
	return sum;
}

static void fill_entry(const char *dir, int64_t step, int tmp,
		       struct spotckpt_entry *en)
{
	char path[4096];
	struct spotckpt_reader *r = NULL;
	struct stat st;

	snprintf(path, sizeof path, "%s/step-%08" PRId64 "%s", dir, step,
		 tmp ? ".tmp" : "");
	memset(en, 0, sizeof *en);
	en->step = step;
	en->ntensors = -1;
	en->state = tmp ? SPOTCKPT_ENTRY_INCOMPLETE : SPOTCKPT_ENTRY_COMMITTED;
	if (stat(path, &st) == 0)
		en->time_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 +
			      st.st_mtim.tv_nsec;
	en->bytes = dir_bytes(path);
	if (tmp)
		return;
	if (spotckpt_reader_open(dir, step, SPOTCKPT_NEWEST, 0, &r) == 0) {
		en->ntensors = (int32_t)spotckpt_reader_ntensors(r);
		en->time_ns = spotckpt_reader_time_ns(r);
		spotckpt_reader_close(r);
	} else {
		char m[sizeof path + 32];

		snprintf(m, sizeof m, "%s/%s", path, CKPT_MANIFEST);
		en->state = access(m, F_OK) != 0 ? SPOTCKPT_ENTRY_INCOMPLETE
						 : SPOTCKPT_ENTRY_DAMAGED;
	}
}

SPOTCKPT_API int spotckpt_list(const char *dir, struct spotckpt_entry *out,
			       size_t cap, size_t *n)
{
	int64_t *steps = NULL;
	int *tmp = NULL;
	size_t cnt = 0;
	int rc;

	ckpt__errmsg_clear();
	if (n)
		*n = 0;
	if (!dir || (cap && !out))
		return ckpt__fail(-EINVAL, "list: NULL argument");
	if (ckpt__uri_is_remote(dir)) {
		struct sr_err e = { 0 };

		rc = ckpt_remote_backend.rd_list(dir, out, cap, &cnt, &e);
		if (rc)
			return ckpt__fail_err(&e, rc);
		if (n)
			*n = cnt;
		return 0;
	}
	dir = ckpt__uri_local_path(dir);
	rc = ckpt__scan(dir, &steps, &cnt, 1, &tmp);
	if (rc)
		return ckpt__fail(rc, "%s: %s", dir, sr_strerror(rc));
	for (size_t i = 0; i < cnt && i < cap; i++)
		fill_entry(dir, steps[i], tmp[i], &out[i]);
	if (n)
		*n = cnt;
	free(steps);
	free(tmp);
	return 0;
}
