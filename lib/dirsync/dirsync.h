/*
 * dirsync.h - a directory kept in an object store in whole rounds (issue
 * 30: a SkyPilot bucket mount as a durable checkpoint directory, for a
 * script that never heard of spotrun).  The design is in
 * docs/design/checkpoint.md "Directory sync"; the state diagram of the
 * loop is at the top of loop.c.
 *
 * LAYOUT under the URI's prefix P (any objstore URI):
 *     P/spotrun-sync/objects/<sha256 hex>     one object per content
 *     P/spotrun-sync/rounds/r-<16 digits>.json   a round's manifest
 * A manifest lists every file of the directory as it was in that round
 * (relative path, size, SHA-256, mode) and is written LAST, in one PUT,
 * after every object it names was confirmed: it is the commit point.  Its
 * last line is "sha256 <hex of everything before it>", so a manifest torn
 * by a store that writes in place is refused.  Objects are named by their
 * content and never rewritten with other bytes, so a round committed once
 * stays whole whatever a later, killed round left behind.  Retention keeps
 * the newest `keep` rounds: manifests are deleted first, then the objects
 * no kept manifest names.
 *
 * READING THE DIRECTORY.  Everything is opened relative to the directory's
 * own descriptor with O_NOFOLLOW: a symbolic link (to a file or a
 * directory) is skipped, never followed, and a FIFO or device is skipped
 * without blocking; names starting with ".spotrun-" are the engine's own.
 * The agent runs all of this in the workload's isolation, as its user
 * (`spotrun-agent --dirsync`, src/agent/dirsync_main.c).
 *
 * WHAT A ROUND TAKES.  A file is STABLE when its modification time is at
 * least quiet_ns old (or always, in a forced round: sync_now, the final
 * round); it is read (SHA-256), uploaded if the store does not hold that
 * content yet, and checked unchanged afterwards (size, mtime, ctime,
 * inode): a file that changed meanwhile is not taken this round - the
 * round keeps the version the previous round had, if any.  A file that
 * is not stable yet is "pending".  A round is committed only when what it
 * would list differs from the last committed round.
 *
 * ERRORS: 0 or a negative code with *e naming the file, the key or the
 * round (lib/common err.h conventions).
 */
#ifndef SR_DIRSYNC_DIRSYNC_H
#define SR_DIRSYNC_DIRSYNC_H

#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "objstore/objstore.h"

#define DIRSYNC_META "spotrun-sync"      /* under the prefix */
#define DIRSYNC_LOCAL_PREFIX ".spotrun-"   /* local names never synced */
#define DIRSYNC_MAX_FILES 100000
#define DIRSYNC_MAX_DEPTH 32
#define DIRSYNC_PATH_MAX 1024
#define DIRSYNC_MANIFEST_MAX (64u << 20)

/* One file of a round. */
struct dirsync_file {
	char *path;             /* relative, '/'-separated (owned) */
	uint64_t size;
	char sha256[65];        /* lower-case hex */
	uint32_t mode;          /* permission bits */
};

/* A round: the manifest's contents.  Owned arrays; dirsync_round_free. */
struct dirsync_round {
	int64_t round;          /* >= 1 */
	int64_t time_ns;        /* wall clock at commit */
	struct dirsync_file *files;
	size_t n, cap;
	uint64_t bytes;         /* sum of sizes */
};
void dirsync_round_free(struct dirsync_round *r); /* NULL-safe */

/* ---- manifest.c ---------------------------------------------------- */
/* Whether a relative path from a manifest or a listing is one the engine
 * may create under the directory: 1..DIRSYNC_PATH_MAX bytes, no control
 * character or backslash, no empty/"."/".." segment, no leading '/', and
 * no segment starting with ".spotrun-".  0 or -EINVAL (*e says why). */
int dirsync_path_check(const char *path, struct sr_err *e);
/* The manifest's bytes (malloc'd *out, *len). */
int dirsync_manifest_encode(const struct dirsync_round *r, char **out,
			    size_t *len, struct sr_err *e);
/* Parse and check a manifest (its trailing digest, every path, sizes,
 * digests); `name` is the key for errors.  -SR_ECORRUPT when torn or
 * malformed. */
int dirsync_manifest_decode(const char *buf, size_t len, const char *name,
			    struct dirsync_round *r, struct sr_err *e);
/* Key of a round's manifest / of a content object (relative to P). */
void dirsync_round_key(int64_t round, char *out, size_t n);
void dirsync_object_key(const char *sha256, char *out, size_t n);
/* Round numbers of the manifests in a listing of P, ascending (malloc'd). */
int dirsync_rounds_of(const struct objstore_list *l, int64_t **rounds,
		      size_t *n);

/* ---- scan.c: the directory as it is now ---------------------------- */
struct dirsync_stat {
	char *path;             /* relative (owned) */
	uint64_t size;
	uint32_t mode;
	int64_t mtime_ns, ctime_ns;
	uint64_t ino, dev;
};
struct dirsync_scan {
	struct dirsync_stat *v;
	size_t n, cap;
	size_t skipped;         /* links, FIFOs, devices, over the limits */
};
void dirsync_scan_free(struct dirsync_scan *s); /* NULL-safe */
/* Every regular file under dirfd (sorted by path). */
int dirsync_scan(int dirfd, struct dirsync_scan *out, struct sr_err *e);
/* Open `path` (relative) under dirfd for reading, no link followed at any
 * component: an fd, or a negative code. */
int dirsync_open_at(int dirfd, const char *path, struct sr_err *e);
/* SHA-256 (hex) of fd's bytes [0, size) - exactly size, else -EAGAIN
 * (the file changed). */
int dirsync_sha256_fd(int fd, uint64_t size, char hex[65], struct sr_err *e);
/* The same, calling gate(ud) (when not NULL) before every 8 MiB. */
int dirsync__sha256_fd_gated(int fd, uint64_t size, char hex[65],
			     objstore_gate_fn gate, void *ud, struct sr_err *e);

/* ---- watch.c: yield to the workload's writes ------------------------ */
/* A directory's writes watched with inotify (watch.c has the design):
 * dirsync_watch_gate(w) blocks while the workload has written under it
 * less than quiet_ns ago, for at most max_ns of writing at a stretch.
 * dirfd borrowed (it must outlive w).  *out owned (dirsync_watch_stop). */
struct dirsync_watch;
int dirsync_watch_start(int dirfd, int64_t quiet_ns, int64_t max_ns,
			struct dirsync_watch **out, struct sr_err *e);
void dirsync_watch_stop(struct dirsync_watch *w); /* NULL-safe */
/* open = 1: the gate never blocks (a forced round); 0: it yields again. */
void dirsync_watch_hold(struct dirsync_watch *w, int open);
/* An objstore_gate_fn; ud = the watch (NULL: never blocks). */
void dirsync_watch_gate(void *ud);
/* The same wait, at most DIRSYNC_PACE_MAX_NS a call: the objstore pace
 * of the bodies already on the wire (objstore_set_pace). */
#define DIRSYNC_PACE_MAX_NS (5 * 1000000000LL)
void dirsync_watch_pace(void *ud);
/* Test hook: the bound of one pace call (DIRSYNC_PACE_MAX_NS). */
extern int64_t dirsync__pace_max_ns;
/* The gates' total wait so far (ns). */
int64_t dirsync_watch_yielded_ns(const struct dirsync_watch *w);
/* CLOCK_MONOTONIC of the last write seen, 0 none (for tests: once it
 * moves, every directory created before that write is watched). */
int64_t dirsync_watch_last_ns(const struct dirsync_watch *w);
/* How many files the workload has written and not yet closed (watch.c):
 * while one is open, the gate waits DIRSYNC_OPEN_QUIET_NS of silence. */
int dirsync_watch_open_files(const struct dirsync_watch *w);
#define DIRSYNC_OPEN_QUIET_NS (2 * 1000000000LL)
/* Test hook: that silence (DIRSYNC_OPEN_QUIET_NS). */
extern int64_t dirsync__open_quiet_ns;

/* ---- round.c: uploading and committing ------------------------------ */
struct dirsync;
struct dirsync_opts {
	const char *uri;
	int dirfd;              /* the directory (borrowed) */
	int keep;               /* rounds kept in the store (>= 1; 3) */
	int workers;            /* files uploaded at once (4) */
};
struct dirsync_stats {
	int64_t round;          /* last committed round, -1 none */
	int64_t restored;       /* round restored at start, -1 none */
	uint64_t files, bytes;  /* in the last committed round */
	uint64_t uploaded_bytes;/* content bytes PUT by this engine */
	uint64_t pending_files, pending_bytes; /* not stable at the last scan */
	uint64_t rounds;        /* committed by this engine */
};
/* Open the store and list it once (the next round number).  *out owned
 * by the caller (dirsync_close). */
int dirsync_open(const struct dirsync_opts *o, struct dirsync **out,
		 struct sr_err *e);
void dirsync_close(struct dirsync *d); /* NULL-safe */
struct objstore *dirsync_store(struct dirsync *d);
/* gate(ud) is called before each upload part and hash block of the
 * rounds from now on (it may block: dirsync_watch_gate), pace(ud) before
 * each 64 KiB of an upload's body (dirsync_watch_pace); NULL none. */
void dirsync_set_gate(struct dirsync *d, objstore_gate_fn gate,
		      objstore_gate_fn pace, void *ud);
void dirsync_stats(const struct dirsync *d, struct dirsync_stats *out);
/* One round: scan, upload the stable files that changed, commit a new
 * manifest when the directory differs from the last round.  quiet_ns < 0
 * (forced): every file is stable.  *committed (may be NULL) = the new
 * round's number, or 0 when nothing changed. */
int dirsync_sync(struct dirsync *d, int64_t quiet_ns, int64_t *committed,
		 struct sr_err *e);
/* Test hook: called between a round's steps ("object", "manifest",
 * "retention") so a test can kill the process there. */
extern void (*dirsync__test_point)(const char *what, int64_t round);

/* ---- restore.c ------------------------------------------------------ */
/* Restore the newest round whose manifest and every object are sound
 * into dirfd (files it names are replaced; others are left); a broken
 * round is reported (log) and the previous one taken.  *round = its
 * number, -1 when the store holds none (nothing is written).  With d, the
 * engine learns what the store holds (no re-upload). */
int dirsync_restore(struct dirsync *d, int64_t *round, struct sr_err *e);
/* COPY mode: every object under the prefix (but spotrun-sync/) into
 * dirfd, at its key's path; *files, *bytes counted. */
int dirsync_copy(struct objstore *s, int dirfd, uint64_t *files,
		 uint64_t *bytes, struct sr_err *e);
/* The rounds at uri, newest first (`spotrun ckpt ls`): each manifest
 * read and checked; a torn one is returned with files = NULL and *err
 * set in its slot (malloc'd arrays, dirsync_rounds_free). */
struct dirsync_listed {
	struct dirsync_round r;
	char *error;            /* NULL, or why the manifest was refused */
};
int dirsync_list(const char *uri, struct dirsync_listed **out, size_t *n,
		 struct sr_err *e);
void dirsync_listed_free(struct dirsync_listed *v, size_t n);
/* Whether uri holds dirsync rounds (a listing of rounds/): 1, 0, <0. */
int dirsync_present(const char *uri, struct sr_err *e);

#endif
