/*
 * internal.h - what lib/ckpt's files share.  Not installed; the public API
 * is include/spotrun/ckpt.h.
 *
 * Files and their one job each:
 *   errmsg.c      thread-local error message, spotckpt_strerror
 *   dtype.c       dtype table (size, safetensors name)
 *   staging.c     the pre-faulted staging allocation
 *   copypool.c    threads that split a tier-1 copy between them
 *   cuda.c        libcudart loaded with dlopen; fakeable for tests
 *   layout.c      registered tensors -> shard files -> staging image
 *   safetensors.c shard header writer and parser
 *   manifest.c    manifest.json writer and parser (self-checksummed)
 *   dio.c         O_DIRECT probing and alignment (statx STATX_DIOALIGN)
 *   iowrite.c     io_uring / pwrite shard writer hashing as it goes
 *   prof.c        where a write's time goes, phase by phase
 *   ioread.c      io_uring / pread parallel shard reader verifying hashes
 *   commit.c      the commit protocol
 *   retain.c      step directory names, scans, cleanup, retention
 *   stripes.c     shards striped over several directories (disks)
 *   lanes.c       the writer's helper threads, one per extra directory
 *   engine.c      the engine: slots, back-pressure, writer thread
 *   reader.c      opening and reading a checkpoint
 *   placeall.c    a verified image copied into the destinations
 *   behind.c      ... placed tensor by tensor behind the reads
 *   restore.c     restore with fallback, verify, list
 *   prefault.c    a coming restore's staging faulted in on a thread
 *   progress.c    the progress report for the node agent
 */
#ifndef SPOTCKPT_INTERNAL_H
#define SPOTCKPT_INTERNAL_H

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <jansson.h>

#include "spotrun/ckpt.h"
#include "common/err.h"

#define CKPT_FORMAT_NAME "spotrun-ckpt"
#define CKPT_FORMAT_VERSION 1
#define CKPT_NAME_MAX 255
#define CKPT_HDR_ALIGN 4096u       /* shard data starts at a multiple */
#define CKPT_IMG_ALIGN 4096u       /* shard images in the staging slot */
#define CKPT_MANIFEST "manifest.json"
#define CKPT_MANIFEST_MAX (256u << 20)
#define CKPT_HEADER_MAX (100u << 20) /* safetensors' own limit */

/* ---- errmsg.c ------------------------------------------------------------ */
/* Set the calling thread's message and return code. */
int ckpt__fail(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Copy an sr_err's message (or strerror(code)) to the thread's message. */
int ckpt__fail_err(const struct sr_err *e, int code);
void ckpt__errmsg_clear(void);
/* A public function's failure `code` (returned) always leaves a message:
 * "what: <words for code>" when the path that failed set none (an
 * allocation deep inside, found by tests/unit/test_faultinj.c). */
int ckpt__fail_default(int code, const char *what);

/* ---- progress.c ---------------------------------------------------------- */
/* A save was accepted (its stall), a step was committed to tier 2, the
 * last step reported is to be written now (close).  Never fail. */
void ckpt__progress_saved(int64_t step, double stall_ms);
void ckpt__progress_committed(int64_t step);
void ckpt__progress_flush(void);
/* Tier 3 of engine `who`: the store's newest whole step (-1: none) and
 * the last upload failure ("" after a commit) - the report's ckpt_step
 * and ckpt_error from then on (a ckpt_backend watch's changed()).  _end:
 * the engine closed (its last values stay reported), or its tier 3
 * failed to start (failed: as if never reported). */
void ckpt__progress_remote(void *who, int64_t store_step, const char *err);
void ckpt__progress_remote_end(const void *who, int failed);

/* ---- dtype.c ------------------------------------------------------------- */
/* Dtype of a safetensors name, or -1. */
int ckpt__dtype_parse(const char *s);

/* hashcopy.c: XXH3 update (SIMD-dispatched, same digest) and a fused
 * hash + copy into a tensor. */
struct XXH3_state_s;
void ckpt__hash_update(struct XXH3_state_s *st, const void *p, size_t n);
void ckpt__hash_copy(struct XXH3_state_s *st, uint8_t *dst,
		     const uint8_t *src, uint64_t n);
/* The same, first copying each block of dst's old bytes to keep (may be
 * NULL), block by block while it is in the cache anyway. */
/* Copy n bytes with streaming stores (the destination is not read into
 * the cache), prefetching the source ahead: the copy of a verified image
 * into the caller's tensors. */
void ckpt__copy_stream(uint8_t *dst, const uint8_t *src, uint64_t n);
/* Exchange n bytes of a and b (streaming stores; the regions must not
 * overlap). */
void ckpt__swap_stream(uint8_t *a, uint8_t *b, uint64_t n);
void ckpt__hash_copy_keep(struct XXH3_state_s *st, uint8_t *dst,
			  const uint8_t *src, uint64_t n, uint8_t *keep);

/* ---- layout.c ------------------------------------------------------------ */
struct ckpt_tensor {
	char *name;
	const void *ptr;       /* registered memory (NULL in a parsed layout) */
	int32_t dtype, ndim, device;
	int64_t shape[SPOTCKPT_MAX_NDIM];
	uint64_t nbytes;
	uint32_t shard;        /* shard index */
	uint64_t offset;       /* data offset in the shard file */
	uint64_t img_off;      /* data offset in the staging slot image */
	uint64_t xxh3;         /* filled by a write, or parsed */
};

struct ckpt_shard {
	char file[32];         /* "shard-00000.safetensors" */
	uint64_t img_off;      /* offset of the file image in the slot */
	uint64_t file_bytes;   /* total size of the file */
	uint64_t data_start;   /* 8 + header length (multiple of 4096) */
	char *header;          /* the first data_start bytes of the file */
	uint32_t first, count; /* its tensors: t[first .. first+count-1] */
	uint64_t xxh3;         /* ckpt__shard_hash, filled by a write */
	uint64_t header_xxh3;  /* hash of bytes [0, data_start) */
};

/* Immutable once built; shared by the slots that hold a copy of it. */
struct ckpt_layout {
	atomic_int refs;
	struct ckpt_tensor *t;
	size_t nt;
	struct ckpt_shard *s;
	size_t ns;
	uint64_t state_bytes;  /* sum of tensor nbytes */
	uint64_t image_bytes;  /* bytes of one staging slot */
	int has_cuda;
};

/* Build a layout for tensors t[0..nt-1] (copied) with shards of about
 * shard_bytes.  Returns a layout with one reference, or NULL (-ENOMEM). */
struct ckpt_layout *ckpt__layout_build(const struct ckpt_tensor *t, size_t nt,
				       uint64_t shard_bytes);
struct ckpt_layout *ckpt__layout_ref(struct ckpt_layout *l);
void ckpt__layout_unref(struct ckpt_layout *l); /* NULL-safe */
/* The shard checksum: XXH3-64 of the little-endian u64 sequence
 * header_xxh3, then each of its tensors' xxh3 in file order.  Header and
 * tensors tile the file, so it covers every byte. */
uint64_t ckpt__shard_hash(const struct ckpt_layout *l,
			  const struct ckpt_shard *sh);
uint64_t ckpt__tensor_nbytes(int32_t dtype, int32_t ndim, const int64_t *shape);
/* 0 if name is acceptable, else -EINVAL. */
int ckpt__name_check(const char *name);

/* ---- safetensors.c ------------------------------------------------------- */
/* Render the header region of shard s (8-byte length, JSON, spaces up to
 * a multiple of CKPT_HDR_ALIGN) into a malloc'd buffer (*out, *len). */
int ckpt__st_header_build(const struct ckpt_tensor *t, size_t nt,
			  uint32_t shard, uint32_t nshards,
			  char **out, uint64_t *len);

struct ckpt_st_entry {
	char name[CKPT_NAME_MAX + 1];
	int32_t dtype, ndim;
	int64_t shape[SPOTCKPT_MAX_NDIM];
	uint64_t begin, end;   /* data_offsets, relative to data start */
};

/* Parse a safetensors header.  buf holds the first `len` bytes of a file
 * of `file_size` bytes (len >= 8 + header length).  On success *ents is a
 * malloc'd array of *n entries sorted by begin, *data_start = 8 + N.
 * Checks: length sane, JSON object, dtype known, shape non-negative and
 * matching the byte range, ranges contiguous from 0 and ending at
 * file_size - data_start.  `name` names the file in messages. */
int ckpt__st_header_parse(const uint8_t *buf, size_t len, uint64_t file_size,
			  const char *name, struct ckpt_st_entry **ents,
			  size_t *n, uint64_t *data_start, struct sr_err *e);
/* Header length from the first 8 bytes, validated against file size. */
int ckpt__st_header_len(const uint8_t *buf8, uint64_t file_size,
			const char *name, uint64_t *hlen, struct sr_err *e);

/* ---- manifest.c ---------------------------------------------------------- */
struct ckpt_manifest {
	int64_t step;
	int64_t time_ns;
	struct ckpt_layout *l; /* tensors and shards, ptr NULL */
	char *meta;            /* compact JSON of the user metadata */
};

/* Render the manifest (malloc'd, *len bytes, self-checksummed). */
int ckpt__manifest_render(int64_t step, int64_t time_ns,
			  const struct ckpt_layout *l, const char *meta_json,
			  char **out, size_t *len, struct sr_err *e);
/* Parse and check a manifest buffer; `name` is used in messages. */
int ckpt__manifest_parse(const char *buf, size_t len, const char *name,
			 struct ckpt_manifest *m, struct sr_err *e);
void ckpt__manifest_free(struct ckpt_manifest *m);
/* Recompute and store the self-checksum of a manifest buffer in place
 * (tests and fuzzing craft semantically bad but well-summed manifests). */
void ckpt__manifest_fix_checksum(char *buf, size_t len);

/* ---- dio.c ---------------------------------------------------------------- */
struct ckpt_dio {
	int direct;            /* 1 if fd_direct is usable */
	uint32_t mem_align;    /* buffer alignment for O_DIRECT */
	uint32_t off_align;    /* offset / length alignment */
};
/* Given an fd opened with O_DIRECT, find its alignment (statx
 * STATX_DIOALIGN, else the block size).  d->direct = 0 if the file system
 * reports no direct I/O support. */
void ckpt__dio_probe(int fd, struct ckpt_dio *d);
/* Open dirfd/name for writing (O_CREAT|O_EXCL); with want_direct also
 * try O_DIRECT.  *fd_buf is always a buffered fd; *fd_dir is an O_DIRECT fd
 * or -1. */
int ckpt__dio_open_write(int dirfd, const char *name, int want_direct,
			 int *fd_buf, int *fd_dir, struct ckpt_dio *d);

/* ---- prof.c ------------------------------------------------------------------ */
/* One writing thread's phase clock (enum spotckpt_wphase). */
struct ckpt_prof {
	int cur;                /* phase being timed, -1 = none */
	int64_t t_wall, t_cpu;  /* when it was entered (ns) */
	int64_t wall_ns[SPOTCKPT_WP_COUNT], cpu_ns[SPOTCKPT_WP_COUNT];
	uint64_t writes, fsyncs;
	int fixed_buffers;      /* a write went from registered memory */
};
/* Reset and start timing `phase`.  NULL-safe, like every prof call. */
void ckpt__prof_start(struct ckpt_prof *p, int phase);
/* Charge the time since the last call to the current phase and move on to
 * `phase` (-1 stops the clock). */
void ckpt__prof_enter(struct ckpt_prof *p, int phase);
/* Add src's times and counts to dst (the lanes of one write). */
void ckpt__prof_add(struct ckpt_prof *dst, const struct ckpt_prof *src);

/* ---- iowrite.c / ioread.c -------------------------------------------------- */
struct ckpt_io;  /* an io_uring (or the pwrite fallback) for one thread */
int ckpt__io_new(uint32_t depth, uint32_t chunk, struct ckpt_io **out);
void ckpt__io_free(struct ckpt_io *io);
int ckpt__io_uring_used(const struct ckpt_io *io);
/* Register buf[0..n) with the ring, so writes from it skip pinning their
 * pages each time (io_uring fixed buffers, in pieces of up to 1 GiB).
 * Replaces an earlier registration.  0, or a negative errno with the io
 * left without registered memory (e.g. RLIMIT_MEMLOCK, no ring): writes
 * then pin their pages as before. */
int ckpt__io_register_buffer(struct ckpt_io *io, const uint8_t *buf,
			     uint64_t n);
/* Drop the registration (before the memory is unmapped: the ring holds
 * the pages).  Only while no write is in flight on io. */
void ckpt__io_unregister_buffer(struct ckpt_io *io);

/* Called for each chunk in file order before it is submitted. */
typedef void (*ckpt_feed_fn)(void *ud, uint64_t off, const uint8_t *p,
			     uint64_t n);

/* One file of a ckpt__io_write_files batch.  open() fills fd_buf (a
 * buffered descriptor), fd_dir (O_DIRECT or -1) and d, right before the
 * file's first write; done() is called once its last byte was written
 * (and, with sync, made durable by an fsync of fd_buf); the caller closes
 * descriptors there or later.  A file whose open failed, or after an
 * error, gets no done(). */
struct ckpt_wfile {
	const uint8_t *buf;     /* the file's bytes */
	uint64_t len;
	int sync;               /* fsync it as soon as its writes completed */
	ckpt_feed_fn feed;      /* sees every byte in order */
	void *ud;
	int (*open)(void *ud, struct ckpt_wfile *f);
	void (*done)(void *ud, struct ckpt_wfile *f);
	int fd_buf, fd_dir;     /* set by open() */
	struct ckpt_dio d;
};
/* Write the files one after the other through one queue that does not
 * drain between files (the next file's first writes go out while the
 * previous one's last are in flight), hashing each chunk through feed just
 * before it is sent; the aligned body through fd_dir, the unaligned tail
 * through fd_buf.  Stops early with -ECANCELED when *cancel becomes
 * non-zero.  On error *failed (may be NULL) is the index of the file at
 * fault.  prof (may be NULL) is charged hash/submit/wait. */
int ckpt__io_write_files(struct ckpt_io *io, struct ckpt_wfile *f, size_t n,
			 atomic_int *cancel, struct ckpt_prof *prof,
			 size_t *failed);
/* fsync every fd in fds[0..n) (files or directories) concurrently: one
 * round of requests on the ring, or one after the other without it.
 * Returns 0 or the first error, *failed (may be NULL) the index of its fd. */
int ckpt__io_fsync_all(struct ckpt_io *io, const int *fds, size_t n,
		       struct ckpt_prof *prof, size_t *failed);

/* A byte range of a file to read, delivered in order to a sink. */
typedef int (*ckpt_sink_fn)(void *ud, uint64_t off, const uint8_t *p,
			    uint64_t n);
struct ckpt_read_range {
	const char *path;      /* borrowed until the range is finished */
	uint64_t off, len;
	ckpt_sink_fn sink;     /* consecutive pieces, in file order */
	void *ud;
	/* Optional: memory standing for the file's bytes [0, dst_len) (an
	 * image of it).  When the range's aligned reads fit, they go straight
	 * there instead of the io's read buffers, and the sink gets pointers
	 * into it (p == dst + off); else the read buffers are used as without
	 * it.  NULL: the read buffers. */
	uint8_t *dst;
	uint64_t dst_len;
};
/* Where a reading thread's ranges come from (see ioread.c). */
struct ckpt_read_src {
	/* Fill *r with the next range: 1, or 0 when none is left, or a
	 * negative error (the stream stops). */
	int (*next)(void *ud, struct ckpt_read_range *r);
	/* Range r ended: rc is 0 once its last byte reached its sink, else
	 * the error that stopped it (-ECANCELED: another range's error).
	 * Returns the range's outcome (non-zero stops the stream). */
	int (*finish)(void *ud, struct ckpt_read_range *r, int rc);
	void *ud;
};
/* Read the source's ranges one after the other, in aligned chunks
 * (O_DIRECT if possible), keeping the queue full across range
 * boundaries; every range next() gave is finished exactly once.  A
 * sink's or finish's non-zero return stops the stream and is returned. */
int ckpt__io_read_stream(struct ckpt_io *io, const struct ckpt_read_src *src);
/* Read into buf[0..n) (4096-aligned, resident, the caller's until
 * io_free) instead of a fresh mapping; the queue depth shrinks to what
 * fits.  Returns 0, or -ENOBUFS (nothing changed) when not even two
 * chunks fit. */
int ckpt__io_borrow_buffer(struct ckpt_io *io, uint8_t *buf, uint64_t n);

/* ---- lanes.c ----------------------------------------------------------------- */
struct ckpt_place;
struct ckpt_lanes;
typedef void (*ckpt_lane_fn)(struct ckpt_io *io, void *arg);
/* n lanes: n-1 threads with an io each (depth, chunk as ckpt__io_new),
 * following `place` (borrowed, may be NULL) like the writer. */
int ckpt__lanes_new(int n, uint32_t depth, uint32_t chunk,
		    struct ckpt_place *place, struct ckpt_lanes **out);
void ckpt__lanes_free(struct ckpt_lanes *ls); /* NULL-safe */
int ckpt__lanes_count(const struct ckpt_lanes *ls); /* 1 for NULL */
/* Run fn(io0, args[0]) here and fn(io_k, args[k]) on lane k's thread, all
 * at once; return when all are done.  ls NULL: only lane 0. */
void ckpt__lanes_run(struct ckpt_lanes *ls, struct ckpt_io *io0,
		     ckpt_lane_fn fn, void *const *args);
/* The lanes' rate cap (bytes/s each); their registered memory dropped. */
void ckpt__lanes_set_rate(struct ckpt_lanes *ls, uint64_t bytes_per_s);
void ckpt__lanes_unregister(struct ckpt_lanes *ls);

/* ---- stripes.c ---------------------------------------------------------------- */
#define CKPT_MAX_DIRS 64
/* An engine's tier-2 directories: n >= 1, dir[0] the primary (manifests,
 * step-N/), all absolute (realpath, malloc'd); lanes when n > 1 (set by
 * the engine). */
struct ckpt_stripes {
	int n;
	char **dir;
	struct ckpt_lanes *lanes;
};
/* From dirs[0..ndirs) (dirs[0] must be `primary`, an existing directory),
 * or when ndirs is 0 from $SPOTRUN_CKPT_DIRS (a:b:c) if its first entry
 * is `primary`; else just `primary`.  The others are created if missing.
 * Errors (with the thread's message): -EINVAL (empty entry, too many,
 * dirs[0] not primary, the same directory twice), errno of mkdir/realpath. */
int ckpt__stripes_open(const char *primary, const char *const *dirs,
		       uint32_t ndirs, struct ckpt_stripes *s);
void ckpt__stripes_close(struct ckpt_stripes *s); /* frees lanes too */
/* where[i]: the directory of shard i, the least loaded by bytes so far. */
void ckpt__stripes_assign(const struct ckpt_layout *l, int n, uint32_t *where);
/* Shard size when none is set: the state split over n directories. */
uint64_t ckpt__stripes_shard_bytes(uint64_t state_bytes, int n);
/* mkdir dir unless it is a directory already (its parent must exist);
 * errors with the thread's message. */
int ckpt__make_dir(const char *dir);
/* mkdir a fresh stripe-NNNNNNNN-<random> in dirfd; its name into name. */
int ckpt__stripe_mkdir(int dirfd, int64_t step, char *name, size_t n);
/* Remove the stripe directories no committed step of dir[0] links to. */
void ckpt__stripes_gc(const struct ckpt_stripes *s);

/* ---- commit.c ---------------------------------------------------------------- */
struct ckpt_commit_opts {
	int direct;            /* try O_DIRECT */
	int keep;              /* retention */
	atomic_int *cancel;    /* may be NULL */
	const struct ckpt_stripes *stripes; /* NULL: dir alone */
	const uint8_t *reg_base;  /* memory the lanes may register (the */
	uint64_t reg_len;         /* staging buffer), or NULL */
};
struct ckpt_commit_res {
	uint64_t bytes;
	int direct_used;
	int uring_used;
	int preallocated;
	int lanes;             /* lanes that wrote shards */
	int stored;            /* 1: put into the store only, tier 2 not
				* written (a final save, final_store.c) */
	int64_t commit_ns;     /* start to durable commit */
	struct ckpt_prof prof; /* phases of the write (all lanes) */
};
/* Write `image` (a staging slot laid out by l) as checkpoint `step` of
 * dir, commit it, then apply retention.  Fills l's tensor and shard
 * hashes.  On failure the temporary directory is removed. */
int ckpt__commit(struct ckpt_io *io, const char *dir, int64_t step,
		 const char *meta_json, struct ckpt_layout *l,
		 const uint8_t *image, const struct ckpt_commit_opts *o,
		 struct ckpt_commit_res *res, struct sr_err *e);
/* Test hook: called by the writer before each commit (NULL normally). */
extern void (*ckpt__test_before_commit)(int64_t step);
/* Remove leftover step-*.tmp directories. */
void ckpt__cleanup_tmp(const char *dir);
/* Keep the newest `keep` committed checkpoints; never removes `protect`. */
void ckpt__retention(const char *dir, int keep, int64_t protect);
/* rm -r of a directory tree one level deep (checkpoint dirs are flat). */
int ckpt__rmdir_flat(int parentfd, const char *name);
/* opendir of parentfd/name; NULL with *rc 0 when it does not exist, else
 * with -errno. */
DIR *ckpt__opendir_at(int parentfd, const char *name, int *rc);
/* Parse "step-N" (committed, *tmp = 0) or "step-N.tmp" (*tmp = 1). */
int ckpt__parse_dirname(const char *s, int64_t *step, int *tmp);
/* ---- undo.c: a failed read leaves the destinations as they were --------- */
struct ckpt_undo;
/* For the destinations map[0..l->nt-1] (NULL = none): a buffer as large
 * as the ones to keep, borrow[0..borrow_n) when it fits, else mapped.
 * *out owned by the caller (ckpt__undo_free). */
int ckpt__undo_new(const struct ckpt_layout *l,
		   const struct spotckpt_dest *const *map, uint8_t *borrow,
		   uint64_t borrow_n, struct ckpt_undo **out);
/* Keep tensor t's destination bytes aside; call before its first byte is
 * written (any thread; idempotent; u may be NULL).  Non-zero: it could
 * not be kept (a device copy failed) and must not be written. */
int ckpt__undo_save(struct ckpt_undo *u, uint32_t t);
/* Where bytes [off, off+n) of tensor t's destination (host memory) are
 * to be kept, for the caller to copy them there before it overwrites
 * them (ckpt__hash_copy_keep); NULL when they need no keeping (u NULL, a
 * scratch destination, already kept whole).  One thread per tensor, in
 * order from its first byte: a tensor read in pieces keeps what it will
 * overwrite as it goes, never stalling its reads for a whole-tensor copy. */
uint8_t *ckpt__undo_keep_at(struct ckpt_undo *u, uint32_t t, uint64_t off,
			    uint64_t n);
/* 1 when the undo buffer is the borrowed memory. */
int ckpt__undo_borrowed(const struct ckpt_undo *u);
/* Put back every destination kept so far. */
void ckpt__undo_rollback(struct ckpt_undo *u);
void ckpt__undo_free(struct ckpt_undo *u); /* NULL-safe */

/* ---- placeall.c -------------------------------------------------------------- */
/* A shard file's bytes in an image of it (staging slot, verified restore):
 * its size rounded up to CKPT_IMG_ALIGN; the image of a checkpoint is its
 * shards' back to back, in shard order. */
uint64_t ckpt__shard_image_bytes(const struct ckpt_shard *sh);
uint64_t ckpt__image_bytes(const struct ckpt_layout *l);
/* Copy every tensor t with map[t] (host memory) from the checkpoint's
 * image at stage into map[t]->ptr, on up to 4 threads.  0 or -ENOMEM
 * (nothing copied). */
int ckpt__place_all(const struct ckpt_layout *l,
		    const struct spotckpt_dest *const *map, const uint8_t *stage);
/* n bytes from src to dst, for ckpt__place_segs. */
struct ckpt_place_seg {
	uint8_t *dst;
	const uint8_t *src;
	uint64_t n;
};
/* Copy every segment, on up to 4 threads (the caller's included; fewer
 * when threads cannot start).  Cannot fail. */
void ckpt__place_segs(const struct ckpt_place_seg *segs, size_t n);

/* ---- mapread.c: verify first over a tmpfs checkpoint's own pages ---------- */
/* 1 when dir is on a tmpfs (and pages are CKPT_IMG_ALIGN bytes). */
int ckpt__on_tmpfs(const char *dir);
/* The image of dir's checkpoint (ckpt__image_bytes(l) bytes at *img,
 * munmap by the caller): its shard files mapped read-only in place, no
 * copy, no fresh memory; every tensor of map[] checked against the
 * manifest there.  0, or the failure (errmsg set; nothing left mapped). */
int ckpt__map_verified(const char *dir, const struct ckpt_layout *l,
		       const struct spotckpt_dest *const *map, uint8_t **img);

/* ---- behind.c: a verified restore placed behind its reads ------------------ */
struct ckpt_behind;
/* Start placing the tensors of map[] (host memory) from the checkpoint's
 * image at stage as they are pushed; one placer thread (none if it
 * cannot start: everything is then placed at the finish).  *out owned by
 * the caller (ckpt__behind_free after ckpt__behind_finish). */
int ckpt__behind_start(const struct ckpt_layout *l,
		       const struct spotckpt_dest *const *map, uint8_t *stage,
		       struct ckpt_behind **out);
/* Tensor t matched its checksum in the image and no read will write its
 * interior again (any thread; once per tensor; b may be NULL). */
void ckpt__behind_push(struct ckpt_behind *b, uint32_t t);
/* Wait until the placer has placed every tensor pushed so far (tests). */
void ckpt__behind_wait_idle(struct ckpt_behind *b);
/* After the last read.  ok: every wanted tensor matched; the rest is
 * copied and every destination holds the checkpoint.  !ok: what was
 * placed is put back; every destination holds what it held.  *behind
 * (may be NULL): bytes placed before the finish.  Cannot fail. */
void ckpt__behind_finish(struct ckpt_behind *b, int ok, uint64_t *behind);
void ckpt__behind_free(struct ckpt_behind *b); /* NULL-safe */

/* ---- restore.c ---------------------------------------------------------- */
/* 1 for the codes that say a checkpoint is damaged or incomplete
 * (checksum, format, a missing file or object): restore then falls back
 * to the previous one.  Any other failure (I/O to a store, permissions,
 * memory, arguments) stops the restore: an older step must not be taken
 * for the newest because a store did not answer. */
int ckpt__is_damage(int rc);
/* The restore loop shared by spotckpt_restore and spotckpt_restore_cb:
 * after lookup ran for every tensor of a candidate, check(ud) (may be NULL)
 * may reject the candidate (non-zero), e.g. when a required tensor was not
 * in it; the previous checkpoint is then tried. */
int ckpt__restore_loop(const char *dir, int64_t max_step,
		       spotckpt_lookup_fn lookup, int (*check)(void *ud),
		       void *ud, uint8_t *buf, uint64_t buf_bytes,
		       int64_t *step);
/* reader.c: read through buf[0..n) (resident, 4096-aligned, the caller's
 * while the reader reads) instead of fresh mappings per thread. */
void ckpt__reader_borrow_buffer(struct spotckpt_reader *r, uint8_t *buf,
				uint64_t n);
/* Memory a read_all of every tensor of r borrows whole: its undo buffer,
 * or the staging slot a save of the same state needs, whichever is more. */
uint64_t ckpt__reader_borrow_need(const struct spotckpt_reader *r);

/* Steps of committed checkpoints in dir, newest first (malloc'd). */
int ckpt__scan(const char *dir, int64_t **steps, size_t *n, int with_tmp,
	       int **tmpflags);

/* ---- staging.c / copypool.c / cuda.c ------------------------------------------ */
struct ckpt_staging {
	uint8_t *base;
	uint64_t bytes;
	int pinned;            /* cudaHostAlloc'd */
	int locked;            /* mlock succeeded */
	int lazy;              /* mapped, not yet populated (staging_settle) */
};
/* place.c: where the engine's background threads run (see
 * spotckpt_set_background).  A thread remembers the generation it applied
 * in *seen and re-applies when it changed. */
struct ckpt_place {
	atomic_uint gen;
	int nice;             /* writer only */
	uint64_t writer_cpus; /* 0 = any CPU */
	uint64_t copy_cpus;   /* 0 = any CPU */
};
void ckpt__place_apply(struct ckpt_place *p, unsigned *seen, int is_writer);

struct ckpt_pool;
/* Allocate `bytes` (a multiple of 4096) of staging memory, pinned through
 * CUDA when use_cuda, and pre-fault every page (MADV_POPULATE_WRITE, else
 * the pool's threads touch them); mlock is attempted, best effort. */
int ckpt__staging_alloc(struct ckpt_staging *s, uint64_t bytes, int use_cuda,
			struct ckpt_pool *pool);
/* The same, host memory only, mapped but not faulted in: a restore's
 * reads fault it in as they fill it (on the reading threads, beside the
 * device's work); ckpt__staging_settle then makes it what
 * ckpt__staging_alloc gives. */
int ckpt__staging_alloc_lazy(struct ckpt_staging *s, uint64_t bytes);
/* Fault in what the restore left untouched (MADV_POPULATE_WRITE, which
 * keeps the contents) and mlock, best effort; no-op unless lazy. */
void ckpt__staging_settle(struct ckpt_staging *s);
void ckpt__staging_free(struct ckpt_staging *s); /* NULL-safe, idempotent */

/* One contiguous copy; src NULL means "write zeros" (pre-faulting). */
struct ckpt_seg { uint8_t *dst; const uint8_t *src; uint64_t n; };
typedef void (*ckpt_done_fn)(void *ud);
int ckpt__pool_new(int nthreads, struct ckpt_pool **out);
void ckpt__pool_free(struct ckpt_pool *p);
/* Borrowed; must outlive the pool.  Workers apply it before each job. */
void ckpt__pool_set_place(struct ckpt_pool *p, struct ckpt_place *pl);
/* Start copying segs (borrowed until done) split across the threads by
 * bytes.  The thread that finishes last calls done(ud) (may be NULL)
 * before the job counts as finished.  Waits for a previous job first. */
void ckpt__pool_start(struct ckpt_pool *p, const struct ckpt_seg *segs,
		      size_t n, ckpt_done_fn done, void *ud);
/* Wait for the copy started last; returns immediately if none. */
void ckpt__pool_wait(struct ckpt_pool *p);
int ckpt__pool_busy(struct ckpt_pool *p);
int ckpt__pool_nthreads(const struct ckpt_pool *p);

/* The part of the CUDA runtime the engine uses. */
struct ckpt_cuda_ops {
	int (*malloc_host)(void **p, size_t n, unsigned flags);
	int (*free_host)(void *p);
	int (*stream_create)(void **stream, unsigned flags);
	int (*stream_destroy)(void *stream);
	int (*memcpy_async)(void *dst, const void *src, size_t n, int kind,
			    void *stream);
	int (*memcpy)(void *dst, const void *src, size_t n, int kind);
	int (*stream_sync)(void *stream);
	int (*event_create)(void **ev, unsigned flags);
	int (*event_destroy)(void *ev);
	int (*event_record)(void *ev, void *stream);
	int (*stream_wait_event)(void *stream, void *ev, unsigned flags);
	const char *(*get_error_string)(int err);
};
enum { CKPT_CUDA_H2D = 1, CKPT_CUDA_D2H = 2 };
/* The loaded runtime or NULL.  Loads once: $SPOTCKPT_CUDART, else
 * libcudart.so, libcudart.so.12, libcudart.so.11.0.  */
const struct ckpt_cuda_ops *ckpt__cuda(void);
/* Tests: replace the runtime (NULL = unload / absent).  */
void ckpt__cuda_set_ops(const struct ckpt_cuda_ops *ops);
/* Tests: forget the runtime so the next ckpt__cuda() loads again. */
void ckpt__cuda_reload(void);
/* Name of the library that was tried last and why it failed. */
const char *ckpt__cuda_error(void);

#endif
