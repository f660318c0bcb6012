/*
 * bundle.h - the files a job brings (its workdir: and file_mounts:), as
 * one archive (issue 24).  `spotrun launch` reads them as its user and
 * builds the archive; spotrund stores it with the job (POST /v1/uploads);
 * a node's agent downloads it and unpacks it into the node's dir inside
 * the workload's own isolation, as the workload's user.  Nothing reads a
 * path of the daemon's or the node's filesystem on a job's behalf.
 *
 * FORMAT: POSIX ustar (tar(1) lists it).  512-byte headers; regular files
 * ('0'), directories ('5') and symbolic links ('2'), nothing else; names
 * relative, at most BUNDLE_NAME_MAX bytes (ustar prefix + name), no empty,
 * "." or ".." component; a link's target relative and, resolved from the
 * link's directory, inside the archive's root; modes 0755 or 0644 (the
 * owner's x bit decides), or 0700 / 0600 for an owner-only entry (one
 * whose source has no group or other permission, or added with
 * owner_only set: a key from the user's home); uid, gid and mtime 0 (the same tree gives the
 * same bytes, so the same upload); two zero blocks at the end; at most
 * BUNDLE_MAX_BYTES in all and BUNDLE_MAX_ENTRIES entries.
 *
 * What the writer refuses (clear errors naming the path): a symbolic link
 * whose target leaves the tree being added (absolute, or ".." past its
 * root), anything under a refused directory (spotrund's state dir), a
 * device; sockets and FIFOs are skipped (reported through the note
 * callback), as rsync does.
 *
 * Prefix bundle_.  Errors: 0 or a negative code with the message in *e.
 */
#ifndef SR_BUNDLE_H
#define SR_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define BUNDLE_MAX_BYTES (32u << 20)   /* the whole archive */
#define BUNDLE_MAX_ENTRIES 100000
#define BUNDLE_NAME_MAX 255
#define BUNDLE_BLOCK 512

/* ---- writing (the CLI) ---------------------------------------------- */

struct bundle {
	char *buf;          /* owned: the archive so far */
	size_t len, cap;
	size_t entries;
	/* what must not be added (absolute, canonical; NULL-ended; borrowed) */
	const char *const *refuse;
	/* while set, what bundle_add adds is owner-only (0600 / 0700) */
	int owner_only;
	/* a skipped socket or FIFO (may be NULL) */
	void (*note)(void *ud, const char *msg);
	void *note_ud;
};

/* Add `src` (a file or a directory tree, followed if it is itself a link)
 * as archive path `name` (relative; a directory's entries go below it).
 * src is opened once (O_PATH) and every file read is reached from that
 * descriptor (bundle_write.c); a link inside it that points out of it is
 * refused, as is the state dir (by path, and by inode for a directory).
 * 0, or a negative code with e naming the path (nothing of a failed add
 * is kept). */
int bundle_add(struct bundle *b, const char *src, const char *name,
	       struct sr_err *e);
/* The same for `rel` beneath the directory the caller holds open as
 * dirfd (opened once: `spotrun launch`'s job dir): resolved with openat2
 * RESOLVE_BENEATH (links inside the tree followed; an absolute link, or
 * ".." past dirfd, is -EPERM "leads out of the job's directory"), then
 * every entry reached from its parent's descriptor, never by a path: a
 * directory swapped for a link after it was checked is not read
 * through.  rel "." is dirfd's directory itself. */
int bundle_add_at(struct bundle *b, int dirfd, const char *rel,
		  const char *name, struct sr_err *e);
/* Close the archive (the end blocks).  b->buf/len are then the archive. */
int bundle_finish(struct bundle *b, struct sr_err *e);
void bundle_free(struct bundle *b); /* NULL-safe; leaves b empty */

/* ---- reading (spotrund, the agent) ------------------------------------ */

enum bundle_type { BUNDLE_FILE, BUNDLE_DIR, BUNDLE_LINK };

struct bundle_entry {
	enum bundle_type type;
	char name[BUNDLE_NAME_MAX + 1];   /* relative, checked */
	char link[101];                   /* BUNDLE_LINK: target, checked */
	unsigned mode;                    /* 0755 or 0644 */
	const void *data;                 /* BUNDLE_FILE: size bytes */
	uint64_t size;
};

/* Check every header of buf[0..len) (the format above, checksums, sizes,
 * names, link targets, the end) and call fn for each entry in order; a
 * non-zero return of fn stops the scan with it.  fn may be NULL (check
 * only).  -SR_EPARSE (naming the entry) for an archive that is not one. */
int bundle_scan(const void *buf, size_t len,
		int (*fn)(void *ud, const struct bundle_entry *en,
			  struct sr_err *e),
		void *ud, struct sr_err *e);

/* Unpack buf[0..len) under the directory dest (which must exist), never
 * following a symbolic link of dest's tree: every directory is opened
 * with O_NOFOLLOW, every file created with it.  An entry that exists is
 * replaced if it is a file, kept if it is a directory; anything else in
 * the way is an error. */
int bundle_unpack(const void *buf, size_t len, const char *dest,
		  struct sr_err *e);
/* The same, but entries under "~/" (file_mounts ~/X: the workload's
 * home) go under the directory home (which must exist), with the same
 * care, and a link there may not leave it.  home NULL: under dest, as
 * "~/X" -> dest/X. */
int bundle_unpack_home(const void *buf, size_t len, const char *dest,
		       const char *home, struct sr_err *e);

/* Does archive path `name` (as a mount's destination, checked with
 * bundle_name_ok) exist in buf: 1, 0, or < 0 for a bad archive. */
int bundle_has(const void *buf, size_t len, const char *name,
	       struct sr_err *e);

/* Where a file_mounts destination goes in the archive: DST without its
 * leading "/" (/data/x -> data/x, under the node's dir); "~/x" stays
 * "~/x" (under the workload's home: bundle_unpack_home).  Borrowed from
 * dst.  Check the result with bundle_name_ok. */
const char *bundle_mount_name(const char *dst);

/* 1 when name is a valid archive path (relative, no empty, "." or ".."
 * component, at most BUNDLE_NAME_MAX bytes, no control character). */
int bundle_name_ok(const char *name);

#endif
