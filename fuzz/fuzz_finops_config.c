/*
 * fuzz_finops_config.c - the FinOps parsers that read user input: the job
 * spec's spotrun section (budget, autostop) and the alerts config file,
 * plus the --since/--until time parser and the decision functions fed
 * with whatever parsed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "finops/alert.h"
#include "finops/policy.h"
#include "finops/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct finops_policy p;
	struct finops_alert_config c;
	struct sr_err e;
	char *s = malloc(size + 1);
	json_t *j;
	int64_t t;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	finops_parse_when(s, INT64_C(1800000000) * 1000000000, &t);
	j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (j) {
		if (finops_policy_parse(j, &p, &e) == 0) {
			char why[160];

			finops_budget_decide(&p, p.max_cost, p.max_hourly_cost, why,
					     sizeof why);
			finops_autostop_due(&p, 0, p.autostop_idle_ns);
		}
		if (finops_alert_config_parse(j, &c, &e) == 0)
			finops_alert_config_free(&c);
		json_decref(j);
	}
	free(s);
	return 0;
}
