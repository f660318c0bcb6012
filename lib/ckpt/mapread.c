/*
 * mapread.c - a verified restore of a checkpoint that lies in memory
 * (tmpfs): the image is the shard files themselves, mapped, not a copy.
 *
 * WHY.  A kept node's copy of its final part is written to /dev/shm
 * (python/spotrun/dist_keep.py) and restored by the next attempt on the
 * same node.  Verify first (reader.c read_verified) reads a checkpoint
 * into an image - memory mapped for the read, whose first touch on the
 * development VM costs 1-2.5 CPU-s per GiB (docs/notes/checkpoint.md,
 * "A job's first restore") - and the kernel copies every byte from the
 * tmpfs's pages into it.  Mapping the files read-only gives the same
 * image, laid out the same way (ckpt__image_bytes: each shard's image at
 * a CKPT_IMG_ALIGN multiple), with neither: its pages are the tmpfs's
 * own.  The rest is verify first unchanged: every wanted tensor is
 * hashed over the image and compared with the manifest; only when all
 * matched are they copied into the destinations (ckpt__place_all), so
 * a damaged copy leaves every destination as it was.
 *
 * Only for tmpfs: a disk file mapped would be read through the page
 * cache (a local tier-2 restore reads with O_DIRECT).  A shard file
 * truncated while it is mapped would fault (SIGBUS); the kept copies are
 * written once, before the restore, by the same node's workload, and
 * only removed (unlinked) after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "internal.h"

#define TMPFS_MAGIC_ 0x01021994

int ckpt__on_tmpfs(const char *dir)
{
	struct statfs fs;

	return statfs(dir, &fs) == 0 && fs.f_type == TMPFS_MAGIC_ &&
	       sysconf(_SC_PAGESIZE) == CKPT_IMG_ALIGN;
}

/* Map shard s of dir at `at` (inside the reservation), read only. */
static int map_shard(const char *dir, const struct ckpt_shard *sh,
		     uint8_t *at)
{
	char path[4400];
	struct stat st;
	int fd, rc = 0;

	if (sh->file_bytes == 0)
		return 0;
	snprintf(path, sizeof path, "%s/%s", dir, sh->file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		return ckpt__fail(rc, "%s: cannot open: %s", path,
				  sr_strerror(rc));
	}
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		ckpt__fail(rc, "%s: cannot stat: %s", path, sr_strerror(rc));
	} else if ((uint64_t)st.st_size != sh->file_bytes) {
		rc = ckpt__fail(-SR_ECORRUPT, "%s: %jd bytes, the manifest names "
				"%" PRIu64, path, (intmax_t)st.st_size,
				sh->file_bytes);
	} else if (mmap(at, sh->file_bytes, PROT_READ,
			MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0) ==
		   MAP_FAILED) {
		rc = -errno;
		ckpt__fail(rc, "%s: cannot map: %s", path, sr_strerror(rc));
	}
	close(fd);
	return rc;
}

int ckpt__map_verified(const char *dir, const struct ckpt_layout *l,
		       const struct spotckpt_dest *const *map, uint8_t **out)
{
	uint64_t need = ckpt__image_bytes(l), base = 0;
	uint64_t *at = calloc(l->ns + 1, sizeof *at);
	uint8_t *img = NULL;
	int rc = 0;

	*out = NULL;
	if (!at)
		return -ENOMEM;
	if (need) {
		/* reserved whole, then each shard's pages put in place: the
		 * image's layout, with holes past each file's end */
		void *p = mmap(NULL, need, PROT_NONE, MAP_PRIVATE |
			       MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED) {
			rc = ckpt__fail(-ENOMEM, "read_all: no address space "
					"for the checkpoint's image (%" PRIu64
					" bytes)", need);
			goto out;
		}
		img = p;
	}
	for (size_t s = 0; s < l->ns && rc == 0; s++) {
		at[s] = base;
		rc = map_shard(dir, &l->s[s], img + base);
		base += ckpt__shard_image_bytes(&l->s[s]);
	}
	for (size_t t = 0; t < l->nt && rc == 0; t++) {
		const struct ckpt_tensor *x = &l->t[t];
		uint64_t h;

		if (!map[t])
			continue;
		h = XXH3_64bits(img + at[x->shard] + x->offset, x->nbytes);
		if (h != x->xxh3)
			rc = ckpt__fail(-SR_ECHECKSUM, "%s/%s: tensor %s: "
					"checksum mismatch (xxh3 %016" PRIx64
					", manifest %016" PRIx64 ")", dir,
					l->s[x->shard].file, x->name, h, x->xxh3);
	}
out:
	if (rc == 0)
		*out = img;
	else if (img)
		munmap(img, need);
	free(at);
	return rc;
}
