/*
 * fuzz_bundle - libFuzzer target for the job's files archive that
 * spotrund accepts from an API caller (POST /v1/uploads) and an agent
 * unpacks (lib/bundle).  Invariants: every entry bundle_scan hands out has
 * a name bundle_name_ok accepts, a link target that stays inside the
 * archive, its data inside the buffer, and a mode of 0644, 0755 or the
 * owner-only 0600, 0700.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ctx {
	const uint8_t *buf;
	size_t len;
};

static int check(void *ud, const struct bundle_entry *en, struct sr_err *e)
{
	const struct ctx *c = ud;
	const uint8_t *d = en->data;

	(void)e;
	if (!bundle_name_ok(en->name))
		abort();
	if (en->type == BUNDLE_LINK && (!en->link[0] || en->link[0] == '/'))
		abort();
	if (en->type == BUNDLE_FILE && (d < c->buf || d + en->size > c->buf + c->len))
		abort();
	if (en->mode != 0644 && en->mode != 0755 && en->mode != 0600 &&
	    en->mode != 0700) /* owner-only entries stay so (issue 30) */
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx c = { data, size };
	struct sr_err e = { 0 };

	bundle_scan(data, size, check, &c, &e);
	return 0;
}
