/*
 * remote.c - reading checkpoints from an object store (tier 3).
 *
 * Opening lists the prefix once, keeps the steps that have a manifest,
 * and tries them newest first: the manifest must parse and pass its own
 * checksum; every shard it names must exist with the recorded size; each
 * shard's header (GET of its first data_start bytes) must match the
 * manifest's header XXH3.  A step that fails is skipped with a log line.
 *
 * Reading fetches each wanted tensor straight into its destination with
 * ranged GETs of at most part_bytes, `parallel` in flight; the thread
 * whose GET completes a tensor's last missing bytes hashes the tensor
 * right away (while the other GETs are in flight) and compares it with
 * the manifest's XXH3.  No local copy of
 * the checkpoint is made.  A CUDA destination goes through a host bounce
 * buffer of one tensor.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "os_int.h"
#include "tier3.h"
#include "common/log.h"

struct objstore_rd {
	struct objstore *s;
	int64_t step;
};

static int cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

int objstore_steps(const struct objstore_list *l, int64_t **steps, size_t *n)
{
	int64_t *v = malloc((l->n + 1) * sizeof *v);
	size_t k = 0;

	*steps = NULL;
	*n = 0;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++) {
		const char *key = l->v[i].key, *sl = strchr(key, '/');
		char name[64];
		int64_t step;
		int tmp = 0;

		if (!sl || strcmp(sl + 1, CKPT_MANIFEST) ||
		    (size_t)(sl - key) >= sizeof name)
			continue;
		memcpy(name, key, (size_t)(sl - key));
		name[sl - key] = 0;
		if (ckpt__parse_dirname(name, &step, &tmp) == 0 && !tmp)
			v[k++] = step;
	}
	qsort(v, k, sizeof *v, cmp_desc);
	*steps = v;
	*n = k;
	return 0;
}

static const struct objstore_obj *find_obj(const struct objstore_list *l,
					   const char *key)
{
	for (size_t i = 0; i < l->n; i++) {
		if (!strcmp(l->v[i].key, key))
			return &l->v[i];
	}
	return NULL;
}

/* Manifest and shards of one step, checked as the header says. */
static int try_step(struct objstore *s, const struct objstore_list *l,
		    int64_t step, struct ckpt_manifest *m, struct sr_err *e)
{
	char key[256], *buf = NULL, *hdr = NULL;
	size_t len = 0;
	int rc;

	snprintf(key, sizeof key, "step-%08" PRId64 "/" CKPT_MANIFEST, step);
	rc = objstore_get(s, key, CKPT_MANIFEST_MAX, &buf, &len, e);
	if (rc)
		goto out;
	rc = ckpt__manifest_parse(buf, len, key, m, e);
	if (rc)
		goto out;
	if (m->step != step) {
		/* a copy of another step's files is not this step */
		rc = sr_err_set(e, -SR_ECORRUPT, "%s/%s: manifest says step %"
				PRId64 ", the key step %" PRId64, objstore_uri(s),
				key, m->step, step);
		goto out;
	}
	for (size_t i = 0; i < m->l->ns; i++) {
		const struct ckpt_shard *sh = &m->l->s[i];
		const struct objstore_obj *o;

		snprintf(key, sizeof key, "step-%08" PRId64 "/%s", step, sh->file);
		o = l ? find_obj(l, key) : NULL;
		if (l && !o) {
			rc = sr_err_set(e, -SR_ECORRUPT, "%s/%s: missing",
					objstore_uri(s), key);
			goto out;
		}
		if (o && o->size != sh->file_bytes) {
			rc = sr_err_set(e, -SR_ECORRUPT, "%s/%s: %" PRIu64 " bytes, "
					"manifest says %" PRIu64, objstore_uri(s),
					key, o->size, sh->file_bytes);
			goto out;
		}
		free(hdr);
		hdr = malloc(sh->data_start);
		if (!hdr) {
			rc = -ENOMEM;
			goto out;
		}
		rc = objstore_get_range(s, key, 0, sh->data_start, hdr, e);
		if (rc)
			goto out;
		if (XXH3_64bits(hdr, sh->data_start) != sh->header_xxh3) {
			rc = sr_err_set(e, -SR_ECHECKSUM, "%s/%s: header checksum "
					"mismatch", objstore_uri(s), key);
			goto out;
		}
	}
out:
	if (rc)
		ckpt__manifest_free(m);
	free(hdr);
	free(buf);
	return rc;
}

/* ---- reading tensors -------------------------------------------------------------
 * Wanted tensors that lie back to back in a shard are fetched by one
 * ranged GET of up to part_bytes, whose body is scattered to their
 * destinations (a model has many small tensors: one request each would
 * cost a round trip each).  A bigger tensor spans several GETs. */
struct seg {
	uint8_t *dst;
	uint64_t off, len;      /* shard bytes [off, off+len) go to dst */
	uint32_t t;             /* the tensor they belong to */
};

struct rjob {
	uint32_t shard;
	uint64_t off, len;      /* the range: its segments, back to back */
	struct seg *segs;
	size_t nseg, cur;
	struct ckpt_undo *undo; /* old destination bytes, or NULL */
};

struct rd_job {
	struct objstore_rd *r;
	const struct ckpt_manifest *m;
	struct rjob *jobs;
	uint8_t **dst;          /* per tensor: where its bytes go (host) */
	atomic_uint_fast64_t *left; /* per tensor: bytes not yet fetched */
	const char *uri;
};

static int scatter(void *ud, uint64_t pos, const void *p, size_t n)
{
	struct rjob *j = ud;
	const uint8_t *b = p;
	uint64_t at = j->off + pos;

	if (pos == 0)
		j->cur = 0; /* a retry starts over */
	while (n) {
		struct seg *s;
		size_t k;

		while (j->cur < j->nseg &&
		       at >= j->segs[j->cur].off + j->segs[j->cur].len)
			j->cur++;
		if (j->cur >= j->nseg || at < j->segs[j->cur].off)
			return -EIO; /* more bytes than asked for */
		s = &j->segs[j->cur];
		k = (size_t)(s->off + s->len - at) < n ? (size_t)(s->off + s->len - at)
						       : n;
		/* the tensor's old bytes aside before its first is written */
		if (ckpt__undo_save(j->undo, s->t))
			return -SR_EUNSUPPORTED;
		memcpy(s->dst + (at - s->off), b, k);
		at += k;
		b += k;
		n -= k;
	}
	return 0;
}

static int hash_one(void *ud, size_t i, struct sr_err *e)
{
	struct rd_job *j = ud;
	const struct ckpt_tensor *t = &j->m->l->t[i];

	if (!j->dst[i])
		return 0;
	if (XXH3_64bits(j->dst[i], t->nbytes) != t->xxh3)
		return sr_err_set(e, -SR_ECHECKSUM, "%s/step-%08" PRId64 "/%s: "
				  "tensor %s: checksum mismatch", j->uri,
				  j->r->step, j->m->l->s[t->shard].file, t->name);
	return 0;
}

static int fetch(void *ud, size_t i, struct sr_err *e)
{
	struct rd_job *j = ud;
	struct rjob *rj = &j->jobs[i];
	char key[256];

	int rc;

	snprintf(key, sizeof key, "step-%08" PRId64 "/%s", j->r->step,
		 j->m->l->s[rj->shard].file);
	rc = objstore_get_range_to(j->r->s, key, rj->off, rj->len, scatter, rj,
				   e);
	if (rc == -SR_ENOTFOUND)
		rc = -SR_ECORRUPT; /* a shard gone: the step is not whole */
	/* a tensor whose last bytes this GET brought is verified now */
	for (size_t k = 0; rc == 0 && k < rj->nseg; k++) {
		const struct seg *sg = &rj->segs[k];

		if (atomic_fetch_sub(&j->left[sg->t], sg->len) == sg->len)
			rc = hash_one(j, sg->t, e);
	}
	return rc;
}

/* Fetch and verify the tensors whose dst is set (never an empty one:
 * the caller leaves those out). */
static int fetch_verify(struct objstore_rd *r, const struct ckpt_manifest *m,
			uint8_t **dst, struct ckpt_undo *undo, struct sr_err *e)
{
	const struct ckpt_layout *l = m->l;
	uint64_t part = r->s->cfg.part_bytes, total = 0;
	struct rd_job j = { .r = r, .m = m, .dst = dst, .uri = objstore_uri(r->s) };
	struct seg *segs = NULL;
	size_t nj = 0, ns = 0, cap;
	int rc;

	for (size_t i = 0; i < l->nt; i++)
		total += dst[i] ? l->t[i].nbytes : 0;
	/* a tensor is at most 2 + nbytes/part pieces */
	cap = 2 * l->nt + (size_t)(total / part) + 2 * l->ns + 8;
	segs = malloc(cap * sizeof *segs);
	j.jobs = malloc(cap * sizeof *j.jobs);
	j.left = malloc((l->nt + 1) * sizeof *j.left);
	if (!segs || !j.jobs || !j.left) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < l->nt; i++)
		atomic_init(&j.left[i], dst[i] ? l->t[i].nbytes : 0);
	for (uint32_t s = 0; s < l->ns; s++) {
		struct rjob *cur = NULL;

		for (uint32_t i = l->s[s].first; i < l->s[s].first + l->s[s].count;
		     i++) {
			const struct ckpt_tensor *t = &l->t[i];
			uint64_t toff = t->offset, left = t->nbytes;
			uint8_t *d = dst[i];

			if (!d || !left) {
				cur = NULL; /* a gap ends the range */
				continue;
			}
			while (left) {
				uint64_t k;

				if (cur && cur->off + cur->len != toff)
					cur = NULL;
				if (!cur) {
					cur = &j.jobs[nj++];
					cur->shard = s;
					cur->off = toff;
					cur->len = 0;
					cur->segs = &segs[ns];
					cur->nseg = cur->cur = 0;
					cur->undo = undo;
				}
				k = part - cur->len < left ? part - cur->len : left;
				segs[ns].dst = d;
				segs[ns].off = toff;
				segs[ns].len = k;
				segs[ns].t = i;
				ns++;
				cur->nseg++;
				cur->len += k;
				toff += k;
				d += k;
				left -= k;
				if (cur->len == part)
					cur = NULL;
			}
		}
	}
	rc = os_run_parallel(r->s->cfg.parallel, nj, fetch, &j, r->s->cancel, e);
out:
	free(segs);
	free(j.jobs);
	free(j.left);
	return rc;
}

int objstore_rd_read(struct objstore_rd *r, const struct ckpt_manifest *m,
		     const struct spotckpt_dest **map, int verify_all,
		     struct ckpt_undo *undo, struct sr_err *e)
{
	const struct ckpt_cuda_ops *cu = NULL;
	uint8_t **dst = calloc(m->l->nt + 1, sizeof *dst);
	uint8_t *bounce = NULL;
	int rc = 0;

	if (!dst)
		return -ENOMEM;
	/* host destinations, all at once */
	for (size_t i = 0; i < m->l->nt; i++) {
		if (map && map[i] && map[i]->device != SPOTCKPT_DEV_CUDA &&
		    m->l->t[i].nbytes)
			dst[i] = map[i]->ptr;
	}
	rc = fetch_verify(r, m, dst, undo, e);
	/* CUDA destinations and verify-only tensors, one at a time */
	for (size_t i = 0; rc == 0 && i < m->l->nt; i++) {
		const struct ckpt_tensor *t = &m->l->t[i];
		int is_cuda = map && map[i] && map[i]->device == SPOTCKPT_DEV_CUDA;

		if (!t->nbytes || (!is_cuda && !(verify_all && !(map && map[i]))))
			continue;
		free(bounce);
		bounce = malloc(t->nbytes);
		if (!bounce) {
			rc = -ENOMEM;
			break;
		}
		memset(dst, 0, m->l->nt * sizeof *dst);
		dst[i] = bounce;
		rc = fetch_verify(r, m, dst, NULL, e);
		if (rc == 0 && is_cuda) {
			int cr;

			cu = cu ? cu : ckpt__cuda();
			cr = cu && ckpt__undo_save(undo, (uint32_t)i) == 0 ?
			     cu->memcpy(map[i]->ptr, bounce, t->nbytes,
					CKPT_CUDA_H2D) : -1;
			if (cr)
				rc = sr_err_set(e, -SR_EUNSUPPORTED, "tensor %s: "
						"copy to the GPU failed", t->name);
		}
		dst[i] = NULL;
	}
	free(bounce);
	free(dst);
	return rc;
}

/* ---- opening --------------------------------------------------------------------- */
/* Open uri and list its step- keys.  A store that does not answer with
 * a listing is an error naming the store, never "no checkpoint" (a
 * missing bucket included: -SR_EHTTP, not -SR_ENOTFOUND). */
static int open_list(const char *uri, struct objstore **s,
		     struct objstore_list *l, struct sr_err *e)
{
	int rc = objstore_open(uri, NULL, s, e);

	if (rc)
		return rc;
	rc = objstore_list(*s, "step-", l, e);
	if (rc) {
		if (rc == -SR_ENOTFOUND)
			rc = -SR_EHTTP;
		sr_err_prefix(e, "%s: cannot list the checkpoints", uri);
		if (e)
			e->code = rc;
	}
	return rc;
}

int objstore_rd_open(const char *uri, int64_t step, int64_t max_step,
		     int verify, struct objstore_rd **out,
		     struct ckpt_manifest *m, char **path, struct sr_err *e)
{
	struct objstore_rd *r = calloc(1, sizeof *r);
	struct objstore_list l = { 0 };
	int64_t *steps = NULL;
	size_t n = 0;
	int rc;

	*out = NULL;
	*path = NULL;
	memset(m, 0, sizeof *m);
	if (!r)
		return -ENOMEM;
	rc = open_list(uri, &r->s, &l, e);
	if (rc)
		goto fail;
	if (step >= 0) {
		steps = malloc(sizeof *steps);
		if (!steps) {
			rc = -ENOMEM;
			goto fail;
		}
		steps[0] = step;
		n = 1;
	} else {
		rc = objstore_steps(&l, &steps, &n);
		if (rc)
			goto fail;
	}
	rc = -SR_ENOTFOUND;
	for (size_t i = 0; i < n; i++) {
		struct sr_err se = { 0 };

		if (step < 0 && max_step >= 0 && steps[i] > max_step)
			continue;
		r->step = steps[i];
		rc = try_step(r->s, &l, steps[i], m, &se);
		if (rc == 0 && verify) {
			rc = objstore_rd_read(r, m, NULL, 1, NULL, &se);
			if (rc)
				ckpt__manifest_free(m);
		}
		/* only a damaged step is skipped; a store that fails to
		 * answer (auth, transport, retries over) stops the search:
		 * an older step must not be taken for the newest */
		if (rc == 0 || !ckpt__is_damage(rc) || step >= 0) {
			if (rc)
				*e = se;
			break;
		}
		sr_warn("objstore", "skipping invalid checkpoint", "uri=%s step=%"
			PRId64 " err=\"%s\"", uri, steps[i], sr_err_str(&se, rc));
		rc = -SR_ENOTFOUND;
	}
	if (rc == -SR_ENOTFOUND && step < 0)
		sr_err_set(e, rc, "%s: no valid checkpoint%s", uri,
			   max_step >= 0 ? " at or below the given step" : "");
	if (rc)
		goto fail;
	if (asprintf(path, "%s/step-%08" PRId64, uri, r->step) < 0) {
		*path = NULL;
		ckpt__manifest_free(m);
		rc = -ENOMEM;
		goto fail;
	}
	free(steps);
	objstore_list_free(&l);
	*out = r;
	return 0;
fail:
	free(steps);
	objstore_list_free(&l);
	objstore_rd_close(r);
	return rc;
}

void objstore_rd_close(struct objstore_rd *r)
{
	if (!r)
		return;
	objstore_close(r->s);
	free(r);
}

int objstore_rd_newest(const char *uri, int64_t max_step, int64_t *step,
		       struct sr_err *e)
{
	struct objstore *s = NULL;
	struct objstore_list l = { 0 };
	int64_t *steps = NULL;
	size_t n = 0;
	int rc;

	*step = -1;
	rc = open_list(uri, &s, &l, e);
	if (rc == 0)
		rc = objstore_steps(&l, &steps, &n);
	for (size_t i = 0; rc == 0 && i < n && *step < 0; i++) {
		if (max_step < 0 || steps[i] <= max_step)
			*step = steps[i];
	}
	free(steps);
	objstore_list_free(&l);
	objstore_close(s);
	return rc;
}

int objstore_rd_list(const char *uri, struct spotckpt_entry *out, size_t cap,
		     size_t *n, struct sr_err *e)
{
	struct objstore *s = NULL;
	struct objstore_list l = { 0 };
	int64_t *all = NULL;
	size_t na = 0, k = 0;
	int rc;

	*n = 0;
	rc = open_list(uri, &s, &l, e);
	if (rc)
		goto out;
	/* every step with any object: committed (manifest) or not */
	all = malloc((l.n + 1) * sizeof *all);
	if (!all) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < l.n; i++) {
		const char *sl = strchr(l.v[i].key, '/');
		char name[64];
		int64_t st;
		int tmp = 0;

		if (!sl || (size_t)(sl - l.v[i].key) >= sizeof name)
			continue;
		memcpy(name, l.v[i].key, (size_t)(sl - l.v[i].key));
		name[sl - l.v[i].key] = 0;
		if (ckpt__parse_dirname(name, &st, &tmp) || tmp)
			continue;
		if (na == 0 || all[na - 1] != st)
			all[na++] = st;
	}
	qsort(all, na, sizeof *all, cmp_desc);
	for (size_t i = 0; i < na; i++) {
		struct spotckpt_entry en = { .step = all[i], .ntensors = -1,
					     .state = SPOTCKPT_ENTRY_INCOMPLETE };
		char pre[64];
		size_t pl = (size_t)snprintf(pre, sizeof pre, "step-%08" PRId64 "/",
					     all[i]);

		for (size_t j = 0; j < l.n; j++) {
			if (strncmp(l.v[j].key, pre, pl))
				continue;
			en.bytes += l.v[j].size;
			if (!strcmp(l.v[j].key + pl, CKPT_MANIFEST))
				en.state = SPOTCKPT_ENTRY_COMMITTED;
		}
		if (en.state == SPOTCKPT_ENTRY_COMMITTED) {
			struct ckpt_manifest m = { 0 };
			struct sr_err me = { 0 };
			char key[128], *buf = NULL;
			size_t len = 0;

			snprintf(key, sizeof key, "%s" CKPT_MANIFEST, pre);
			if (objstore_get(s, key, CKPT_MANIFEST_MAX, &buf, &len,
					 &me) == 0 &&
			    ckpt__manifest_parse(buf, len, key, &m, &me) == 0) {
				en.time_ns = m.time_ns;
				en.ntensors = (int32_t)m.l->nt;
				ckpt__manifest_free(&m);
			}
			free(buf);
		}
		if (k < cap)
			out[k] = en;
		k++;
	}
	*n = k;
out:
	free(all);
	objstore_list_free(&l);
	objstore_close(s);
	return rc;
}
