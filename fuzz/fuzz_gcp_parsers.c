/*
 * fuzz_gcp_parsers - libFuzzer target for what the GCP driver and the
 * agent's gce notice source read from the network: a token endpoint's
 * answer (lib/gcp/gcpcred.c), a Compute Instance and an error or
 * Operation answer (lib/gcp/gce_json.c), and a metadata value of
 * instance/preempted and instance/maintenance-event (lib/agent/
 * gcemeta.c), and a page of the Cloud Billing Catalog's SKUs (lib/gcp/
 * gcpbill.c).  Invariants: a parse either fails with a message or fills
 * NUL-terminated fields; the value parsed is one of the key's values; a
 * classified error names a class and returns its negative code; a rate
 * is >= 0 and a machine's price from rates is -1 or >= 0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/gcemeta.h"
#include "gcp/gce.h"
#include "gcp/gcpbill.h"
#include "gcp/gcpcred.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_billing(const char *x, size_t size)
{
	struct gcpbill_rate *v = NULL;
	struct sr_err e = { 0 };
	size_t n = 0, cap = 0;
	char *next = NULL;

	if (gcpbill_parse_page(x, size, "us-central1", &v, &n, &cap, &next,
			       &e) == 0) {
		for (size_t i = 0; i < n; i++) {
			fuzz_check_str(v[i].name, sizeof v[i].name);
			if (v[i].per_h < 0 || !v[i].name[0])
				abort();
		}
		if (gcpbill_price(v, n, "g2-standard-4", 4, 16, "L4", 1, true) <
		    -1)
			abort();
	} else if (!e.msg[0]) {
		abort();
	}
	free(v);
	free(next);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *x = (const char *)data;
	struct cloud_instance in;
	struct cloud_error err = { 0 };
	struct sr_err e = { 0 };
	char tok[64], val[40];
	int64_t life = 0;

	if (gcpcred_parse_token(x, size, tok, sizeof tok, &life, &e) == 0) {
		fuzz_check_str(tok, sizeof tok);
		if (!tok[0] || life <= 0)
			abort();
	} else if (!e.msg[0]) {
		abort();
	}
	if (gce_parse_instance(x, size, &in, &e) == 0) {
		fuzz_check_str(in.id, sizeof in.id);
		fuzz_check_str(in.zone, sizeof in.zone);
		fuzz_check_str(in.cluster, sizeof in.cluster);
		fuzz_check_str(in.reason, sizeof in.reason);
		if (!strchr(in.id, '/'))
			abort();
		cloud_instance_clear(&in);
	}
	if (gce_classify(size % 600, x, size, "fuzz", &err) >= 0 ||
	    err.cls == CLOUD_EOK)
		abort();
	fuzz_check_str(err.code, sizeof err.code);
	for (int k = 0; k < 2; k++) {
		const char *key = k ? GCEMETA_MAINTENANCE : GCEMETA_PREEMPTED;

		if (gcemeta_parse(key, x, size, val, sizeof val, &e) == 0 &&
		    strcmp(val, "TRUE") && strcmp(val, "FALSE") &&
		    strcmp(val, "NONE") && strncmp(val, "MIGRATE", 7) &&
		    strncmp(val, "TERMINATE", 9))
			abort();
	}
	fuzz_billing(x, size);
	return 0;
}
