/*
 * fconf.h - the daemon's FinOps configuration, <state-dir>/finops.json
 * (docs/finops.md "Teams and shared costs", "Budgets"):
 *
 *   {"shared": {"split": "gpu_hours"},          # or "even"
 *    "control_plane": {"resource_id": "i-0abc", "name": "spotrund",
 *                      "hourly_price": "0.0832"},
 *    "commitments": [{"id": "ri-2026-a100", "contract_id": "c-1",
 *                     "provider": "aws", "region": "us-east-1",
 *                     "instance_type": "p4d.24xlarge", "gpus": 8,
 *                     "count": 1, "hourly_price": "21.96",
 *                     "start": "2026-01-01", "end": "2027-01-01",
 *                     "description": "1-year reserved"}],
 *    "budgets": [{"team": "ml", "monthly": "1000", "hard": true},
 *                {"project": "llama", "monthly": "400"}],
 *    "tokens": [{"name": "ml", "team": "ml", "project": "llama",
 *                "cost_center": "CC-1234"}]}
 *
 * tokens: API tokens whose jobs carry default labels.  spotrund creates
 * each token (random, mode 0600) in <state-dir>/tokens/<name>.token at
 * start; a request with it may do what the admin token does, and a job
 * it launches without a label of its own gets the token's.
 *
 * Every key is optional; a missing file is an empty configuration.
 * Money is a decimal string or a number of dollars, kept as micro-dollars;
 * times are RFC 3339 or a UTC date.  Errors name the file and the field
 * ("finops.json: commitments[0].hourly_price: ...").
 *
 * Ownership: finops_conf_load fills a caller-owned struct whose arrays it
 * owns; release with finops_conf_free (also after an error).
 */
#ifndef SR_FINOPS_FCONF_H
#define SR_FINOPS_FCONF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"

enum finops_split {
	FINOPS_SPLIT_GPU_HOURS = 0, /* each job's share of the GPU-hours */
	FINOPS_SPLIT_EVEN,          /* each team alike, then its jobs by
				       GPU-hours */
};

/* Reserved capacity bought for a term (a FOCUS 1.3 contract
 * commitment): `count` instances of instance_type, each at hourly_price,
 * from start_ns to end_ns (exclusive). */
struct finops_commitment {
	char id[64], contract_id[64];
	char provider[32], region[64], instance_type[64];
	char description[160];
	int gpus;                  /* per instance */
	int count;                 /* instances, >= 1 */
	sr_micros hourly_price;    /* per instance */
	int64_t start_ns, end_ns;
};

enum finops_budget_scope { FINOPS_BUDGET_TEAM = 0, FINOPS_BUDGET_PROJECT };

struct finops_budget {
	enum finops_budget_scope scope;
	char name[64];
	sr_micros monthly;         /* per calendar month (UTC) */
	bool hard;                 /* refuse launches past it */
};

/* An API token's default labels ("" = none). */
struct finops_token {
	char name[64];             /* letters, digits, . _ - */
	char team[64], project[64], cost_center[64];
};

struct finops_conf {
	enum finops_split split;
	bool has_control_plane;
	char cp_resource_id[64], cp_name[64];
	sr_micros cp_hourly_price;
	struct finops_commitment *commitments;
	size_t ncommitments;
	struct finops_budget *budgets;
	size_t nbudgets;
	struct finops_token *tokens;
	size_t ntokens;
};

/* Read `path` into *c (zeroed first).  A missing file: 0, empty. */
int finops_conf_load(const char *path, struct finops_conf *c, struct sr_err *e);
/* The same from a parsed document; `name` prefixes messages. */
int finops_conf_from_json(json_t *root, const char *name, struct finops_conf *c,
			  struct sr_err *e);
void finops_conf_free(struct finops_conf *c); /* NULL-safe; zeroes it */
/* Append a copy of *m to c's commitments.  0 or -ENOMEM. */
int finops_conf_add_commitment(struct finops_conf *c,
			       const struct finops_commitment *m);

/* "gpu_hours" | "even". */
const char *finops_split_name(enum finops_split s);
/* "team" | "project". */
const char *finops_budget_scope_name(enum finops_budget_scope s);

#endif
