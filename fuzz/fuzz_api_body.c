/* libFuzzer target: spotrund's request body parsers (lib/ctl/api_body.c).
 * The first byte picks the parser; the rest is the body.  Every parser
 * must either succeed with a consistent struct or fail with a message,
 * never crash or leak. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ctl/api_body.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sr_err e = { 0 };
	json_t *root = NULL;
	const char *buf;
	size_t len;

	if (size < 1)
		return 0;
	buf = (const char *)data + 1;
	len = size - 1;
	switch (data[0] % 4) {
	case 0: {
		struct api_job_create b;

		if (api_parse_job_create(buf, len, &root, &b, &e) == 0 &&
		    strlen(b.spec_yaml) != b.spec_len)
			__builtin_trap();
		break;
	}
	case 1: {
		struct api_register b;

		api_parse_register(buf, len, &root, &b, &e);
		break;
	}
	case 2: {
		struct api_heartbeat b;

		if (api_parse_heartbeat(buf, len, &root, &b, &e) == 0 &&
		    (b.attempt < 0 || b.cpu_util > 1 || b.gpu_util > 1))
			__builtin_trap();
		break;
	}
	default: {
		struct api_report r;

		if (api_parse_report(buf, len, &root, &r, &e) == 0) {
			for (size_t i = 0; i < r.n; i++) {
				if (r.ev[i].type == EV_LOG &&
				    r.ev[i].line_len > CTL_LOG_LINE_MAX)
					__builtin_trap();
			}
			api_report_free(&r);
		}
		break;
	}
	}
	json_decref(root);
	return 0;
}
