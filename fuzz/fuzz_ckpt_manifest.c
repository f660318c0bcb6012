/*
 * fuzz_ckpt_manifest.c - libFuzzer target for the manifest parser.
 *
 * Most mutations break the manifest's self-checksum and stop at the first
 * check, so every other input gets its checksum recomputed first: that
 * drives the JSON and schema checks behind it as well.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ckpt_manifest m;
	struct sr_err e = { 0 };
	char *buf = malloc(size + 1);

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (size && (data[size - 1] & 1))
		ckpt__manifest_fix_checksum(buf, size);
	if (ckpt__manifest_parse(buf, size, "fuzz/manifest.json", &m, &e) == 0) {
		/* a parsed manifest must be self-consistent */
		uint64_t sum = 0;

		for (size_t i = 0; i < m.l->nt; i++)
			sum += m.l->t[i].nbytes;
		if (sum != m.l->state_bytes || !m.meta)
			abort();
		ckpt__manifest_free(&m);
	} else if (!e.msg[0]) {
		abort(); /* every failure says why */
	}
	free(buf);
	return 0;
}
