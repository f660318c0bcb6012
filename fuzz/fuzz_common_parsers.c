/*
 * fuzz_common_parsers - libFuzzer target for lib/common's text parsers:
 * money, durations, RFC 3339 (strict and with the data-file flags),
 * month starts and JSON buffers.  Whatever parses must
 * format and parse back to the same value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/money.h"
#include "common/timeutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sr_err e = { 0 };
	char *s = malloc(size + 1), buf[128];
	int64_t v, back;
	json_t *j;

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	if (sr_money_parse(s, &v, &e) == 0) {
		if (sr_money_format(v, buf, sizeof(buf)) < 0 ||
		    sr_money_parse(buf, &back, &e) != 0 || back != v)
			abort();
		(void)sr_money_cost(v, v);
	}
	if (sr_dur_parse(s, &v, &e) == 0) {
		if (sr_dur_format(v, buf, sizeof(buf)) < 0 ||
		    sr_dur_parse(buf, &back, &e) != 0 || back != v)
			abort();
	}
	if (sr_time_parse_rfc3339(s, &v, &e) == 0) {
		if (sr_time_format_rfc3339(v, 9, buf, sizeof(buf)) < 0 ||
		    sr_time_parse_rfc3339(buf, &back, &e) != 0 || back != v)
			abort();
		(void)sr_time_month_start(v, 1);
	}
	if (sr_time_parse(s, SR_TIME_SPACE | SR_TIME_UTC | SR_TIME_DATE |
			  SR_TIME_US_DATE, &v, &e) == 0) {
		if (sr_time_format_rfc3339(v, 9, buf, sizeof(buf)) < 0 ||
		    sr_time_parse_rfc3339(buf, &back, &e) != 0 || back != v ||
		    sr_time_month_start(v, 0) > v)
			abort();
		/* a date alone (no time of day) is a midnight UTC */
		if (!strchr(s, ':') && v % (86400 * SR_NS_PER_SEC) != 0)
			abort();
	}
	j = sr_json_load_buf((const char *)data, size, "fuzz", &e);
	if (j != NULL) {
		const char *str = NULL;
		int64_t i = 0;
		char *dump = sr_json_dump(j);

		(void)sr_json_get_str_opt(j, "a", &str, "fuzz", &e);
		(void)sr_json_get_int_opt(j, "b", &i, "fuzz", &e);
		(void)sr_json_check_keys(j, (const char *const[]){ "a", "b", NULL },
					 "fuzz", &e);
		free(dump);
		json_decref(j);
	}
	free(s);
	return 0;
}
