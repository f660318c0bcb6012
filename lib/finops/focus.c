/*
 * focus.c - FOCUS 1.2 CSV export of the ledger.
 *
 * Column                 Value (one ledger row = one FOCUS row)
 * ---------------------  ---------------------------------------------------
 * BilledCost             cost (what the interval was charged): the row's
 *                        share of the cloud's bill where one was applied
 *                        (spotrun cost reconcile --apply; billed.h), else
 *                        spotrun's estimate
 * BillingAccountId       opts, default "spotrun"
 * BillingAccountName     opts, default "spotrun"
 * BillingCurrency        "USD"
 * BillingPeriodStart     first instant of the UTC month of ChargePeriodStart
 * BillingPeriodEnd       first instant of the next month (exclusive)
 * ChargeCategory         "Usage"
 * ChargeClass            NULL (we never restate a closed period)
 * ChargeDescription      "<type> (<n>x <gpu>) <PricingCategory> in <zone>"
 * ChargePeriodStart      start_ns rounded down to the second, and never
 *                        before the previous period of the same node ends
 * ChargePeriodEnd        end_ns rounded down to the second (exclusive),
 *                        at least one second after the start: the periods
 *                        of one resource (node) never overlap
 * ContractedCost         = ListCost: no negotiated discounts exist, so the
 *                        contracted rate is the list rate
 * EffectiveCost          = BilledCost (no amortised purchases)
 * InvoiceIssuerName      provider display name
 * ListCost               list_cost (on-demand list $/h x hours)
 * PricingQuantity        billed hours (decimal, 12 places)
 * PricingUnit            "Hours"
 * ProviderName           provider display name
 * PublisherName          provider display name
 * ServiceCategory        "Compute"
 * ServiceName            the provider's VM service
 * AvailabilityZone       zone, NULL if none
 * ConsumedQuantity       billed hours
 * ConsumedUnit           "Hours"
 * ListUnitPrice          list_price ($/h)
 * PricingCategory        Standard | Dynamic | Committed
 * RegionId, RegionName   region
 * ResourceId             "node-<id>"
 * ResourceType           "Virtual Machine"
 * SkuId                  "<provider>/<instance type>/<region>/<category>"
 * Tags                   {"spotrun/node-id": N, "spotrun/job-id": J}
 * x_JobId .. x_IdleCost  our columns (see finops_focus_columns)
 * x_EstimatedCost        spotrun's estimate (the ledger's cost), = BilledCost
 *                        until a bill is applied
 *
 * Invariants the tests check: ListUnitPrice x PricingQuantity = ListCost
 * to the micro-dollar (costs are rounded to micros once, in the ledger),
 * ChargePeriodStart < ChargePeriodEnd, the charge period lies inside the
 * billing period, and the BilledCost column sums to `spotrun cost`'s total.
 */
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/timeutil.h"
#include "dbutil.h"
#include "store/store.h"
#include "focus.h"
#include "focus_int.h"
#include "ledger.h"

const char finops__usage_sql[] =
	"SELECT provider, region, zone, instance_type, accelerator, gpus,"
	" pricing, unit_price, list_price, reserved_price, job_id,"
	" node_id, busy, util_permille, start_ns, end_ns, billed_ns, cost,"
	" list_cost, reserved_cost,"
	" (SELECT team FROM jobs WHERE id = job_id) AS team,"
	" (SELECT project FROM jobs WHERE id = job_id) AS project,"
	" (SELECT cost_center FROM jobs WHERE id = job_id) AS cost_center,"
	" (SELECT provider FROM nodes WHERE id = node_id) AS node_provider,"
	" CASE WHEN " FINOPS_SPARE_ROW_SQL " THEN 1 ELSE 0 END AS spare"
	" FROM ledger"
	" WHERE start_ns >= ?1 AND (CAST(?2 AS BIGINT) = 0 OR start_ns < ?2)"
	" AND (?3 = 0 OR job_id = ?3) ORDER BY start_ns, id";

const char *const finops_focus_columns[] = {
	/* mandatory */
	"BilledCost", "BillingAccountId", "BillingAccountName",
	"BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd",
	"ChargeCategory", "ChargeClass", "ChargeDescription",
	"ChargePeriodStart", "ChargePeriodEnd", "ContractedCost",
	"EffectiveCost", "InvoiceIssuerName", "ListCost", "PricingQuantity",
	"PricingUnit", "ProviderName", "PublisherName", "ServiceCategory",
	"ServiceName",
	/* conditional */
	"AvailabilityZone", "ConsumedQuantity", "ConsumedUnit",
	"ListUnitPrice", "PricingCategory", "RegionId", "RegionName",
	"ResourceId", "ResourceType", "SkuId", "Tags",
	/* ours */
	"x_JobId", "x_NodeId", "x_AcceleratorName", "x_AcceleratorCount",
	"x_UsageState", "x_Utilization", "x_ReservedUnitPrice",
	"x_ReservedCost", "x_IdleCost", "x_EstimatedCost",
	NULL,
};

size_t finops_focus_ncolumns(void)
{
	size_t n = 0;

	while (finops_focus_columns[n])
		n++;
	return n;
}

static const struct provider_names {
	const char *id, *display, *service;
} providers[] = {
	{ "aws", "Amazon Web Services", "Amazon Elastic Compute Cloud" },
	{ "gcp", "Google Cloud", "Compute Engine" },
	{ "azure", "Microsoft Azure", "Virtual Machines" },
	{ "lambda", "Lambda", "Lambda Cloud" },
	{ "local", "spotrun local cloud", "spotrun local compute" },
};

void finops__provider_lookup(const char *id, const char **display,
			     const char **service)
{
	for (size_t i = 0; i < sizeof providers / sizeof providers[0]; i++) {
		if (!strcmp(id, providers[i].id)) {
			*display = providers[i].display;
			*service = providers[i].service;
			return;
		}
	}
	*display = id;
	*service = id;
}

/* Format |v| / 10^scale as a decimal with trailing zeros trimmed. */
static int fmt_scaled(__int128 v, int scale, char *buf, size_t n)
{
	char digits[64];
	__int128 div = 1, ip, fp;
	int neg = v < 0, len;

	for (int i = 0; i < scale; i++)
		div *= 10;
	if (neg)
		v = -v;
	ip = v / div;
	fp = v % div;
	len = snprintf(digits, sizeof digits, "%s%llu", neg ? "-" : "",
		       (unsigned long long)ip);
	if (fp != 0) {
		char frac[40];
		int fl;

		snprintf(frac, sizeof frac, "%0*llu", scale, (unsigned long long)fp);
		fl = (int)strlen(frac);
		while (fl > 0 && frac[fl - 1] == '0')
			frac[--fl] = '\0';
		len = snprintf(digits + len, sizeof digits - (size_t)len, ".%s",
			       frac) + len;
	}
	if (len < 0 || (size_t)len >= n)
		return -ENOSPC;
	memcpy(buf, digits, (size_t)len + 1);
	return len;
}

int finops_fmt_micros(sr_micros m, char *buf, size_t n)
{
	return fmt_scaled(m, 6, buf, n);
}

int finops_fmt_hours(int64_t ns, char *buf, size_t n)
{
	/* hours * 1e12 = ns * 1e12 / 3.6e12 = ns * 10 / 36, rounded half up */
	__int128 q = ((__int128)ns * 10 * 2 + 36) / (36 * 2);

	if (ns < 0)
		return -EINVAL;
	return fmt_scaled(q, 12, buf, n);
}

void finops__put_field(FILE *out, const char *s, int first)
{
	if (!first)
		fputc(',', out);
	if (!s)
		return; /* NULL: empty field */
	if (strpbrk(s, ",\"\r\n")) {
		fputc('"', out);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', out);
			fputc(*s, out);
		}
		fputc('"', out);
	} else {
		fputs(s, out);
	}
}


int finops__fmt_time(int64_t ns, char *buf, size_t n)
{
	return sr_time_format_rfc3339(ns, 0, buf, n) > 0 ? 0 : -ENOSPC;
}

/* Where the last ChargePeriod of each node ended (the export's own
 * memory, so rounding to whole seconds cannot make two periods of one
 * resource overlap). */
int64_t *finops__node_end_slot(struct node_ends *t, int64_t node)
{
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i][0] == node)
			return &t->v[i][1];
	}
	if (t->n == t->cap) {
		size_t nc = t->cap ? 2 * t->cap : 32;
		int64_t (*nv)[2] = realloc(t->v, nc * sizeof *nv);

		if (!nv)
			return NULL;
		t->v = nv;
		t->cap = nc;
	}
	t->v[t->n][0] = node;
	t->v[t->n][1] = INT64_MIN;
	return &t->v[t->n++][1];
}

/* Tags: {"spotrun/job-id":J,"spotrun/node-id":N} and the job's
 * chargeback labels ("spotrun/team", "spotrun/project",
 * "spotrun/cost-center") when set.  Labels hold no quote or backslash
 * (jobspec_label_bad), so they need no escaping. */
void finops__focus_tags(struct store_stmt *st, const char *job,
		       const char *node, char *out, size_t n)
{
	static const struct { const char *col, *tag; } labels[] = {
		{ "team", "spotrun/team" }, { "project", "spotrun/project" },
		{ "cost_center", "spotrun/cost-center" },
	};
	size_t l;

	if (job)
		l = (size_t)snprintf(out, n, "{\"spotrun/job-id\":%s,"
				     "\"spotrun/node-id\":%s", job, node);
	else
		l = (size_t)snprintf(out, n, "{\"spotrun/node-id\":%s", node);
	for (size_t i = 0; i < sizeof labels / sizeof labels[0] && l < n; i++) {
		const char *v = store_col_text(st, labels[i].col);

		if (*v)
			l += (size_t)snprintf(out + l, n - l, ",\"%s\":\"%s\"",
					      labels[i].tag, v);
	}
	if (l < n)
		snprintf(out + l, n - l, "}");
}

int finops__usage_fill(struct store_stmt *st, struct node_ends *ends,
		       struct finops_billed_map *bm, struct focus_usage *u)
{
	const char *np = store_col_text(st, "node_provider");
	bool is_billed = false;
	const char *accel = store_col_text(st, "accelerator");
	int64_t start = store_col_i64(st, "start_ns");
	int64_t end = store_col_i64(st, "end_ns");
	int64_t m0, m1, *last;
	sr_micros cost = store_col_i64(st, "cost");
	int rc = 0;

	memset(u, 0, sizeof *u);
	u->provider = store_col_text(st, "provider");
	u->region = store_col_text(st, "region");
	u->zone = store_col_text(st, "zone");
	u->type = store_col_text(st, "instance_type");
	u->accel = *accel ? accel : NULL;
	u->cat = ledger_pricing_name((int)store_col_i64(st, "pricing"));
	u->job_id = store_col_i64(st, "job_id");
	u->node_id = store_col_i64(st, "node_id");
	u->busy = (int)store_col_i64(st, "busy");
	u->spare = store_col_i64(st, "spare") != 0;
	u->cost = cost;
	u->unit_price = store_col_i64(st, "unit_price");
	u->billed_ns = store_col_i64(st, "billed_ns");
	u->has_util = !store_col_null(st, "util_permille");
	u->has_reserved = !store_col_null(st, "reserved_price");
	finops__provider_lookup(u->provider, &u->display, &u->service);
	if (!u->cat)
		u->cat = "Other";
	last = finops__node_end_slot(ends, u->node_id);
	if (!last)
		return -ENOMEM;
	/* Whole seconds, both ends rounded the same way (a boundary shared
	 * by two consecutive rows maps to one instant), and no earlier than
	 * this node's previous period ended. */
	start -= start % SR_NS_PER_SEC;
	end -= end % SR_NS_PER_SEC;
	if (start < *last)
		start = *last;
	if (end < start + SR_NS_PER_SEC)
		end = start + SR_NS_PER_SEC;
	*last = end;
	u->start_ns = start;
	u->end_ns = end;
	m0 = sr_time_month_start(start, 0);
	m1 = sr_time_month_start(start, 1);
	rc |= finops__fmt_time(m0, u->bps, sizeof u->bps);
	rc |= finops__fmt_time(m1, u->bpe, sizeof u->bpe);
	rc |= finops__fmt_time(start, u->cps, sizeof u->cps);
	rc |= finops__fmt_time(end, u->cpe, sizeof u->cpe);
	rc |= finops_fmt_micros(cost, u->est, sizeof u->est) < 0;
	/* the day as reconcile matched it: the row's ChargePeriodStart */
	cost = finops_billed_share(bm, u->job_id > 0 ? u->job_id : 0,
				   start / (INT64_C(86400) * SR_NS_PER_SEC),
				   *np ? np : u->provider, cost, &is_billed);
	rc |= finops_fmt_micros(cost, u->billed, sizeof u->billed) < 0;
	rc |= finops_fmt_micros(store_col_i64(st, "list_cost"), u->list,
				sizeof u->list) < 0;
	rc |= finops_fmt_micros(store_col_i64(st, "list_price"), u->lup,
				sizeof u->lup) < 0;
	rc |= finops_fmt_micros(u->busy || u->spare ? 0 : cost, u->idle,
				sizeof u->idle) < 0;
	rc |= finops_fmt_hours(u->billed_ns, u->qty, sizeof u->qty) < 0;
	if (u->has_reserved) {
		rc |= finops_fmt_micros(store_col_i64(st, "reserved_price"), u->rup,
					sizeof u->rup) < 0;
		rc |= finops_fmt_micros(store_col_i64(st, "reserved_cost"),
					u->rcost, sizeof u->rcost) < 0;
	}
	if (u->has_util)
		rc |= finops_fmt_micros((sr_micros)(int)store_col_i64(st, "util_permille") * 1000,
					u->util, sizeof u->util) < 0;
	if (rc)
		return -ENOSPC;
	snprintf(u->gpus, sizeof u->gpus, "%d", (int)store_col_i64(st, "gpus"));
	snprintf(u->node, sizeof u->node, "%lld", (long long)u->node_id);
	snprintf(u->job, sizeof u->job, "%lld", (long long)u->job_id);
	snprintf(u->rid, sizeof u->rid, "node-%s", u->node);
	snprintf(u->sku, sizeof u->sku, "%s/%s/%s/%s", u->provider, u->type,
		 u->region, u->cat);
	if (u->accel)
		snprintf(u->desc, sizeof u->desc, "%s (%sx %s) %s pricing in %s",
			 u->type, u->gpus, u->accel, u->cat,
			 *u->zone ? u->zone : u->region);
	else
		snprintf(u->desc, sizeof u->desc, "%s %s pricing in %s", u->type,
			 u->cat, *u->zone ? u->zone : u->region);
	finops__focus_tags(st, u->job_id > 0 ? u->job : NULL, u->node, u->tags,
			   sizeof u->tags);
	return 0;
}

const char *finops__usage_state(const struct focus_usage *u)
{
	return u->spare ? "Spare" : u->busy ? "Busy" : "Idle";
}

static int write_row(struct store_stmt *st, const struct finops_focus_opts *o,
		     struct node_ends *ends, struct finops_billed_map *bm,
		     FILE *out)
{
	struct focus_usage u;
	int rc = finops__usage_fill(st, ends, bm, &u);

	if (rc)
		return rc;
	const char *vals[] = {
		u.billed, o->billing_account_id, o->billing_account_name, "USD",
		u.bps, u.bpe, "Usage", NULL, u.desc, u.cps, u.cpe, u.list,
		u.billed, u.display, u.list, u.qty, "Hours", u.display,
		u.display, "Compute", u.service, *u.zone ? u.zone : NULL, u.qty,
		"Hours", u.lup, u.cat, u.region, u.region, u.rid,
		"Virtual Machine", u.sku, u.tags,
		u.job_id > 0 ? u.job : NULL, u.node, u.accel, u.gpus,
		finops__usage_state(&u), u.has_util ? u.util : NULL,
		u.has_reserved ? u.rup : NULL, u.has_reserved ? u.rcost : NULL,
		u.idle, u.est,
	};
	_Static_assert(sizeof vals / sizeof vals[0] ==
		       sizeof finops_focus_columns / sizeof finops_focus_columns[0] - 1,
		       "one value per FOCUS column");
	for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
		finops__put_field(out, vals[i], i == 0);
	fputs("\r\n", out);
	return 0;
}

int finops_focus_write(struct store *db, const struct finops_filter *f,
		       const struct finops_focus_opts *o, FILE *out,
		       size_t *nrows, struct sr_err *e)
{
	struct finops_focus_opts def = { "spotrun", "spotrun" };
	struct finops_billed_map bm = { 0 };
	struct node_ends ends = { 0 };
	struct store_stmt *st = NULL;
	size_t n = 0;
	int rc;

	if (nrows)
		*nrows = 0;
	if (o) {
		if (o->billing_account_id && *o->billing_account_id)
			def.billing_account_id = o->billing_account_id;
		if (o->billing_account_name && *o->billing_account_name)
			def.billing_account_name = o->billing_account_name;
	}
	rc = finops_billed_map_load(db, &bm, e);
	if (rc)
		return sr_err_prefix(e, "FOCUS export");
	rc = finops__prepare_filtered(db, finops__usage_sql, f, &st, e);
	if (rc) {
		finops_billed_map_free(&bm);
		return rc;
	}
	for (size_t i = 0; finops_focus_columns[i]; i++)
		finops__put_field(out, finops_focus_columns[i], i == 0);
	fputs("\r\n", out);
	while ((rc = store_step(st, e)) == 1) {
		rc = write_row(st, &def, &ends, &bm, out);
		if (rc) {
			sr_err_set(e, rc, "FOCUS export: row %zu: %s", n + 1,
				   rc == -ENOMEM ? "out of memory" : "value too long");
			goto out;
		}
		n++;
	}
	if (rc < 0) {
		sr_err_prefix(e, "FOCUS export");
		goto out;
	}
	if (ferror(out))
		rc = sr_err_set(e, -EIO, "FOCUS export: write failed");
	if (nrows)
		*nrows = n;
out:
	store_done(st);
	free(ends.v);
	finops_billed_map_free(&bm);
	return rc;
}

int finops_focus_export(struct store *db, const struct finops_filter *f,
			const struct finops_focus_opts *o, const char *path,
			size_t *nrows, struct sr_err *e)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int rc;

	if (!mem)
		return sr_err_set(e, -ENOMEM, "FOCUS export: out of memory");
	rc = finops_focus_write(db, f, o, mem, nrows, e);
	if (fclose(mem) != 0 && !rc)
		rc = sr_err_set(e, -ENOMEM, "FOCUS export: out of memory");
	if (!rc)
		rc = sr_fs_write_atomic(path, buf, len, 0644, e);
	free(buf);
	return rc;
}
