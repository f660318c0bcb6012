/* libFuzzer target: the trace parsers (CBL / SkyNomad JSON, CSV).  The
 * first byte picks the format (auto, cbl, skynomad, csv); the rest is the
 * file.  A parsed trace must be self-consistent.  The same bytes also go
 * to the local cloud's other data file, a real-cloud timing profile
 * (cloud/timing.h): a parsed one is in range and draws boots inside it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "cloud/timing.h"
#include "sim/trace.h"

static void timing(const uint8_t *data, size_t size)
{
	struct cloud_timing t;
	struct sr_err e = { 0 };
	double b;

	if (cloud_timing_parse((const char *)data, size, "fuzz", &t, &e) != 0) {
		if (!e.msg[0] || t.name[0])
			abort();
		return;
	}
	b = cloud_timing_boot_s(&t, size);
	if (!(t.notice_s > 0) || !(b >= t.boot_min_s && b <= t.boot_max_s) ||
	    t.setup_s < 0 || t.import_s < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum trace_format fmts[] = {
		TRACE_FMT_AUTO, TRACE_FMT_CBL, TRACE_FMT_SKYNOMAD, TRACE_FMT_CSV
	};
	struct trace *t = NULL;
	struct sr_err e = { 0 };

	timing(data, size);
	if (size < 1)
		return 0;
	if (trace_parse((const char *)data + 1, size - 1, "fuzz", fmts[data[0] & 3],
			&t, &e) == 0) {
		if (!t || t->gap_s <= 0 || t->n == 0)
			abort();
		for (size_t i = 0; i < t->n; i++) {
			if (t->avail[i] > 1 || (t->price && !(t->price[i] >= 0)))
				abort();
		}
	} else if (t || !e.msg[0]) {
		abort();
	}
	trace_free(t);
	return 0;
}
