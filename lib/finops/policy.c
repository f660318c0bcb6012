/*
 * policy.c - busy/idle classification, autostop and budget decisions.
 *
 * Budget verdicts, per limit (max_cost on spend, max_hourly_cost on the
 * current rate), the worst one wins:
 *
 *   value < alert_at * limit          OK
 *   alert_at * limit <= value < limit ALERT      (warn once; dedup by caller)
 *   value >= limit                    EXCEEDED   (on_exceed: alert)
 *                                     STOP       (on_exceed: stop)
 *
 * "First alert, then stop": a job that crosses its limit has normally
 * passed through ALERT on an earlier tick; STOP also implies an alert.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/timeutil.h"
#include "market/jobspec.h"
#include "policy.h"

void finops_policy_default(struct finops_policy *p)
{
	memset(p, 0, sizeof *p);
	p->idle_util_permille = FINOPS_IDLE_UTIL_DEFAULT_PERMILLE;
	p->alert_at_permille = 800;
}

static int get_money(json_t *o, const char *key, sr_micros *out,
		     const char *ctx, struct sr_err *e)
{
	json_t *v = json_object_get(o, key);
	int rc;

	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v)) {
		rc = sr_money_parse(json_string_value(v), out, e);
		if (rc)
			return sr_err_prefix(e, "%s.%s", ctx, key);
	} else if (json_is_number(v)) {
		*out = sr_money_from_usd(json_number_value(v));
	} else {
		return sr_err_set(e, -SR_EPARSE, "%s.%s: expected an amount like \"$50\"",
				  ctx, key);
	}
	if (*out < 0)
		return sr_err_set(e, -SR_EPARSE, "%s.%s: negative", ctx, key);
	return 0;
}

static int get_fraction(json_t *o, const char *key, int *permille,
			const char *ctx, struct sr_err *e)
{
	json_t *v = json_object_get(o, key);
	double d = 0;
	int rc;

	if (!v || json_is_null(v))
		return 0;
	rc = sr_json_get_num(o, key, &d, ctx, e);
	if (rc)
		return rc;
	if (!(d >= 0 && d <= 1))
		return sr_err_set(e, -SR_EPARSE, "%s: %s: %g not in 0..1", ctx, key, d);
	*permille = (int)(d * 1000 + 0.5);
	return 0;
}

static int parse_autostop(json_t *a, struct finops_policy *p, struct sr_err *e)
{
	static const char *const keys[] = { "idle_minutes", NULL };
	int64_t min = 0;
	int rc;

	if (json_is_false(a) || json_is_null(a))
		return 0;
	if (!json_is_object(a))
		return sr_err_set(e, -SR_EPARSE,
				  "spotrun.autostop: expected {idle_minutes: N}");
	rc = sr_json_check_keys(a, keys, "spotrun.autostop", e);
	if (!rc)
		rc = sr_json_get_int(a, "idle_minutes", &min, "spotrun.autostop", e);
	if (rc)
		return rc;
	if (min <= 0 || min > 7 * 24 * 60)
		return sr_err_set(e, -SR_EPARSE, "spotrun.autostop.idle_minutes: "
				  "%lld not in 1..10080", (long long)min);
	p->autostop_idle_ns = min * 60 * SR_NS_PER_SEC;
	return 0;
}

static int parse_budget(json_t *b, struct finops_policy *p, struct sr_err *e)
{
	static const char *const keys[] = { "max_cost", "max_hourly_cost",
					     "alert_at", "on_exceed", NULL };
	const char *ctx = "spotrun.budget";
	const char *on = NULL;
	int rc;

	if (!json_is_object(b))
		return sr_err_set(e, -SR_EPARSE, "%s: expected an object", ctx);
	rc = sr_json_check_keys(b, keys, ctx, e);
	if (!rc)
		rc = get_money(b, "max_cost", &p->max_cost, ctx, e);
	if (!rc)
		rc = get_money(b, "max_hourly_cost", &p->max_hourly_cost, ctx, e);
	if (!rc)
		rc = get_fraction(b, "alert_at", &p->alert_at_permille, ctx, e);
	if (!rc)
		rc = sr_json_get_str_opt(b, "on_exceed", &on, ctx, e);
	if (rc)
		return rc;
	if (on && strcmp(on, "alert") && strcmp(on, "stop"))
		return sr_err_set(e, -SR_EPARSE, "%s.on_exceed: '%s' is not alert or stop",
				  ctx, on);
	p->stop_on_exceed = on && !strcmp(on, "stop");
	return 0;
}

int finops_policy_parse(json_t *spotrun, struct finops_policy *p,
			struct sr_err *e)
{
	json_t *v;
	int rc = 0;

	finops_policy_default(p);
	if (!spotrun || json_is_null(spotrun))
		return 0;
	if (!json_is_object(spotrun))
		return sr_err_set(e, -SR_EPARSE, "spotrun: expected an object");
	v = json_object_get(spotrun, "autostop");
	if (v)
		rc = parse_autostop(v, p, e);
	if (!rc)
		rc = get_fraction(spotrun, "idle_util_threshold",
				  &p->idle_util_permille, "spotrun", e);
	v = json_object_get(spotrun, "budget");
	if (!rc && v && !json_is_null(v))
		rc = parse_budget(v, p, e);
	if (rc) {
		finops_policy_default(p);
		return rc;
	}
	return 0;
}

void finops_policy_from_jobspec(const struct jobspec *js, struct finops_policy *p)
{
	finops_policy_default(p);
	if (js->max_cost > 0)
		p->max_cost = js->max_cost;
	if (js->max_hourly_cost > 0)
		p->max_hourly_cost = js->max_hourly_cost;
	if (js->autostop_ns > 0)
		p->autostop_idle_ns = js->autostop_ns;
	p->stop_on_exceed = p->max_cost > 0 || p->max_hourly_cost > 0;
}

bool finops_node_is_busy(bool workload_running, int util_permille,
			 int threshold_permille)
{
	if (!workload_running)
		return false;
	if (util_permille < 0)
		return true;
	return util_permille >= threshold_permille;
}

_Static_assert(FINOPS_IDLE_UTIL_DEFAULT_PERMILLE == 100 &&
	       FINOPS_IDLE_PROGRESS_S == 60, "the rules below say 10% and 60 s");

const char finops_idle_rule_all[] =
	"idle below 10% GPU utilisation (NVML) where a node reports it, else "
	"after 60 s without a training step; CPU load is not used";

const char *finops_idle_src_name(enum finops_idle_src s)
{
	return s == FINOPS_IDLE_GPU ? "gpu" : s == FINOPS_IDLE_PROGRESS ?
	       "progress" : "none";
}

const char *finops_idle_rule(enum finops_idle_src s)
{
	switch (s) {
	case FINOPS_IDLE_GPU:
		return "idle below 10% GPU utilisation (NVML)";
	case FINOPS_IDLE_PROGRESS:
		return "idle after 60 s without a training step (no GPU "
		       "utilisation reported)";
	case FINOPS_IDLE_NONE:
		break;
	}
	return "no GPU utilisation or training steps reported: busy while running";
}

bool finops_autostop_due(const struct finops_policy *p, int64_t idle_since_ns,
			 int64_t now_ns)
{
	if (!p || p->autostop_idle_ns <= 0 || idle_since_ns < 0)
		return false;
	return now_ns - idle_since_ns >= p->autostop_idle_ns;
}

int finops_idle_since(struct store *db, int64_t node_id,
		      int64_t *idle_since_ns, struct sr_err *e)
{
	static const char sql[] =
		"SELECT (SELECT busy FROM ledger WHERE node_id = ?1"
		"        ORDER BY start_ns DESC LIMIT 1) AS last_busy,"
		" (SELECT max(end_ns) FROM ledger WHERE node_id = ?1 AND busy = 1)"
		"  AS busy_end,"
		" (SELECT min(start_ns) FROM ledger WHERE node_id = ?1) AS first_start";
	struct store_stmt *st = NULL;
	int rc;

	*idle_since_ns = -1;
	rc = store_prepare(db, sql, &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, node_id);
	rc = store_step(st, e);
	if (rc == 0)
		rc = sr_err_set(e, -EIO, "finops_idle_since: no row");
	if (rc < 0)
		goto out;
	rc = 0;
	if (store_col_null(st, "last_busy") || store_col_i64(st, "last_busy") == 1)
		goto out;
	if (!store_col_null(st, "busy_end"))
		*idle_since_ns = store_col_i64(st, "busy_end");
	else
		*idle_since_ns = store_col_i64(st, "first_start");
out:
	store_done(st);
	return rc;
}

const char *finops_budget_verdict_name(enum finops_budget_verdict v)
{
	switch (v) {
	case FINOPS_BUDGET_OK:
		return "ok";
	case FINOPS_BUDGET_ALERT:
		return "alert";
	case FINOPS_BUDGET_EXCEEDED:
		return "exceeded";
	case FINOPS_BUDGET_STOP:
		return "stop";
	}
	return "unknown";
}

static enum finops_budget_verdict one_limit(const struct finops_policy *p,
					    sr_micros value, sr_micros limit,
					    const char *what, const char *name,
					    char *why, size_t why_len)
{
	char v[32], l[32];
	enum finops_budget_verdict verdict;

	if (limit <= 0)
		return FINOPS_BUDGET_OK;
	if (value >= limit)
		verdict = p->stop_on_exceed ? FINOPS_BUDGET_STOP : FINOPS_BUDGET_EXCEEDED;
	else if ((__int128)value * 1000 >= (__int128)limit * p->alert_at_permille)
		verdict = FINOPS_BUDGET_ALERT;
	else
		return FINOPS_BUDGET_OK;
	if (why && why_len) {
		sr_money_format(value, v, sizeof v);
		sr_money_format(limit, l, sizeof l);
		snprintf(why, why_len, "%s %s reached %d%% of %s %s", what, v,
			 (int)((__int128)value * 100 / limit), name, l);
	}
	return verdict;
}

enum finops_budget_verdict
finops_budget_decide(const struct finops_policy *p, sr_micros spent,
		     sr_micros hourly, char *why, size_t why_len)
{
	char w2[160] = "";
	enum finops_budget_verdict a, b;

	if (why && why_len)
		why[0] = '\0';
	a = one_limit(p, spent, p->max_cost, "cost", "max_cost", why, why_len);
	b = one_limit(p, hourly, p->max_hourly_cost, "hourly cost",
		      "max_hourly_cost", w2, sizeof w2);
	if (b > a) {
		if (why && why_len)
			snprintf(why, why_len, "%s", w2);
		return b;
	}
	return a;
}

int finops_job_spend(struct store *db, int64_t job_id, int64_t now_ns,
		     int64_t live_window_ns, sr_micros *spent,
		     sr_micros *hourly, struct sr_err *e)
{
	static const char sql[] =
		"SELECT (SELECT COALESCE(sum(cost), 0) FROM ledger WHERE job_id = ?1)"
		" AS spent,"
		" (SELECT COALESCE(sum(l.unit_price), 0) FROM ledger l"
		"  WHERE l.job_id = ?1 AND l.end_ns >= ?2 AND l.start_ns ="
		"   (SELECT max(start_ns) FROM ledger m WHERE m.node_id = l.node_id))"
		" AS hourly";
	struct store_stmt *st = NULL;
	int rc;

	*spent = *hourly = 0;
	rc = store_prepare(db, sql, &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, job_id);
	store_bind_i64(st, 2, now_ns - live_window_ns);
	rc = store_step(st, e);
	if (rc == 1) {
		*spent = store_col_i64(st, "spent");
		*hourly = store_col_i64(st, "hourly");
		rc = 0;
	} else if (rc == 0) {
		rc = sr_err_set(e, -EIO, "finops_job_spend: no row");
	}
	store_done(st);
	return rc;
}
