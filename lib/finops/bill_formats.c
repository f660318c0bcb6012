/*
 * bill_formats.c - the clouds' billing exports as bill lines for
 * reconcile.h: FOCUS (any version), AWS CUR 2.0 (CSV, gzipped or not),
 * the GCP Cloud Billing export to BigQuery saved as CSV or JSON, and the
 * Azure cost details export (EA and MCA column names).
 *
 * Columns read (from each provider's documentation of its export):
 *   format     resource         cost                       start                      kind from
 *   FOCUS      ResourceId       BilledCost                 ChargePeriodStart          ChargeCategory, ServiceCategory
 *   CUR 2.0    line_item_       line_item_unblended_cost   line_item_usage_start_     line_item_line_item_type
 *              resource_id                                 date                       (Credit, Refund), line_item_
 *                                                                                     usage_type (EBS:, DataTransfer)
 *   GCP        resource.name /  cost (+ each credits[]     usage_start_time           service.description, sku.
 *              global_name      amount: a credit line)     ("... UTC")                description (PD, Egress), cost_type
 *   Azure      ResourceId       CostInBillingCurrency      Date (MM/DD/YYYY or ISO)   ChargeType (Refund), MeterCategory
 *                               (MCA) or Cost (EA)                                    (Storage, Bandwidth)
 * Tags: FOCUS Tags, CUR 2.0 resource_tags (keys "user_<tag>"), GCP labels
 * ([{key, value}]), Azure Tags ('"k": "v"' with or without braces).
 * An Azure resource id is an ARM path: its last segment is compared with
 * the instance id.  Amounts with more than 6 decimals are rounded to the
 * micro-dollar, half away from zero.
 */
#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "common/csv.h"
#include "common/json.h"
#include "common/timeutil.h"
#include "reconcile.h"

#define BILL_UNZIPPED_MAX ((size_t)1 << 30)

/* A decimal (or exponent) amount as micro-dollars, rounded. */
static int dec_micros(const char *s, sr_micros *out)
{
	char *end;
	long double v;

	while (*s == ' ' || *s == '$')
		s++;
	if (!*s)
		return -EINVAL;
	if (sr_money_parse(s, out, NULL) == 0)
		return 0;
	v = strtold(s, &end);
	if (end == s || *end || !(v > -1e12L && v < 1e12L))
		return -EINVAL;
	*out = (sr_micros)(v * 1000000.0L + (v < 0 ? -0.5L : 0.5L));
	return 0;
}

/* RFC 3339, "YYYY-MM-DD HH:MM:SS[.f] UTC" (GCP), "MM/DD/YYYY" or
 * "YYYY-MM-DD" (Azure). */
static int bill_time(const char *s, int64_t *out)
{
	const unsigned flags = SR_TIME_SPACE | SR_TIME_UTC | SR_TIME_DATE |
			       SR_TIME_US_DATE;
	char b[64];

	if (sr_time_parse(s, flags, out, NULL) == 0)
		return 0;
	if (strlen(s) < sizeof b && strlen(s) > 4 &&
	    !strcmp(s + strlen(s) - 4, " UTC")) {
		snprintf(b, sizeof b, "%.*s", (int)strlen(s) - 4, s);
		return sr_time_parse(b, SR_TIME_SPACE | SR_TIME_UTC, out, NULL);
	}
	return -EINVAL;
}

static int has(const char *s, const char *sub)
{
	return s && strcasestr(s, sub) != NULL;
}

static int push(struct rec_line **v, size_t *n, size_t *cap, struct rec_line **l)
{
	if (*n == *cap) {
		struct rec_line *nv = realloc(*v, (*cap = *cap ? 2 * *cap : 64) *
					      sizeof *nv);
		if (!nv)
			return -ENOMEM;
		*v = nv;
	}
	*l = &(*v)[(*n)++];
	memset(*l, 0, sizeof **l);
	return 0;
}

enum fmt { F_CUR, F_GCP, F_AZURE };

/* The kind of a line from its format's columns. */
static enum rec_kind classify(enum fmt f, const char *cat, const char *svc,
			      const char *sku)
{
	switch (f) {
	case F_CUR:
		if (has(cat, "Credit") || has(cat, "Refund"))
			return REC_CREDIT;
		if (has(svc, "EBS:") || has(svc, "VolumeUsage"))
			return REC_DISK;
		if (has(svc, "DataTransfer") || has(svc, "Bytes"))
			return REC_EGRESS;
		return has(cat, "Usage") ? REC_COMPUTE : REC_OTHER;
	case F_GCP:
		if (has(sku, "PD Capacity") || has(sku, "Storage") ||
		    has(svc, "Storage"))
			return REC_DISK;
		if (has(sku, "Egress") || has(svc, "Networking"))
			return REC_EGRESS;
		return !*cat || has(cat, "regular") ? REC_COMPUTE : REC_OTHER;
	case F_AZURE:
		if (has(cat, "Refund") || has(cat, "Credit"))
			return REC_CREDIT;
		if (has(svc, "Storage"))
			return REC_DISK;
		if (has(svc, "Bandwidth"))
			return REC_EGRESS;
		return has(cat, "Usage") || !*cat ? REC_COMPUTE : REC_OTHER;
	}
	return REC_OTHER;
}

/* An ARM path's last segment (Azure); the id itself otherwise. */
static const char *last_segment(const char *rid)
{
	const char *p = strrchr(rid, '/');

	return p && p[1] ? p + 1 : rid;
}

static int first_col(char *const *hdr, size_t n, const char *const *names)
{
	for (; *names; names++) {
		int c = sr_csv_col(hdr, n, *names);

		if (c >= 0)
			return c;
	}
	return -1;
}

/* GCP's credits column: [{"name": ..., "amount": -1.2}, ...] */
static int gcp_credits(const char *js, const struct rec_line *base,
		       struct rec_line **v, size_t *n, size_t *cap)
{
	json_t *j = *js ? json_loads(js, 0, NULL) : NULL, *c;
	size_t i;
	int rc = 0;

	json_array_foreach(j, i, c) {
		json_t *a = json_object_get(c, "amount");
		struct rec_line *l;

		if (!json_is_number(a) || json_number_value(a) == 0)
			continue;
		rc = push(v, n, cap, &l);
		if (rc)
			break;
		*l = *base;
		l->kind = REC_CREDIT;
		l->cost = sr_money_from_usd(json_number_value(a));
	}
	json_decref(j);
	return rc;
}

static int parse_csv(const char *buf, size_t len, const char *name, enum fmt f,
		     struct rec_line **v, size_t *n, struct sr_err *e)
{
	static const char *const rid_n[3][3] = {
		{ "line_item_resource_id", NULL }, { "resource.name",
		  "resource.global_name", NULL }, { "ResourceId", "resourceId", NULL } };
	static const char *const cost_n[3][4] = {
		{ "line_item_unblended_cost", NULL }, { "cost", NULL },
		{ "CostInBillingCurrency", "costInBillingCurrency", "Cost", NULL } };
	static const char *const start_n[3][3] = {
		{ "line_item_usage_start_date", NULL }, { "usage_start_time", NULL },
		{ "Date", "date", NULL } };
	static const char *const cat_n[3][3] = {
		{ "line_item_line_item_type", NULL }, { "cost_type", NULL },
		{ "ChargeType", "chargeType", NULL } };
	static const char *const svc_n[3][3] = {
		{ "line_item_usage_type", NULL }, { "service.description", NULL },
		{ "MeterCategory", "meterCategory", NULL } };
	static const char *const sku_n[] = { "sku.description", NULL };
	static const char *const tags_n[3][3] = {
		{ "resource_tags", NULL }, { "labels", NULL }, { "Tags", "tags", NULL } };
	static const char *const prov[3] = { "Amazon Web Services", "Google Cloud",
					     "Microsoft Azure" };
	struct sr_csv r;
	size_t cap = 0, nf;
	int line, rc, c_rid, c_cost, c_start, c_cat, c_svc, c_sku, c_tags,
	    c_cred;

	sr_csv_open(&r, buf, len, name);
	rc = sr_csv_next(&r, &line, e);
	if (rc <= 0) {
		sr_csv_close(&r);
		return rc ? rc : sr_err_set(e, -SR_EPARSE, "%s: empty", name);
	}
	nf = r.nfields;
	c_rid = first_col(r.fields, nf, rid_n[f]);
	c_cost = first_col(r.fields, nf, cost_n[f]);
	c_start = first_col(r.fields, nf, start_n[f]);
	c_cat = first_col(r.fields, nf, cat_n[f]);
	c_svc = first_col(r.fields, nf, svc_n[f]);
	c_sku = f == F_GCP ? first_col(r.fields, nf, sku_n) : -1;
	c_tags = first_col(r.fields, nf, tags_n[f]);
	c_cred = f == F_GCP ? sr_csv_col(r.fields, nf, "credits") : -1;
	if (c_rid < 0 || c_cost < 0 || c_start < 0) {
		sr_csv_close(&r);
		return sr_err_set(e, -SR_EPARSE, "%s:%d: header: no column %s", name,
				  line, c_rid < 0 ? rid_n[f][0] : c_cost < 0 ?
				  cost_n[f][0] : start_n[f][0]);
	}
	while ((rc = sr_csv_row(&r, nf, &line, e)) == 1) {
		struct rec_line *l;
		const char *cat = c_cat >= 0 ? r.fields[c_cat] : "";
		const char *svc = c_svc >= 0 ? r.fields[c_svc] : "";
		const char *sku = c_sku >= 0 ? r.fields[c_sku] : "";

		rc = push(v, n, &cap, &l);
		if (rc) {
			rc = sr_err_set(e, -ENOMEM, "out of memory");
			break;
		}
		l->line = line;
		snprintf(l->resource_id, sizeof l->resource_id, "%s",
			 f == F_AZURE ? last_segment(r.fields[c_rid]) : r.fields[c_rid]);
		snprintf(l->provider, sizeof l->provider, "%s", prov[f]);
		if (dec_micros(r.fields[c_cost], &l->cost)) {
			rc = sr_err_set(e, -SR_EPARSE, "%s:%d: %s: '%.40s' is not an "
					"amount", name, line, cost_n[f][0],
					r.fields[c_cost]);
			break;
		}
		if (bill_time(r.fields[c_start], &l->start_ns)) {
			rc = sr_err_set(e, -SR_EPARSE, "%s:%d: %s: '%.40s' is not a "
					"date/time", name, line, start_n[f][0],
					r.fields[c_start]);
			break;
		}
		l->kind = classify(f, cat, svc, sku);
		if (c_tags >= 0)
			l->tag_node = finops__tag_node(r.fields[c_tags],
						       &l->spotrun_tagged);
		if (c_cred >= 0) {
			struct rec_line base = *l;

			rc = gcp_credits(r.fields[c_cred], &base, v, n, &cap);
			if (rc) {
				rc = sr_err_set(e, -ENOMEM, "out of memory");
				break;
			}
		}
	}
	sr_csv_close(&r);
	return rc < 0 ? rc : 0;
}

/* Newline-delimited JSON (bq extract --destination_format
 * NEWLINE_DELIMITED_JSON) or one array of rows. */
static int parse_gcp_json(const char *buf, size_t len, const char *name,
			  struct rec_line **v, size_t *n, struct sr_err *e)
{
	size_t cap = 0;
	int lineno = 0, rc = 0;
	json_t *all = buf[0] == '[' ? json_loadb(buf, len, 0, NULL) : NULL, *o;

	if (buf[0] == '[' && !json_is_array(all))
		return sr_err_set(e, -SR_EPARSE, "%s: not a JSON array of rows", name);
	for (const char *p = buf, *end = buf + len; !rc && (all || p < end);) {
		const char *nl = all ? NULL : memchr(p, '\n', (size_t)(end - p));
		struct rec_line *l;
		const char *sku, *svc, *rid, *start;
		char *tags;
		json_t *res;

		if (all) {
			if ((size_t)lineno >= json_array_size(all))
				break;
			o = json_incref(json_array_get(all, (size_t)lineno++));
		} else {
			size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);

			lineno++;
			o = ll ? json_loadb(p, ll, 0, NULL) : NULL;
			p += ll + 1;
			if (!ll)
				continue;
		}
		if (!json_is_object(o)) {
			json_decref(o);
			rc = sr_err_set(e, -SR_EPARSE, "%s:%d: not a JSON object", name,
					lineno);
			break;
		}
		res = json_object_get(o, "resource");
		rid = json_string_value(json_object_get(res, "name"));
		if (!rid)
			rid = json_string_value(json_object_get(res, "global_name"));
		sku = json_string_value(json_object_get(json_object_get(o, "sku"),
							 "description"));
		svc = json_string_value(json_object_get(json_object_get(o, "service"),
							 "description"));
		start = json_string_value(json_object_get(o, "usage_start_time"));
		rc = push(v, n, &cap, &l);
		if (rc) {
			json_decref(o);
			rc = sr_err_set(e, -ENOMEM, "out of memory");
			break;
		}
		l->line = lineno;
		snprintf(l->resource_id, sizeof l->resource_id, "%s", rid ? rid : "");
		snprintf(l->provider, sizeof l->provider, "Google Cloud");
		if (!json_is_number(json_object_get(o, "cost")) || !start ||
		    bill_time(start, &l->start_ns)) {
			json_decref(o);
			rc = sr_err_set(e, -SR_EPARSE, "%s:%d: a row needs cost (a "
					"number) and usage_start_time", name, lineno);
			break;
		}
		l->cost = sr_money_from_usd(json_number_value(json_object_get(o, "cost")));
		l->kind = classify(F_GCP, json_string_value(json_object_get(o,
				   "cost_type")) ? json_string_value(json_object_get(o,
				   "cost_type")) : "", svc ? svc : "", sku ? sku : "");
		tags = json_dumps(json_object_get(o, "labels"), JSON_COMPACT);
		l->tag_node = finops__tag_node(tags ? tags : "", &l->spotrun_tagged);
		free(tags);
		{
			struct rec_line base = *l;
			char *cr = json_dumps(json_object_get(o, "credits"), JSON_COMPACT);

			rc = gcp_credits(cr ? cr : "", &base, v, n, &cap);
			free(cr);
			if (rc)
				rc = sr_err_set(e, -ENOMEM, "out of memory");
		}
		json_decref(o);
	}
	json_decref(all);
	return rc;
}

/* A gzip stream inflated into *out (malloc'd). */
static int gunzip(const char *buf, size_t len, const char *name, char **out,
		  size_t *olen, struct sr_err *e)
{
	z_stream z = { 0 };
	size_t cap = len * 4 + 4096;
	char *o = malloc(cap);
	int zr;

	if (!o || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		free(o);
		return sr_err_set(e, -ENOMEM, "out of memory");
	}
	z.next_in = (unsigned char *)buf;
	z.avail_in = (unsigned)len;
	do {
		if (z.total_out == cap) {
			char *no = cap < BILL_UNZIPPED_MAX ? realloc(o, cap * 2) : NULL;

			if (!no) {
				inflateEnd(&z);
				free(o);
				return sr_err_set(e, -EFBIG, "%s: more than 1 GiB "
						  "uncompressed", name);
			}
			o = no;
			cap *= 2;
		}
		z.next_out = (unsigned char *)o + z.total_out;
		z.avail_out = (unsigned)(cap - z.total_out);
		zr = inflate(&z, Z_NO_FLUSH);
	} while (zr == Z_OK);
	*olen = z.total_out;
	inflateEnd(&z);
	if (zr != Z_STREAM_END) {
		free(o);
		return sr_err_set(e, -SR_EPARSE, "%s: not a whole gzip stream", name);
	}
	*out = o;
	return 0;
}

int finops_bill_parse(const char *buf, size_t len, const char *name,
		      struct rec_line **out, size_t *n, struct sr_err *e)
{
	char *un = NULL, hdr[4096];
	size_t unlen = 0, hl;
	int rc;

	*out = NULL;
	*n = 0;
	if (len >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b) {
		rc = gunzip(buf, len, name, &un, &unlen, e);
		if (rc)
			return rc;
		buf = un;
		len = unlen;
	}
	while (len && (buf[0] == ' ' || buf[0] == '\n' || buf[0] == '\r')) {
		buf++;
		len--;
	}
	hl = (size_t)((const char *)memchr(buf, '\n', len) ?
		      (const char *)memchr(buf, '\n', len) - buf : (ptrdiff_t)len);
	snprintf(hdr, sizeof hdr, "%.*s", (int)(hl < sizeof hdr ? hl : sizeof hdr - 1),
		 buf);
	if (len && (buf[0] == '{' || buf[0] == '['))
		rc = parse_gcp_json(buf, len, name, out, n, e);
	else if (strstr(hdr, "BilledCost"))
		rc = finops_bill_parse_focus(buf, len, name, out, n, e);
	else if (strstr(hdr, "line_item_unblended_cost"))
		rc = parse_csv(buf, len, name, F_CUR, out, n, e);
	else if (strstr(hdr, "usage_start_time"))
		rc = parse_csv(buf, len, name, F_GCP, out, n, e);
	else if (strcasestr(hdr, "MeterCategory"))
		rc = parse_csv(buf, len, name, F_AZURE, out, n, e);
	else
		rc = sr_err_set(e, -SR_EPARSE, "%s: not a bill spotrun reads (FOCUS, "
				"AWS CUR 2.0, GCP billing export CSV/JSON, Azure "
				"cost details): no BilledCost, line_item_unblended_"
				"cost, usage_start_time or MeterCategory column", name);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	free(un);
	return rc;
}
