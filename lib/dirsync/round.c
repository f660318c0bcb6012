/*
 * round.c - one sync round (dirsync.h): scan, upload the stable files
 * whose content the store lacks, commit the manifest last, then
 * retention.
 *
 *   scan --> for each regular file:
 *              same stat as when last read   -> its known digest
 *              stable (mtime quiet, forced)  -> read + upload (workers)
 *              not stable                    -> pending: the last
 *                                               round's version, if any
 *              gone                          -> dropped, unless a file
 *                                               is pending (then kept)
 *        --> uploaded file changed meanwhile -> its object deleted, the
 *                                               file is pending
 *        --> list == last round's            -> nothing committed
 *        --> else PUT rounds/r-<N>.json (the commit) -> retention:
 *            manifests beyond the newest `keep` deleted, then every
 *            object no kept manifest names (leftovers of killed rounds)
 *
 * Round numbers only grow: the next is one above the highest manifest key
 * ever listed, torn ones included, so a key is never written twice.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirsync.h"
#include "dirsync_int.h"
#include "common/log.h"
#include "common/timeutil.h"

void (*dirsync__test_point)(const char *what, int64_t round);

static void point(const char *what, int64_t round)
{
	if (dirsync__test_point)
		dirsync__test_point(what, round);
}

/* ---- the digests the store holds ---------------------------------- */
static int hex_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

int dirsync__have(const struct dirsync *d, const char *sha)
{
	return d->nhave && bsearch(sha, d->have, d->nhave, sizeof *d->have,
				   hex_cmp) != NULL;
}

/* The store holds what round r names (and nothing else we count on). */
int dirsync__have_set(struct dirsync *d, const struct dirsync_round *r)
{
	char (*v)[65] = malloc((r->n ? r->n : 1) * sizeof *v);

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < r->n; i++)
		memcpy(v[i], r->files[i].sha256, 65);
	qsort(v, r->n, sizeof *v, hex_cmp);
	free(d->have);
	d->have = v;
	d->nhave = r->n;
	return 0;
}

/* ---- what each file looked like when its digest was taken ---------- */
static int cache_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dirsync_known *)a)->st.path,
		      ((const struct dirsync_known *)b)->st.path);
}

void dirsync__known_free(struct dirsync_known *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].st.path);
	free(v);
}

static const struct dirsync_known *known_find(const struct dirsync *d,
					      const char *path)
{
	struct dirsync_known key = { .st.path = (char *)path };

	return d->nknown ? bsearch(&key, d->known, d->nknown, sizeof *d->known,
				   cache_cmp) : NULL;
}

static const struct dirsync_file *last_find(const struct dirsync *d,
					    const char *path)
{
	/* the last round's files are sorted by path */
	size_t lo = 0, hi = d->last.n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(d->last.files[mid].path, path);

		if (c == 0)
			return &d->last.files[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int same_stat(const struct dirsync_stat *a, const struct dirsync_stat *b)
{
	return a->size == b->size && a->mtime_ns == b->mtime_ns &&
	       a->ctime_ns == b->ctime_ns && a->ino == b->ino && a->dev == b->dev;
}

/* ---- open / close ---------------------------------------------------- */
int dirsync_open(const struct dirsync_opts *o, struct dirsync **out,
		 struct sr_err *e)
{
	struct dirsync *d = calloc(1, sizeof *d);
	struct objstore_cfg cfg;
	struct objstore_list l = { 0 };
	int64_t *rounds = NULL;
	size_t nr = 0;
	int rc;

	*out = NULL;
	if (!d)
		return sr_err_set(e, -ENOMEM, "dirsync: out of memory");
	d->o = *o;
	if (d->o.keep < 1)
		d->o.keep = 3;
	if (d->o.workers < 1)
		d->o.workers = 4;
	d->st.round = -1;
	d->st.restored = -1;
	objstore_cfg_default(&cfg);
	rc = objstore_open(o->uri, &cfg, &d->s, e);
	if (rc < 0)
		goto fail;
	rc = objstore_list(d->s, DIRSYNC_META "/rounds/", &l, e);
	if (rc < 0)
		goto fail;
	rc = dirsync_rounds_of(&l, &rounds, &nr);
	if (rc < 0) {
		sr_err_set(e, rc, "dirsync: out of memory");
		goto fail;
	}
	d->next_round = nr ? rounds[nr - 1] + 1 : 1;
	free(rounds);
	objstore_list_free(&l);
	*out = d;
	return 0;
fail:
	objstore_list_free(&l);
	dirsync_close(d);
	return rc;
}

void dirsync_close(struct dirsync *d)
{
	if (!d)
		return;
	objstore_close(d->s);
	dirsync_round_free(&d->last);
	dirsync__known_free(d->known, d->nknown);
	free(d->have);
	free(d);
}

struct objstore *dirsync_store(struct dirsync *d)
{
	return d->s;
}

void dirsync_set_gate(struct dirsync *d, objstore_gate_fn gate,
		      objstore_gate_fn pace, void *ud)
{
	d->gate = gate;
	d->gate_ud = ud;
	objstore_set_gate(d->s, gate, ud);
	objstore_set_pace(d->s, pace, ud);
}

void dirsync_stats(const struct dirsync *d, struct dirsync_stats *out)
{
	*out = d->st;
}

/* ---- uploads --------------------------------------------------------- */
enum job_state { J_TODO, J_OK, J_CHANGED, J_FAILED };

struct job {
	const struct dirsync_stat *st; /* from the scan */
	struct dirsync_stat now;       /* as read */
	char sha[65];
	int state;
	int uploaded;
	struct sr_err e;
};

struct pool {
	struct dirsync *d;
	struct job *jobs;
	size_t n;
	atomic_size_t next;
	_Atomic uint64_t bytes;
	atomic_int stop;              /* a failure: take no more */
};

static void run_job(struct pool *p, struct job *j)
{
	struct dirsync *d = p->d;
	char key[128];
	struct stat sb;
	uint64_t sent = 0;
	int fd = dirsync_open_at(d->o.dirfd, j->st->path, &j->e), rc;

	if (fd < 0) {
		/* gone or replaced by something else since the scan */
		j->state = J_CHANGED;
		return;
	}
	if (fstat(fd, &sb) < 0)
		goto changed;
	dirsync__stat_of(&sb, &j->now);
	j->now.path = j->st->path;
	if (!same_stat(&j->now, j->st))
		goto changed;
	rc = dirsync__sha256_fd_gated(fd, j->now.size, j->sha, d->gate, d->gate_ud,
				      &j->e);
	if (rc == -EAGAIN)
		goto changed;
	if (rc < 0)
		goto failed;
	if (!dirsync__have(d, j->sha)) {
		dirsync_object_key(j->sha, key, sizeof key);
		rc = objstore_put_fd(d->s, key, fd, j->now.size, &sent, &j->e);
		if (rc < 0) {
			sr_err_prefix(&j->e, "%s", j->st->path);
			goto failed;
		}
		j->uploaded = 1;
		atomic_fetch_add(&p->bytes, j->now.size);
		point("object", d->next_round);
	}
	/* the bytes sent are the bytes hashed only if nothing changed */
	if (fstat(fd, &sb) < 0)
		goto changed;
	{
		struct dirsync_stat after;

		dirsync__stat_of(&sb, &after);
		if (!same_stat(&after, &j->now))
			goto changed;
	}
	close(fd);
	j->state = J_OK;
	return;
changed:
	close(fd);
	j->state = J_CHANGED;
	return;
failed:
	close(fd);
	j->state = J_FAILED;
	atomic_store(&p->stop, 1);
}

static void *worker(void *arg)
{
	struct pool *p = arg;

	while (!atomic_load(&p->stop)) {
		size_t i = atomic_fetch_add(&p->next, 1);

		if (i >= p->n)
			break;
		run_job(p, &p->jobs[i]);
	}
	return NULL;
}

static int run_pool(struct pool *p)
{
	int nw = p->d->o.workers < (int)p->n ? p->d->o.workers : (int)p->n;
	pthread_t t[16];
	int started = 0;

	if (nw > 16)
		nw = 16;
	for (int i = 1; i < nw; i++) {
		if (pthread_create(&t[started], NULL, worker, p) == 0)
			started++;
	}
	worker(p); /* this thread too */
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	return 0;
}

/* ---- the round ------------------------------------------------------- */
static int file_push(struct dirsync_round *r, const char *path, uint64_t size,
		     const char *sha, uint32_t mode)
{
	struct dirsync_file *f;

	if (dirsync__grow((void **)&r->files, &r->cap, r->n, sizeof *r->files) < 0)
		return -ENOMEM;
	f = &r->files[r->n];
	if (!(f->path = strdup(path)))
		return -ENOMEM;
	f->size = size;
	memcpy(f->sha256, sha, 65);
	f->mode = mode;
	r->bytes += size;
	r->n++;
	return 0;
}

static int known_push(struct dirsync_known **v, size_t *n, size_t *cap,
		      const struct dirsync_stat *st, const char *sha)
{
	if (dirsync__grow((void **)v, cap, *n, sizeof **v) < 0)
		return -ENOMEM;
	(*v)[*n].st = *st;
	if (!((*v)[*n].st.path = strdup(st->path)))
		return -ENOMEM;
	memcpy((*v)[*n].sha, sha, 65);
	(*n)++;
	return 0;
}

static int stat_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dirsync_stat *)a)->path,
		      ((const struct dirsync_stat *)b)->path);
}

static int file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dirsync_file *)a)->path,
		      ((const struct dirsync_file *)b)->path);
}

static int same_round(const struct dirsync_round *a, const struct dirsync_round *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		if (strcmp(a->files[i].path, b->files[i].path) ||
		    strcmp(a->files[i].sha256, b->files[i].sha256) ||
		    a->files[i].mode != b->files[i].mode)
			return 0;
	}
	return 1;
}

/* Delete manifests beyond the newest `keep`, then every object no kept
 * manifest names.  Best effort: a failure is logged, the next round
 * tries again. */
static void retention(struct dirsync *d)
{
	struct objstore_list l = { 0 }, objs = { 0 };
	struct dirsync_round *kept = NULL;
	int64_t *rounds = NULL;
	size_t nr = 0, nk = 0, first;
	char key[160], **del = NULL;
	size_t ndel = 0;
	struct sr_err e;

	sr_err_clear(&e);
	point("retention", d->st.round);
	if (objstore_list(d->s, DIRSYNC_META "/rounds/", &l, &e) < 0 ||
	    dirsync_rounds_of(&l, &rounds, &nr) < 0)
		goto out;
	first = nr > (size_t)d->o.keep ? nr - (size_t)d->o.keep : 0;
	/* the kept manifests, read back: a torn one names nothing */
	kept = calloc(nr - first + 1, sizeof *kept);
	if (!kept)
		goto out;
	for (size_t i = first; i < nr; i++) {
		char *buf = NULL;
		size_t len = 0;

		dirsync_round_key(rounds[i], key, sizeof key);
		if (objstore_get(d->s, key, DIRSYNC_MANIFEST_MAX, &buf, &len, &e) == 0 &&
		    dirsync_manifest_decode(buf, len, key, &kept[nk], &e) == 0)
			nk++;
		free(buf);
	}
	if (nk == 0)
		goto out; /* nothing sound to keep: delete nothing */
	for (size_t i = 0; i < first; i++) {
		const char *k[1] = { key };

		dirsync_round_key(rounds[i], key, sizeof key);
		if (objstore_del(d->s, k, 1, &e) < 0)
			goto out; /* objects only after their manifests */
	}
	if (objstore_list(d->s, DIRSYNC_META "/objects/", &objs, &e) < 0)
		goto out;
	del = calloc(objs.n + 1, sizeof *del);
	if (!del)
		goto out;
	for (size_t i = 0; i < objs.n; i++) {
		const char *sha = objs.v[i].key + strlen(DIRSYNC_META "/objects/");
		int used = 0;

		for (size_t k = 0; k < nk && !used; k++) {
			for (size_t f = 0; f < kept[k].n && !used; f++)
				used = !strcmp(kept[k].files[f].sha256, sha);
		}
		if (!used)
			del[ndel++] = objs.v[i].key;
	}
	if (ndel)
		objstore_del(d->s, (const char *const *)del, ndel, &e);
out:
	if (e.code)
		sr_warn("dirsync", "retention failed", "uri=\"%s\" error=\"%s\"",
			d->o.uri, e.msg);
	for (size_t i = 0; i < nk; i++)
		dirsync_round_free(&kept[i]);
	free(kept);
	free(del);
	free(rounds);
	objstore_list_free(&objs);
	objstore_list_free(&l);
}

static int commit(struct dirsync *d, struct dirsync_round *r, struct sr_err *e)
{
	char key[128], *buf = NULL;
	size_t len = 0;
	int rc;

	r->round = d->next_round;
	r->time_ns = sr_time_real_ns();
	rc = dirsync_manifest_encode(r, &buf, &len, e);
	if (rc < 0)
		return rc;
	dirsync_round_key(r->round, key, sizeof key);
	point("manifest", r->round);
	rc = objstore_put(d->s, key, buf, len, e);
	free(buf);
	if (rc < 0) {
		/* a torn or half-sent manifest may exist: never reuse the key */
		d->next_round++;
		return sr_err_prefix(e, "round %" PRId64, r->round);
	}
	d->next_round++;
	return 0;
}

int dirsync_sync(struct dirsync *d, int64_t quiet_ns, int64_t *committed,
		 struct sr_err *e)
{
	struct dirsync_scan sc = { 0 };
	struct dirsync_round r = { 0 };
	struct dirsync_known *kn = NULL;
	size_t nkn = 0, kcap = 0, nj = 0;
	struct pool p = { .d = d };
	int64_t now = sr_time_real_ns();
	uint64_t pend_files = 0, pend_bytes = 0;
	int rc;

	if (committed)
		*committed = 0;
	rc = dirsync_scan(d->o.dirfd, &sc, e);
	if (rc < 0)
		return rc;
	p.jobs = calloc(sc.n ? sc.n : 1, sizeof *p.jobs);
	if (!p.jobs) {
		rc = sr_err_set(e, -ENOMEM, "dirsync: out of memory");
		goto out;
	}
	for (size_t i = 0; i < sc.n; i++) {
		const struct dirsync_known *k = known_find(d, sc.v[i].path);

		if (k && same_stat(&k->st, &sc.v[i]) && dirsync__have(d, k->sha))
			continue; /* unchanged since read, content held */
		if (quiet_ns >= 0 && now - sc.v[i].mtime_ns < quiet_ns)
			continue; /* pending */
		p.jobs[nj++].st = &sc.v[i];
	}
	p.n = nj;
	run_pool(&p);
	d->st.uploaded_bytes += atomic_load(&p.bytes);
	/* the round: every file, in scan (path) order */
	for (size_t i = 0, j = 0; i < sc.n; i++) {
		const struct dirsync_stat *st = &sc.v[i];
		const struct dirsync_known *k = known_find(d, st->path);
		const struct dirsync_file *old = last_find(d, st->path);
		struct job *jb = j < nj && p.jobs[j].st == st ? &p.jobs[j++] : NULL;

		rc = 0;
		if (jb && jb->state == J_OK) {
			rc = file_push(&r, st->path, st->size, jb->sha, st->mode);
			if (rc == 0)
				rc = known_push(&kn, &nkn, &kcap, &jb->now, jb->sha);
		} else if (!jb && k && same_stat(&k->st, st) &&
			   dirsync__have(d, k->sha)) {
			rc = file_push(&r, st->path, st->size, k->sha, st->mode);
			if (rc == 0)
				rc = known_push(&kn, &nkn, &kcap, &k->st, k->sha);
		} else {
			if (jb && jb->state == J_CHANGED && jb->uploaded) {
				/* the object may hold bytes of two versions */
				char key[128];
				const char *ks[1] = { key };

				dirsync_object_key(jb->sha, key, sizeof key);
				objstore_del(d->s, ks, 1, NULL);
			}
			pend_files++;
			pend_bytes += st->size;
			if (old)
				rc = file_push(&r, old->path, old->size,
					       old->sha256, old->mode);
		}
		if (rc < 0) {
			rc = sr_err_set(e, -ENOMEM, "dirsync: out of memory");
			goto out;
		}
	}
	for (size_t j = 0; j < nj; j++) {
		if (p.jobs[j].state == J_FAILED) {
			rc = p.jobs[j].e.code ? p.jobs[j].e.code : -SR_EHTTP;
			sr_err_set(e, rc, "%s", p.jobs[j].e.msg);
			goto out;
		}
	}
	d->st.pending_files = pend_files;
	d->st.pending_bytes = pend_bytes;
	/* while a file is pending, a deleted one stays: a script that
	 * writes step-200.pt and removes step-100.pt must never leave a round
	 * holding neither */
	if (pend_files > 0) {
		size_t nscan = r.n;

		for (size_t i = 0; i < d->last.n; i++) {
			const struct dirsync_file *f = &d->last.files[i];
			struct dirsync_stat key = { .path = f->path };

			if (sc.n && bsearch(&key, sc.v, sc.n, sizeof *sc.v, stat_cmp))
				continue;
			if (file_push(&r, f->path, f->size, f->sha256, f->mode) < 0) {
				rc = sr_err_set(e, -ENOMEM, "dirsync: out of memory");
				goto out;
			}
		}
		if (r.n > nscan)
			qsort(r.files, r.n, sizeof *r.files, file_cmp);
	}
	if (d->st.round >= 0 && same_round(&r, &d->last))
		goto keep_cache; /* nothing new */
	if (d->st.round < 0 && r.n == 0)
		goto keep_cache; /* an empty dir is not a round */
	rc = commit(d, &r, e);
	if (rc < 0)
		goto out;
	/* the store now holds exactly what r names (plus older kept rounds) */
	dirsync_round_free(&d->last);
	d->last = r;
	memset(&r, 0, sizeof r);
	rc = dirsync__have_set(d, &d->last);
	if (rc < 0) {
		rc = sr_err_set(e, rc, "dirsync: out of memory");
		goto out;
	}
	d->st.round = d->last.round;
	d->st.files = d->last.n;
	d->st.bytes = d->last.bytes;
	d->st.rounds++;
	if (committed)
		*committed = d->last.round;
	retention(d);
keep_cache:
	if (nkn > 1)
		qsort(kn, nkn, sizeof *kn, cache_cmp);
	dirsync__known_free(d->known, d->nknown);
	d->known = kn;
	d->nknown = nkn;
	kn = NULL;
	nkn = 0;
	rc = 0;
out:
	dirsync__known_free(kn, nkn);
	dirsync_round_free(&r);
	free(p.jobs);
	dirsync_scan_free(&sc);
	return rc;
}
