/*
 * trace.c - load spot traces (JSON formats; the CSV reader is trace_csv.c).
 *
 * Formats and polarity
 * --------------------
 *   CBL JSON (Can't Be Late, skypilot-org/spot-traces)
 *       {"metadata": {"gap_seconds": N}, "data": [v0, v1, ...],
 *        optionally "prices": [spot $/h per tick]}
 *       v = number of available instances at that tick; v > 0 = available.
 *
 *       Reading chosen for the preemption sets (cbl/preemption/...), whose
 *       meaning the collectors do not document: the same "available
 *       count" reading as the availability sets.  Evidence from the data:
 *       every preemption file starts with 0 at tick 0 and then runs of 1s
 *       (the probe instance had not been launched yet at tick 0); the GCP
 *       c3-88 files are 0 at tick 0 and 1 for the remaining 5,475 ticks,
 *       which would mean "preempted 99.98% of the time" under the inverse
 *       reading; and the 4-node sets hold counts 0..4 whose ">= 1"
 *       fraction matches, tick for tick after resampling, the SkyNomad
 *       copy of the same zones (whose note says "capacity>=1 ->
 *       available").  Several of these CBL files carry a top-level
 *       "prices" array but no metadata.price_info, so "prices" alone does
 *       NOT mark a file as SkyNomad here (see detect_format()).
 *
 *   SkyNomad JSON (andylizf/skynomad-artifact)
 *       {"metadata": {"gap_seconds": N,
 *                     "price_info": {"price": P, "on_demand_price": Q}},
 *        "data": [0/1 ...], "prices": [spot $/h per tick]}
 *       1 = spot UNAVAILABLE (preempted), 0 = available: the inverse of CBL.
 *
 *   SkyNomad CSV (trace_csv.c): "date,availability", 1 = available.
 *
 * Detection (TRACE_FMT_AUTO): content not starting with '{' is CSV; a
 * JSON object whose metadata has "price_info" is SkyNomad; any other JSON
 * object is CBL.  --trace-format overrides.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "sim/trace.h"

const char *trace_format_name(enum trace_format fmt)
{
	switch (fmt) {
	case TRACE_FMT_CBL:
		return "cbl";
	case TRACE_FMT_SKYNOMAD:
		return "skynomad";
	case TRACE_FMT_CSV:
		return "csv";
	default:
		return "auto";
	}
}

int trace_format_parse(const char *s, enum trace_format *out)
{
	static const enum trace_format all[] = {
		TRACE_FMT_AUTO, TRACE_FMT_CBL, TRACE_FMT_SKYNOMAD, TRACE_FMT_CSV
	};

	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		if (!strcmp(s, trace_format_name(all[i]))) {
			*out = all[i];
			return 0;
		}
	}
	return -EINVAL;
}

void trace_free(struct trace *t)
{
	if (!t)
		return;
	free(t->name);
	free(t->avail);
	free(t->price);
	free(t);
}

/* Allocate a trace with n ticks; price array only if with_price.  Returns
 * NULL on out-of-memory. */
static struct trace *trace_alloc(const char *name, size_t n, int with_price)
{
	struct trace *t = calloc(1, sizeof *t);

	if (!t)
		return NULL;
	t->name = strdup(name ? name : "");
	t->avail = calloc(n ? n : 1, 1);
	if (with_price)
		t->price = calloc(n ? n : 1, sizeof *t->price);
	t->n = n;
	t->od_price = -1;
	if (!t->name || !t->avail || (with_price && !t->price)) {
		trace_free(t);
		return NULL;
	}
	return t;
}

int trace_from_arrays(const char *name, int64_t gap_s, const uint8_t *avail,
		      const double *price, size_t n, double od_price,
		      struct trace **out)
{
	struct trace *t;

	*out = NULL;
	if (gap_s <= 0 || (n && !avail))
		return -EINVAL;
	t = trace_alloc(name, n, price != NULL);
	if (!t)
		return -ENOMEM;
	t->format = TRACE_FMT_CBL;
	t->gap_s = gap_s;
	for (size_t i = 0; i < n; i++)
		t->avail[i] = avail[i] ? 1 : 0;
	if (price)
		memcpy(t->price, price, n * sizeof *price);
	t->od_price = od_price;
	*out = t;
	return 0;
}

static enum trace_format detect_format(const char *buf, size_t len,
				       json_t *root)
{
	size_t i = 0;
	json_t *md;

	while (i < len && strchr(" \t\r\n", buf[i]))
		i++;
	if (i >= len || buf[i] != '{')
		return TRACE_FMT_CSV;
	md = root ? json_object_get(root, "metadata") : NULL;
	if (json_is_object(md) && json_object_get(md, "price_info"))
		return TRACE_FMT_SKYNOMAD;
	return TRACE_FMT_CBL;
}

/* gap_seconds: a positive whole number of seconds. */
static int parse_gap(json_t *md, const char *name, int64_t *gap,
		     struct sr_err *e)
{
	json_t *g = json_object_get(md, "gap_seconds");
	double v;

	if (!g)
		return sr_err_set(e, -SR_EPARSE, "%s: metadata.gap_seconds: missing", name);
	if (!json_is_number(g))
		return sr_err_set(e, -SR_EPARSE, "%s: metadata.gap_seconds: expected a number", name);
	v = json_number_value(g);
	if (!(v >= 1 && v <= 86400 * 7) || v != floor(v))
		return sr_err_set(e, -SR_EPARSE,
				  "%s: metadata.gap_seconds: expected a whole number of seconds in [1, 604800], got %g",
				  name, v);
	*gap = (int64_t)v;
	return 0;
}

static int parse_prices(json_t *root, struct trace *t, struct sr_err *e)
{
	json_t *arr = json_object_get(root, "prices");

	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return sr_err_set(e, -SR_EPARSE, "%s: prices: expected an array", t->name);
	if (json_array_size(arr) != t->n)
		return sr_err_set(e, -SR_EPARSE,
				  "%s: prices: %zu entries but data has %zu",
				  t->name, json_array_size(arr), t->n);
	t->price = calloc(t->n ? t->n : 1, sizeof *t->price);
	if (!t->price)
		return sr_err_set(e, -ENOMEM, "%s: out of memory", t->name);
	for (size_t i = 0; i < t->n; i++) {
		json_t *v = json_array_get(arr, i);
		double p = json_is_number(v) ? json_number_value(v) : -1;

		if (!(p >= 0 && p < 1e6))
			return sr_err_set(e, -SR_EPARSE,
					  "%s: prices[%zu]: expected a price in $/h >= 0",
					  t->name, i);
		t->price[i] = p;
	}
	return 0;
}

static int parse_price_info(json_t *md, struct trace *t, struct sr_err *e)
{
	json_t *pi = json_object_get(md, "price_info");
	json_t *od, *sp;

	if (!pi)
		return 0;
	if (!json_is_object(pi))
		return sr_err_set(e, -SR_EPARSE, "%s: metadata.price_info: expected an object", t->name);
	od = json_object_get(pi, "on_demand_price");
	if (od) {
		double v = json_is_number(od) ? json_number_value(od) : -1;

		if (!(v > 0 && v < 1e6))
			return sr_err_set(e, -SR_EPARSE,
					  "%s: metadata.price_info.on_demand_price: expected a price > 0",
					  t->name);
		t->od_price = v;
	}
	sp = json_object_get(pi, "price");
	if (sp && !t->price) {
		/* No per-tick prices: the constant spot price applies. */
		double v = json_is_number(sp) ? json_number_value(sp) : -1;

		if (!(v >= 0 && v < 1e6))
			return sr_err_set(e, -SR_EPARSE,
					  "%s: metadata.price_info.price: expected a price >= 0",
					  t->name);
		t->price = malloc((t->n ? t->n : 1) * sizeof *t->price);
		if (!t->price)
			return sr_err_set(e, -ENOMEM, "%s: out of memory", t->name);
		for (size_t i = 0; i < t->n; i++)
			t->price[i] = v;
	}
	return 0;
}

static int parse_json(json_t *root, enum trace_format fmt, struct trace *t,
		      struct sr_err *e)
{
	json_t *md, *data;
	int rc;

	if (!json_is_object(root))
		return sr_err_set(e, -SR_EPARSE, "%s: expected a JSON object", t->name);
	md = json_object_get(root, "metadata");
	if (!json_is_object(md))
		return sr_err_set(e, -SR_EPARSE, "%s: metadata: missing or not an object", t->name);
	rc = parse_gap(md, t->name, &t->gap_s, e);
	if (rc)
		return rc;
	data = json_object_get(root, "data");
	if (!json_is_array(data))
		return sr_err_set(e, -SR_EPARSE, "%s: data: missing or not an array", t->name);
	t->n = json_array_size(data);
	if (t->n == 0)
		return sr_err_set(e, -SR_EPARSE, "%s: data: empty", t->name);
	t->avail = malloc(t->n);
	if (!t->avail)
		return sr_err_set(e, -ENOMEM, "%s: out of memory", t->name);
	for (size_t i = 0; i < t->n; i++) {
		json_t *v = json_array_get(data, i);
		double x = json_is_number(v) ? json_number_value(v) : -1;

		if (fmt == TRACE_FMT_SKYNOMAD) {
			if (x != 0 && x != 1)
				return sr_err_set(e, -SR_EPARSE,
						  "%s: data[%zu]: expected 0 (available) or 1 (unavailable)",
						  t->name, i);
			t->avail[i] = x == 0; /* 1 = unavailable */
		} else {
			if (!(x >= 0 && x < 1e9) || x != floor(x))
				return sr_err_set(e, -SR_EPARSE,
						  "%s: data[%zu]: expected a count of available instances (integer >= 0)",
						  t->name, i);
			t->avail[i] = x > 0;
		}
	}
	rc = parse_prices(root, t, e);
	if (rc)
		return rc;
	return parse_price_info(md, t, e);
}

int trace_parse(const char *buf, size_t len, const char *name,
		enum trace_format fmt, struct trace **out, struct sr_err *e)
{
	struct trace *t = NULL;
	json_t *root = NULL;
	int rc;

	*out = NULL;
	t = trace_alloc(name, 0, 0);
	if (!t)
		return sr_err_set(e, -ENOMEM, "%s: out of memory", name);
	free(t->avail);
	t->avail = NULL;
	if (fmt == TRACE_FMT_AUTO && detect_format(buf, len, NULL) == TRACE_FMT_CSV)
		fmt = TRACE_FMT_CSV;
	if (fmt == TRACE_FMT_CSV) {
		t->format = fmt;
		rc = trace__parse_csv(buf, len, t, e);
		goto out;
	}
	root = sr_json_load_buf(buf, len, t->name, e);
	if (!root) {
		rc = e && e->code ? e->code : -SR_EPARSE;
		goto out;
	}
	if (fmt == TRACE_FMT_AUTO)
		fmt = detect_format(buf, len, root);
	t->format = fmt;
	rc = parse_json(root, fmt, t, e);
out:
	json_decref(root);
	if (rc) {
		trace_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

int trace_load(const char *path, enum trace_format fmt, struct trace **out,
	       struct sr_err *e)
{
	FILE *f = NULL;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc = 0;

	*out = NULL;
	f = fopen(path, "rb");
	if (!f) {
		rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	for (;;) {
		size_t got;

		if (len == cap) {
			char *nb;

			cap = cap ? cap * 2 : 1 << 16;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				rc = sr_err_set(e, -ENOMEM, "%s: out of memory", path);
				goto out;
			}
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		rc = sr_err_set(e, -EIO, "%s: read error", path);
		goto out;
	}
	buf[len] = '\0';
	rc = trace_parse(buf, len, path, fmt, out, e);
out:
	if (f)
		fclose(f);
	free(buf);
	return rc;
}
