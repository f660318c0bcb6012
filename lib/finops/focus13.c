/*
 * focus13.c - FOCUS 1.3 export (see focus13.h).
 *
 * Cost and Usage, one row per ledger row: the 1.2 values (focus.c:
 * BilledCost = EffectiveCost, the cloud's bill where one was applied,
 * the estimate beside it in x_EstimatedCost) with
 * 1.3's names - ServiceProviderName and HostProviderName replace
 * ProviderName and PublisherName - and
 *   ChargeFrequency      "Usage-Based"
 *   ContractedUnitPrice  = ListUnitPrice (no negotiated discount)
 *   ServiceSubcategory   "Virtual Machines"
 *   ResourceName         "node-<id>"
 *   SkuPriceId           "<SkuId>/<unit price in micro-dollars>"
 *   ContractApplied      for a Committed row whose provider, region and
 *                        instance type a finops.json commitment covers at
 *                        that time: [{"ContractCommitmentId": id,
 *                        "ContractCommitmentAppliedCost": cost,
 *                        "ContractCommitmentAppliedQuantity": hours,
 *                        "ContractCommitmentAppliedUnit": "Hours"}]; else
 *                        NULL
 *   Allocated*           NULL (not a split charge)
 * Then, per shared cost (alloc.h) and month, one allocated charge per job
 * it is split over:
 *   ResourceId/-Name     the shared resource (control plane instance, or
 *                        the commitment id); ResourceType "Virtual
 *                        Machine" / "Reserved Capacity"
 *   BilledCost = EffectiveCost = ListCost = ContractedCost = the share
 *   PricingQuantity      the origin charge's hours x AllocatedRatio
 *   ListUnitPrice = ContractedUnitPrice = the origin's hourly price
 *   ChargeFrequency      "Usage-Based" (control plane), "Recurring"
 *                        (reserved capacity); PricingCategory "Standard"
 *                        / "Committed"; x_UsageState "Idle" for unused
 *                        reserved capacity (waste, allocated too)
 *   AllocatedMethodId    "spotrun-gpu-hours" | "spotrun-even-by-team"
 *   AllocatedMethodDetails {"Elements":[{"AllocatedRatio": r,
 *                        "UsageUnit": "GPU-Hours", "UsageQuantity": h}]}
 *   AllocatedResourceId  "job-<id>" ("unassigned" when no job ran)
 *   AllocatedResourceName the job's name
 *   AllocatedTags        the job's labels, as Tags
 *   ContractApplied      reserved capacity: its commitment, this share
 * Split rule (FOCUS 1.3, Cost and Usage, AllocatedMethodDetails): the
 * ratios of one origin charge sum to 1 and its shares to its cost.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "dbutil.h"
#include "focus13.h"
#include "focus_int.h"
#include "ledger.h"

const char *const finops_focus13_columns[] = {
	"AllocatedMethodDetails", "AllocatedMethodId", "AllocatedResourceId",
	"AllocatedResourceName", "AllocatedTags", "AvailabilityZone",
	"BilledCost", "BillingAccountId", "BillingAccountName",
	"BillingCurrency", "BillingPeriodEnd", "BillingPeriodStart",
	"ChargeCategory", "ChargeClass", "ChargeDescription",
	"ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart",
	"ConsumedQuantity", "ConsumedUnit", "ContractApplied",
	"ContractedCost", "ContractedUnitPrice", "EffectiveCost",
	"HostProviderName", "InvoiceIssuerName", "ListCost", "ListUnitPrice",
	"PricingCategory", "PricingQuantity", "PricingUnit", "RegionId",
	"RegionName", "ResourceId", "ResourceName", "ResourceType",
	"ServiceCategory", "ServiceName", "ServiceProviderName",
	"ServiceSubcategory", "SkuId", "SkuPriceId", "Tags",
	"x_JobId", "x_NodeId", "x_AcceleratorName", "x_AcceleratorCount",
	"x_UsageState", "x_Utilization", "x_ReservedUnitPrice",
	"x_ReservedCost", "x_IdleCost", "x_EstimatedCost",
	NULL,
};

enum {
	C_AMD, C_AMI, C_ARI, C_ARN, C_ATAGS, C_AZ, C_BILLED, C_BAID, C_BANAME,
	C_CUR, C_BPE, C_BPS, C_CAT, C_CLASS, C_DESC, C_FREQ, C_CPE, C_CPS,
	C_CQ, C_CU, C_CAPPLIED, C_CCOST, C_CUP, C_ECOST, C_HOST, C_ISSUER,
	C_LCOST, C_LUP, C_PCAT, C_PQ, C_PU, C_RID, C_RNAME, C_RESID, C_RESNAME,
	C_RTYPE, C_SCAT, C_SNAME, C_SPROV, C_SSUB, C_SKU, C_SKUP, C_TAGS,
	C_XJOB, C_XNODE, C_XACC, C_XACCN, C_XSTATE, C_XUTIL, C_XRUP, C_XRCOST,
	C_XIDLE, C_XEST, NCOL
};

const char *const finops_focus13_cc_columns[] = {
	"BillingCurrency", "ContractCommitmentCategory",
	"ContractCommitmentCost", "ContractCommitmentDescription",
	"ContractCommitmentId", "ContractCommitmentPeriodEnd",
	"ContractCommitmentPeriodStart", "ContractCommitmentQuantity",
	"ContractCommitmentType", "ContractCommitmentUnit", "ContractId",
	"ContractPeriodEnd", "ContractPeriodStart",
	"x_ProviderName", "x_RegionId", "x_InstanceType", "x_InstanceCount",
	"x_HourlyPrice",
	NULL,
};

static void put_row(FILE *out, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		finops__put_field(out, v[i], i == 0);
	fputs("\r\n", out);
}

static void put_header(FILE *out, const char *const *cols)
{
	for (size_t i = 0; cols[i]; i++)
		finops__put_field(out, cols[i], i == 0);
	fputs("\r\n", out);
}

/* The commitment covering a Committed row, or NULL. */
static const struct finops_commitment *covering(const struct finops_conf *c,
						const struct focus_usage *u)
{
	for (size_t i = 0; c && i < c->ncommitments; i++) {
		const struct finops_commitment *m = &c->commitments[i];

		if (!strcmp(m->provider, u->provider) &&
		    !strcmp(m->region, u->region) &&
		    !strcmp(m->instance_type, u->type) &&
		    u->start_ns >= m->start_ns && u->start_ns < m->end_ns)
			return m;
	}
	return NULL;
}

static void applied(char *buf, size_t n, const char *id, const char *cost,
		    const char *qty)
{
	snprintf(buf, n, "[{\"ContractCommitmentId\":\"%s\","
		 "\"ContractCommitmentAppliedCost\":%s,"
		 "\"ContractCommitmentAppliedQuantity\":%s,"
		 "\"ContractCommitmentAppliedUnit\":\"Hours\"}]", id, cost, qty);
}

static int usage_row(struct store_stmt *st, const struct finops_focus_opts *o,
		     const struct finops_conf *c, struct node_ends *ends,
		     struct finops_billed_map *bm, FILE *out)
{
	struct focus_usage u;
	const struct finops_commitment *cm;
	char skup[560], app[400];
	const char *v[NCOL] = { 0 };
	int rc = finops__usage_fill(st, ends, bm, &u);

	if (rc)
		return rc;
	snprintf(skup, sizeof skup, "%s/%lld", u.sku, (long long)u.unit_price);
	cm = !strcmp(u.cat, "Committed") ? covering(c, &u) : NULL;
	if (cm)
		applied(app, sizeof app, cm->id, u.billed, u.qty);
	v[C_AZ] = *u.zone ? u.zone : NULL;
	v[C_BILLED] = v[C_ECOST] = u.billed;
	v[C_BAID] = o->billing_account_id;
	v[C_BANAME] = o->billing_account_name;
	v[C_CUR] = "USD";
	v[C_BPS] = u.bps;
	v[C_BPE] = u.bpe;
	v[C_CAT] = "Usage";
	v[C_DESC] = u.desc;
	v[C_FREQ] = "Usage-Based";
	v[C_CPS] = u.cps;
	v[C_CPE] = u.cpe;
	v[C_CQ] = v[C_PQ] = u.qty;
	v[C_CU] = v[C_PU] = "Hours";
	v[C_CAPPLIED] = cm ? app : NULL;
	v[C_CCOST] = v[C_LCOST] = u.list;
	v[C_CUP] = v[C_LUP] = u.lup;
	v[C_HOST] = v[C_ISSUER] = v[C_SPROV] = u.display;
	v[C_PCAT] = u.cat;
	v[C_RID] = v[C_RNAME] = u.region;
	v[C_RESID] = v[C_RESNAME] = u.rid;
	v[C_RTYPE] = "Virtual Machine";
	v[C_SCAT] = "Compute";
	v[C_SNAME] = u.service;
	v[C_SSUB] = "Virtual Machines";
	v[C_SKU] = u.sku;
	v[C_SKUP] = skup;
	v[C_TAGS] = u.tags;
	v[C_XJOB] = u.job_id > 0 ? u.job : NULL;
	v[C_XNODE] = u.node;
	v[C_XACC] = u.accel;
	v[C_XACCN] = u.gpus;
	v[C_XSTATE] = finops__usage_state(&u);
	v[C_XUTIL] = u.has_util ? u.util : NULL;
	v[C_XRUP] = u.has_reserved ? u.rup : NULL;
	v[C_XRCOST] = u.has_reserved ? u.rcost : NULL;
	v[C_XIDLE] = u.idle;
	v[C_XEST] = u.est;
	put_row(out, v, NCOL);
	return 0;
}

/* A job's labels as Tags ("{}" for none). */
static void share_tags(const struct finops_share *s, char *buf, size_t n)
{
	size_t l = (size_t)snprintf(buf, n, "{");

	if (s->job_id)
		l += (size_t)snprintf(buf + l, n - l, "\"spotrun/job-id\":%lld",
				      (long long)s->job_id);
	if (*s->team && l < n)
		l += (size_t)snprintf(buf + l, n - l, "%s\"spotrun/team\":\"%s\"",
				      l > 1 ? "," : "", s->team);
	if (*s->project && l < n)
		l += (size_t)snprintf(buf + l, n - l, "%s\"spotrun/project\":\"%s\"",
				      l > 1 ? "," : "", s->project);
	if (*s->cost_center && l < n)
		l += (size_t)snprintf(buf + l, n - l,
				      "%s\"spotrun/cost-center\":\"%s\"",
				      l > 1 ? "," : "", s->cost_center);
	if (l < n)
		snprintf(buf + l, n - l, "}");
}

static int share_row(const struct finops_alloc *a, const struct finops_share *s,
		     const struct finops_conf *c, const struct finops_focus_opts *o,
		     FILE *out)
{
	const struct finops_shared_item *it = &a->items[s->item];
	bool cp = it->kind == FINOPS_SHARED_CONTROL_PLANE;
	char cost[32], up[32], qty[48], gpuh[48], bps[32], bpe[32], cps[32],
	     cpe[32], amd[200], ari[40], tags[400], desc[300], sku[300],
	     skup[340], app[400], job[24];
	const char *v[NCOL] = { 0 };
	int64_t q = (int64_t)((double)it->qty_ns * s->ratio + 0.5);
	int rc = 0;

	rc |= finops_fmt_micros(s->cost, cost, sizeof cost) < 0;
	rc |= finops_fmt_micros(it->unit_price, up, sizeof up) < 0;
	rc |= finops_fmt_hours(q, qty, sizeof qty) < 0;
	rc |= finops_fmt_hours(s->gpu_ns, gpuh, sizeof gpuh) < 0;
	rc |= finops__fmt_time(sr_time_month_start(it->start_ns, 0), bps, sizeof bps);
	rc |= finops__fmt_time(sr_time_month_start(it->start_ns, 1), bpe, sizeof bpe);
	rc |= finops__fmt_time(it->start_ns, cps, sizeof cps);
	rc |= finops__fmt_time(it->end_ns, cpe, sizeof cpe);
	if (rc)
		return -ENOSPC;
	snprintf(amd, sizeof amd, "{\"Elements\":[{\"AllocatedRatio\":%.12g,"
		 "\"UsageUnit\":\"GPU-Hours\",\"UsageQuantity\":%s}]}", s->ratio,
		 gpuh);
	if (s->job_id)
		snprintf(ari, sizeof ari, "job-%lld", (long long)s->job_id);
	else
		snprintf(ari, sizeof ari, "unassigned");
	snprintf(job, sizeof job, "%lld", (long long)s->job_id);
	share_tags(s, tags, sizeof tags);
	if (cp) {
		snprintf(desc, sizeof desc, "%s, shared (%s split)", c->cp_name,
			 finops_split_name(a->split));
		snprintf(sku, sizeof sku, "spotrun/control-plane");
	} else {
		snprintf(desc, sizeof desc, "unused reserved %s in %s (%s), shared "
			 "(%s split)", it->cm->instance_type, it->cm->region,
			 it->cm->id, finops_split_name(a->split));
		snprintf(sku, sizeof sku, "%s/%s/%s/Committed", it->cm->provider,
			 it->cm->instance_type, it->cm->region);
		applied(app, sizeof app, it->cm->id, cost, qty);
	}
	snprintf(skup, sizeof skup, "%s/%lld", sku, (long long)it->unit_price);
	v[C_AMD] = amd;
	v[C_AMI] = a->split == FINOPS_SPLIT_EVEN ? "spotrun-even-by-team" :
						   "spotrun-gpu-hours";
	v[C_ARI] = ari;
	v[C_ARN] = *s->job_name ? s->job_name : ari;
	v[C_ATAGS] = tags;
	v[C_BILLED] = v[C_ECOST] = v[C_LCOST] = v[C_CCOST] = cost;
	v[C_BAID] = o->billing_account_id;
	v[C_BANAME] = o->billing_account_name;
	v[C_CUR] = "USD";
	v[C_BPS] = bps;
	v[C_BPE] = bpe;
	v[C_CAT] = "Usage";
	v[C_DESC] = desc;
	v[C_FREQ] = cp ? "Usage-Based" : "Recurring";
	v[C_CPS] = cps;
	v[C_CPE] = cpe;
	v[C_CQ] = v[C_PQ] = qty;
	v[C_CU] = v[C_PU] = "Hours";
	v[C_CAPPLIED] = cp ? NULL : app;
	v[C_CUP] = v[C_LUP] = up;
	v[C_HOST] = v[C_ISSUER] = v[C_SPROV] = "spotrun";
	if (!cp) {
		const char *svc;

		finops__provider_lookup(it->cm->provider, &v[C_SPROV], &svc);
		v[C_HOST] = v[C_ISSUER] = v[C_SPROV];
		v[C_SNAME] = svc;
		v[C_RID] = v[C_RNAME] = it->cm->region;
	} else {
		v[C_SNAME] = "spotrun control plane";
	}
	v[C_PCAT] = cp ? "Standard" : "Committed";
	v[C_RESID] = cp ? c->cp_resource_id : it->cm->id;
	v[C_RESNAME] = cp ? c->cp_name : (*it->cm->description ?
					  it->cm->description : it->cm->id);
	v[C_RTYPE] = cp ? "Virtual Machine" : "Reserved Capacity";
	v[C_SCAT] = "Compute";
	v[C_SSUB] = "Virtual Machines";
	v[C_SKU] = sku;
	v[C_SKUP] = skup;
	v[C_TAGS] = tags;
	v[C_XJOB] = s->job_id ? job : NULL;
	v[C_XSTATE] = cp ? NULL : "Idle";
	v[C_XIDLE] = cp ? "0" : cost;
	v[C_XEST] = cost;
	put_row(out, v, NCOL);
	return 0;
}

int finops_focus13_write(struct store *db, const struct finops_filter *f,
			 const struct finops_focus_opts *o,
			 const struct finops_conf *c, const struct finops_alloc *a,
			 FILE *out, size_t *nrows, struct sr_err *e)
{
	struct finops_focus_opts def = { "spotrun", "spotrun" };
	struct finops_billed_map bm = { 0 };
	struct node_ends ends = { 0 };
	struct store_stmt *st = NULL;
	size_t n = 0;
	int rc;

	if (nrows)
		*nrows = 0;
	if (o && o->billing_account_id && *o->billing_account_id)
		def.billing_account_id = o->billing_account_id;
	if (o && o->billing_account_name && *o->billing_account_name)
		def.billing_account_name = o->billing_account_name;
	rc = finops_billed_map_load(db, &bm, e);
	if (rc)
		return sr_err_prefix(e, "FOCUS export");
	rc = finops__prepare_filtered(db, finops__usage_sql, f, &st, e);
	if (rc) {
		finops_billed_map_free(&bm);
		return rc;
	}
	put_header(out, finops_focus13_columns);
	while ((rc = store_step(st, e)) == 1) {
		rc = usage_row(st, &def, c, &ends, &bm, out);
		if (rc)
			break;
		n++;
	}
	store_done(st);
	free(ends.v);
	finops_billed_map_free(&bm);
	if (rc < 0 && rc != -ENOMEM && rc != -ENOSPC)
		return sr_err_prefix(e, "FOCUS export");
	for (size_t i = 0; !rc && a && i < a->nshares; i++) {
		if (f && f->job_id && a->shares[i].job_id != f->job_id)
			continue;
		rc = share_row(a, &a->shares[i], c, &def, out);
		n++;
	}
	if (rc)
		return sr_err_set(e, rc, "FOCUS export: row %zu: %s", n + 1,
				  rc == -ENOMEM ? "out of memory" : "value too long");
	if (ferror(out))
		return sr_err_set(e, -EIO, "FOCUS export: write failed");
	if (nrows)
		*nrows = n;
	return 0;
}

int finops_focus13_cc_write(const struct finops_conf *c,
			    const struct finops_focus_opts *o, FILE *out,
			    size_t *nrows, struct sr_err *e)
{
	(void)o;
	put_header(out, finops_focus13_cc_columns);
	for (size_t i = 0; c && i < c->ncommitments; i++) {
		const struct finops_commitment *m = &c->commitments[i];
		char cost[32], qty[48], ps[32], pe[32], cnt[16], up[32];
		int64_t hours_ns = (m->end_ns - m->start_ns) * m->count;
		int rc = 0;

		rc |= finops_fmt_micros(sr_money_cost(m->hourly_price, hours_ns),
					cost, sizeof cost) < 0;
		rc |= finops_fmt_hours(hours_ns, qty, sizeof qty) < 0;
		rc |= finops_fmt_micros(m->hourly_price, up, sizeof up) < 0;
		rc |= finops__fmt_time(m->start_ns, ps, sizeof ps);
		rc |= finops__fmt_time(m->end_ns, pe, sizeof pe);
		if (rc)
			return sr_err_set(e, -ENOSPC, "FOCUS export: commitment %s: "
					  "value too long", m->id);
		snprintf(cnt, sizeof cnt, "%d", m->count);
		const char *v[] = {
			"USD", "Usage", cost, *m->description ? m->description : NULL,
			m->id, pe, ps, qty, "Reserved Capacity", "Hours",
			m->contract_id, pe, ps, m->provider, m->region,
			m->instance_type, cnt, up,
		};
		_Static_assert(sizeof v / sizeof v[0] ==
			       sizeof finops_focus13_cc_columns /
			       sizeof finops_focus13_cc_columns[0] - 1,
			       "one value per column");
		put_row(out, v, sizeof v / sizeof v[0]);
	}
	if (nrows)
		*nrows = c ? c->ncommitments : 0;
	return ferror(out) ? sr_err_set(e, -EIO, "FOCUS export: write failed") : 0;
}

json_t *finops_focus13_metadata(struct store *db, const struct finops_filter *f,
				int64_t now_ns, size_t cu_rows, size_t cc_rows,
				struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int64_t newest = 0;
	char created[40], fresh[40] = "", through[40];
	int64_t until = f && f->until_ns ? f->until_ns : now_ns;
	bool complete;
	int rc = store_prepare(db, "SELECT max(end_ns) AS m FROM ledger", &st, e);

	if (rc)
		return NULL;
	rc = store_step(st, e);
	if (rc == 1 && !store_col_null(st, "m"))
		newest = store_col_i64(st, "m");
	store_done(st);
	if (rc < 0)
		return NULL;
	finops__fmt_time(now_ns - now_ns % SR_NS_PER_SEC, created, sizeof created);
	if (newest)
		finops__fmt_time(newest - newest % SR_NS_PER_SEC, fresh, sizeof fresh);
	finops__fmt_time(until - until % SR_NS_PER_SEC, through, sizeof through);
	/* complete: the ledger has billed through the window's end (the
	 * daemon bills every interval; a window ending in the future, or
	 * past the newest interval billed, is still filling) */
	complete = f && f->until_ns && newest >= f->until_ns;
	return json_pack("{s:s,s:s,s:s,s:[{s:s,s:I,s:s?,s:{s:b,s:s,s:s?}},"
			 "{s:s,s:I,s:s,s:{s:b}}]}",
			 "FocusVersion", "1.3", "DataGenerator", "spotrun",
			 "CreationDate", created,
			 "Datasets",
			 "DatasetName", "CostAndUsage", "RowCount", (json_int_t)cu_rows,
			 "DataLastUpdated", newest ? fresh : NULL,
			 "DatasetCompleteness", "Complete", complete,
			 "WindowEnd", through,
			 "CompleteThrough", newest ? fresh : NULL,
			 "DatasetName", "ContractCommitment",
			 "RowCount", (json_int_t)cc_rows, "DataLastUpdated", created,
			 "DatasetCompleteness", "Complete", 1);
}
