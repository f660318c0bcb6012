/*
 * layout.c - from registered tensors to shard files and the staging image.
 *
 * Tensors go to shards in registration order; a shard is closed once
 * adding the next tensor would take its data past shard_bytes (a tensor
 * larger than that gets a shard of its own).  One staging slot holds the
 * exact byte image of every shard file, each starting at a multiple of
 * CKPT_IMG_ALIGN so that O_DIRECT can write straight from it:
 *
 *   slot:  | shard 0 image .......... |pad| shard 1 image ....... |pad| ...
 *   image: | 8-byte len | JSON + spaces | tensor data, contiguous |
 *           \________ data_start (multiple of 4096) ________/
 *
 * A layout is built when the registration changed and is immutable
 * afterwards; slots keep a reference to the layout their image follows.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "internal.h"

#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

int ckpt__name_check(const char *name)
{
	size_t n;

	if (!name)
		return -EINVAL;
	n = strlen(name);
	if (n == 0 || n > CKPT_NAME_MAX || !strcmp(name, "__metadata__"))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
			return -EINVAL;
	}
	return 0;
}

uint64_t ckpt__tensor_nbytes(int32_t dtype, int32_t ndim, const int64_t *shape)
{
	unsigned __int128 n = spotckpt_dtype_size(dtype);

	for (int32_t i = 0; i < ndim; i++) {
		if (shape[i] < 0)
			return UINT64_MAX;
		n *= (uint64_t)shape[i];
		if (n > (unsigned __int128)1 << 62)
			return UINT64_MAX;
	}
	return (uint64_t)n;
}

uint64_t ckpt__shard_hash(const struct ckpt_layout *l,
			  const struct ckpt_shard *sh)
{
	XXH3_state_t st;
	uint8_t le[8];

	XXH3_64bits_reset(&st);
	for (uint32_t k = 0; k <= sh->count; k++) {
		uint64_t v = k == 0 ? sh->header_xxh3 : l->t[sh->first + k - 1].xxh3;

		for (int b = 0; b < 8; b++)
			le[b] = (uint8_t)(v >> (8 * b));
		XXH3_64bits_update(&st, le, 8);
	}
	return XXH3_64bits_digest(&st);
}

struct ckpt_layout *ckpt__layout_ref(struct ckpt_layout *l)
{
	if (l)
		atomic_fetch_add(&l->refs, 1);
	return l;
}

void ckpt__layout_unref(struct ckpt_layout *l)
{
	if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
		return;
	for (size_t i = 0; i < l->nt; i++)
		free(l->t[i].name);
	for (size_t i = 0; i < l->ns; i++)
		free(l->s[i].header);
	free(l->t);
	free(l->s);
	free(l);
}

/* Assign shards; returns the number of shards. */
static size_t assign_shards(struct ckpt_tensor *t, size_t nt, uint64_t cap)
{
	uint32_t shard = 0;
	uint64_t used = 0;

	for (size_t i = 0; i < nt; i++) {
		if (used > 0 && used + t[i].nbytes > cap) {
			shard++;
			used = 0;
		}
		t[i].shard = shard;
		t[i].offset = used; /* relative for now */
		used += t[i].nbytes;
	}
	return nt ? shard + 1 : 1;
}

struct ckpt_layout *ckpt__layout_build(const struct ckpt_tensor *t, size_t nt,
				       uint64_t shard_bytes)
{
	struct ckpt_layout *l = calloc(1, sizeof *l);
	uint64_t img = 0;
	size_t ns;

	if (!l)
		return NULL;
	atomic_init(&l->refs, 1);
	l->t = calloc(nt ? nt : 1, sizeof *l->t);
	if (!l->t)
		goto fail;
	for (size_t i = 0; i < nt; i++) {
		l->t[i] = t[i];
		l->t[i].name = strdup(t[i].name);
		if (!l->t[i].name) {
			l->nt = i;
			goto fail;
		}
		l->state_bytes += t[i].nbytes;
		if (t[i].device == SPOTCKPT_DEV_CUDA)
			l->has_cuda = 1;
	}
	l->nt = nt;
	ns = assign_shards(l->t, nt, shard_bytes ? shard_bytes : 4ull << 30);
	l->s = calloc(ns, sizeof *l->s);
	if (!l->s)
		goto fail; /* l->ns stays 0: nothing for unref to walk */
	l->ns = ns;
	for (size_t s = 0, i = 0; s < l->ns; s++) {
		struct ckpt_shard *sh = &l->s[s];
		uint64_t data = 0;

		sh->first = (uint32_t)i;
		while (i < nt && l->t[i].shard == s) {
			data += l->t[i].nbytes;
			i++;
		}
		sh->count = (uint32_t)i - sh->first;
		snprintf(sh->file, sizeof sh->file, "shard-%05u.safetensors",
			 (unsigned)(s % 100000));
		if (ckpt__st_header_build(l->t + sh->first, sh->count,
					  (uint32_t)s, (uint32_t)l->ns,
					  &sh->header, &sh->data_start))
			goto fail;
		sh->file_bytes = sh->data_start + data;
		sh->img_off = img;
		for (uint32_t k = sh->first; k < i; k++) {
			l->t[k].offset += sh->data_start;
			l->t[k].img_off = img + l->t[k].offset;
		}
		img = ALIGN_UP(img + sh->file_bytes, CKPT_IMG_ALIGN);
	}
	l->image_bytes = img;
	return l;
fail:
	ckpt__layout_unref(l);
	return NULL;
}
