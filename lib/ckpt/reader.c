/*
 * reader.c - opening a checkpoint and reading its tensors, verified.
 *
 * Opening checks everything that is cheap: the manifest's own checksum and
 * schema, that each shard file has the recorded size, and that each
 * shard's safetensors header agrees with the manifest (names, dtypes,
 * shapes, offsets).  Tensor data is verified as it is read: every tensor's
 * bytes are hashed with XXH3 and compared with the manifest - read into an
 * image of the checkpoint and placed in the caller's buffers tensor by
 * all at once after the last one matched (placeall.c; or, on request,
 * tensor by tensor behind the reads, put back if a later one fails:
 * behind.c), or, for a store's or into CUDA memory, on the
 * way to the caller's buffers with their old bytes kept (undo.c).  SPOTCKPT_OPEN_VERIFY additionally reads
 * every shard whole and checks the file hash and every tensor hash before
 * returning.  Reads of different shards run in parallel threads, each
 * with its own io_uring.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "internal.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "backend.h"

#define READ_THREADS_MAX 4

struct spotckpt_reader {
	char *dir;               /* the checkpoint's own directory */
	struct ckpt_manifest m;
	uint32_t io_depth, io_chunk;
	void *remote;            /* tier 3: reads go to the store through
				  * ckpt_remote_backend */
	uint8_t *buf;            /* borrowed memory (the engine's idle
				  * staging slot) or NULL: for the undo buffer
				  * when it fits, else for the read buffers
				  * (each thread maps its own without it) */
	uint64_t buf_bytes;
	uint8_t *io_buf;         /* read buffers of this read_all, or NULL */
	uint64_t io_buf_bytes;
};

void ckpt__reader_borrow_buffer(struct spotckpt_reader *r, uint8_t *buf,
				uint64_t n)
{
	r->buf = buf;
	r->buf_bytes = n;
}

uint64_t ckpt__reader_borrow_need(const struct spotckpt_reader *r)
{
	const struct ckpt_layout *l = r->m.l;
	uint64_t img = 0, undo = 0;

	for (size_t s = 0; s < l->ns; s++)
		img += (l->s[s].file_bytes + CKPT_IMG_ALIGN - 1) &
		       ~(uint64_t)(CKPT_IMG_ALIGN - 1);
	for (size_t t = 0; t < l->nt; t++)
		undo += (l->t[t].nbytes + 63) & ~(uint64_t)63; /* undo.c */
	return (img > undo ? img : undo) + 4096;
}

static char *path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", a, b);
	return p;
}

/* Shard file i against the manifest: size, header, every entry. */
static int check_shard(const struct spotckpt_reader *r, uint32_t i,
		       struct sr_err *e)
{
	const struct ckpt_shard *sh = &r->m.l->s[i];
	struct ckpt_st_entry *ents = NULL;
	char *path = path_join(r->dir, sh->file), *hdr = NULL;
	size_t n = 0, hl = 0;
	uint64_t ds = 0;
	struct stat st;
	int rc = 0;

	if (!path)
		return -ENOMEM;
	if (stat(path, &st) != 0) {
		rc = sr_err_set(e, -SR_ECORRUPT, "%s: %s", path, strerror(errno));
		goto out;
	}
	if ((uint64_t)st.st_size != sh->file_bytes) {
		rc = sr_err_set(e, -SR_ECORRUPT, "%s: %" PRIu64 " bytes, manifest "
				"says %" PRIu64 " (torn write?)", path,
				(uint64_t)st.st_size, sh->file_bytes);
		goto out;
	}
	{
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t got;

		hdr = malloc(sh->data_start);
		if (fd < 0 || !hdr) {
			rc = fd < 0 ? sr_err_set(e, -errno, "%s: %s", path,
						 strerror(errno)) : -ENOMEM;
			if (fd >= 0)
				close(fd);
			goto out;
		}
		got = pread(fd, hdr, sh->data_start, 0);
		close(fd);
		hl = got < 0 ? 0 : (size_t)got;
	}
	if (hl != sh->data_start || XXH3_64bits(hdr, hl) != sh->header_xxh3) {
		rc = sr_err_set(e, -SR_ECHECKSUM, "%s: header checksum mismatch "
				"(damaged or torn)", path);
		goto out;
	}
	rc = ckpt__st_header_parse((const uint8_t *)hdr, hl, sh->file_bytes,
				   path, &ents, &n, &ds, e);
	if (rc)
		goto out;
	if (ds != sh->data_start || n != sh->count) {
		rc = sr_err_set(e, -SR_ECORRUPT, "%s: header lists %zu tensors "
				"from byte %" PRIu64 ", manifest %u from %" PRIu64,
				path, n, ds, sh->count, sh->data_start);
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		const struct ckpt_tensor *t = &r->m.l->t[sh->first + k];
		const struct ckpt_st_entry *en = &ents[k];

		if (strcmp(en->name, t->name) || en->dtype != t->dtype ||
		    en->ndim != t->ndim || en->begin + ds != t->offset ||
		    memcmp(en->shape, t->shape, (size_t)t->ndim * sizeof t->shape[0])) {
			rc = sr_err_set(e, -SR_ECORRUPT, "%s: tensor %s: header "
					"and manifest disagree", path, t->name);
			goto out;
		}
	}
out:
	free(ents);
	free(hdr);
	free(path);
	return rc;
}

/* ---- reading tensor ranges ------------------------------------------------
 * A job is a run of consecutive tensors of one shard, about job_bytes of
 * data (a bigger tensor is a job of its own), so that hashing and copying
 * spread over threads even when the state is one shard.  Each reading
 * thread claims jobs one at a time and streams them through its own queue
 * (ckpt__io_read_stream), which does not drain between jobs, so jobs can
 * be short: a thread that is slowed down (a busy core) simply claims fewer,
 * and the threads end within about one job of each other.  Jobs are
 * claimed largest first, which leaves the short ones for the end.
 * (Before, each job drained its thread's queue at its end, which forced
 * long jobs - a quarter of a 1 GiB state - and then one thread often read
 * the last 10-60 MiB alone.) */
#define JOB_BYTES_MIN (16ull << 20)
#define JOBS_PER_THREAD 8

struct shard_job {
	const struct spotckpt_reader *r;
	uint32_t shard, first, last; /* tensors [first, last) */
	uint64_t bytes;    /* data bytes of its tensors */
	const struct spotckpt_dest **dest; /* per tensor of the reader, or NULL */
	int verify_all;    /* hash every tensor, wanted or not */
	XXH3_state_t *tst;
	char *path;        /* the shard file, while the job is read */
	uint32_t k;        /* cursor: current tensor */
	int open;
	const struct ckpt_cuda_ops *cu;
	struct ckpt_undo *undo;  /* old destination bytes, or NULL */
	uint8_t *stage;    /* verify first: the image of this job's shard
			    * file, where its bytes are read and checked;
			    * the destinations are written only after every
			    * tensor passed (place_all).  NULL: straight into
			    * the destinations, old bytes kept in undo */
	uint64_t stage_len;
	struct ckpt_behind *behind; /* verify first: takes each tensor once
				     * it matched (behind.c), or NULL */
	struct sr_err err;
	int rc;
};

static int tensor_done(struct shard_job *j, const struct ckpt_tensor *t,
		       const char *file)
{
	uint64_t h = XXH3_64bits_digest(j->tst);

	if (h != t->xxh3)
		return sr_err_set(&j->err, -SR_ECHECKSUM, "%s/%s: tensor %s: "
				  "checksum mismatch (xxh3 %016" PRIx64 ", manifest "
				  "%016" PRIx64 ")", j->r->dir, file, t->name, h,
				  t->xxh3);
	return 0;
}

static int sink(void *ud, uint64_t off, const uint8_t *p, uint64_t n)
{
	struct shard_job *j = ud;
	const struct ckpt_layout *l = j->r->m.l;
	const struct ckpt_shard *sh = &l->s[j->shard];
	uint64_t end = off + n;

	while (j->k < j->last) {
		const struct ckpt_tensor *t = &l->t[j->k];
		const struct spotckpt_dest *d = j->dest ? j->dest[j->k] : NULL;
		uint64_t tb = t->offset, te = tb + t->nbytes;
		uint64_t lo = tb > off ? tb : off, hi = te < end ? te : end;
		int want = d || j->verify_all;

		if (tb > end)
			break;
		if (want && !j->open) {
			XXH3_64bits_reset(j->tst);
			j->open = 1;
			/* a device tensor's old bytes aside, whole, before the
			 * first is written (host ones: block by block below) */
			if (d && d->device == SPOTCKPT_DEV_CUDA &&
			    ckpt__undo_save(j->undo, j->k))
				return sr_err_set(&j->err, -SR_EUNSUPPORTED,
						  "tensor %s: cannot keep its "
						  "old contents (device copy "
						  "failed)", t->name);
		}
		if (want && hi > lo && j->stage) {
			/* verify first: the bytes stay in the image (read
			 * there, or copied there from a read buffer) */
			const uint8_t *src = p + (lo - off);
			uint8_t *at = j->stage + lo;

			if (src == at)
				ckpt__hash_update(j->tst, src, hi - lo);
			else
				ckpt__hash_copy(j->tst, at, src, hi - lo);
		} else if (want && hi > lo && d && d->device != SPOTCKPT_DEV_CUDA) {
			ckpt__hash_copy_keep(j->tst, (uint8_t *)d->ptr + (lo - tb),
					     p + (lo - off), hi - lo,
					     ckpt__undo_keep_at(j->undo, j->k,
								lo - tb, hi - lo));
		} else if (want && hi > lo) {
			ckpt__hash_update(j->tst, p + (lo - off), hi - lo);
			if (d && d->device == SPOTCKPT_DEV_CUDA) {
				if (j->cu->memcpy((uint8_t *)d->ptr + (lo - tb),
						  p + (lo - off), hi - lo,
						  CKPT_CUDA_H2D))
					return sr_err_set(&j->err, -SR_EUNSUPPORTED,
							  "tensor %s: cudaMemcpy "
							  "failed", t->name);
			}
		}
		if (te > end)
			break;
		if (want) {
			int rc = tensor_done(j, t, sh->file);

			if (rc)
				return rc;
			if (d && j->behind) /* checked: it may go in now */
				ckpt__behind_push(j->behind, j->k);
		}
		j->open = 0;
		j->k++;
	}
	return 0;
}

struct job_set {
	struct shard_job *jobs;
	size_t n, next;
	pthread_mutex_t mu;
	int failed;
};

/* One reading thread: its share of the borrowed buffer, if any. */
struct shard_worker {
	struct job_set *js;
	uint8_t *buf;
	uint64_t buf_bytes;
	int rc;            /* an error that belongs to no job */
};

/* ckpt_read_src.next: claim the next job (none once one has failed). */
static int job_next(void *ud, struct ckpt_read_range *rr)
{
	struct job_set *js = ud;
	const struct ckpt_layout *l;
	struct shard_job *j = NULL;

	pthread_mutex_lock(&js->mu);
	if (!js->failed && js->next < js->n)
		j = &js->jobs[js->next++];
	pthread_mutex_unlock(&js->mu);
	if (!j)
		return 0;
	l = j->r->m.l;
	j->path = path_join(j->r->dir, l->s[j->shard].file);
	if (!j->path ||
	    posix_memalign((void **)&j->tst, 64, sizeof *j->tst)) {
		j->rc = -ENOMEM;
		pthread_mutex_lock(&js->mu);
		js->failed = 1;
		pthread_mutex_unlock(&js->mu);
		return -ENOMEM;
	}
	j->k = j->first;
	rr->path = j->path;
	rr->off = l->t[j->first].offset;
	rr->len = l->t[j->last - 1].offset + l->t[j->last - 1].nbytes - rr->off;
	rr->sink = sink;
	rr->ud = j;
	rr->dst = j->stage;
	rr->dst_len = j->stage_len;
	return 1;
}

/* ckpt_read_src.finish: complete the job's empty tensors at its end and
 * record its outcome.  A job stopped by another's error did not fail. */
static int job_finish(void *ud, struct ckpt_read_range *rr, int rc)
{
	struct job_set *js = ud;
	struct shard_job *j = rr->ud;

	if (rc == 0) /* completes empty tensors at the end of the span */
		rc = sink(j, rr->off + rr->len, (const uint8_t *)"", 0);
	if (rc && rc != -ECANCELED && !j->err.code)
		sr_err_set(&j->err, rc, "%s: read: %s", j->path,
			   sr_strerror(rc));
	j->rc = rc == -ECANCELED ? 0 : rc;
	if (rc) {
		pthread_mutex_lock(&js->mu);
		js->failed = 1;
		pthread_mutex_unlock(&js->mu);
	}
	free(j->path);
	j->path = NULL;
	return rc;
}

static void *shard_thread(void *arg)
{
	struct shard_worker *w = arg;
	struct job_set *js = w->js;
	struct ckpt_read_src src = { job_next, job_finish, js };
	struct ckpt_io *io = NULL;

	w->rc = ckpt__io_new(js->jobs[0].r->io_depth, js->jobs[0].r->io_chunk,
			     &io);
	if (w->rc == 0 && w->buf) /* else (too small) the io maps its own */
		ckpt__io_borrow_buffer(io, w->buf, w->buf_bytes);
	if (w->rc == 0)
		w->rc = ckpt__io_read_stream(io, &src);
	if (w->rc) {
		pthread_mutex_lock(&js->mu);
		js->failed = 1;
		pthread_mutex_unlock(&js->mu);
	}
	ckpt__io_free(io);
	return NULL;
}

static int wanted(const struct spotckpt_dest **dest, int verify_all,
		  uint32_t k)
{
	return verify_all || (dest && dest[k]);
}

/* Largest first; equal sizes in file order. */
static int job_cmp(const void *a, const void *b)
{
	const struct shard_job *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* Cut the wanted tensors into jobs; returns the number of jobs. */
/* Reading into the stage, a job's aligned reads write whole blocks of the
 * shard's image: two jobs whose ranges share a block would both write it
 * from two threads (the same bytes, but a race all the same: TSan saw it
 * with odd-size tensors).  So a job read into the stage ends only where
 * the next wanted tensor starts in a later block; until then it takes the
 * tensors up to it (unwanted ones in between are skipped by the sink).
 * CKPT_SHARE_ALIGN is the largest offset alignment an O_DIRECT read uses
 * (ckpt__dio_probe; 4096 without O_DIRECT).  Returns the job's new end. */
#define CKPT_SHARE_ALIGN 4096u

static uint32_t stage_cut(const struct ckpt_layout *l,
			  const struct spotckpt_dest **dest, int verify_all,
			  uint32_t k, uint32_t end, uint64_t *bytes)
{
	while (k < end) {
		const struct ckpt_tensor *p = &l->t[k - 1];
		uint64_t jend = p->offset + p->nbytes;
		uint32_t k2 = k;

		while (k2 < end && !wanted(dest, verify_all, k2))
			k2++;
		if (k2 == end || l->t[k2].offset / CKPT_SHARE_ALIGN >=
		    (jend + CKPT_SHARE_ALIGN - 1) / CKPT_SHARE_ALIGN)
			break;
		*bytes += l->t[k2].nbytes;
		k = k2 + 1;
	}
	return k;
}

static size_t plan_jobs(struct spotckpt_reader *r,
			const struct spotckpt_dest **dest, int verify_all,
			int nthreads, struct ckpt_undo *undo, uint8_t *stage,
			struct ckpt_behind *behind, struct shard_job *jobs)
{
	const struct ckpt_layout *l = r->m.l;
	uint64_t job_bytes = 0, base = 0;
	size_t n = 0;

	for (uint32_t k = 0; k < l->nt; k++)
		job_bytes += wanted(dest, verify_all, k) ? l->t[k].nbytes : 0;
	job_bytes /= JOBS_PER_THREAD * (uint64_t)nthreads;
	if (job_bytes < JOB_BYTES_MIN)
		job_bytes = JOB_BYTES_MIN;

	for (uint32_t s = 0; s < l->ns; s++) {
		uint32_t k = l->s[s].first, end = k + l->s[s].count;
		uint64_t img = ckpt__shard_image_bytes(&l->s[s]);

		while (k < end) {
			uint64_t bytes = 0;
			uint32_t first;

			while (k < end && !wanted(dest, verify_all, k))
				k++;
			if (k == end)
				break;
			first = k;
			/* a run of wanted tensors, up to job_bytes */
			while (k < end && wanted(dest, verify_all, k) &&
			       (bytes == 0 || bytes + l->t[k].nbytes <= job_bytes))
				bytes += l->t[k++].nbytes;
			if (stage)
				k = stage_cut(l, dest, verify_all, k, end, &bytes);
			jobs[n].r = r;
			jobs[n].shard = s;
			jobs[n].first = first;
			jobs[n].last = k;
			jobs[n].bytes = bytes;
			jobs[n].dest = dest;
			jobs[n].verify_all = verify_all;
			jobs[n].cu = ckpt__cuda();
			jobs[n].undo = undo;
			jobs[n].stage = stage ? stage + base : NULL;
			jobs[n].stage_len = stage ? img : 0;
			jobs[n].behind = behind;
			n++;
		}
		base += img;
	}
	qsort(jobs, n, sizeof *jobs, job_cmp);
	return n;
}

/* Read (and verify) the wanted tensors on up to READ_THREADS_MAX threads.
 * The first failure's message goes to the caller's errmsg. */
static int run_shards(struct spotckpt_reader *r,
		      const struct spotckpt_dest **dest, int verify_all,
		      struct ckpt_undo *undo, uint8_t *stage,
		      struct ckpt_behind *behind)
{
	struct job_set js = { 0 };
	pthread_t th[READ_THREADS_MAX];
	struct shard_worker w[READ_THREADS_MAX];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nth = 0, rc = 0, want;

	js.jobs = calloc(r->m.l->nt + 1, sizeof *js.jobs);
	if (!js.jobs)
		return -ENOMEM;
	pthread_mutex_init(&js.mu, NULL);
	want = ncpu < 1 ? 1 : ncpu > READ_THREADS_MAX ? READ_THREADS_MAX : (int)ncpu;
	js.n = plan_jobs(r, dest, verify_all, want, undo, stage, behind,
			 js.jobs);
	if ((size_t)want > js.n)
		want = js.n ? (int)js.n : 1;
	for (int i = 0; i < want; i++) {
		/* thread i reads into the i-th 2 MiB-aligned share of the
		 * borrowed buffer (huge pages stay whole) */
		uint64_t share = r->io_buf_bytes / (uint64_t)want &
				 ~((2ull << 20) - 1);

		w[i].js = &js;
		w[i].buf = r->io_buf && share ? r->io_buf + share * (uint64_t)i
					      : NULL;
		w[i].buf_bytes = share;
		w[i].rc = 0;
	}
	for (int i = 0; i < want && (size_t)i < js.n; i++) {
		if (pthread_create(&th[nth], NULL, shard_thread, &w[nth]) == 0)
			nth++;
	}
	if (nth == 0 && js.n > 0)
		shard_thread(&w[0]); /* no thread could start: read here */
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	for (size_t i = 0; i < js.n; i++) {
		if (js.jobs[i].rc && !rc)
			rc = ckpt__fail_err(&js.jobs[i].err, js.jobs[i].rc);
		free(js.jobs[i].tst);
		free(js.jobs[i].path);
	}
	for (int i = 0; i < (nth ? nth : js.n > 0); i++) {
		if (w[i].rc && !rc) /* e.g. no io_uring memory: no job to blame */
			rc = ckpt__fail(w[i].rc, "%s: read: %s", r->dir,
					sr_strerror(w[i].rc));
	}
	pthread_mutex_destroy(&js.mu);
	free(js.jobs);
	return rc;
}

/* ---- opening ------------------------------------------------------------- */
/* Open the checkpoint in ckdir, named for step `want`: its manifest
 * must say that step (a manifest of step 999999 inside step-00000200 is
 * corrupt, not a newer checkpoint). */
static int try_open(const char *ckdir, int64_t want, uint32_t flags,
		    struct spotckpt_reader **out, struct sr_err *e)
{
	struct spotckpt_reader *r = calloc(1, sizeof *r);
	char *mpath = NULL, *buf = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->io_depth = 8;
	r->io_chunk = 4u << 20;
	r->dir = strdup(ckdir);
	mpath = path_join(ckdir, CKPT_MANIFEST);
	if (!r->dir || !mpath) {
		rc = -ENOMEM;
		goto out;
	}
	rc = sr_fs_read_file(mpath, CKPT_MANIFEST_MAX, &buf, &len, e);
	if (rc)
		goto out;
	rc = ckpt__manifest_parse(buf, len, mpath, &r->m, e);
	if (rc)
		goto out;
	if (r->m.step != want) {
		rc = sr_err_set(e, -SR_ECORRUPT, "%s: manifest says step %" PRId64
				", the directory name step %" PRId64, mpath,
				r->m.step, want);
		goto out;
	}
	for (uint32_t i = 0; i < r->m.l->ns; i++) {
		rc = check_shard(r, i, e);
		if (rc)
			goto out;
	}
	if (flags & SPOTCKPT_OPEN_VERIFY) {
		rc = run_shards(r, NULL, 1, NULL, NULL, NULL);
		if (rc) {
			sr_err_set(e, rc, "%s", spotckpt_errmsg());
			goto out;
		}
		/* every tensor and header hash matched; so must their digest */
		for (uint32_t i = 0; i < r->m.l->ns; i++) {
			if (ckpt__shard_hash(r->m.l, &r->m.l->s[i]) !=
			    r->m.l->s[i].xxh3) {
				rc = sr_err_set(e, -SR_ECHECKSUM, "%s/%s: shard "
						"checksum mismatch", ckdir,
						r->m.l->s[i].file);
				goto out;
			}
		}
	}
	*out = r;
	r = NULL;
out:
	spotckpt_reader_close(r);
	free(mpath);
	free(buf);
	return rc;
}

/* A checkpoint in an object store (the backend, backend.h). */
static int remote_open(const char *uri, int64_t step, int64_t max_step,
		       uint32_t flags, struct spotckpt_reader **out)
{
	struct spotckpt_reader *r = calloc(1, sizeof *r);
	struct sr_err e = { 0 };
	int rc;

	if (!r)
		return -ENOMEM;
	rc = ckpt_remote_backend.rd_open(uri, step, max_step,
					 flags & SPOTCKPT_OPEN_VERIFY, &r->remote,
					 &r->m, &r->dir, &e);
	if (rc) {
		spotckpt_reader_close(r);
		return ckpt__fail_err(&e, rc);
	}
	*out = r;
	return 0;
}

SPOTCKPT_API int spotckpt_reader_open(const char *dir, int64_t step,
				      int64_t max_step, uint32_t flags,
				      struct spotckpt_reader **out)
{
	struct sr_err e = { 0 };
	int64_t *steps = NULL;
	size_t n = 0;
	char path[4096];
	int rc;

	if (out)
		*out = NULL;
	ckpt__errmsg_clear();
	if (!dir || !out)
		return ckpt__fail(-EINVAL, "reader_open: NULL argument");
	if (ckpt__uri_is_remote(dir))
		return remote_open(dir, step, max_step, flags, out);
	dir = ckpt__uri_local_path(dir);
	if (step >= 0) {
		snprintf(path, sizeof path, "%s/step-%08" PRId64, dir, step);
		rc = try_open(path, step, flags, out, &e);
		return rc ? ckpt__fail_err(&e, rc) : 0;
	}
	rc = ckpt__scan(dir, &steps, &n, 0, NULL);
	if (rc)
		return ckpt__fail(rc, "%s: %s", dir, sr_strerror(rc));
	rc = -SR_ENOTFOUND;
	for (size_t i = 0; i < n; i++) {
		if (max_step >= 0 && steps[i] > max_step)
			continue;
		snprintf(path, sizeof path, "%s/step-%08" PRId64, dir, steps[i]);
		sr_err_clear(&e);
		rc = try_open(path, steps[i], flags, out, &e);
		if (rc == 0 || rc == -ENOMEM)
			break;
		sr_warn("ckpt", "skipping invalid checkpoint", "dir=%s step=%"
			PRId64 " err=\"%s\"", dir, steps[i], sr_err_str(&e, rc));
		rc = -SR_ENOTFOUND;
	}
	free(steps);
	if (rc == -SR_ENOTFOUND)
		return ckpt__fail(rc, "%s: no valid checkpoint%s", dir,
				  max_step >= 0 ? " at or below the given step" : "");
	return rc ? ckpt__fail_err(&e, rc) : 0;
}

SPOTCKPT_API void spotckpt_reader_close(struct spotckpt_reader *r)
{
	if (!r)
		return;
	ckpt__manifest_free(&r->m);
	if (r->remote)
		ckpt_remote_backend.rd_close(r->remote);
	free(r->dir);
	free(r);
}

SPOTCKPT_API int64_t spotckpt_reader_step(const struct spotckpt_reader *r)
{
	return r ? r->m.step : -1;
}

SPOTCKPT_API int64_t spotckpt_reader_time_ns(const struct spotckpt_reader *r)
{
	return r ? r->m.time_ns : 0;
}

SPOTCKPT_API const char *spotckpt_reader_meta(const struct spotckpt_reader *r)
{
	return r && r->m.meta ? r->m.meta : "{}";
}

SPOTCKPT_API const char *spotckpt_reader_path(const struct spotckpt_reader *r)
{
	return r ? r->dir : "";
}

SPOTCKPT_API int64_t spotckpt_reader_ntensors(const struct spotckpt_reader *r)
{
	return r ? (int64_t)r->m.l->nt : 0;
}

SPOTCKPT_API uint64_t spotckpt_reader_nbytes(const struct spotckpt_reader *r)
{
	return r ? r->m.l->state_bytes : 0;
}

SPOTCKPT_API int spotckpt_reader_tensor(const struct spotckpt_reader *r,
					int64_t idx,
					struct spotckpt_tensor_info *out)
{
	const struct ckpt_tensor *t;

	if (!r || !out || idx < 0 || (size_t)idx >= r->m.l->nt)
		return ckpt__fail(-EINVAL, "reader_tensor: index out of range");
	t = &r->m.l->t[idx];
	memset(out, 0, sizeof *out);
	out->name = t->name;
	out->dtype = t->dtype;
	out->ndim = t->ndim;
	memcpy(out->shape, t->shape, sizeof out->shape);
	out->nbytes = t->nbytes;
	out->xxh3 = t->xxh3;
	out->shard = (int32_t)t->shard;
	out->offset = t->offset;
	return 0;
}

SPOTCKPT_API int64_t spotckpt_reader_find(const struct spotckpt_reader *r,
					  const char *name)
{
	for (size_t i = 0; r && name && i < r->m.l->nt; i++) {
		if (!strcmp(r->m.l->t[i].name, name))
			return (int64_t)i;
	}
	return ckpt__fail(-SR_ENOTFOUND, "tensor %s: not in the checkpoint",
			  name ? name : "(null)");
}

static __thread struct spotckpt_restore_profile t_prof;

SPOTCKPT_API void spotckpt_restore_profile(struct spotckpt_restore_profile *out)
{
	if (out)
		*out = t_prof;
}

static int64_t cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Verified in an image of the checkpoint: every wanted tensor read there
 * and checked, then all placed after the last one matched (placeall.c),
 * or, with SPOTCKPT_RESTORE_BEHIND=1 in the environment (the bench's
 * side-by-side arm), placed behind the reads, each tensor once it
 * matched, its destination's old bytes kept in its place in the image
 * until the restore succeeds (behind.c).  Verify first is the default:
 * on the 2-core VM, quiet, the swap behind the reads cost 0.5 CPU-s per
 * GiB and slowed the reads it competed with (restore_vs_raw 0.55 placed
 * behind vs 0.75 verify first, docs/notes/checkpoint.md).
 * The image is the borrowed buffer when it is large enough (the engine's
 * idle staging slot), else mapped here; for a checkpoint on a tmpfs (a
 * node's kept copy), its shard files themselves, mapped (mapread.c). */
static int read_verified(struct spotckpt_reader *r,
			 const struct spotckpt_dest **map)
{
	uint64_t need = ckpt__image_bytes(r->m.l);
	uint8_t *stage = NULL;
	struct ckpt_behind *behind = NULL;
	int64_t t0, c0;
	int rc, mapped = 0, several = 0, tmpfs = ckpt__on_tmpfs(r->dir);

	if (tmpfs) {
		/* the files' own pages are the image: ckpt__map_verified */
	} else if (r->buf && r->buf_bytes >= need) {
		stage = r->buf;
	} else if (need) {
		void *p = mmap(NULL, need, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED)
			return ckpt__fail(-ENOMEM, "read_all: no memory for the "
					  "checkpoint's image (%" PRIu64 " bytes)",
					  need);
		madvise(p, need, MADV_HUGEPAGE); /* 512 faults per GiB */
		stage = p;
		mapped = 1;
	}
	r->io_buf = NULL; /* the reads go into the image */
	r->io_buf_bytes = 0;
	t_prof.mode = tmpfs ? SPOTCKPT_RESTORE_MAPPED
			    : SPOTCKPT_RESTORE_VERIFY_FIRST;
	/* placers only when one tensor can be placed while another is read
	 * (not for spotckpt_reader_read's one tensor: two threads for
	 * nothing); no placer (no memory for its lists): verify first */
	for (size_t t = 0, n = 0; t < r->m.l->nt && !several; t++)
		several = map[t] && r->m.l->t[t].nbytes && ++n > 1;
	if (stage && several && getenv("SPOTCKPT_RESTORE_BEHIND") &&
	    ckpt__behind_start(r->m.l, (const struct spotckpt_dest *const *)map,
			       stage, &behind) == 0)
		t_prof.mode = SPOTCKPT_RESTORE_BEHIND;
	t0 = wall_now();
	c0 = cpu_now();
	if (tmpfs) {
		rc = ckpt__map_verified(r->dir, r->m.l,
					(const struct spotckpt_dest *const *)map,
					&stage);
		mapped = stage != NULL;
	} else {
		rc = run_shards(r, map, 0, NULL, stage, behind);
	}
	t_prof.read_wall_ns = wall_now() - t0;
	t_prof.read_cpu_ns = cpu_now() - c0;
	t0 = wall_now();
	c0 = cpu_now();
	if (behind) /* the rest placed, or what was placed put back */
		ckpt__behind_finish(behind, rc == 0, NULL);
	else if (rc == 0 && stage)
		rc = ckpt__place_all(r->m.l, (const struct spotckpt_dest *const *)map,
				     stage);
	t_prof.place_wall_ns = wall_now() - t0;
	t_prof.place_cpu_ns = cpu_now() - c0;
	ckpt__behind_free(behind);
	if (mapped)
		munmap(stage, need);
	return rc;
}

SPOTCKPT_API int spotckpt_reader_read_all(struct spotckpt_reader *r,
					  const struct spotckpt_dest *d,
					  size_t n)
{
	const struct spotckpt_dest **map;
	struct ckpt_undo *undo = NULL;
	int64_t t0, c0;
	int rc, cuda = 0, keep = 0;

	if (!r || (n && !d))
		return ckpt__fail(-EINVAL, "read_all: NULL argument");
	memset(&t_prof, 0, sizeof t_prof);
	map = calloc(r->m.l->nt + 1, sizeof *map);
	if (!map)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct ckpt_tensor *t;

		if (d[i].index < 0 || (size_t)d[i].index >= r->m.l->nt) {
			rc = ckpt__fail(-EINVAL, "read_all: dest %zu: bad index",
					i);
			goto out;
		}
		t = &r->m.l->t[d[i].index];
		if (d[i].len < t->nbytes || (!d[i].ptr && t->nbytes)) {
			rc = ckpt__fail(-ENOBUFS, "read_all: tensor %s: needs %"
					PRIu64 " bytes, dest has %" PRIu64,
					t->name, t->nbytes, d[i].len);
			goto out;
		}
		if (d[i].device == SPOTCKPT_DEV_CUDA && !ckpt__cuda()) {
			rc = ckpt__fail(-SR_EUNSUPPORTED, "read_all: tensor %s: "
					"CUDA destination but no CUDA runtime: %s",
					t->name, ckpt__cuda_error());
			goto out;
		}
		map[d[i].index] = &d[i];
		cuda |= d[i].device == SPOTCKPT_DEV_CUDA;
		keep |= !(d[i].flags & SPOTCKPT_DEST_SCRATCH) && t->nbytes;
		t_prof.bytes += t->nbytes;
	}
	/* all or nothing: a local checkpoint into host memory is verified
	 * whole before any destination is written (SPOTCKPT_RESTORE_KEEP=1:
	 * the keep below, for a side by side measure); destinations that
	 * are all scratch have nothing to keep and are written as read */
	if (keep && !r->remote && !cuda && !getenv("SPOTCKPT_RESTORE_KEEP")) {
		rc = read_verified(r, map);
		goto out;
	}
	/* else the old bytes of every destination are kept aside as it is
	 * first written, and put back if anything fails */
	rc = ckpt__undo_new(r->m.l, map, r->buf, r->buf_bytes, &undo);
	if (rc) {
		rc = ckpt__fail(rc, "read_all: no memory to keep the destinations' "
				"contents");
		goto out;
	}
	/* the borrowed memory went to the undo buffer, else to reading */
	r->io_buf = r->buf && ckpt__undo_borrowed(undo) ? NULL : r->buf;
	r->io_buf_bytes = r->io_buf ? r->buf_bytes : 0;
	t_prof.mode = keep ? SPOTCKPT_RESTORE_KEEP : SPOTCKPT_RESTORE_AS_READ;
	t0 = wall_now();
	c0 = cpu_now();
	if (r->remote) {
		struct sr_err e = { 0 };

		rc = ckpt_remote_backend.rd_read(r->remote, &r->m, map, 0, undo,
						 &e);
		if (rc)
			ckpt__fail_err(&e, rc);
	} else {
		rc = run_shards(r, map, 0, undo, NULL, NULL);
	}
	if (rc)
		ckpt__undo_rollback(undo);
	t_prof.read_wall_ns = wall_now() - t0;
	t_prof.read_cpu_ns = cpu_now() - c0;
out:
	t_prof.ok = rc == 0;
	ckpt__undo_free(undo);
	free(map);
	return rc;
}

SPOTCKPT_API int spotckpt_reader_read(struct spotckpt_reader *r, int64_t idx,
				      void *dst, uint64_t dst_len)
{
	struct spotckpt_dest d = { .index = idx, .ptr = dst, .len = dst_len };

	return spotckpt_reader_read_all(r, &d, 1);
}

SPOTCKPT_API int spotckpt_reader_foreach(struct spotckpt_reader *r,
					 spotckpt_tensor_fn fn, void *ud)
{
	uint64_t max = 0;
	void *buf = NULL;
	int rc = 0;

	if (!r || !fn)
		return ckpt__fail(-EINVAL, "foreach: NULL argument");
	for (size_t i = 0; i < r->m.l->nt; i++)
		max = r->m.l->t[i].nbytes > max ? r->m.l->t[i].nbytes : max;
	buf = malloc(max ? max : 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; rc == 0 && i < r->m.l->nt; i++) {
		struct spotckpt_tensor_info info;

		rc = spotckpt_reader_read(r, (int64_t)i, buf, max);
		if (rc == 0)
			rc = spotckpt_reader_tensor(r, (int64_t)i, &info);
		if (rc == 0)
			rc = fn(ud, &info, buf);
	}
	free(buf);
	return rc;
}
