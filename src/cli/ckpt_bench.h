/*
 * ckpt_bench.h - `spotrun ckpt bench` and the peers it measures against.
 */
#ifndef SR_CLI_CKPT_BENCH_H
#define SR_CLI_CKPT_BENCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "spotrun/ckpt.h"

int ckpt_bench_main(int argc, char **argv);

/* A model-like state: per layer the weights of a transformer block, each
 * followed by its two Adam moments, plus an embedding; all float32. */
struct bench_state {
	size_t n;
	char **name;
	float **ptr;
	uint64_t *nbytes;
	uint64_t total;
};
int bench_state_build(struct bench_state *s, uint64_t size);
void bench_state_free(struct bench_state *s);

double bench_now(void);                    /* monotonic seconds */
void *bench_alloc_faulted(uint64_t n);     /* mmap + populate; NULL on error */
void bench_unmap(void *p, uint64_t n);
/* memcpy of every tensor into dst (packed) split over `threads` threads
 * by bytes, the way the engine splits its copy; returns seconds. */
double bench_memcpy(const struct bench_state *s, uint8_t *dst, int threads);
/* ckpt_bench_raw.c: the raw peers over the bench's n directories.
 * Piece k of buf (bench_stripe: 4 KiB-aligned, the last takes the rest)
 * goes to paths[k], one thread per piece, all at once: a sequential
 * write (O_DIRECT when the file system takes it, 64 MiB requests) +
 * fsync; read back the same way (without O_DIRECT, after dropping the
 * file's cached pages).  *secs: the whole; *ph: each phase's wall and CPU
 * summed over the threads. */
#define BENCH_MAX_DIRS 16
struct bench_raw_phases {
	double write_s, write_cpu_s, fsync_s, fsync_cpu_s;
};
void bench_stripe(uint64_t len, int n, int k, uint64_t *off, uint64_t *size);
int bench_raw_write(const char *const *paths, int n, const uint8_t *buf,
		    uint64_t len, double *secs, int *direct,
		    struct bench_raw_phases *ph);
int bench_raw_read(const char *const *paths, int n, uint8_t *buf,
		   uint64_t len, double *secs, int *direct);
/* posix_fadvise(DONTNEED) every file under dir: reads that follow come
 * from the disk, as the raw read's do, even where O_DIRECT is refused. */
void bench_drop_cache(const char *dir);
/* Run the torch.save peer; *secs or a reason why not. */
int bench_torch_save(const char *script, uint64_t bytes, const char *dir,
		     double *secs, char *reason, size_t rn);
/* From /proc/self/status, in bytes ("VmRSS:", "VmHWM:"). */
uint64_t bench_proc_bytes(const char *field);
void bench_reset_hwm(void);

/* The synthetic training loop.  A step is ~step_s seconds of
 * single-threaded compute plus an optimizer-like update of 1/16 of the
 * state.  A segment runs `steps` steps; with e, it starts with a lazy
 * checkpoint.  A write still running at the end of the steps is waited
 * for outside the segment's time (training would go on) and counted as
 * late; proc_cpu_s includes it.  The
 * bench runs segments with and without a checkpoint in alternation (ABAB,
 * same process, same data) and compares them pairwise. */
struct bench_seg {
	double wall_s;        /* segment wall time */
	double thread_cpu_s;  /* CPU time of the training thread */
	double proc_cpu_s;    /* CPU time of the whole process */
	long nivcsw;          /* training thread preempted (involuntary) */
	int late_commit;      /* the write outlasted the segment */
};
long bench_calibrate(double step_s);       /* compute iterations per step */
int bench_train_segment(struct bench_state *s, struct spotckpt *e, long steps,
			long iters, long *step_no, struct bench_seg *out);
/* CPU seconds used by the whole process so far. */
double bench_proc_cpu(void);
/* /proc/loadavg's three load averages, "0.52 0.58 0.59"; "" if unknown. */
void bench_loadavg(char *buf, size_t n);

/* The write profile (and the process CPU during the write) and the raw
 * peer's phases as JSON objects (new references). */
json_t *bench_phases_json(const struct spotckpt_write_profile *p,
			  double proc_cpu_s);
json_t *bench_raw_phases_json(const struct bench_raw_phases *ph);

/* ckpt_bench_remote.c: upload_vs_raw and remote_restore_vs_raw against
 * uri (an engine on WDIR/tier3-bench), into root.  buf holds cap bytes
 * (>= the state).  Returns 0 or the library's error (printed). */
int bench_remote(const struct bench_state *st, const char *uri,
		 const char *wdir, int reps, uint8_t *buf, uint64_t cap,
		 json_t *root);

/* The raw peer alone (ckpt_bench_remote.c): a plain multipart upload of
 * each file into one object under uri's prefix, SPOTRUN_OBJSTORE_PART_MB
 * parts, SPOTRUN_OBJSTORE_PARALLEL in flight; seconds, or < 0 with why. */
double bench_raw_put_files(const char *uri, const char *const *paths,
			   size_t n, char *why, size_t wn);
/* `spotrun ckpt bench-sync` (ckpt_bench_sync.c). */
int ckpt_bench_sync_main(int argc, char **argv);

#endif
