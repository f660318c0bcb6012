/*
 * spotrun/ckpt.h - libspotckpt, spotrun's checkpoint engine.  The whole
 * public API; everything else in lib/ckpt is private.
 *
 * SAVING.  Training code opens an engine on a directory, registers its
 * tensors (name, pointer, dtype, shape, device), and calls spotckpt_save()
 * at a step boundary.  A save has two tiers:
 *
 *   tier 1  the registered tensors are copied, by a pool of threads, into a
 *           pre-faulted host staging buffer allocated once (pinned memory
 *           when CUDA is present).  spotckpt_save() returns when this copy
 *           is done; in lazy mode (SPOTCKPT_SAVE_LAZY) it returns at once
 *           and the caller must not modify the tensors until
 *           spotckpt_wait_staged() returns.
 *   tier 2  a background writer streams the staging buffer into
 *           DIR/step-NNNNNNNN.tmp/ with io_uring (O_DIRECT where the file
 *           system allows it), hashing with XXH3 as it goes, writes
 *           manifest.json last, renames the directory to step-NNNNNNNN/ and
 *           fsyncs DIR.  Then retention deletes all but the newest `keep`
 *           complete checkpoints.
 *
 * RESTORING.  A reader opens the newest checkpoint of a directory whose
 * manifest and shard headers are valid (or a given step), lists its tensors
 * and reads them, in parallel, into caller buffers, verifying each tensor's
 * XXH3 checksum.  spotckpt_restore() and spotckpt_restore_cb() add the
 * fallback: a torn or corrupt checkpoint is skipped with a log line naming
 * the file and the tensor, and the previous one is used.
 *
 * The on-disk format is described in docs/checkpoint-format.md: one
 * directory per checkpoint holding safetensors shard files and a
 * manifest.json.
 *
 * ERRORS.  Every fallible function returns int: 0 on success, or a
 * negative code: a negative errno (-ENOMEM, -EINVAL, -ENOSPC, ...) or one
 * of -SPOTCKPT_E* below.  spotckpt_strerror() turns any code into words.
 * When a call fails, spotckpt_errmsg() returns a message that names the
 * file, field or tensor at fault, for the calling thread.  Failures of the
 * background writer are reported by spotckpt_wait(), spotckpt_stats() and
 * spotckpt_last_error().
 *
 * OWNERSHIP.  Handles (struct spotckpt, struct spotckpt_reader) are opaque;
 * the caller owns them and frees them with spotckpt_close() /
 * spotckpt_reader_close(), which accept NULL.  Strings passed in are
 * copied unless stated otherwise; strings returned are borrowed from the
 * handle and stay valid until it is closed (or until the call that says it
 * invalidates them).
 *
 * THREADS.  An engine's functions may be called from any thread; calls are
 * serialised by a lock inside the engine (a save in progress delays a
 * concurrent register, for instance).  Stats and status queries never wait
 * for a save or a write.  A reader is not thread-safe: use it from one
 * thread at a time (its read functions use their own internal threads).
 * Different handles are independent.
 *
 * All integer types are fixed-width so that the ctypes binding
 * (python/spotrun/) can mirror every struct exactly.
 */
#ifndef SPOTRUN_CKPT_H
#define SPOTRUN_CKPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define SPOTCKPT_API __attribute__((visibility("default")))
#else
#define SPOTCKPT_API
#endif

/* Bumped whenever a struct below changes layout. */
#define SPOTCKPT_ABI_VERSION 3

/* Highest tensor rank accepted (0 = scalar). */
#define SPOTCKPT_MAX_NDIM 16

/* ---- error codes (negated when returned) --------------------------------
 * The values equal the spotrun-wide SR_E* codes of lib/common/err.h. */
enum spotckpt_errcode {
	SPOTCKPT_EPARSE = 10001,    /* malformed manifest or shard header */
	SPOTCKPT_ECHECKSUM = 10002, /* data read back does not match XXH3 */
	SPOTCKPT_ECORRUPT = 10003,  /* structurally invalid checkpoint */
	SPOTCKPT_ETIMEOUT = 10005,  /* a deadline passed */
	SPOTCKPT_ENOTFOUND = 10006, /* no such checkpoint / tensor */
	SPOTCKPT_ECONFLICT = 10007, /* not allowed in the current state */
	SPOTCKPT_EUNSUPPORTED = 10008, /* e.g. CUDA tensor but no libcudart */
};

/* ---- enums --------------------------------------------------------------- */
enum spotckpt_dtype {
	SPOTCKPT_F32 = 0,  /* safetensors "F32" */
	SPOTCKPT_F16 = 1,  /* "F16" */
	SPOTCKPT_BF16 = 2, /* "BF16" */
	SPOTCKPT_F64 = 3,  /* "F64" */
	SPOTCKPT_I64 = 4,  /* "I64" */
	SPOTCKPT_I32 = 5,  /* "I32" */
	SPOTCKPT_I16 = 6,  /* "I16" */
	SPOTCKPT_I8 = 7,   /* "I8" */
	SPOTCKPT_U8 = 8,   /* "U8" */
	SPOTCKPT_BOOL = 9, /* "BOOL", one byte per element */
	SPOTCKPT_U16 = 10, /* "U16" */
	SPOTCKPT_U32 = 11, /* "U32" */
	SPOTCKPT_U64 = 12, /* "U64" */
	SPOTCKPT_DTYPE_COUNT
};

enum spotckpt_device {
	SPOTCKPT_DEV_CPU = 0,  /* host memory */
	SPOTCKPT_DEV_CUDA = 1, /* CUDA device pointer (current device) */
};

/* What spotckpt_save() does when no staging slot is free because tier 2
 * has not finished writing earlier saves. */
enum spotckpt_backpressure {
	/* The new save replaces a staged save that the writer has not started
	 * (counted as coalesced).  When there is none to replace - one slot
	 * (the default budget), being written - the save waits for that
	 * write, like BLOCK: the newest save is never dropped. */
	SPOTCKPT_BP_COALESCE = 0,
	/* The new save is dropped (counted as skipped); training never waits
	 * longer than the staging copy. */
	SPOTCKPT_BP_SKIP = 1,
	/* spotckpt_save() waits until a slot is free, then copies. */
	SPOTCKPT_BP_BLOCK = 2,
};

enum spotckpt_direct_io {
	SPOTCKPT_DIO_AUTO = 0, /* O_DIRECT where the file system accepts it */
	SPOTCKPT_DIO_OFF = 1,  /* always buffered writes */
};

/* spotckpt_save() flags. */
#define SPOTCKPT_SAVE_LAZY 0x1u /* return at once; copy in the background */

/* Outcome of an accepted spotckpt_save() call. */
enum spotckpt_outcome {
	SPOTCKPT_STAGED = 0,    /* staged (or being staged, lazy) for writing */
	SPOTCKPT_SKIPPED = 1,   /* dropped by back-pressure (BP_SKIP) */
	SPOTCKPT_COALESCED = 2, /* staged, replacing an unwritten older save */
};

/* spotckpt_reader_open() flags. */
#define SPOTCKPT_OPEN_VERIFY 0x1u /* also verify every byte's checksum */

/* Pass as `step` / `max_step` to mean "the newest". */
#define SPOTCKPT_NEWEST INT64_C(-1)

/* ---- engine --------------------------------------------------------------- */
struct spotckpt;

struct spotckpt_opts {
	const char *dir;        /* checkpoint directory; created if missing
				 * (its parent must exist).  Copied. */
	int32_t keep;           /* complete checkpoints to keep, >= 1; def. 2 */
	int32_t copy_threads;   /* tier-1 copy threads; 0 = auto (cores, <= 8) */
	uint64_t staging_bytes; /* staging budget in bytes; 0 = auto: one slot
				 * sized to the registered state.  The number of
				 * slots is budget / state size (at least 1). */
	uint64_t shard_bytes;   /* target shard file size; 0 = 4 GiB */
	int32_t backpressure;   /* enum spotckpt_backpressure; def. COALESCE */
	int32_t direct_io;      /* enum spotckpt_direct_io; default AUTO */
	int32_t io_depth;       /* io_uring writes in flight; 0 = 8 */
	uint32_t io_chunk_bytes;/* bytes per write; 0 = 8 MiB */
	int64_t commit_timeout_ms; /* how long spotckpt_close() waits for tier
				 * 3 to hold the newest checkpoint; 0 =
				 * SPOTCKPT_COMMIT_TIMEOUT_MS */
	/* Striping over several disks: dirs[0..ndirs) are the tier-2
	 * directories, one per disk, dirs[0] the same directory as `dir`
	 * (which may then be NULL).  dir holds every step-N/ with its
	 * manifest; the shards are spread over all of them by size (a
	 * striped shard lives in DIRk/stripe-N-<random>/ and step-N/ holds a
	 * link to it), each directory written by a thread of its own.  With
	 * ndirs 0, $SPOTRUN_CKPT_DIRS (a:b:c) is used when its first entry is
	 * `dir`.  Unless shard_bytes is set, the shard size is the state
	 * split over the directories (at most 4 GiB).  Each directory of a
	 * list belongs to this engine alone.  Copied. */
	const char *const *dirs;
	uint32_t ndirs;
	uint32_t pad_;
};

/* Default of spotckpt_opts.commit_timeout_ms: 2 minutes. */
#define SPOTCKPT_COMMIT_TIMEOUT_MS INT64_C(120000)

/* Fill *o with the defaults above (dir = NULL).  Never fails. */
SPOTCKPT_API void spotckpt_opts_init(struct spotckpt_opts *o);

/* Open an engine on o->dir.  Starts the copy threads and the writer
 * thread; allocates no staging memory yet (see spotckpt_prepare()).
 * Leftover step-*.tmp directories from a crashed run are removed.
 * On success *out is a new engine owned by the caller (spotckpt_close()).
 * Errors: -EINVAL (NULL dir, keep < 1, bad enum), -ENOTDIR / -EACCES /
 * other errno from creating the directory, -ENOMEM.  *out is NULL on
 * failure. */
SPOTCKPT_API int spotckpt_open(const struct spotckpt_opts *o,
			       struct spotckpt **out);

/* Wait for every accepted save to be committed or to fail; then, with
 * tier 3 (spotckpt_set_remote), wait until the newest committed step is
 * in the object store, whole - at most o->commit_timeout_ms (a failing
 * upload is retried meanwhile, each request bounded by that deadline).
 * Then stop the threads (an upload still in flight is abandoned; the
 * store keeps its previous whole step) and free everything.  Registered
 * memory is not touched.  Returns 0 only when the newest committed step
 * is on disk and, with tier 3, in the store; else the tier-2 writer's
 * error, or -SPOTCKPT_ETIMEOUT / the upload's error with
 * spotckpt_errmsg() saying which step is where ("checkpoint step 20 is
 * in DIR only; the store URI holds step 10: ...").  A newest save that
 * back-pressure skipped is logged (nothing holds it).  The engine is
 * freed either way.  NULL-safe (returns 0). */
SPOTCKPT_API int spotckpt_close(struct spotckpt *e);
/* spotckpt_close() with its own bound on the wait for tier 3: timeout_ms
 * >= 0 (0: do not wait, only check), < 0: o->commit_timeout_ms. */
SPOTCKPT_API int spotckpt_close_ex(struct spotckpt *e, int64_t timeout_ms);

/* Register a tensor for the next saves.  `name` is copied (1..255 bytes of
 * printable ASCII, no '"' or '\\', unique within the engine); `ptr` is
 * borrowed: it must stay valid and readable until the tensor is cleared or
 * the engine closed.  `shape` has `ndim` entries (ndim 0 = a scalar of one
 * element); each must be >= 0.  `nbytes` is computed as dtype size x the
 * product of shape.  For SPOTCKPT_DEV_CUDA, libcudart is loaded on first
 * use.  Waits for a lazy copy in progress (it reads registered memory).
 * Errors: -EINVAL (bad name/dtype/ndim/shape, NULL ptr with nbytes > 0),
 * -EEXIST (duplicate name), -SPOTCKPT_EUNSUPPORTED (CUDA tensor and no
 * usable libcudart), -ENOMEM. */
SPOTCKPT_API int spotckpt_register(struct spotckpt *e, const char *name,
				   const void *ptr, int32_t dtype,
				   int32_t ndim, const int64_t *shape,
				   int32_t device);

/* Forget every registered tensor, so that a different set can be
 * registered (e.g. once an optimizer has created its state).  Waits for a
 * lazy copy in progress; saves already staged are unaffected.  The staging
 * buffer is kept and re-used if the new state fits.  Returns 0. */
SPOTCKPT_API int spotckpt_clear(struct spotckpt *e);

/* Allocate and pre-fault the staging buffer for the current registration
 * now rather than on the first save (optional; keeps the first save's
 * stall down).  Errors: -ENOBUFS (the state exceeds a non-zero
 * staging_bytes), -ENOMEM, -SPOTCKPT_ECONFLICT (no tensor registered). */
SPOTCKPT_API int spotckpt_prepare(struct spotckpt *e);

/* For a job's first restore: map the staging memory a restore of `step`
 * (< 0: the newest valid checkpoint in e's directory) will read into, and
 * fault it in on a background thread, so that a job that opens its engine
 * before building its model does not pay the first touch of that memory
 * inside the restore (1-2.5 CPU-s per GiB on a VM that hands freed memory
 * back to its host; docs/checkpoint.md).  Returns at once.  The next
 * spotckpt_reader_read_all_with(.., e, ..), spotckpt_restore, save,
 * prepare or close stops the thread; the restore's reads fault in
 * whatever it had not reached.  A no-op when e already has staging
 * memory or a staging_bytes budget.  Errors: those of
 * spotckpt_reader_open (-SPOTCKPT_ENOTFOUND: nothing to restore), -ENOMEM. */
SPOTCKPT_API int spotckpt_prefault(struct spotckpt *e, int64_t step);

/* Save the registered tensors as checkpoint `step` (>= 0, normally
 * increasing) with the user metadata `meta_json` (a JSON object as a
 * string, copied; NULL = {}).  Returns after tier 1, i.e. once the tensors
 * are in the staging buffer; with SPOTCKPT_SAVE_LAZY at once (the copy
 * continues in the background; call spotckpt_wait_staged() before
 * modifying registered tensors).  *outcome (may be NULL) receives an enum
 * spotckpt_outcome.  A skipped save returns 0 with SPOTCKPT_SKIPPED.
 * Persistence errors arrive later (spotckpt_wait()).
 * Errors: -EINVAL (step < 0, meta_json not a JSON object),
 * -SPOTCKPT_ECONFLICT (no tensor registered), -ENOBUFS (state exceeds
 * staging_bytes), -ENOMEM (staging allocation), a CUDA copy error. */
SPOTCKPT_API int spotckpt_save(struct spotckpt *e, int64_t step,
			       const char *meta_json, uint32_t flags,
			       int32_t *outcome);

/* Block until the copy of the last lazy save has finished, so the
 * registered tensors may be modified again.  Returns 0 at once when none
 * is in progress, else the copy's result. */
SPOTCKPT_API int spotckpt_wait_staged(struct spotckpt *e);

/* Block until every save accepted so far is committed on disk or has
 * failed.  Returns 0 if the newest of them committed, else its error
 * (e.g. -ENOSPC), with spotckpt_errmsg() set to the writer's message. */
SPOTCKPT_API int spotckpt_wait(struct spotckpt *e);

/* Final checkpoint for a preemption notice: cancels any tier-2 write in
 * progress (its temporary directory is discarded; committed checkpoints are
 * untouched), drops staged saves not yet written, copies the registered
 * tensors and writes + commits them synchronously in the calling thread.
 * `deadline_mono_ns` is an absolute CLOCK_MONOTONIC time in ns (Python:
 * time.monotonic_ns()), 0 = none; the write is completed even when the
 * deadline passes.  *met_deadline (may be NULL) is set to 1 if the
 * commit finished by the deadline, else 0.  Returns 0 once committed,
 * or the error that stopped it (older checkpoints stay intact). */
SPOTCKPT_API int spotckpt_save_final(struct spotckpt *e, int64_t step,
				     const char *meta_json,
				     int64_t deadline_mono_ns,
				     int32_t *met_deadline);

/* spotckpt_save_final() with flags:
 * SPOTCKPT_FINAL_STORE_ONLY: with tier 3 (spotckpt_set_remote) the step
 *   goes from the staging memory straight to the store, and nothing of
 *   it is written to tier 2 - on a preemption notice the node's disk goes
 *   with the node, and the store's copy is the one that survives.  The
 *   store's protocol is the uploader's (shards, then the manifest as the
 *   commit point), run in the calling thread; the background uploads
 *   wait meanwhile (an older one in progress is cancelled).  Requests
 *   are retried until deadline_mono_ns (0: now + commit_timeout_ms), and
 *   the call returns 0 only once the step is in the store, whole: then
 *   spotckpt_remote_wait(step) returns 0 at once and
 *   spotckpt_final_manifest() gives its manifest.  A failed, late or
 *   abandoned upload leaves the store's previous step the newest, and
 *   tier 2 as it was.  The step is not tier 2's: spotckpt_last_saved_step()
 *   and the write statistics stay those of tier 2.  Without tier 3 the
 *   flag does nothing: tier 2 is then the only durable copy. */
#define SPOTCKPT_FINAL_STORE_ONLY 0x1u
SPOTCKPT_API int spotckpt_save_final_ex(struct spotckpt *e, int64_t step,
					const char *meta_json,
					int64_t deadline_mono_ns,
					uint32_t flags, int32_t *met_deadline);

/* The manifest.json of `step` as spotckpt_save_final_ex() put it into the
 * store with SPOTCKPT_FINAL_STORE_ONLY (the newest such step only): *out
 * (caller frees with spotckpt_free), *len its length.  Errors:
 * -SPOTCKPT_ENOTFOUND for any other step, -EINVAL, -ENOMEM. */
SPOTCKPT_API int spotckpt_final_manifest(struct spotckpt *e, int64_t step,
					 char **out, size_t *len);

/* Write the step spotckpt_save_final_ex() just put into the store with
 * SPOTCKPT_FINAL_STORE_ONLY (the newest such step only) to
 * dir/step-SSSSSSSS/ as an exact copy of the store's objects - each shard
 * file from the staging memory, the same manifest.json bytes - for this
 * node's next restore of that step (dir: memory, e.g. a tmpfs; a gang's
 * kept node, docs/distributed.md).  Each file tmp, fsync, rename; the
 * step directory renamed into place last (an older copy replaced).
 * Errors: -SPOTCKPT_ENOTFOUND for any other step or once a later save has
 * taken the staging memory; -EINVAL; a negative errno from the writes
 * (nothing is left of a failed copy). */
SPOTCKPT_API int spotckpt_final_keep(struct spotckpt *e, int64_t step,
				     const char *dir);

/* Give up checkpoint `step`, from any thread (it never waits for the
 * engine's lock): a spotckpt_save_final(step) in progress stops at its
 * next write chunk, one called later writes nothing; both return
 * -ECANCELED.  The background writer's write of `step` (a spotckpt_save)
 * stops or never starts the same way (not committed, no error).  The
 * last four steps given up are remembered.  The step's temporary
 * directory is discarded, so
 * nothing half-written becomes visible; committed checkpoints (and their
 * copies in the store) stay.  For a gang whose final step can no longer
 * commit (spotrun.DistCheckpointer).  0, or -EINVAL. */
SPOTCKPT_API int spotckpt_abandon_final(struct spotckpt *e, int64_t step);

/* Step of the newest checkpoint committed by this engine, or -1. */
SPOTCKPT_API int64_t spotckpt_last_saved_step(struct spotckpt *e);

/* Code of the newest background failure (0 if the newest finished save
 * committed) and its message copied into buf (NUL-terminated, truncated to
 * n; buf may be NULL when n is 0). */
SPOTCKPT_API int spotckpt_last_error(struct spotckpt *e, char *buf,
				     size_t n);

struct spotckpt_stats {
	uint64_t saves_requested; /* spotckpt_save + save_final calls */
	uint64_t saves_staged;    /* copies completed into staging */
	uint64_t saves_committed; /* checkpoints committed to disk */
	uint64_t saves_skipped;   /* dropped by back-pressure */
	uint64_t saves_coalesced; /* staged saves replaced before writing */
	uint64_t saves_failed;    /* tier-2 or final writes that failed */
	int64_t last_stall_ns;    /* time the last save blocked its caller */
	int64_t max_stall_ns;
	int64_t total_stall_ns;
	int64_t last_copy_ns;     /* duration of the last tier-1 copy */
	int64_t last_write_ns;    /* duration of the last tier-2 write, up to
				   * its durable commit (retention after it
				   * is not counted) */
	uint64_t last_write_bytes;/* bytes of the last committed checkpoint */
	uint64_t bytes_written;   /* total over all commits */
	uint64_t staging_bytes;   /* staging memory currently allocated */
	uint64_t state_bytes;     /* bytes of the registered tensors */
	int64_t last_saved_step;  /* as spotckpt_last_saved_step() */
	int32_t last_error;       /* as spotckpt_last_error() */
	int32_t direct_io_used;   /* 1 if the last write used O_DIRECT */
	int32_t uring_used;       /* 1 if the last write used io_uring */
	int32_t cuda_loaded;      /* 1 if libcudart was loaded */
};

/* Snapshot of the counters.  Never waits for a save.  Returns 0, or
 * -EINVAL when e or out is NULL. */
SPOTCKPT_API int spotckpt_stats(struct spotckpt *e, struct spotckpt_stats *out);

/* Where the last committed tier-2 write spent its time, phase by phase,
 * so that a slow write explains itself (`spotrun ckpt bench --json` prints
 * it).  Each moment of a writing thread belongs to exactly one phase:
 * wall_ns[p] is the time it spent there, cpu_ns[p] the CPU it used
 * (wall - cpu: waiting for the device, or for a core).  With several
 * directories each writing thread (lane) counts its own moments, so the
 * wall times add up to more than the write's duration. */
enum spotckpt_wphase {
	SPOTCKPT_WP_PREPARE = 0,  /* leftovers removed, directories made,
				   * files created and preallocated */
	SPOTCKPT_WP_HASH = 1,     /* XXH3 of each chunk before it is sent */
	SPOTCKPT_WP_SUBMIT = 2,   /* handing writes (and the unaligned tail of
				   * each file) to the kernel */
	SPOTCKPT_WP_WAIT = 3,     /* waiting for writes and per-file fsyncs */
	SPOTCKPT_WP_MANIFEST = 4, /* manifest.json rendered and written */
	SPOTCKPT_WP_FSYNC = 5,    /* the last files, manifest and directories
				   * made durable (one concurrent round) */
	SPOTCKPT_WP_PUBLISH = 6,  /* rename to step-N + fsync of the
				   * directory: the commit point */
	SPOTCKPT_WP_RETENTION = 7,/* older checkpoints removed (after the
				   * commit; not in commit_ns) */
	SPOTCKPT_WP_COUNT = 8
};
#define SPOTCKPT_WP_MAX 12 /* array size; entries past COUNT stay 0 */

struct spotckpt_write_profile {
	int64_t wall_ns[SPOTCKPT_WP_MAX];
	int64_t cpu_ns[SPOTCKPT_WP_MAX];
	int64_t commit_ns;        /* start to durable commit (last_write_ns) */
	int64_t cpu_total_ns;     /* CPU of the writing threads, all phases */
	uint64_t bytes;           /* bytes written, manifest included */
	uint64_t writes;          /* write requests sent */
	uint32_t fsyncs;          /* fsync calls (files and directories) */
	uint32_t lanes;           /* threads that wrote shards */
	int32_t fixed_buffers;    /* 1: io_uring writes from registered memory */
	int32_t preallocated;     /* 1: shard files preallocated (fallocate) */
};

/* The profile of the last committed tier-2 write (zeros before the first
 * one).  Never waits for a save.  Returns 0, or -EINVAL when e or out is
 * NULL. */
SPOTCKPT_API int spotckpt_write_profile(struct spotckpt *e,
					struct spotckpt_write_profile *out);
/* "prepare", "hash", ... for a phase; NULL outside 0..COUNT-1. */
SPOTCKPT_API const char *spotckpt_wphase_name(int32_t phase);

/* Where the calling thread's last restore (spotckpt_reader_read_all and
 * what calls it: spotckpt_restore, spotckpt_restore_cb, ...) spent its
 * time, so that a slow restore explains itself (`spotrun ckpt bench
 * --json`, restore_vs_raw.phases).  A restore is all or nothing, one of
 * two ways (docs/checkpoint.md, "Where restore time goes"), its `mode`:
 * SPOTCKPT_RESTORE_VERIFY_FIRST (the default for host destinations of a
 * local checkpoint): read_* is reading every wanted tensor into an image
 * of the checkpoint and checking it there, place_* copying the checked
 * image into the destinations afterwards;
 * SPOTCKPT_RESTORE_KEEP (tier-3 reads, CUDA destinations, or the
 * environment's SPOTCKPT_RESTORE_KEEP=1): read_* is reading straight into
 * the destinations, each block's old bytes kept aside first; place_* 0;
 * SPOTCKPT_RESTORE_AS_READ: the same with nothing to keep (every
 * destination SPOTCKPT_DEST_SCRATCH);
 * SPOTCKPT_RESTORE_BEHIND (SPOTCKPT_RESTORE_BEHIND=1 in the environment
 * instead of verify first; slower on 2 cores, see docs/checkpoint.md):
 * read_* as verify first, while each tensor that
 * matched already goes to its destination, its old bytes kept in the
 * image until the restore succeeds (put back if it fails); place_* the
 * rest, after the last read;
 * SPOTCKPT_RESTORE_MAPPED (verify first for a checkpoint on a tmpfs: a
 * node's kept copy in /dev/shm): the image is the shard files mapped
 * read-only, no copy into fresh memory; read_* is the mapping and the
 * checks, place_* as verify first.  cpu_ns is the process's CPU over the phase
 * (every reading and placing thread's). */
#define SPOTCKPT_RESTORE_KEEP 0
#define SPOTCKPT_RESTORE_VERIFY_FIRST 1
#define SPOTCKPT_RESTORE_AS_READ 2
#define SPOTCKPT_RESTORE_BEHIND 3
#define SPOTCKPT_RESTORE_MAPPED 4
struct spotckpt_restore_profile {
	int32_t mode;             /* SPOTCKPT_RESTORE_* */
	int32_t ok;               /* 1: the restore succeeded */
	int64_t read_wall_ns, read_cpu_ns;
	int64_t place_wall_ns, place_cpu_ns;
	uint64_t bytes;           /* bytes of the destinations */
};
/* The calling thread's last restore profile (zeros before the first). */
SPOTCKPT_API void spotckpt_restore_profile(struct spotckpt_restore_profile *out);

/* Keeping the engine out of the training thread's way.  The engine's
 * threads are the tier-1 copy threads (busy for one memory copy of the
 * state per save; in lazy mode the training thread waits for them before
 * it may modify its tensors) and the tier-2 writer (hashes the state and
 * submits its writes while training goes on).  On a machine with few
 * cores they compete with the training thread for CPU; these settings
 * move them aside:
 *   nice               nice value (0..19) of the writer thread, so the
 *                      scheduler prefers the training thread when a core
 *                      is contended (lowering it again needs
 *                      CAP_SYS_NICE; best effort)
 *   writer_cpus        CPUs the writer may run on (bit i = CPU i, CPUs
 *                      0..63); 0 = any.  Pin the training thread elsewhere
 *                      (taskset / sched_setaffinity).
 *   copy_cpus          the same for the copy threads; 0 = any (usually
 *                      right: the training thread waits for the copy)
 *   write_bytes_per_s  cap on the writer's rate (and so on its hashing and
 *                      memory traffic); 0 = none.  spotckpt_save_final()
 *                      is never capped.
 * Applied by each thread before its next job.  Errors: -EINVAL (NULL,
 * nice outside 0..19). */
struct spotckpt_background {
	int32_t nice;
	int32_t pad_;
	uint64_t writer_cpus;
	uint64_t copy_cpus;
	uint64_t write_bytes_per_s;
};
SPOTCKPT_API int spotckpt_set_background(struct spotckpt *e,
					 const struct spotckpt_background *b);

/* Fill the registered tensors from the newest valid checkpoint in the
 * engine's directory with step <= max_step (SPOTCKPT_NEWEST = any).  Every
 * registered tensor must be present with the same dtype and shape (extra
 * tensors in the checkpoint are ignored).  A checkpoint that fails to
 * parse or verify is skipped with a log line naming file and tensor, and
 * the previous one is tried; registered memory may then hold data from the
 * rejected attempt until the next one overwrites it.  *step (may be NULL)
 * receives the step restored.  Errors: -SPOTCKPT_ENOTFOUND (no valid
 * checkpoint, or a registered tensor missing / mismatched in all of them),
 * I/O errors. */
SPOTCKPT_API int spotckpt_restore(struct spotckpt *e, int64_t max_step,
				  int64_t *step);

/* ---- reader ---------------------------------------------------------------- */
struct spotckpt_reader;

struct spotckpt_tensor_info {
	const char *name;     /* borrowed from the reader */
	int32_t dtype;        /* enum spotckpt_dtype */
	int32_t ndim;
	int64_t shape[SPOTCKPT_MAX_NDIM];
	uint64_t nbytes;
	uint64_t xxh3;        /* checksum recorded in the manifest */
	int32_t shard;        /* index of its shard file */
	int32_t pad_;
	uint64_t offset;      /* byte offset of its data in the shard file */
};

/* Open a checkpoint of `dir` for reading.  step = SPOTCKPT_NEWEST opens
 * the newest checkpoint with step <= max_step whose manifest parses and
 * whose shard files have the recorded sizes and headers (checkpoints that
 * do not are skipped, with a log line); otherwise exactly `step` (max_step
 * ignored).  With SPOTCKPT_OPEN_VERIFY every shard's full-file XXH3 is
 * checked too (reads all data once) and failing checkpoints are skipped
 * the same way.  On success *out is a new reader owned by the caller
 * (spotckpt_reader_close()).  Errors: -SPOTCKPT_ENOTFOUND (none),
 * -SPOTCKPT_EPARSE / -SPOTCKPT_ECORRUPT / -SPOTCKPT_ECHECKSUM (an explicit
 * step that is invalid; spotckpt_errmsg() names file and field/tensor),
 * -ENOENT, -ENOMEM. */
SPOTCKPT_API int spotckpt_reader_open(const char *dir, int64_t step,
				      int64_t max_step, uint32_t flags,
				      struct spotckpt_reader **out);

SPOTCKPT_API void spotckpt_reader_close(struct spotckpt_reader *r); /* NULL-safe */

/* Step of the open checkpoint. */
SPOTCKPT_API int64_t spotckpt_reader_step(const struct spotckpt_reader *r);
/* Commit wall-clock time, ns since the Unix epoch. */
SPOTCKPT_API int64_t spotckpt_reader_time_ns(const struct spotckpt_reader *r);
/* The user metadata as compact JSON (borrowed; "{}" when none). */
SPOTCKPT_API const char *spotckpt_reader_meta(const struct spotckpt_reader *r);
/* Path of the checkpoint directory (borrowed). */
SPOTCKPT_API const char *spotckpt_reader_path(const struct spotckpt_reader *r);
/* Number of tensors / total bytes of tensor data. */
SPOTCKPT_API int64_t spotckpt_reader_ntensors(const struct spotckpt_reader *r);
SPOTCKPT_API uint64_t spotckpt_reader_nbytes(const struct spotckpt_reader *r);

/* Describe tensor `idx` (0 .. ntensors-1, in manifest order).  Returns 0
 * or -EINVAL for a bad index. */
SPOTCKPT_API int spotckpt_reader_tensor(const struct spotckpt_reader *r,
					int64_t idx,
					struct spotckpt_tensor_info *out);

/* Index of the tensor called `name`, or -SPOTCKPT_ENOTFOUND. */
SPOTCKPT_API int64_t spotckpt_reader_find(const struct spotckpt_reader *r,
					  const char *name);

/* Read tensor `idx` into dst (host memory, dst_len >= its nbytes) and
 * verify its checksum.  Errors: -EINVAL, -ENOBUFS (dst_len too small),
 * -SPOTCKPT_ECHECKSUM (errmsg names the file and tensor), I/O errors. */
SPOTCKPT_API int spotckpt_reader_read(struct spotckpt_reader *r, int64_t idx,
				      void *dst, uint64_t dst_len);

struct spotckpt_dest {
	int64_t index;   /* tensor index in the reader */
	void *ptr;       /* destination: host memory, or a CUDA device
			  * pointer when device == SPOTCKPT_DEV_CUDA */
	uint64_t len;    /* bytes available at ptr, >= the tensor's nbytes */
	int32_t device;  /* enum spotckpt_device */
	uint32_t flags;  /* SPOTCKPT_DEST_* */
};
/* spotckpt_dest.flags: ptr is a buffer allocated for this read (nothing
 * in it to keep): a failed read need not put its old bytes back. */
#define SPOTCKPT_DEST_SCRATCH 0x1u

/* Read n tensors in parallel (io_uring, several threads) into the given
 * destinations, verifying every checksum.  Stops at the first error and
 * returns it (-SPOTCKPT_ECHECKSUM names file and tensor).  All or
 * nothing: when it fails, every destination holds what it held before
 * the call, except those marked SPOTCKPT_DEST_SCRATCH (a local checkpoint
 * into host memory is verified whole in an image of it before any
 * destination is written; a store's or into CUDA memory, each tensor's
 * old bytes are kept aside before its first byte is written and put back
 * on failure; see docs/checkpoint.md). */
SPOTCKPT_API int spotckpt_reader_read_all(struct spotckpt_reader *r,
					  const struct spotckpt_dest *d,
					  size_t n);
/* spotckpt_reader_read_all using engine e's idle staging memory (for the
 * checkpoint's image, or the destinations' old bytes) instead of memory
 * mapped (and faulted in) for this read.  When e has no staging memory yet (a restore at a job's
 * start, before any save), it gets it now, sized to this checkpoint: the
 * restore fills it and e's saves then use it, so the process faults that
 * memory in once, not once for the restore and again for the first save
 * (unless the engine has a staging_bytes budget: then e's first save
 * sizes it).  No save of e runs during the call.  e NULL: as read_all. */
SPOTCKPT_API int spotckpt_reader_read_all_with(struct spotckpt_reader *r,
					       struct spotckpt *e,
					       const struct spotckpt_dest *d,
					       size_t n);

/* Callback form: called once per tensor, in manifest order, from the
 * calling thread, with the verified bytes in `data` (valid only during the
 * call).  Return 0 to continue, anything else to stop; that value is then
 * returned by spotckpt_reader_foreach(). */
typedef int (*spotckpt_tensor_fn)(void *ud,
				  const struct spotckpt_tensor_info *info,
				  const void *data);
SPOTCKPT_API int spotckpt_reader_foreach(struct spotckpt_reader *r,
					 spotckpt_tensor_fn fn, void *ud);

/* Restore with fallback, without an engine: for the newest valid
 * checkpoint of dir with step <= max_step, `lookup` is called once per
 * tensor (calling thread) and returns where to put it (fill *dest's ptr,
 * len and device and return 0; return 1 to skip the tensor, or a negative
 * code to abort everything).  The data is then read in parallel and
 * verified; if that fails with a checksum or format error the checkpoint
 * is skipped (log line naming file and tensor) and the previous one is
 * tried, calling `lookup` again for its tensors.  *step receives the step
 * restored (may be NULL).  Errors: -SPOTCKPT_ENOTFOUND, lookup's code,
 * I/O errors. */
typedef int (*spotckpt_lookup_fn)(void *ud,
				  const struct spotckpt_tensor_info *info,
				  struct spotckpt_dest *dest);
SPOTCKPT_API int spotckpt_restore_cb(const char *dir, int64_t max_step,
				     spotckpt_lookup_fn lookup, void *ud,
				     int64_t *step);

/* ---- directory ---------------------------------------------------------- */
enum spotckpt_entry_state {
	SPOTCKPT_ENTRY_COMMITTED = 0, /* step-N/ with a manifest */
	SPOTCKPT_ENTRY_INCOMPLETE = 1,/* step-N.tmp/, or step-N/ lacking one */
	SPOTCKPT_ENTRY_DAMAGED = 2,   /* step-N/ whose manifest or shard
					 headers do not check out (restore
					 skips it) */
};

struct spotckpt_entry {
	int64_t step;
	int64_t time_ns;   /* manifest time, or directory mtime */
	uint64_t bytes;    /* sum of file sizes in the directory */
	int32_t state;     /* enum spotckpt_entry_state */
	int32_t ntensors;  /* from the manifest, -1 if unreadable */
};

/* List the checkpoints of dir, newest step first, into out[0..cap-1]
 * (no checksum verification).  *n receives the total number found, which
 * may exceed cap (call with cap 0 to size the array).  Errors: -ENOENT,
 * -ENOTDIR, -ENOMEM. */
SPOTCKPT_API int spotckpt_list(const char *dir, struct spotckpt_entry *out,
			       size_t cap, size_t *n);

/* Fully verify one checkpoint: manifest, every shard header and every
 * byte's checksum (shard and tensor).  step = SPOTCKPT_NEWEST checks the
 * newest committed one.  *step_out (may be NULL) receives the step checked.
 * Returns 0 when valid, else the first problem (-SPOTCKPT_ECHECKSUM,
 * -SPOTCKPT_EPARSE, -SPOTCKPT_ECORRUPT, -SPOTCKPT_ENOTFOUND, ...) with
 * spotckpt_errmsg() naming the file and tensor or field. */
SPOTCKPT_API int spotckpt_verify(const char *dir, int64_t step,
				 int64_t *step_out);

/* ---- tier 3: object storage ------------------------------------------------
 * Each checkpoint committed to the engine's directory (tier 2) is then
 * uploaded, by a background thread, to an object store: s3://BUCKET/PREFIX,
 * gs://BUCKET/PREFIX (XML API, HMAC keys), az://ACCOUNT/CONTAINER/PREFIX,
 * or file:///DIR (see docs/checkpoint.md for credentials and endpoints).
 * Training never waits for it: a newer checkpoint replaces one whose upload
 * has not started, and a failed upload is retried with backoff.  Only
 * steps tier 2 committed are uploaded.  Shards go first (multipart,
 * parallel parts with checksums), the manifest last as the commit point;
 * the store keeps the newest `keep` checkpoints, deleting a step only
 * after a newer one is committed there, manifests before shards.
 *
 * THE GUARANTEE: after spotckpt_remote_wait(N) returns 0, and after
 * spotckpt_close() returns 0, step N (for close: the newest committed) is
 * restorable from the store, whole.
 *
 * The reader functions, spotckpt_list(), spotckpt_verify() and
 * spotckpt_restore_cb() accept the same URIs and read straight from the
 * store with parallel ranged GETs; spotckpt_restore() uses whichever tier
 * holds the newer checkpoint.  A store that does not answer (credentials
 * refused, no such bucket, unreachable) is an error, never "no
 * checkpoint": -SPOTCKPT_ENOTFOUND means the store answered and holds no
 * committed step. */
struct spotckpt_remote_stats {
	int64_t uploaded_step;     /* newest whole step in the store (uploaded,
				    * or found there when tier 3 started), -1 */
	int64_t uploading_step;    /* upload in progress, -1 */
	int64_t pending_step;      /* waiting for the uploader, -1 */
	uint64_t uploads_committed;
	uint64_t uploads_failed;   /* failed attempts, each logged; retried */
	uint64_t uploads_superseded;
	uint64_t bytes_uploaded;
	int64_t last_upload_ns;    /* duration of the last committed upload */
	int32_t last_error;        /* 0 if the last attempt committed */
	int32_t enabled;           /* 1 once spotckpt_set_remote succeeded */
	/* the recovery point: what a node that is lost now resumes from */
	int64_t local_step;        /* newest step committed to tier 2, -1 */
	int64_t local_time_ns;     /* when (CLOCK_REALTIME ns), 0 */
	int64_t store_time_ns;     /* save time of uploaded_step (its
				    * manifest, CLOCK_REALTIME ns), 0; its age
				    * is the recovery point objective met */
	int64_t next_retry_ns;     /* CLOCK_MONOTONIC of the next attempt of a
				    * failed upload, 0 = none waiting */
	uint32_t retries;          /* failed attempts since the last commit */
	uint32_t behind;           /* checkpoints committed to tier 2 after
				    * uploaded_step: how many intervals the
				    * store's copy lags (0 = up to date) */
};

/* Start tier 3 to `uri` (copied).  The store is listed once, now: a
 * configuration it refuses is an error here; one that does not answer
 * only logs a warning (uploads are retried, the failure shows in
 * spotckpt_remote_stats()).  A failing upload never fails a save.  The
 * newest checkpoint already in the directory is offered for upload.
 * Errors: -EINVAL (bad URI or scheme, invalid bucket name, a request the
 * store calls bad; spotckpt_errmsg() names what to fix), -EACCES (no
 * credentials found, or refused), -SPOTCKPT_ENOTFOUND (no such bucket or
 * container), -SPOTCKPT_ECONFLICT (already set), -ENOMEM. */
SPOTCKPT_API int spotckpt_set_remote(struct spotckpt *e, const char *uri);

/* spotckpt_set_remote() with choices: `keep` committed checkpoints kept
 * in the store (0: the engine's keep; SPOTCKPT_REMOTE_KEEP_ALL: none is
 * ever deleted by the engine - the caller prunes them, as the multi-rank
 * checkpointer does, whose global commit records name them); flags
 * SPOTCKPT_REMOTE_NO_BACKFILL: do not offer the newest checkpoint
 * already in the directory.  Errors as spotckpt_set_remote(), and
 * -EINVAL for a keep below -1 or an unknown flag. */
#define SPOTCKPT_REMOTE_KEEP_ALL (-1)
#define SPOTCKPT_REMOTE_NO_BACKFILL 0x1u
SPOTCKPT_API int spotckpt_set_remote_ex(struct spotckpt *e, const char *uri,
				       int32_t keep, uint32_t flags);

/* Make checkpoint `step` (-1 = the newest committed to tier 2) reach the
 * store by deadline_mono_ns (CLOCK_MONOTONIC ns; 0 = now + the engine's
 * commit_timeout_ms), e.g. on a preemption notice.  Waits for tier 2's
 * writes of it first; an upload of an older step in progress is
 * cancelled so that this one starts at once; failed attempts and every
 * request are retried until the deadline (not a count).  Returns 0 once
 * it is committed in the store (*met = 1 if by the deadline),
 * -SPOTCKPT_ETIMEOUT when the deadline passed (errmsg: the last failure;
 * the upload goes on in the background), or -SPOTCKPT_ENOTFOUND when
 * tier 2 never committed `step` (skipped by back-pressure, or its write
 * failed). */
SPOTCKPT_API int spotckpt_remote_wait(struct spotckpt *e, int64_t step,
				      int64_t deadline_mono_ns, int32_t *met);

/* Counters of tier 3 (all -1/0 with enabled = 0 when not set), and the
 * last upload's error message into msg (NUL-terminated, may be NULL).
 * Never waits for an upload.  Returns 0 or -EINVAL. */
SPOTCKPT_API int spotckpt_remote_stats(struct spotckpt *e,
				       struct spotckpt_remote_stats *out,
				       char *msg, size_t n);

/* ---- objects in a store ------------------------------------------------- */
/* Plain access to the objects under a URI (file://, s3://, gs://, az://;
 * the same credentials and retries as tier 3), for callers that keep
 * their own records next to the checkpoints - the multi-rank
 * checkpointer's prepared markers and global commit records.  Keys are
 * relative to the URI's prefix: not empty, at most 512 bytes, no leading
 * '/', no "//", no ".." segment, no control character (-EINVAL).  A
 * handle may be used from several threads. */
struct spotckpt_store;

/* *out owned by the caller (spotckpt_store_close); NULL on failure.
 * Errors: -EINVAL (bad URI), -EACCES (no credentials), -ENOMEM. */
SPOTCKPT_API int spotckpt_store_open(const char *uri,
				     struct spotckpt_store **out);
SPOTCKPT_API void spotckpt_store_close(struct spotckpt_store *s); /* NULL-safe */
/* Write `key` in one request: atomic on object stores (the object is
 * either the old one or all of buf); tmp + fsync + rename on file://. */
SPOTCKPT_API int spotckpt_store_put(struct spotckpt_store *s, const char *key,
				    const void *buf, size_t len);
/* Read all of `key` (at most max bytes) into *out (NUL-terminated,
 * caller frees with spotckpt_free), its length in *len.
 * -SPOTCKPT_ENOTFOUND when there is no such object. */
SPOTCKPT_API int spotckpt_store_get(struct spotckpt_store *s, const char *key,
				    size_t max, char **out, size_t *len);
/* The keys that start with `sub` ("" = all), sorted, one per line
 * ("\n"-terminated) in *out (caller frees with spotckpt_free); *len its
 * length.  Keys holding a control character are left out. */
SPOTCKPT_API int spotckpt_store_list(struct spotckpt_store *s, const char *sub,
				     char **out, size_t *len);
/* Delete keys[0..n-1] (missing ones are not an error), in that order of
 * requests: a caller that must remove a record before what it names
 * deletes it in a call of its own first. */
SPOTCKPT_API int spotckpt_store_del(struct spotckpt_store *s,
				    const char *const *keys, size_t n);
/* Free memory returned by this library (NULL-safe). */
SPOTCKPT_API void spotckpt_free(void *p);

/* ---- progress for the node agent ---------------------------------------- */
/* Under spotrun's node agent ($SPOTRUN_PROGRESS_FILE set), the library
 * reports on its own every accepted save (its step and stall), every
 * step committed to tier 2, and what spotckpt_restore() restored, so
 * `spotrun status` shows them with no status file (docs/api.md).  Without
 * the variable these do nothing.  Process-wide, thread-safe, never
 * blocking on the agent; a report that cannot be written is dropped
 * (logged once): they fail only on a negative step (-EINVAL). */

/* The training loop's step (and its total, when known: > 0; else pass
 * -1).  Cheap enough for every step: written at most once a second. */
SPOTCKPT_API int spotckpt_progress_step(int64_t step, int64_t total_steps);

/* What this process resumed from: the restored step, 0 for a fresh start.
 * spotckpt_restore() calls it; a binding that restores through the reader
 * API calls it itself. */
SPOTCKPT_API int spotckpt_progress_restored(int64_t step);

/* The same, with where each part was read (a multi-rank restore, e.g.
 * "rank-00001=peer rank 0, replicated=store"; at most 240 bytes kept):
 * the agent reports it as the job's `restored` event.  -EINVAL on a
 * negative step or a NULL text. */
SPOTCKPT_API int spotckpt_progress_restored_from(int64_t step,
						 const char *from);

/* ---- misc ---------------------------------------------------------------- */
/* Words for any code returned by this library.  Never NULL; static. */
SPOTCKPT_API const char *spotckpt_strerror(int code);

/* Detail of the last failing call made by the calling thread: names the
 * file, field or tensor.  Thread-local, never NULL ("" if none); valid
 * until the thread's next failing call. */
SPOTCKPT_API const char *spotckpt_errmsg(void);

/* Size in bytes of one element of dtype, or 0 if it is not a valid enum. */
SPOTCKPT_API uint32_t spotckpt_dtype_size(int32_t dtype);
/* Safetensors name ("F32", ...) of dtype, or NULL. */
SPOTCKPT_API const char *spotckpt_dtype_name(int32_t dtype);

/* SPOTCKPT_ABI_VERSION of the built library (bindings check it). */
SPOTCKPT_API int32_t spotckpt_abi_version(void);

/* 1 if libcudart could be loaded (tries once; never fails). */
SPOTCKPT_API int32_t spotckpt_cuda_available(void);

#ifdef __cplusplus
}
#endif
#endif
