/*
 * final_keep.c - a node-local copy of the final step the engine just put
 * straight into the store (spotckpt_final_keep).
 *
 * A final save with SPOTCKPT_FINAL_STORE_ONLY writes nothing to tier 2
 * (final_store.c).  On a gang's kept node that step is restored again a
 * few seconds later, by the next attempt's process on the same node;
 * reading it back from the store costs the whole part's bytes.  This
 * writes, after the put, an exact copy of what the store holds - every
 * shard file from the staging image, and the very manifest bytes put -
 * into DIR/step-SSSSSSSS/, where DIR is meant to be memory (a tmpfs):
 *
 *   DIR/.step-SSSSSSSS.tmp.<pid>/   each file: tmp, fsync, rename
 *        -> rename to DIR/step-SSSSSSSS (an older copy removed first),
 *           fsync DIR
 *
 * The manifest is byte-identical to the store's, so its SHA-256 is the
 * one the multi-rank commit record names; a reader checks that digest and
 * the restore verifies every tensor against the manifest, so a copy that
 * was damaged (or an image overwritten meanwhile) is refused, never used.
 * The image is the staging slot's: a save after the final one takes the
 * slot, and then the copy is refused here (-SPOTCKPT_ENOTFOUND).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "common/fsutil.h"

/* The files of the copy into tmp (a fresh directory). */
static int write_files(const char *tmp, const struct ckpt_layout *l,
		       const uint8_t *image, const char *mbuf, size_t mlen,
		       struct sr_err *err)
{
	char path[PATH_MAX];
	int rc = 0;

	for (size_t i = 0; i < l->ns && rc == 0; i++) {
		const struct ckpt_shard *sh = &l->s[i];

		if (snprintf(path, sizeof path, "%s/%s", tmp, sh->file) >=
		    (int)sizeof path)
			return sr_err_set(err, -ENAMETOOLONG, "%s: path too long",
					  tmp);
		rc = sr_fs_write_atomic(path, image + sh->img_off,
					sh->file_bytes, 0644, err);
	}
	if (rc)
		return rc;
	if (snprintf(path, sizeof path, "%s/%s", tmp, CKPT_MANIFEST) >=
	    (int)sizeof path)
		return sr_err_set(err, -ENAMETOOLONG, "%s: path too long", tmp);
	return sr_fs_write_atomic(path, mbuf, mlen, 0644, err);
}

SPOTCKPT_API int spotckpt_final_keep(struct spotckpt *e, int64_t step,
				     const char *dir)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	struct sr_err err = { 0 };
	struct ckpt_layout *l = NULL;
	const uint8_t *image = NULL;
	int rc = 0;

	if (!e || !dir || step < 0)
		return ckpt__fail(-EINVAL, "final_keep: NULL argument or "
				  "negative step");
	if (snprintf(tmp, sizeof tmp, "%s/.step-%08" PRId64 ".tmp.%ld", dir,
		     step, (long)getpid()) >= (int)sizeof tmp ||
	    snprintf(dst, sizeof dst, "%s/step-%08" PRId64, dir, step) >=
	    (int)sizeof dst)
		return ckpt__fail(-ENAMETOOLONG, "final_keep: %s: path too "
				  "long", dir);
	pthread_mutex_lock(&e->api);   /* no save takes the slot meanwhile */
	pthread_mutex_lock(&e->mu);
	if (step == e->stored_step && e->stored_layout &&
	    e->slots[0].seq == e->stored_seq &&
	    e->slots[0].state == SLOT_FREE) {
		l = ckpt__layout_ref(e->stored_layout);
		image = e->slots[0].base;
	}
	pthread_mutex_unlock(&e->mu);
	if (!l) {
		rc = ckpt__fail(-SR_ENOTFOUND, "final_keep: step %" PRId64
				" is not the final step put into the store, or "
				"a later save took its staging memory", step);
		goto out;
	}
	sr_fs_rm_tree(tmp);
	rc = sr_fs_mkdir_p(tmp, 0755);
	if (rc) {
		rc = ckpt__fail(rc, "final_keep: %s: %s", tmp, sr_strerror(rc));
		goto out;
	}
	/* the manifest is read under api: only a final save replaces it */
	rc = write_files(tmp, l, image, e->stored_manifest, e->stored_mlen,
			 &err);
	if (rc) {
		ckpt__fail_err(&err, rc);
		goto out;
	}
	sr_fs_rm_tree(dst);
	if (rename(tmp, dst) < 0) {
		rc = ckpt__fail(-errno, "final_keep: rename %s: %s", dst,
				strerror(errno));
		goto out;
	}
	rc = sr_fs_fsync_dir(dir);
	if (rc)
		rc = ckpt__fail(rc, "final_keep: fsync %s: %s", dir,
				sr_strerror(rc));
out:
	if (rc)
		sr_fs_rm_tree(tmp);
	pthread_mutex_unlock(&e->api);
	ckpt__layout_unref(l);
	return rc;
}
