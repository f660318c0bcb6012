/*
 * manifest.c - manifest.json, the last file written into a checkpoint.
 *
 * The file is one compact JSON object followed by a newline; its first key
 * is always "checksum", so the file starts with the 13 bytes
 * `{"checksum":"` and then 16 lowercase hex digits: the XXH3-64 of the
 * whole file with those 16 digits replaced by '0'.  Any flipped bit in
 * the file is therefore detected before the JSON is trusted.
 *
 *   {"checksum":"<hex16>","format":"spotrun-ckpt","version":1,
 *    "step":N,"time_ns":T,"time":"<RFC 3339>",
 *    "shards":[{"file","bytes","data_start","xxh3","header_xxh3"}...],
 *    "tensors":[{"name","shard","offset","nbytes","dtype","shape","xxh3"}...],
 *    "meta":{...user metadata...}}
 *
 * Tensors are listed by shard, then by offset; within a shard their data
 * is contiguous from data_start to bytes (the safetensors rule).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "internal.h"
#include "common/json.h"
#include "common/timeutil.h"

#define CK_PREFIX "{\"checksum\":\""
#define CK_PREFIX_LEN 13
#define CK_HEX_LEN 16

static uint64_t manifest_hash(const char *buf, size_t len)
{
	XXH3_state_t st;

	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, buf, CK_PREFIX_LEN);
	XXH3_64bits_update(&st, "0000000000000000", CK_HEX_LEN);
	XXH3_64bits_update(&st, buf + CK_PREFIX_LEN + CK_HEX_LEN,
			   len - CK_PREFIX_LEN - CK_HEX_LEN);
	return XXH3_64bits_digest(&st);
}

void ckpt__manifest_fix_checksum(char *buf, size_t len)
{
	char hex[17];

	if (len < CK_PREFIX_LEN + CK_HEX_LEN + 2 ||
	    memcmp(buf, CK_PREFIX, CK_PREFIX_LEN))
		return;
	snprintf(hex, sizeof hex, "%016" PRIx64, manifest_hash(buf, len));
	memcpy(buf + CK_PREFIX_LEN, hex, CK_HEX_LEN);
}

static json_t *hex64(uint64_t v)
{
	char b[17];

	snprintf(b, sizeof b, "%016" PRIx64, v);
	return json_string(b);
}

static json_t *shape_json(const struct ckpt_tensor *t)
{
	json_t *a = json_array();

	for (int32_t d = 0; a && d < t->ndim; d++)
		json_array_append_new(a, json_integer(t->shape[d]));
	return a;
}

int ckpt__manifest_render(int64_t step, int64_t time_ns,
			  const struct ckpt_layout *l, const char *meta_json,
			  char **out, size_t *len, struct sr_err *e)
{
	json_t *root = json_object(), *shards = json_array(),
	       *tensors = json_array(), *meta = NULL;
	json_error_t je;
	char ts[40] = "";
	char *s = NULL;
	int rc = -ENOMEM;

	*out = NULL;
	if (!root || !shards || !tensors)
		goto out;
	meta = json_loads(meta_json && *meta_json ? meta_json : "{}", 0, &je);
	if (!meta || !json_is_object(meta)) {
		rc = sr_err_set(e, -EINVAL, "metadata: expected a JSON object (%s)",
				meta ? "got another JSON type" : je.text);
		goto out;
	}
	sr_time_format_rfc3339(time_ns, 3, ts, sizeof ts);
	json_object_set_new(root, "checksum", json_string("0000000000000000"));
	json_object_set_new(root, "format", json_string(CKPT_FORMAT_NAME));
	json_object_set_new(root, "version", json_integer(CKPT_FORMAT_VERSION));
	json_object_set_new(root, "step", json_integer(step));
	json_object_set_new(root, "time_ns", json_integer(time_ns));
	json_object_set_new(root, "time", json_string(ts));
	for (size_t i = 0; i < l->ns; i++) {
		const struct ckpt_shard *sh = &l->s[i];

		json_array_append_new(shards, json_pack("{s:s,s:I,s:I,s:o,s:o}",
			"file", sh->file, "bytes", (json_int_t)sh->file_bytes,
			"data_start", (json_int_t)sh->data_start,
			"xxh3", hex64(sh->xxh3),
			"header_xxh3", hex64(sh->header_xxh3)));
	}
	for (size_t i = 0; i < l->nt; i++) {
		const struct ckpt_tensor *t = &l->t[i];

		json_array_append_new(tensors, json_pack(
			"{s:s,s:i,s:I,s:I,s:s,s:o,s:o}", "name", t->name,
			"shard", (int)t->shard, "offset", (json_int_t)t->offset,
			"nbytes", (json_int_t)t->nbytes,
			"dtype", spotckpt_dtype_name(t->dtype),
			"shape", shape_json(t), "xxh3", hex64(t->xxh3)));
	}
	json_object_set(root, "shards", shards);
	json_object_set(root, "tensors", tensors);
	json_object_set(root, "meta", meta);
	s = json_dumps(root, JSON_PRESERVE_ORDER | JSON_COMPACT);
	if (!s)
		goto out;
	{
		size_t n = strlen(s);
		char *p = realloc(s, n + 2);
		char hex[17];

		if (!p)
			goto out;
		s = p;
		s[n] = '\n';
		s[n + 1] = '\0';
		snprintf(hex, sizeof hex, "%016" PRIx64, manifest_hash(s, n + 1));
		memcpy(s + CK_PREFIX_LEN, hex, CK_HEX_LEN);
		*len = n + 1;
	}
	*out = s;
	s = NULL;
	rc = 0;
out:
	if (rc == -ENOMEM)
		sr_err_set(e, rc, "manifest: out of memory");
	free(s);
	json_decref(meta);
	json_decref(shards);
	json_decref(tensors);
	json_decref(root);
	return rc;
}

static int parse_hex64(json_t *v, uint64_t *out)
{
	const char *s = json_string_value(v);
	char *end;

	if (!s || strlen(s) != 16)
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 16);
	return (*end || errno) ? -1 : 0;
}

static int get_u64(json_t *o, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int parse_shards(json_t *arr, const char *name, struct ckpt_layout *l,
			struct sr_err *e)
{
	json_t *v;
	size_t i;

	l->ns = json_array_size(arr);
	if (l->ns == 0 || l->ns > 100000)
		return sr_err_set(e, -SR_EPARSE, "%s: shards: expected 1..100000 "
				  "entries", name);
	l->s = calloc(l->ns, sizeof *l->s);
	if (!l->s)
		return -ENOMEM;
	json_array_foreach(arr, i, v) {
		struct ckpt_shard *sh = &l->s[i];
		const char *f = json_string_value(json_object_get(v, "file"));

		if (!f || strlen(f) >= sizeof sh->file || strchr(f, '/') ||
		    f[0] == '.' || !strcmp(f, CKPT_MANIFEST))
			return sr_err_set(e, -SR_EPARSE, "%s: shards[%zu].file: "
					  "expected a plain file name", name, i);
		snprintf(sh->file, sizeof sh->file, "%s", f);
		if (get_u64(v, "bytes", &sh->file_bytes) ||
		    get_u64(v, "data_start", &sh->data_start) ||
		    sh->data_start < 10 || sh->data_start > sh->file_bytes)
			return sr_err_set(e, -SR_EPARSE, "%s: shards[%zu]: bad "
					  "bytes/data_start", name, i);
		if (parse_hex64(json_object_get(v, "xxh3"), &sh->xxh3) ||
		    parse_hex64(json_object_get(v, "header_xxh3"),
				&sh->header_xxh3))
			return sr_err_set(e, -SR_EPARSE, "%s: shards[%zu].xxh3/"
					  "header_xxh3: expected 16 hex digits",
					  name, i);
	}
	return 0;
}

static int parse_tensor(json_t *v, size_t i, const char *name,
			struct ckpt_layout *l, struct ckpt_tensor *t,
			struct sr_err *e)
{
	const char *tn = json_string_value(json_object_get(v, "name"));
	const char *dt = json_string_value(json_object_get(v, "dtype"));
	json_t *shape = json_object_get(v, "shape"), *x;
	json_t *sj = json_object_get(v, "shard");
	size_t d;

	if (!tn || ckpt__name_check(tn))
		return sr_err_set(e, -SR_EPARSE, "%s: tensors[%zu].name: invalid",
				  name, i);
	t->name = strdup(tn);
	if (!t->name)
		return -ENOMEM;
	t->dtype = dt ? ckpt__dtype_parse(dt) : -1;
	if (t->dtype < 0)
		return sr_err_set(e, -SR_EPARSE, "%s: tensor %s: dtype: unknown",
				  name, tn);
	if (!json_is_array(shape) || json_array_size(shape) > SPOTCKPT_MAX_NDIM)
		return sr_err_set(e, -SR_EPARSE, "%s: tensor %s: shape: expected "
				  "an array of at most %d integers", name, tn,
				  SPOTCKPT_MAX_NDIM);
	t->ndim = (int32_t)json_array_size(shape);
	json_array_foreach(shape, d, x) {
		if (!json_is_integer(x) || json_integer_value(x) < 0)
			return sr_err_set(e, -SR_EPARSE, "%s: tensor %s: shape[%zu]"
					  ": expected a non-negative integer",
					  name, tn, d);
		t->shape[d] = json_integer_value(x);
	}
	if (!json_is_integer(sj) || json_integer_value(sj) < 0 ||
	    (size_t)json_integer_value(sj) >= l->ns)
		return sr_err_set(e, -SR_EPARSE, "%s: tensor %s: shard: out of "
				  "range", name, tn);
	t->shard = (uint32_t)json_integer_value(sj);
	if (get_u64(v, "offset", &t->offset) || get_u64(v, "nbytes", &t->nbytes))
		return sr_err_set(e, -SR_EPARSE, "%s: tensor %s: offset/nbytes: "
				  "expected non-negative integers", name, tn);
	if (ckpt__tensor_nbytes(t->dtype, t->ndim, t->shape) != t->nbytes)
		return sr_err_set(e, -SR_ECORRUPT, "%s: tensor %s: nbytes %" PRIu64
				  " does not match dtype x shape", name, tn,
				  t->nbytes);
	if (parse_hex64(json_object_get(v, "xxh3"), &t->xxh3))
		return sr_err_set(e, -SR_EPARSE, "%s: tensor %s: xxh3: expected 16 "
				  "hex digits", name, tn);
	return 0;
}

/* Tensors grouped by shard in order, contiguous from data_start to bytes. */
static int check_contiguous(struct ckpt_layout *l, const char *name,
			    struct sr_err *e)
{
	size_t i = 0;

	for (uint32_t s = 0; s < l->ns; s++) {
		struct ckpt_shard *sh = &l->s[s];
		uint64_t at = sh->data_start;

		sh->first = (uint32_t)i;
		for (; i < l->nt && l->t[i].shard == s; i++) {
			if (l->t[i].offset != at)
				return sr_err_set(e, -SR_ECORRUPT, "%s: tensor %s: "
						  "offset %" PRIu64 ", expected %"
						  PRIu64, name, l->t[i].name,
						  l->t[i].offset, at);
			at += l->t[i].nbytes;
		}
		sh->count = (uint32_t)i - sh->first;
		if (at != sh->file_bytes)
			return sr_err_set(e, -SR_ECORRUPT, "%s: shard %s: tensors "
					  "end at %" PRIu64 " but the shard is %"
					  PRIu64 " bytes", name, sh->file,
					  at, sh->file_bytes);
	}
	if (i != l->nt)
		return sr_err_set(e, -SR_ECORRUPT, "%s: tensor %s: not in shard "
				  "order", name, l->t[i].name);
	return 0;
}

int ckpt__manifest_parse(const char *buf, size_t len, const char *name,
			 struct ckpt_manifest *m, struct sr_err *e)
{
	static const char *const keys[] = { "checksum", "format", "version",
		"step", "time_ns", "time", "shards", "tensors", "meta", NULL };
	json_t *root = NULL, *shards, *tensors, *meta, *v;
	json_error_t je;
	uint64_t want = 0;
	const char *fmt;
	char hex[17];
	size_t i;
	int rc;

	memset(m, 0, sizeof *m);
	if (len < CK_PREFIX_LEN + CK_HEX_LEN + 2 ||
	    memcmp(buf, CK_PREFIX, CK_PREFIX_LEN))
		return sr_err_set(e, -SR_ECORRUPT, "%s: does not start with "
				  "{\"checksum\":", name);
	memcpy(hex, buf + CK_PREFIX_LEN, CK_HEX_LEN);
	hex[16] = '\0';
	{
		json_t *h = json_string(hex);

		rc = (h && !parse_hex64(h, &want)) ? 0 : -1;
		json_decref(h);
	}
	if (rc || manifest_hash(buf, len) != want)
		return sr_err_set(e, -SR_ECHECKSUM, "%s: checksum mismatch (file "
				  "damaged or torn)", name);
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		rc = sr_err_set(e, -SR_EPARSE, "%s:%d:%d: %s", name, je.line,
				je.column, je.text);
		goto out;
	}
	rc = sr_json_check_keys(root, keys, name, e);
	if (rc)
		goto out;
	fmt = json_string_value(json_object_get(root, "format"));
	v = json_object_get(root, "version");
	if (!fmt || strcmp(fmt, CKPT_FORMAT_NAME) || !json_is_integer(v) ||
	    json_integer_value(v) != CKPT_FORMAT_VERSION) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: format/version: expected %s "
				"version %d", name, CKPT_FORMAT_NAME,
				CKPT_FORMAT_VERSION);
		goto out;
	}
	if (get_u64(root, "step", (uint64_t *)&m->step) ||
	    get_u64(root, "time_ns", (uint64_t *)&m->time_ns)) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: step/time_ns: expected "
				"non-negative integers", name);
		goto out;
	}
	shards = json_object_get(root, "shards");
	tensors = json_object_get(root, "tensors");
	meta = json_object_get(root, "meta");
	if (!json_is_array(shards) || !json_is_array(tensors) ||
	    !json_is_object(meta)) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: shards/tensors/meta: missing "
				"or of the wrong type", name);
		goto out;
	}
	m->l = calloc(1, sizeof *m->l);
	if (!m->l) {
		rc = -ENOMEM;
		goto out;
	}
	atomic_init(&m->l->refs, 1);
	rc = parse_shards(shards, name, m->l, e);
	if (rc)
		goto out;
	m->l->t = calloc(json_array_size(tensors) + 1, sizeof *m->l->t);
	if (!m->l->t) {
		rc = -ENOMEM;
		goto out;
	}
	json_array_foreach(tensors, i, v) {
		m->l->nt = i + 1;
		rc = parse_tensor(v, i, name, m->l, &m->l->t[i], e);
		if (rc)
			goto out;
		m->l->state_bytes += m->l->t[i].nbytes;
	}
	rc = check_contiguous(m->l, name, e);
	if (rc)
		goto out;
	m->meta = json_dumps(meta, JSON_PRESERVE_ORDER | JSON_COMPACT);
	rc = m->meta ? 0 : -ENOMEM;
out:
	json_decref(root);
	if (rc)
		ckpt__manifest_free(m);
	return rc;
}

void ckpt__manifest_free(struct ckpt_manifest *m)
{
	if (!m)
		return;
	ckpt__layout_unref(m->l);
	free(m->meta);
	m->l = NULL;
	m->meta = NULL;
}
