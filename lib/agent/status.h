/*
 * status.h - the workload's status file ($SPOTRUN_STATUS_FILE, api.md).
 *
 * The workload may atomically replace (write a temp file, rename) a small
 * JSON object:
 *
 *   {"seq": 17,              optional, +1 per write (dedupes stall_ms)
 *    "step": 1200, "total_steps": 3000, "ckpt_step": 1100,
 *    "restored_step": 1000,
 *    "ckpt_error": "...",    the newest tier-3 upload failure, "" if none
 *    "stall_ms": [12.5]}     stalls of the saves since the last write
 *
 * A workload writes the file right after each save, so the agent reports
 * each stall as a checkpoint of `step`.
 *
 * The same reader reads libspotckpt's own report ($SPOTRUN_PROGRESS_FILE,
 * lib/ckpt/progress.c), which has the same fields plus "saves": the
 * count of saves so far, while "stall_ms" holds the newest stalls; the
 * new stalls of a read are then the last (saves - saves at the previous
 * read) of them.
 *
 * Every field is optional; unknown fields are ignored (the workload is
 * user code, and a newer binding may add some).  A wrong type is an error
 * naming the field.  status_read() returns the new stalls only once per
 * write: by seq when present, else by (inode, mtime, size) of the file.
 *
 * Not thread-safe.
 */
#ifndef SR_AGENT_STATUS_H
#define SR_AGENT_STATUS_H

#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

#define STATUS_MAX_STALLS 64
#define STATUS_MAX_BYTES 65536

struct status_info {
	int64_t step, total_steps, ckpt_step, restored_step; /* -1 = absent */
	int64_t saves;                    /* -1 = absent (status files) */
	char ckpt_error[256];             /* "" = none (truncated) */
	char restored_from[256];          /* where each part of the restore
					   * was read; "" = not said */
	int nstalls;                      /* new stalls in this read */
	double stall_ms[STATUS_MAX_STALLS];
};

struct status_reader {
	char path[4096];
	int64_t last_seq;         /* -1 none seen */
	int64_t last_saves;       /* -1 none seen */
	int stalls_seen;          /* some read carried a stall */
	ino_t last_ino;
	int64_t last_mtime_ns;
	off_t last_size;
	struct status_info last;  /* most recent values (stalls not kept) */
};

void status_reader_init(struct status_reader *r, const char *path);

/* Read the file if it changed.  Returns 1 when a new version was read
 * (*out filled; out->nstalls are stalls not returned before), 0 when the
 * file is absent or unchanged (*out = the last values, nstalls 0), or a
 * negative code with *e naming the file and field when it is malformed. */
int status_read(struct status_reader *r, struct status_info *out,
		struct sr_err *e);

/* Parse a status document.  Exposed for tests. */
int status_parse(const char *buf, size_t len, const char *name,
		 struct status_info *out, int64_t *seq, struct sr_err *e);

#endif
