/*
 * fuzz_safetensors_header.c - libFuzzer target for the safetensors shard
 * header parser.  The input is a whole shard file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ckpt_st_entry *ents = NULL;
	struct sr_err e = { 0 };
	size_t n = 0;
	uint64_t ds = 0;

	if (ckpt__st_header_parse(data, size, size, "fuzz.safetensors", &ents,
				  &n, &ds, &e) == 0) {
		uint64_t at = 0;

		/* accepted entries tile the data region exactly */
		for (size_t i = 0; i < n; i++) {
			if (ents[i].begin != at || ents[i].end < ents[i].begin)
				abort();
			at = ents[i].end;
		}
		if (ds + at != size)
			abort();
		free(ents);
	} else if (ents || !e.msg[0]) {
		abort();
	}
	return 0;
}
