/*
 * fconf.c - <state-dir>/finops.json (see fconf.h).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/json.h"
#include "common/timeutil.h"
#include "fconf.h"
#include "market/jobspec.h"
#include "report.h"

const char *finops_split_name(enum finops_split s)
{
	return s == FINOPS_SPLIT_EVEN ? "even" : "gpu_hours";
}

const char *finops_budget_scope_name(enum finops_budget_scope s)
{
	return s == FINOPS_BUDGET_PROJECT ? "project" : "team";
}

/* key of o: dollars as a string ("21.96") or a number, >= 0. */
static int get_money(json_t *o, const char *key, bool required, sr_micros *out,
		     const char *ctx, struct sr_err *e)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v)) {
		if (required)
			return sr_err_set(e, -SR_EPARSE, "%s.%s: missing", ctx, key);
		return 0;
	}
	if (json_is_string(v)) {
		if (sr_money_parse(json_string_value(v), out, NULL) || *out < 0)
			return sr_err_set(e, -SR_EPARSE, "%s.%s: '%.40s' is not an "
					  "amount in dollars", ctx, key,
					  json_string_value(v));
		return 0;
	}
	if (json_is_number(v) && isfinite(json_number_value(v)) &&
	    json_number_value(v) >= 0 && json_number_value(v) < 1e12) {
		*out = sr_money_from_usd(json_number_value(v));
		return 0;
	}
	return sr_err_set(e, -SR_EPARSE, "%s.%s: expected an amount in dollars "
			  "(\"21.96\" or 21.96)", ctx, key);
}

/* key of o, a string of at most n-1 bytes, into out. */
static int get_text(json_t *o, const char *key, bool required, char *out,
		    size_t n, const char *ctx, struct sr_err *e)
{
	const char *s = NULL;
	int rc = required ? sr_json_get_str(o, key, &s, ctx, e) :
			    sr_json_get_str_opt(o, key, &s, ctx, e);

	if (rc || !s)
		return rc;
	if (!*s || strlen(s) >= n)
		return sr_err_set(e, -SR_EPARSE, "%s.%s: expected 1 to %zu bytes",
				  ctx, key, n - 1);
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == '"' || *p == '\\')
			return sr_err_set(e, -SR_EPARSE, "%s.%s: control characters, "
					  "quotes and backslashes are not allowed",
					  ctx, key);
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

static int get_time(json_t *o, const char *key, int64_t *out, const char *ctx,
		    struct sr_err *e)
{
	const char *s = NULL;
	int rc = sr_json_get_str(o, key, &s, ctx, e);

	if (rc)
		return rc;
	if (finops_parse_when(s, 0, out) || strspn(s, "0123456789-:TZ.+") != strlen(s))
		return sr_err_set(e, -SR_EPARSE, "%s.%s: '%.40s' is not an RFC 3339 "
				  "time or a date YYYY-MM-DD", ctx, key, s);
	return 0;
}

static int commitment(json_t *o, const char *ctx, struct finops_commitment *m,
		      struct sr_err *e)
{
	static const char *const keys[] = {
		"id", "contract_id", "provider", "region", "instance_type", "gpus",
		"count", "hourly_price", "start", "end", "description", NULL
	};
	int64_t count = 1, gpus = 0;
	int rc;

	if (!json_is_object(o))
		return sr_err_set(e, -SR_EPARSE, "%s: expected an object", ctx);
	rc = sr_json_check_keys(o, keys, ctx, e);
	if (!rc)
		rc = get_text(o, "id", true, m->id, sizeof m->id, ctx, e);
	if (!rc)
		rc = get_text(o, "contract_id", false, m->contract_id,
			      sizeof m->contract_id, ctx, e);
	if (!rc && !m->contract_id[0])
		memcpy(m->contract_id, m->id, sizeof m->id);
	if (!rc)
		rc = get_text(o, "provider", true, m->provider, sizeof m->provider,
			      ctx, e);
	if (!rc)
		rc = get_text(o, "region", true, m->region, sizeof m->region, ctx, e);
	if (!rc)
		rc = get_text(o, "instance_type", true, m->instance_type,
			      sizeof m->instance_type, ctx, e);
	if (!rc)
		rc = get_text(o, "description", false, m->description,
			      sizeof m->description, ctx, e);
	if (!rc)
		rc = sr_json_get_int_opt(o, "count", &count, ctx, e);
	if (!rc && (count < 1 || count > 100000))
		rc = sr_err_set(e, -SR_EPARSE, "%s.count: not in 1..100000", ctx);
	if (!rc)
		rc = sr_json_get_int_opt(o, "gpus", &gpus, ctx, e);
	if (!rc && (gpus < 0 || gpus > 1024))
		rc = sr_err_set(e, -SR_EPARSE, "%s.gpus: not in 0..1024", ctx);
	if (!rc)
		rc = get_money(o, "hourly_price", true, &m->hourly_price, ctx, e);
	if (!rc)
		rc = get_time(o, "start", &m->start_ns, ctx, e);
	if (!rc)
		rc = get_time(o, "end", &m->end_ns, ctx, e);
	if (!rc && m->end_ns <= m->start_ns)
		rc = sr_err_set(e, -SR_EPARSE, "%s.end: not after start", ctx);
	m->count = (int)count;
	m->gpus = (int)gpus;
	return rc;
}

static int budget(json_t *o, const char *ctx, struct finops_budget *b,
		  struct sr_err *e)
{
	static const char *const keys[] = { "team", "project", "monthly", "hard",
					    NULL };
	bool team = json_object_get(o, "team") != NULL;
	const char *why;
	int rc;

	if (!json_is_object(o))
		return sr_err_set(e, -SR_EPARSE, "%s: expected an object", ctx);
	rc = sr_json_check_keys(o, keys, ctx, e);
	if (rc)
		return rc;
	if (team == (json_object_get(o, "project") != NULL))
		return sr_err_set(e, -SR_EPARSE, "%s: give team or project "
				  "(one of them)", ctx);
	b->scope = team ? FINOPS_BUDGET_TEAM : FINOPS_BUDGET_PROJECT;
	rc = get_text(o, team ? "team" : "project", true, b->name, sizeof b->name,
		      ctx, e);
	why = rc ? NULL : jobspec_label_bad(b->name);
	if (why)
		return sr_err_set(e, -SR_EPARSE, "%s.%s: not a label: %s", ctx,
				  team ? "team" : "project", why);
	if (!rc)
		rc = get_money(o, "monthly", true, &b->monthly, ctx, e);
	if (!rc && b->monthly <= 0)
		rc = sr_err_set(e, -SR_EPARSE, "%s.monthly: must be above $0", ctx);
	if (!rc)
		rc = sr_json_get_bool_opt(o, "hard", &b->hard, ctx, e);
	return rc;
}

static int token(json_t *o, const char *ctx, struct finops_token *t,
		 struct sr_err *e)
{
	static const char *const keys[] = { "name", "team", "project",
					    "cost_center", NULL };
	static const struct { const char *key; size_t off; } labels[] = {
		{ "team", offsetof(struct finops_token, team) },
		{ "project", offsetof(struct finops_token, project) },
		{ "cost_center", offsetof(struct finops_token, cost_center) },
	};
	int rc;

	if (!json_is_object(o))
		return sr_err_set(e, -SR_EPARSE, "%s: expected an object", ctx);
	rc = sr_json_check_keys(o, keys, ctx, e);
	if (!rc)
		rc = get_text(o, "name", true, t->name, sizeof t->name, ctx, e);
	if (!rc && (strspn(t->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			   "0123456789._-") != strlen(t->name) || t->name[0] == '.'))
		rc = sr_err_set(e, -SR_EPARSE, "%s.name: '%s': only letters, digits "
				"and . _ - (it names the token's file)", ctx, t->name);
	for (size_t i = 0; !rc && i < sizeof labels / sizeof labels[0]; i++) {
		char *out = (char *)t + labels[i].off;
		const char *why;

		rc = get_text(o, labels[i].key, false, out, 64, ctx, e);
		why = !rc && *out ? jobspec_label_bad(out) : NULL;
		if (why)
			rc = sr_err_set(e, -SR_EPARSE, "%s.%s: not a label: %s", ctx,
					labels[i].key, why);
	}
	return rc;
}

int finops_conf_from_json(json_t *root, const char *name, struct finops_conf *c,
			  struct sr_err *e)
{
	static const char *const keys[] = { "shared", "control_plane",
					    "commitments", "budgets", "tokens",
					    NULL };
	static const char *const skeys[] = { "split", NULL };
	static const char *const ckeys[] = { "resource_id", "name",
					     "hourly_price", NULL };
	json_t *v, *it;
	char ctx[160];
	size_t i;
	int rc;

	memset(c, 0, sizeof *c);
	if (!json_is_object(root))
		return sr_err_set(e, -SR_EPARSE, "%s: expected an object", name);
	rc = sr_json_check_keys(root, keys, name, e);
	v = json_object_get(root, "shared");
	if (!rc && v) {
		const char *split = "gpu_hours";

		snprintf(ctx, sizeof ctx, "%s: shared", name);
		rc = json_is_object(v) ? sr_json_check_keys(v, skeys, ctx, e) :
		     sr_err_set(e, -SR_EPARSE, "%s: expected an object", ctx);
		if (!rc)
			rc = sr_json_get_str_opt(v, "split", &split, ctx, e);
		if (!rc && !strcmp(split, "even"))
			c->split = FINOPS_SPLIT_EVEN;
		else if (!rc && strcmp(split, "gpu_hours"))
			rc = sr_err_set(e, -SR_EPARSE, "%s.split: '%.32s' is not "
					"gpu_hours or even", ctx, split);
	}
	v = json_object_get(root, "control_plane");
	if (!rc && v) {
		snprintf(ctx, sizeof ctx, "%s: control_plane", name);
		rc = json_is_object(v) ? sr_json_check_keys(v, ckeys, ctx, e) :
		     sr_err_set(e, -SR_EPARSE, "%s: expected an object", ctx);
		snprintf(c->cp_resource_id, sizeof c->cp_resource_id, "control-plane");
		snprintf(c->cp_name, sizeof c->cp_name, "spotrun control plane");
		if (!rc)
			rc = get_text(v, "resource_id", false, c->cp_resource_id,
				      sizeof c->cp_resource_id, ctx, e);
		if (!rc)
			rc = get_text(v, "name", false, c->cp_name, sizeof c->cp_name,
				      ctx, e);
		if (!rc)
			rc = get_money(v, "hourly_price", true, &c->cp_hourly_price,
				       ctx, e);
		c->has_control_plane = !rc;
	}
	v = json_object_get(root, "commitments");
	if (!rc && v) {
		if (!json_is_array(v))
			return sr_err_set(e, -SR_EPARSE, "%s: commitments: expected "
					  "an array", name);
		c->commitments = calloc(json_array_size(v) + 1, sizeof *c->commitments);
		if (!c->commitments)
			return sr_err_set(e, -ENOMEM, "out of memory");
		json_array_foreach(v, i, it) {
			snprintf(ctx, sizeof ctx, "%s: commitments[%zu]", name, i);
			rc = commitment(it, ctx, &c->commitments[i], e);
			if (rc)
				break;
			for (size_t k = 0; k < i; k++)
				if (!strcmp(c->commitments[k].id, c->commitments[i].id))
					rc = sr_err_set(e, -SR_EPARSE, "%s.id: '%s' "
							"given twice", ctx,
							c->commitments[i].id);
			if (rc)
				break;
			c->ncommitments++;
		}
	}
	v = json_object_get(root, "budgets");
	if (!rc && v) {
		if (!json_is_array(v))
			return sr_err_set(e, -SR_EPARSE, "%s: budgets: expected an "
					  "array", name);
		c->budgets = calloc(json_array_size(v) + 1, sizeof *c->budgets);
		if (!c->budgets)
			return sr_err_set(e, -ENOMEM, "out of memory");
		json_array_foreach(v, i, it) {
			snprintf(ctx, sizeof ctx, "%s: budgets[%zu]", name, i);
			rc = budget(it, ctx, &c->budgets[i], e);
			if (rc)
				break;
			c->nbudgets++;
		}
	}
	v = json_object_get(root, "tokens");
	if (!rc && v) {
		if (!json_is_array(v))
			return sr_err_set(e, -SR_EPARSE, "%s: tokens: expected an "
					  "array", name);
		c->tokens = calloc(json_array_size(v) + 1, sizeof *c->tokens);
		if (!c->tokens)
			return sr_err_set(e, -ENOMEM, "out of memory");
		json_array_foreach(v, i, it) {
			snprintf(ctx, sizeof ctx, "%s: tokens[%zu]", name, i);
			rc = token(it, ctx, &c->tokens[i], e);
			for (size_t k = 0; !rc && k < i; k++)
				if (!strcmp(c->tokens[k].name, c->tokens[i].name))
					rc = sr_err_set(e, -SR_EPARSE, "%s.name: '%s' "
							"given twice", ctx,
							c->tokens[i].name);
			if (rc)
				break;
			c->ntokens++;
		}
	}
	return rc;
}

int finops_conf_load(const char *path, struct finops_conf *c, struct sr_err *e)
{
	struct stat sb;
	json_t *root;
	int rc;

	memset(c, 0, sizeof *c);
	if (stat(path, &sb) != 0 && errno == ENOENT)
		return 0;
	root = sr_json_load_file(path, e);
	if (!root)
		return e->code ? e->code : -SR_EPARSE;
	rc = finops_conf_from_json(root, path, c, e);
	json_decref(root);
	return rc;
}

int finops_conf_add_commitment(struct finops_conf *c,
			       const struct finops_commitment *m)
{
	struct finops_commitment *v = realloc(c->commitments,
					      (c->ncommitments + 2) * sizeof *v);

	if (!v)
		return -ENOMEM;
	c->commitments = v;
	v[c->ncommitments++] = *m;
	memset(&v[c->ncommitments], 0, sizeof *v);
	return 0;
}

void finops_conf_free(struct finops_conf *c)
{
	if (!c)
		return;
	free(c->commitments);
	free(c->budgets);
	free(c->tokens);
	memset(c, 0, sizeof *c);
}
