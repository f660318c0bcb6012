/*
 * fuzz_jobspec_yaml.c - libFuzzer target for the job file parser.
 *
 * Parse the input as a job file; when it parses, serialise it to JSON,
 * read that back and serialise again: the two JSON texts must be equal,
 * and every failure must carry a message.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "market/jobspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jobspec js, back;
	struct sr_err e = { 0 };
	json_t *j1 = NULL, *j2 = NULL;
	char *s1 = NULL, *s2 = NULL;

	if (jobspec_parse_buf((const char *)data, size, "f.yaml", &js, &e)) {
		if (!e.msg[0])
			abort();
		return 0;
	}
	j1 = jobspec_to_json(&js);
	if (!j1)
		abort();
	if (jobspec_from_json(j1, &back, &e))
		abort();
	j2 = jobspec_to_json(&back);
	s1 = json_dumps(j1, JSON_SORT_KEYS);
	s2 = j2 ? json_dumps(j2, JSON_SORT_KEYS) : NULL;
	if (!s1 || !s2 || strcmp(s1, s2))
		abort();
	free(s1);
	free(s2);
	json_decref(j1);
	json_decref(j2);
	jobspec_free(&back);
	jobspec_free(&js);
	return 0;
}
