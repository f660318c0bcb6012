/*
 * ckpt_bench.h - `spotrun ckpt bench` and the peers it measures against.
 */
#ifndef SR_CLI_CKPT_BENCH_H
#define SR_CLI_CKPT_BENCH_H

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
/* Sequential write of buf to path (O_DIRECT when the file system takes
 * it, 64 MiB requests) + fsync; read back the same way (without O_DIRECT,
 * after dropping the file's cached pages). */
int bench_raw_write(const char *path, const uint8_t *buf, uint64_t n,
		    double *secs, int *direct);
int bench_raw_read(const char *path, uint8_t *buf, uint64_t n, double *secs,
		   int *direct);
/* posix_fadvise(DONTNEED) every file under dir: reads that follow come
 * from the disk, as the raw read's do, even where O_DIRECT is refused. */
void bench_drop_cache(const char *dir);
/* Run the torch.save peer; *secs or a reason why not. */
int bench_torch_save(const char *script, uint64_t bytes, const char *dir,
		     double *secs, char *reason, size_t rn);
/* From /proc/self/status, in bytes ("VmRSS:", "VmHWM:"). */
uint64_t bench_proc_bytes(const char *field);
void bench_reset_hwm(void);

/* The synthetic training loop: `steps` steps of ~step_s seconds of
 * single-threaded compute plus an optimizer-like update of 1/16 of the
 * state; with e, a lazy checkpoint every interval_s seconds of loop time.
 * Accumulates into *out (zero it first), so a run can be split into
 * segments interleaved with another run. */
struct bench_train {
	double seconds;
	long steps;
	int saves;
	double since_save;   /* loop time since the last checkpoint */
	long step_no;
};
long bench_calibrate(double step_s);       /* compute iterations per step */
int bench_train_run(struct bench_state *s, struct spotckpt *e, long steps,
		    long iters, double interval_s, struct bench_train *out);

/* ckpt_bench_remote.c: upload_vs_raw and remote_restore_vs_raw against
 * uri (an engine on WDIR/tier3-bench), into root.  buf holds cap bytes
 * (>= the state).  Returns 0 or the library's error (printed). */
#include <jansson.h>
int bench_remote(const struct bench_state *st, const char *uri,
		 const char *wdir, int reps, uint8_t *buf, uint64_t cap,
		 json_t *root);

#endif
