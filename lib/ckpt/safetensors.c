/*
 * safetensors.c - shard header writer and parser.
 *
 * A shard file follows the safetensors format:
 *
 *   offset  size  field
 *   0       8     N, header length, unsigned little-endian
 *   8       N     JSON object, UTF-8, padded with spaces (0x20) so that
 *                 8 + N is a multiple of 4096
 *   8+N     ...   tensor data, contiguous, in data_offsets order
 *
 * The JSON maps each tensor name to {"dtype", "shape", "data_offsets":
 * [begin, end]} (offsets relative to byte 8+N) and "__metadata__" to an
 * object of strings.  The parser accepts any valid safetensors header
 * (any padding, any key order) and checks everything a reader relies on.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t ncap = (b->cap + (size_t)n + 1) * 2;
		char *np = realloc(b->p, ncap);

		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
}

int ckpt__st_header_build(const struct ckpt_tensor *t, size_t nt,
			  uint32_t shard, uint32_t nshards,
			  char **out, uint64_t *len)
{
	struct sbuf b = { .p = malloc(256), .cap = 256 };
	uint64_t off = 0, total, hlen;

	*out = NULL;
	if (!b.p)
		return -ENOMEM;
	b.len = 8;
	sb_printf(&b, "{\"__metadata__\":{\"format\":\"pt\",\"writer\":\"%s\","
		  "\"shard\":\"%u\",\"nshards\":\"%u\"}", CKPT_FORMAT_NAME,
		  shard, nshards);
	for (size_t i = 0; i < nt; i++) {
		sb_printf(&b, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t[i].name,
			  spotckpt_dtype_name(t[i].dtype));
		for (int32_t d = 0; d < t[i].ndim; d++)
			sb_printf(&b, "%s%" PRId64, d ? "," : "", t[i].shape[d]);
		sb_printf(&b, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}",
			  off, off + t[i].nbytes);
		off += t[i].nbytes;
	}
	sb_printf(&b, "}");
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	total = (b.len + CKPT_HDR_ALIGN - 1) / CKPT_HDR_ALIGN * CKPT_HDR_ALIGN;
	if (total > b.cap) {
		char *np = realloc(b.p, total);

		if (!np) {
			free(b.p);
			return -ENOMEM;
		}
		b.p = np;
	}
	memset(b.p + b.len, ' ', total - b.len);
	hlen = total - 8;
	for (int i = 0; i < 8; i++)
		b.p[i] = (char)(hlen >> (8 * i));
	*out = b.p;
	*len = total;
	return 0;
}

int ckpt__st_header_len(const uint8_t *buf8, uint64_t file_size,
			const char *name, uint64_t *hlen, struct sr_err *e)
{
	uint64_t n = 0;

	if (file_size < 8)
		return sr_err_set(e, -SR_ECORRUPT, "%s: file is %" PRIu64
				  " bytes, shorter than the 8-byte header length",
				  name, file_size);
	for (int i = 0; i < 8; i++)
		n |= (uint64_t)buf8[i] << (8 * i);
	if (n < 2 || n > CKPT_HEADER_MAX || n > file_size - 8)
		return sr_err_set(e, -SR_ECORRUPT, "%s: header length %" PRIu64
				  " is out of range (file is %" PRIu64 " bytes)",
				  name, n, file_size);
	*hlen = n;
	return 0;
}

static int cmp_begin(const void *a, const void *b)
{
	const struct ckpt_st_entry *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static int parse_entry(json_t *v, const char *key, const char *file,
		       struct ckpt_st_entry *en, struct sr_err *e)
{
	json_t *dt, *shape, *offs, *x;
	size_t i;
	uint64_t nb;

	if (!json_is_object(v))
		return sr_err_set(e, -SR_EPARSE, "%s: header: %s: expected object",
				  file, key);
	if (strlen(key) > CKPT_NAME_MAX)
		return sr_err_set(e, -SR_EPARSE, "%s: header: tensor name longer "
				  "than %d bytes", file, CKPT_NAME_MAX);
	snprintf(en->name, sizeof en->name, "%s", key);
	dt = json_object_get(v, "dtype");
	shape = json_object_get(v, "shape");
	offs = json_object_get(v, "data_offsets");
	if (json_object_size(v) != 3 || !dt || !shape || !offs)
		return sr_err_set(e, -SR_EPARSE, "%s: header: %s: expected exactly "
				  "dtype, shape and data_offsets", file, key);
	en->dtype = json_is_string(dt) ? ckpt__dtype_parse(json_string_value(dt)) : -1;
	if (en->dtype < 0)
		return sr_err_set(e, -SR_EPARSE, "%s: header: %s.dtype: unknown "
				  "dtype", file, key);
	if (!json_is_array(shape) || json_array_size(shape) > SPOTCKPT_MAX_NDIM)
		return sr_err_set(e, -SR_EPARSE, "%s: header: %s.shape: expected "
				  "an array of at most %d integers", file, key,
				  SPOTCKPT_MAX_NDIM);
	en->ndim = (int32_t)json_array_size(shape);
	json_array_foreach(shape, i, x) {
		if (!json_is_integer(x) || json_integer_value(x) < 0)
			return sr_err_set(e, -SR_EPARSE, "%s: header: %s.shape[%zu]:"
					  " expected a non-negative integer",
					  file, key, i);
		en->shape[i] = json_integer_value(x);
	}
	if (!json_is_array(offs) || json_array_size(offs) != 2 ||
	    !json_is_integer(json_array_get(offs, 0)) ||
	    !json_is_integer(json_array_get(offs, 1)) ||
	    json_integer_value(json_array_get(offs, 0)) < 0 ||
	    json_integer_value(json_array_get(offs, 1)) <
		    json_integer_value(json_array_get(offs, 0)))
		return sr_err_set(e, -SR_EPARSE, "%s: header: %s.data_offsets: "
				  "expected [begin, end] with 0 <= begin <= end",
				  file, key);
	en->begin = (uint64_t)json_integer_value(json_array_get(offs, 0));
	en->end = (uint64_t)json_integer_value(json_array_get(offs, 1));
	nb = ckpt__tensor_nbytes(en->dtype, en->ndim, en->shape);
	if (nb != en->end - en->begin)
		return sr_err_set(e, -SR_ECORRUPT, "%s: header: %s: data_offsets "
				  "span %" PRIu64 " bytes but dtype x shape is %"
				  PRIu64, file, key, en->end - en->begin, nb);
	return 0;
}

int ckpt__st_header_parse(const uint8_t *buf, size_t len, uint64_t file_size,
			  const char *name, struct ckpt_st_entry **ents,
			  size_t *n, uint64_t *data_start, struct sr_err *e)
{
	json_t *root = NULL, *v;
	json_error_t je;
	struct ckpt_st_entry *arr = NULL;
	uint64_t hlen = 0, expect = 0;
	const char *key;
	size_t k = 0;
	int rc;

	*ents = NULL;
	*n = 0;
	if (len < 8)
		return sr_err_set(e, -SR_ECORRUPT, "%s: truncated header", name);
	rc = ckpt__st_header_len(buf, file_size, name, &hlen, e);
	if (rc)
		return rc;
	if (len < 8 + hlen)
		return sr_err_set(e, -SR_ECORRUPT, "%s: truncated header", name);
	root = json_loadb((const char *)buf + 8, hlen, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: header:%d:%d: %s", name,
				je.line, je.column, je.text);
		goto out;
	}
	if (!json_is_object(root)) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: header: expected a JSON object",
				name);
		goto out;
	}
	arr = calloc(json_object_size(root) + 1, sizeof *arr);
	if (!arr) {
		rc = -ENOMEM;
		goto out;
	}
	json_object_foreach(root, key, v) {
		if (!strcmp(key, "__metadata__")) {
			const char *mk;
			json_t *mv;

			if (!json_is_object(v)) {
				rc = sr_err_set(e, -SR_EPARSE, "%s: header: "
						"__metadata__: expected object", name);
				goto out;
			}
			json_object_foreach(v, mk, mv) {
				if (!json_is_string(mv)) {
					rc = sr_err_set(e, -SR_EPARSE, "%s: header: "
							"__metadata__.%s: expected "
							"string", name, mk);
					goto out;
				}
			}
			continue;
		}
		rc = parse_entry(v, key, name, &arr[k], e);
		if (rc)
			goto out;
		k++;
	}
	qsort(arr, k, sizeof *arr, cmp_begin);
	for (size_t i = 0; i < k; i++) {
		if (arr[i].begin != expect) {
			rc = sr_err_set(e, -SR_ECORRUPT, "%s: header: %s: data "
					"starts at %" PRIu64 ", expected %" PRIu64
					" (data must be contiguous)", name,
					arr[i].name, arr[i].begin, expect);
			goto out;
		}
		expect = arr[i].end;
	}
	if (expect != file_size - 8 - hlen) {
		rc = sr_err_set(e, -SR_ECORRUPT, "%s: tensors cover %" PRIu64
				" data bytes but the file holds %" PRIu64, name,
				expect, file_size - 8 - hlen);
		goto out;
	}
	*ents = arr;
	*n = k;
	*data_start = 8 + hlen;
	arr = NULL;
	rc = 0;
out:
	free(arr);
	json_decref(root);
	return rc;
}
