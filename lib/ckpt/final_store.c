/*
 * final_store.c - a final checkpoint straight from staging memory into
 * the store (spotckpt_save_final_ex with SPOTCKPT_FINAL_STORE_ONLY).
 *
 * On a preemption notice the node and its local disk are about to go:
 * the tier-2 copy of the final step would be read back by the uploader
 * and then lost with the node, so it only competes with the one copy
 * that survives.  Here the step goes from tier 1 to tier 3 alone:
 *
 *   staging slot (the exact image of every shard file, layout.c)
 *     1. each tensor's XXH3 and each shard's checksum, from the image
 *     2. manifest.json rendered in memory
 *     3. the uploader's protocol (tier3.c), in this thread: every shard
 *        file from its image (multipart, a checksum per part), then the
 *        manifest - the commit point; the background uploads are held
 *
 * Nothing is written under the engine's directory.  A kill -9 or a
 * failed request before the manifest's PUT leaves shards no manifest
 * names: readers skip them, the store's previous step stays the newest,
 * and the uploader's retention removes them later.  The step is not tier
 * 2's, so last_saved_step and the write statistics keep tier 2's; the
 * manifest is kept for spotckpt_final_manifest (the multi-rank commit
 * names each part by its manifest's digest).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "backend.h"
#include "engine.h"
#include "common/timeutil.h"

#define B (&ckpt_remote_backend)

/* Step 1: the checksums a tier-2 write computes on its way (commit.c). */
static void hash_image(struct ckpt_layout *l, const uint8_t *image)
{
	XXH3_state_t st;

	for (size_t i = 0; i < l->nt; i++) {
		struct ckpt_tensor *t = &l->t[i];

		XXH3_64bits_reset(&st);
		ckpt__hash_update(&st, image + t->img_off, t->nbytes);
		t->xxh3 = XXH3_64bits_digest(&st);
	}
	for (size_t i = 0; i < l->ns; i++) {
		struct ckpt_shard *sh = &l->s[i];

		sh->header_xxh3 = XXH3_64bits(image + sh->img_off, sh->data_start);
		sh->xxh3 = ckpt__shard_hash(l, sh);
	}
}

int ckpt__final_to_store(struct spotckpt *e, struct slot *s,
			 int64_t deadline_mono_ns, struct ckpt_commit_res *res,
			 struct sr_err *err)
{
	int64_t t0 = sr_time_mono_ns(), time_ns = sr_time_real_ns();
	char *mbuf = NULL;
	size_t mlen = 0;
	int rc;

	hash_image(s->l, s->base);
	rc = ckpt__manifest_render(s->step, time_ns, s->l, s->meta, &mbuf, &mlen,
				   err);
	if (rc)
		goto out;
	if (!deadline_mono_ns)
		deadline_mono_ns = t0 + e->o.commit_timeout_ms * 1000000;
	rc = B->up_put_image(e->up, s->step, s->l, s->base, mbuf, mlen, time_ns,
			     deadline_mono_ns, &e->final_cancel, err);
	if (rc)
		goto out;
	res->stored = 1;
	res->commit_ns = sr_time_mono_ns() - t0;
	for (size_t i = 0; i < s->l->ns; i++)
		res->bytes += s->l->s[i].file_bytes;
	res->bytes += mlen;
	pthread_mutex_lock(&e->mu);
	free(e->stored_manifest);
	e->stored_manifest = mbuf;
	e->stored_mlen = mlen;
	e->stored_step = s->step;
	ckpt__layout_unref(e->stored_layout);
	e->stored_layout = ckpt__layout_ref(s->l);
	e->stored_seq = s->seq;
	pthread_mutex_unlock(&e->mu);
	mbuf = NULL;
out:
	free(mbuf);
	return rc;
}

SPOTCKPT_API int spotckpt_final_manifest(struct spotckpt *e, int64_t step,
					 char **out, size_t *len)
{
	int rc = 0;

	if (!e || !out || !len)
		return ckpt__fail(-EINVAL, "final_manifest: NULL argument");
	*out = NULL;
	*len = 0;
	pthread_mutex_lock(&e->mu);
	if (step < 0 || step != e->stored_step) {
		rc = ckpt__fail(-SR_ENOTFOUND, "final_manifest: step %" PRId64
				" was not put into the store by a final save "
				"(the newest that was: %" PRId64 ")", step,
				e->stored_step);
	} else {
		*out = malloc(e->stored_mlen + 1);
		if (*out) {
			memcpy(*out, e->stored_manifest, e->stored_mlen);
			(*out)[e->stored_mlen] = 0;
			*len = e->stored_mlen;
		} else {
			rc = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}
