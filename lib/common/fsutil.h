/*
 * fsutil.h - durable file writes and small filesystem helpers.
 *
 * Durable write protocol (the one every component uses):
 *     open "<path>.tmp.<pid>.<n>" O_CREAT|O_EXCL -> write -> fsync ->
 *     close -> rename over <path> -> fsync the parent directory.
 * A crash leaves either the old file or the new one, never a torn file;
 * at worst a stray *.tmp.* file remains.
 */
#ifndef SR_COMMON_FSUTIL_H
#define SR_COMMON_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>
#include "err.h"

/* Durably replace `path` with len bytes of buf, created with exactly
 * `mode` (umask not applied).  Returns 0 or a negative errno with *e set
 * to "<path>: <what failed>: <reason>". */
int sr_fs_write_atomic(const char *path, const void *buf, size_t len,
		       mode_t mode, struct sr_err *e);

/* fsync the directory `dir` itself (after a create/rename/unlink in it).
 * Returns 0 or a negative errno. */
int sr_fs_fsync_dir(const char *dir);

/* fsync the directory that contains `path` ("." for a bare name). */
int sr_fs_fsync_parent(const char *path);

/* mkdir -p: create `path` and missing parents with `mode`.  Existing
 * directories are fine.  Returns 0 or a negative errno. */
int sr_fs_mkdir_p(const char *path, mode_t mode);

/* rm -r path: depth first, never following a symbolic link.  Best effort
 * (what cannot be removed stays); a missing path is not an error. */
void sr_fs_rm_tree(const char *path);

/* Read a whole file (at most `max` bytes, else -EFBIG) into a malloc'd,
 * NUL-terminated buffer the caller frees.  *out_len may be NULL. */
int sr_fs_read_file(const char *path, size_t max, char **out,
		    size_t *out_len, struct sr_err *e);

/* Read a file that another party may have planted (a workload's status
 * file, in a directory the workload writes): as sr_fs_read_file, but
 * name (relative to dirfd: AT_FDCWD or a directory the caller opened
 * O_NOFOLLOW) is never followed when it is a symbolic link (-ELOOP), and
 * what is not a regular file - a FIFO, a device - is refused (-EINVAL)
 * without blocking.  path names the file in errors. */
int sr_fs_read_regular_at(int dirfd, const char *name, const char *path,
			  size_t max, char **out, size_t *out_len,
			  struct sr_err *e);

#endif
