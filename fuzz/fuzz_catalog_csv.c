/*
 * fuzz_catalog_csv.c - libFuzzer target for the catalog CSV loaders.
 *
 * The first byte picks the loader (SkyPilot as aws, as gcp with the
 * host/accelerator join, the offerings table, or the AWS zone table);
 * the rest is the file.
 * Whatever the input, loading must not crash or leak, and a successful
 * load yields offerings with sane fields.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "market/catalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct catalog c;
	struct sr_err e = { 0 };
	const char *buf = (const char *)data + 1;
	int rc;

	if (size < 1)
		return 0;
	catalog_init(&c);
	switch (data[0] % 4) {
	case 0:
		rc = catalog_load_skypilot_buf(&c, buf, size - 1, "f.csv", "aws", &e);
		break;
	case 1:
		rc = catalog_load_skypilot_buf(&c, buf, size - 1, "f.csv", "gcp", &e);
		break;
	case 2:
		rc = catalog_load_offerings_buf(&c, buf, size - 1, "f.csv", &e);
		break;
	default:
		rc = catalog_load_zones_buf(&c, buf, size - 1, "z.csv", "aws", &e);
		if (rc == 0) {
			for (size_t i = 0; i < c.n_zones; i++) {
				if (!c.zones[i].name[0] || !c.zones[i].id[0])
					abort();
			}
		}
		break;
	}
	if (rc == 0) {
		for (size_t i = 0; i < c.n; i++) {
			if (c.items[i].accel_count <= 0 || c.items[i].hazard_per_h < 0)
				abort();
		}
	} else if (!e.msg[0]) {
		abort(); /* every failure carries a message */
	}
	catalog_free(&c);
	return 0;
}
