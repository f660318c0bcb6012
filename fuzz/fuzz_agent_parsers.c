/*
 * fuzz_agent_parsers - libFuzzer target for what spotrun-agent reads from
 * outside: the IMDS spot/instance-action reply (from the metadata
 * service), the workload's status file (user code), and log bytes (any
 * bytes the workload prints).  Invariants: a parsed notice has a known
 * action and a time; a failed parse leaves "no notice"; status counts are
 * -1 or >= 0 and stalls are finite and in range; every log line becomes
 * valid UTF-8 JSON of at most LOGBATCH_LINE_MAX bytes.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/imds.h"
#include "agent/logbatch.h"
#include "agent/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct imds_notice n;
	struct status_info si;
	struct logbatch *b;
	int64_t seq;
	json_t *ev;
	size_t i;
	json_t *v;

	if (imds_parse_notice((const char *)data, size, &n, NULL) == 0) {
		if (n.action == IMDS_NONE)
			abort();
	} else if (n.action != IMDS_NONE || n.time_ns != 0) {
		abort();
	}
	if (status_parse((const char *)data, size, "status.json", &si, &seq,
			 NULL) == 0) {
		if (si.step < -1 || si.total_steps < -1 || si.ckpt_step < -1 ||
		    seq < -1 || si.nstalls < 0 || si.nstalls > STATUS_MAX_STALLS)
			abort();
		for (int k = 0; k < si.nstalls; k++)
			if (!(si.stall_ms[k] >= 0 && si.stall_ms[k] < 1e9))
				abort();
	}
	b = logbatch_create();
	ev = json_array();
	if (b && ev) {
		logbatch_feed(b, LOGBATCH_STDOUT, 1, (const char *)data, size, 0);
		logbatch_flush_partial(b, 0);
		if (logbatch_peek_json(b, 100000, ev) < 0)
			abort();
		json_array_foreach(ev, i, v) {
			const char *line = json_string_value(json_object_get(v, "line"));
			char *dump;

			if (!line || strlen(line) > LOGBATCH_LINE_MAX)
				abort();
			dump = json_dumps(v, 0);
			if (!dump)
				abort(); /* not representable: invalid UTF-8 slipped in */
			free(dump);
		}
	}
	json_decref(ev);
	logbatch_destroy(b);
	return 0;
}
