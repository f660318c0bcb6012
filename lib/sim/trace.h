/*
 * trace.h - spot-market traces: per-tick spot availability and prices.
 *
 * A trace is one region's (or zone's) history at a fixed tick length.
 * Three on-disk formats are read; see trace.c for their layouts and, in
 * particular, their opposite polarities.  In memory every format becomes
 * the same thing: avail[i] = 1 when a spot instance could be held during
 * tick i, i.e. during [i*gap_s, (i+1)*gap_s).
 *
 * Several traces make a multi-region market: they must share gap_s and
 * are aligned at tick 0 (the shortest one bounds the usable length).
 */
#ifndef SR_SIM_TRACE_H
#define SR_SIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

enum trace_format {
	TRACE_FMT_AUTO = 0, /* decide from the content */
	TRACE_FMT_CBL,      /* Can't Be Late JSON: value = available count */
	TRACE_FMT_SKYNOMAD, /* SkyNomad JSON: 1 = unavailable, has prices */
	TRACE_FMT_CSV,      /* SkyNomad CSV "date,availability": 1 = available */
};

struct trace {
	char *name;               /* file name it came from */
	enum trace_format format; /* the format actually used */
	int64_t gap_s;            /* tick length, seconds (> 0) */
	size_t n;                 /* ticks */
	uint8_t *avail;           /* [n] 1 = spot available during tick i */
	double *price;            /* [n] spot $/h per tick, or NULL if none */
	double od_price;          /* on-demand $/h from the file, or -1 */
};

/* Load a trace file.  fmt = TRACE_FMT_AUTO detects the format.  On success
 * *out owns a new trace (free with trace_free); on failure *out = NULL and
 * e names the file and the offending index or line. */
int trace_load(const char *path, enum trace_format fmt, struct trace **out,
	       struct sr_err *e);

/* Same, from memory; `name` is used in messages and copied into the trace. */
int trace_parse(const char *buf, size_t len, const char *name,
		enum trace_format fmt, struct trace **out, struct sr_err *e);

/* NULL-safe. */
void trace_free(struct trace *t);

/* "cbl", "skynomad", "csv" (and "auto"); parse returns -EINVAL if unknown. */
const char *trace_format_name(enum trace_format fmt);
int trace_format_parse(const char *s, enum trace_format *out);

/* Build a trace from arrays (copied); price may be NULL.  For tests and
 * for synthetic markets.  Returns 0 or -ENOMEM / -EINVAL. */
int trace_from_arrays(const char *name, int64_t gap_s, const uint8_t *avail,
		      const double *price, size_t n, double od_price,
		      struct trace **out);

/* Internal: the CSV reader (trace_csv.c). */
int trace__parse_csv(const char *buf, size_t len, struct trace *t,
		     struct sr_err *e);

#endif
