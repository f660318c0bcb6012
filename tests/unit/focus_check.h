/*
 * focus_check.h - a checker of FOCUS 1.3 exports: each rule below is one
 * requirement of the specification for a column spotrun exports, with
 * the section it comes from.  Sources (no copy of the ratified text is
 * on this machine): the FOCUS_Spec repository's column files (1.2:
 * specification/columns/<column>.md, local mirror; 1.3:
 * specification/datasets/cost_and_usage/columns/<column>.md and
 * .../contract_commitment/, read through the coordinator's notes and two
 * files, contractapplied.md and allocatedmethoddetails.md).  Cited as
 * "FOCUS 1.3 <Dataset>, <Column>" or "FOCUS <attribute>".
 * Header-only; include after cmocka.h and finops_fixture.h.
 */
#ifndef FOCUS_CHECK_H
#define FOCUS_CHECK_H

#include <jansson.h>
#include <math.h>
#include <stdio.h>

enum fc_type { FC_STR, FC_DEC, FC_DT, FC_JSON };

struct fc_rule {
	const char *col;
	enum fc_type type;
	int nullable;
	const char *allowed;  /* "|a|b|" or NULL */
	const char *cite;
};

/* Cost and Usage, FOCUS 1.3: the columns spotrun exports. */
static const struct fc_rule fc_cu[] = {
	{ "AllocatedMethodDetails", FC_JSON, 1, NULL, "FOCUS 1.3 Cost and Usage, AllocatedMethodDetails (JSON object; null when not a split)" },
	{ "AllocatedMethodId", FC_STR, 1, NULL, "FOCUS 1.3 Cost and Usage, AllocatedMethodId" },
	{ "AllocatedResourceId", FC_STR, 1, NULL, "FOCUS 1.3 Cost and Usage, AllocatedResourceId" },
	{ "AllocatedResourceName", FC_STR, 1, NULL, "FOCUS 1.3 Cost and Usage, AllocatedResourceName" },
	{ "AllocatedTags", FC_JSON, 1, NULL, "FOCUS 1.3 Cost and Usage, AllocatedTags (KeyValueFormat)" },
	{ "AvailabilityZone", FC_STR, 1, NULL, "FOCUS AvailabilityZone" },
	{ "BilledCost", FC_DEC, 0, NULL, "FOCUS BilledCost (Decimal, not null)" },
	{ "BillingAccountId", FC_STR, 0, NULL, "FOCUS BillingAccountId (not null)" },
	{ "BillingAccountName", FC_STR, 1, NULL, "FOCUS BillingAccountName" },
	{ "BillingCurrency", FC_STR, 0, "|USD|", "FOCUS BillingCurrency (ISO 4217, not null)" },
	{ "BillingPeriodEnd", FC_DT, 0, NULL, "FOCUS BillingPeriodEnd (DateTimeFormat, not null)" },
	{ "BillingPeriodStart", FC_DT, 0, NULL, "FOCUS BillingPeriodStart (DateTimeFormat, not null)" },
	{ "ChargeCategory", FC_STR, 0, "|Usage|Purchase|Tax|Credit|Adjustment|", "FOCUS ChargeCategory (allowed values)" },
	{ "ChargeClass", FC_STR, 1, "|Correction|", "FOCUS ChargeClass (null or Correction)" },
	{ "ChargeDescription", FC_STR, 1, NULL, "FOCUS ChargeDescription" },
	{ "ChargeFrequency", FC_STR, 1, "|One-Time|Recurring|Usage-Based|", "FOCUS ChargeFrequency (allowed values)" },
	{ "ChargePeriodEnd", FC_DT, 0, NULL, "FOCUS ChargePeriodEnd (not null)" },
	{ "ChargePeriodStart", FC_DT, 0, NULL, "FOCUS ChargePeriodStart (not null)" },
	{ "ConsumedQuantity", FC_DEC, 1, NULL, "FOCUS ConsumedQuantity" },
	{ "ConsumedUnit", FC_STR, 1, NULL, "FOCUS ConsumedUnit" },
	{ "ContractApplied", FC_JSON, 1, NULL, "FOCUS 1.3 Cost and Usage, ContractApplied (KeyValueFormat)" },
	{ "ContractedCost", FC_DEC, 0, NULL, "FOCUS ContractedCost (not null)" },
	{ "ContractedUnitPrice", FC_DEC, 1, NULL, "FOCUS ContractedUnitPrice" },
	{ "EffectiveCost", FC_DEC, 0, NULL, "FOCUS EffectiveCost (not null)" },
	{ "HostProviderName", FC_STR, 0, NULL, "FOCUS 1.3 Cost and Usage, HostProviderName (replaces PublisherName)" },
	{ "InvoiceIssuerName", FC_STR, 0, NULL, "FOCUS InvoiceIssuerName (not null)" },
	{ "ListCost", FC_DEC, 0, NULL, "FOCUS ListCost (not null)" },
	{ "ListUnitPrice", FC_DEC, 1, NULL, "FOCUS ListUnitPrice" },
	{ "PricingCategory", FC_STR, 1, "|Standard|Dynamic|Committed|Other|", "FOCUS PricingCategory (allowed values)" },
	{ "PricingQuantity", FC_DEC, 1, NULL, "FOCUS PricingQuantity" },
	{ "PricingUnit", FC_STR, 1, NULL, "FOCUS PricingUnit" },
	{ "RegionId", FC_STR, 1, NULL, "FOCUS RegionId" },
	{ "RegionName", FC_STR, 1, NULL, "FOCUS RegionName" },
	{ "ResourceId", FC_STR, 1, NULL, "FOCUS ResourceId" },
	{ "ResourceName", FC_STR, 1, NULL, "FOCUS ResourceName" },
	{ "ResourceType", FC_STR, 1, NULL, "FOCUS ResourceType" },
	{ "ServiceCategory", FC_STR, 0, "|AI and Machine Learning|Analytics|Business Applications|Compute|Databases|Developer Tools|Multicloud|Identity|Integration|Internet of Things|Management and Governance|Media|Migration|Mobile|Networking|Security|Storage|Web|Other|", "FOCUS ServiceCategory (allowed values)" },
	{ "ServiceName", FC_STR, 0, NULL, "FOCUS ServiceName (not null)" },
	{ "ServiceProviderName", FC_STR, 0, NULL, "FOCUS 1.3 Cost and Usage, ServiceProviderName (replaces ProviderName)" },
	{ "ServiceSubcategory", FC_STR, 1, NULL, "FOCUS ServiceSubcategory" },
	{ "SkuId", FC_STR, 1, NULL, "FOCUS SkuId" },
	{ "SkuPriceId", FC_STR, 1, NULL, "FOCUS SkuPriceId" },
	{ "Tags", FC_JSON, 1, NULL, "FOCUS Tags (KeyValueFormat)" },
};

/* Contract Commitment, FOCUS 1.3 (specification/datasets/
 * contract_commitment/dataset.md and columns/). */
static const struct fc_rule fc_cc[] = {
	{ "BillingCurrency", FC_STR, 1, "|USD|", "FOCUS 1.3 Contract Commitment, BillingCurrency" },
	{ "ContractCommitmentCategory", FC_STR, 0, "|Spend|Usage|", "FOCUS 1.3 Contract Commitment, ContractCommitmentCategory (not null)" },
	{ "ContractCommitmentCost", FC_DEC, 1, NULL, "FOCUS 1.3 Contract Commitment, ContractCommitmentCost" },
	{ "ContractCommitmentDescription", FC_STR, 1, NULL, "FOCUS 1.3 Contract Commitment, ContractCommitmentDescription" },
	{ "ContractCommitmentId", FC_STR, 0, NULL, "FOCUS 1.3 Contract Commitment, ContractCommitmentId (not null)" },
	{ "ContractCommitmentPeriodEnd", FC_DT, 0, NULL, "FOCUS 1.3 Contract Commitment, ContractCommitmentPeriodEnd (not null)" },
	{ "ContractCommitmentPeriodStart", FC_DT, 0, NULL, "FOCUS 1.3 Contract Commitment, ContractCommitmentPeriodStart (not null)" },
	{ "ContractCommitmentQuantity", FC_DEC, 1, NULL, "FOCUS 1.3 Contract Commitment, ContractCommitmentQuantity" },
	{ "ContractCommitmentType", FC_STR, 0, NULL, "FOCUS 1.3 Contract Commitment, ContractCommitmentType (not null)" },
	{ "ContractCommitmentUnit", FC_STR, 1, NULL, "FOCUS 1.3 Contract Commitment, ContractCommitmentUnit" },
	{ "ContractId", FC_STR, 0, NULL, "FOCUS 1.3 Contract Commitment, ContractId (not null)" },
	{ "ContractPeriodEnd", FC_DT, 0, NULL, "FOCUS 1.3 Contract Commitment, ContractPeriodEnd (not null)" },
	{ "ContractPeriodStart", FC_DT, 0, NULL, "FOCUS 1.3 Contract Commitment, ContractPeriodStart (not null)" },
};

static void fc_fail(int row, const char *col, const char *v, const char *why,
		    const char *cite)
{
	fail_msg("row %d, %s = '%s': %s [%s]", row, col, v, why, cite);
}

/* Every rule over every row; ColumnHandling: each column present, its id
 * PascalCase or x_-prefixed (FOCUS ColumnHandling). */
static void fc_check_columns(const struct csv *c, const struct fc_rule *rules,
			     size_t n)
{
	for (int i = 0; i < c->nf[0]; i++) {
		const char *h = c->f[0][i];

		if (!(isupper((unsigned char)h[0]) || !strncmp(h, "x_", 2)) ||
		    (strpbrk(h, " -_") && strncmp(h, "x_", 2)))
			fc_fail(0, h, h, "column id not PascalCase nor x_ custom",
				"FOCUS ColumnHandling");
	}
	for (size_t k = 0; k < n; k++) {
		const struct fc_rule *r = &rules[k];
		int ci = col(c, r->col);

		for (int row = 1; row < c->nrows; row++) {
			const char *v = c->f[row][ci];
			char probe[200];

			if (!*v) {
				if (!r->nullable)
					fc_fail(row, r->col, v, "null not allowed", r->cite);
				continue;
			}
			if (!strcmp(v, "NULL") || !strcmp(v, "null"))
				fc_fail(row, r->col, v, "NULL written as text",
					"FOCUS NullHandling");
			if (r->type == FC_DEC && !is_focus_number(v))
				fc_fail(row, r->col, v, "not a decimal", "FOCUS NumericFormat");
			if (r->type == FC_DT && !is_focus_datetime(v))
				fc_fail(row, r->col, v, "not YYYY-MM-DDTHH:mm:ssZ",
					"FOCUS DateTimeFormat");
			if (r->type == FC_JSON) {
				json_t *j = json_loads(v, 0, NULL);

				if (!j || (!json_is_object(j) && !json_is_array(j)))
					fc_fail(row, r->col, v, "not JSON",
						"FOCUS KeyValueFormat");
				json_decref(j);
			}
			snprintf(probe, sizeof probe, "|%s|", v);
			if (r->allowed && !strstr(r->allowed, probe))
				fc_fail(row, r->col, v, "not an allowed value", r->cite);
		}
	}
}

static double fc_num(const struct csv *c, int r, const char *name)
{
	return atof(val(c, r, name));
}

/* The rules between columns of Cost and Usage rows. */
static void fc_check_cu(const struct csv *c, const struct csv *cc)
{
	fc_check_columns(c, fc_cu, sizeof fc_cu / sizeof fc_cu[0]);
	for (int r = 1; r < c->nrows; r++) {
		int64_t cps = ts(val(c, r, "ChargePeriodStart"));
		int64_t cpe = ts(val(c, r, "ChargePeriodEnd"));
		int64_t bps = ts(val(c, r, "BillingPeriodStart"));
		int64_t bpe = ts(val(c, r, "BillingPeriodEnd"));
		const char *amd = val(c, r, "AllocatedMethodDetails");
		const char *cap = val(c, r, "ContractApplied");

		if (!(cps < cpe))
			fc_fail(r, "ChargePeriodEnd", val(c, r, "ChargePeriodEnd"),
				"not after ChargePeriodStart", "FOCUS ChargePeriodEnd");
		if (!(bps <= cps && cpe <= bpe))
			fc_fail(r, "ChargePeriodStart", val(c, r, "ChargePeriodStart"),
				"charge period outside the billing period",
				"FOCUS BillingPeriodStart/BillingPeriodEnd");
		if (bps != sr_time_month_start(bps, 0) ||
		    bpe != sr_time_month_start(bps, 1))
			fc_fail(r, "BillingPeriodStart", val(c, r, "BillingPeriodStart"),
				"not a calendar month", "FOCUS BillingPeriodStart");
		if (*val(c, r, "PricingQuantity") && !*val(c, r, "PricingUnit"))
			fc_fail(r, "PricingUnit", "", "null with a PricingQuantity",
				"FOCUS PricingUnit");
		if (*val(c, r, "ConsumedQuantity") && !*val(c, r, "ConsumedUnit"))
			fc_fail(r, "ConsumedUnit", "", "null with a ConsumedQuantity",
				"FOCUS ConsumedUnit");
		if (*val(c, r, "ListUnitPrice") && *val(c, r, "PricingQuantity") &&
		    fabs(fc_num(c, r, "ListUnitPrice") * fc_num(c, r, "PricingQuantity") -
			 fc_num(c, r, "ListCost")) > 2e-6)
			fc_fail(r, "ListCost", val(c, r, "ListCost"),
				"not ListUnitPrice x PricingQuantity", "FOCUS ListCost");
		if (*val(c, r, "ContractedUnitPrice") && *val(c, r, "PricingQuantity") &&
		    fabs(fc_num(c, r, "ContractedUnitPrice") *
			 fc_num(c, r, "PricingQuantity") -
			 fc_num(c, r, "ContractedCost")) > 2e-6)
			fc_fail(r, "ContractedCost", val(c, r, "ContractedCost"),
				"not ContractedUnitPrice x PricingQuantity",
				"FOCUS ContractedCost");
		/* the Allocated* columns are null together */
		if (!*amd != !*val(c, r, "AllocatedMethodId") ||
		    !*amd != !*val(c, r, "AllocatedResourceId"))
			fc_fail(r, "AllocatedMethodId", val(c, r, "AllocatedMethodId"),
				"null unlike AllocatedMethodDetails",
				"FOCUS 1.3 Cost and Usage, AllocatedMethodId");
		if (*amd) {
			json_t *j = json_loads(amd, 0, NULL), *el = json_object_get(j, "Elements");
			size_t i;
			json_t *x;

			if (!json_is_array(el) || !json_array_size(el))
				fc_fail(r, "AllocatedMethodDetails", amd, "no Elements array",
					"FOCUS 1.3 Cost and Usage, AllocatedMethodDetails");
			json_array_foreach(el, i, x) {
				if (!json_is_number(json_object_get(x, "AllocatedRatio")))
					fc_fail(r, "AllocatedMethodDetails", amd,
						"AllocatedRatio missing", "FOCUS 1.3 Cost "
						"and Usage, AllocatedMethodDetails");
				if (json_object_get(x, "UsageQuantity") &&
				    !json_is_string(json_object_get(x, "UsageUnit")))
					fc_fail(r, "AllocatedMethodDetails", amd,
						"UsageQuantity without UsageUnit", "FOCUS 1.3 "
						"Cost and Usage, AllocatedMethodDetails");
			}
			json_decref(j);
		}
		if (*cap) {
			json_t *j = json_loads(cap, 0, NULL), *x;
			size_t i;

			json_array_foreach(j, i, x) {
				const char *id = json_string_value(json_object_get(x, "ContractCommitmentId"));
				int found = 0;

				if (!id || !json_object_get(x, "ContractCommitmentAppliedCost") ||
				    !json_object_get(x, "ContractCommitmentAppliedQuantity") ||
				    !json_object_get(x, "ContractCommitmentAppliedUnit"))
					fc_fail(r, "ContractApplied", cap, "not the four "
						"datapoints", "FOCUS 1.3 Cost and Usage, "
						"ContractApplied");
				for (int k = 1; cc && id && k < cc->nrows; k++)
					found |= !strcmp(val(cc, k, "ContractCommitmentId"), id);
				if (cc && !found)
					fc_fail(r, "ContractApplied", cap, "names no row of "
						"the Contract Commitment dataset", "FOCUS 1.3 "
						"Contract Commitment, ContractCommitmentId");
			}
			json_decref(j);
		}
	}
	/* the ratios of one origin charge (same ResourceId, ChargePeriodStart
	 * and method) sum to 1; its unit prices are the origin's */
	for (int r = 1; r < c->nrows; r++) {
		double sum = 0;

		if (!*val(c, r, "AllocatedMethodId"))
			continue;
		for (int k = 1; k < c->nrows; k++) {
			json_t *j;

			if (strcmp(val(c, k, "ResourceId"), val(c, r, "ResourceId")) ||
			    strcmp(val(c, k, "ChargePeriodStart"),
				   val(c, r, "ChargePeriodStart")) ||
			    strcmp(val(c, k, "AllocatedMethodId"),
				   val(c, r, "AllocatedMethodId")))
				continue;
			if (strcmp(val(c, k, "ListUnitPrice"), val(c, r, "ListUnitPrice")))
				fc_fail(k, "ListUnitPrice", val(c, k, "ListUnitPrice"),
					"unit price differs from the origin charge's",
					"FOCUS 1.3 split cost allocation handling");
			j = json_loads(val(c, k, "AllocatedMethodDetails"), 0, NULL);
			sum += json_number_value(json_object_get(json_array_get(
				json_object_get(j, "Elements"), 0), "AllocatedRatio"));
			json_decref(j);
		}
		if (fabs(sum - 1) > 1e-9)
			fc_fail(r, "AllocatedMethodDetails", val(c, r, "AllocatedMethodDetails"),
				"ratios of the origin charge do not sum to 1",
				"FOCUS 1.3 Cost and Usage, AllocatedMethodDetails");
	}
}

static void fc_check_cc(const struct csv *cc)
{
	fc_check_columns(cc, fc_cc, sizeof fc_cc / sizeof fc_cc[0]);
	for (int r = 1; r < cc->nrows; r++) {
		if (!(ts(val(cc, r, "ContractCommitmentPeriodStart")) <
		      ts(val(cc, r, "ContractCommitmentPeriodEnd"))))
			fc_fail(r, "ContractCommitmentPeriodEnd",
				val(cc, r, "ContractCommitmentPeriodEnd"), "not after "
				"its start", "FOCUS 1.3 Contract Commitment, "
				"ContractCommitmentPeriodEnd");
		if (ts(val(cc, r, "ContractCommitmentPeriodStart")) <
		    ts(val(cc, r, "ContractPeriodStart")) ||
		    ts(val(cc, r, "ContractCommitmentPeriodEnd")) >
		    ts(val(cc, r, "ContractPeriodEnd")))
			fc_fail(r, "ContractCommitmentPeriodStart",
				val(cc, r, "ContractCommitmentPeriodStart"), "outside "
				"the contract period", "FOCUS 1.3 Contract Commitment, "
				"ContractPeriodStart");
		if (*val(cc, r, "ContractCommitmentQuantity") &&
		    !*val(cc, r, "ContractCommitmentUnit"))
			fc_fail(r, "ContractCommitmentUnit", "", "null with a quantity",
				"FOCUS 1.3 Contract Commitment, ContractCommitmentUnit");
	}
}

#endif
