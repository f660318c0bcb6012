/*
 * ec2emu_read.c - the EC2 emulator's read-only actions (ec2emu.h):
 * DescribeInstances (tag, state, zone and type filters; pages),
 * DescribeSpotPriceHistory (hourly points replayed from the pool's trace,
 * newest first) and DescribeInstanceTypeOfferings.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/money.h"
#include "common/timeutil.h"
#include "ec2emu_int.h"

/* ---- DescribeInstances ------------------------------------------------ */

static bool filter_match(const struct emu_inst *in, const struct emu_params *p)
{
	for (int n = 1;; n++) {
		const char *name = ec2emu__paramf(p, "Filter.%d.Name", n);
		bool any = false;

		if (name == NULL)
			return true;
		for (int v = 1;; v++) {
			const char *val = ec2emu__paramf(p, "Filter.%d.Value.%d", n, v);
			const char *have = NULL;

			if (val == NULL)
				break;
			if (strncmp(name, "tag:", 4) == 0) {
				for (size_t t = 0; t < in->ntags; t++)
					if (strcmp(in->tag_k[t], name + 4) == 0)
						have = in->tag_v[t];
			} else if (strcmp(name, "instance-state-name") == 0) {
				have = ec2emu__state_name(in->state);
			} else if (strcmp(name, "availability-zone") == 0) {
				have = in->zone;
			} else if (strcmp(name, "instance-type") == 0) {
				have = in->type;
			}
			if (have != NULL && strcmp(have, val) == 0)
				any = true;
		}
		if (!any)
			return false;
	}
}

void ec2emu__describe_instances(struct ec2emu *m, const struct emu_params *p,
			       struct emu_answer *a)
{
	const char *mr = ec2emu__param(p, "MaxResults");
	const char *nt = ec2emu__param(p, "NextToken");
	size_t max = mr != NULL ? (size_t)strtoul(mr, NULL, 10) : 1000;
	size_t start = nt != NULL ? (size_t)strtoul(nt + (strncmp(nt, "emu-", 4) ? 0 : 4),
						   NULL, 10) : 0;
	size_t shown = 0, i;
	FILE *f;

	if (max < 5 || max > 1000)
		max = max < 5 ? 5 : 1000;
	for (int k = 1;; k++) {
		const char *id = ec2emu__paramf(p, "InstanceId.%d", k);
		bool found = false;

		if (id == NULL)
			break;
		for (i = 0; i < m->ninst; i++)
			found |= strcmp(m->inst[i]->id, id) == 0 &&
				 ec2emu__visible(m->inst[i]);
		if (!found) {
			ec2emu__fail(a, 400, "InvalidInstanceID.NotFound", "The instance ID "
			     "'%s' does not exist", id);
			return;
		}
	}
	f = ec2emu__begin(a, "DescribeInstancesResponse");
	if (f == NULL)
		return;
	fputs("  <reservationSet>\n", f);
	for (i = start; i < m->ninst && shown < max; i++) {
		const struct emu_inst *in = m->inst[i];
		bool by_id = ec2emu__paramf(p, "InstanceId.1") == NULL;

		for (int k = 1; !by_id; k++) {
			const char *id = ec2emu__paramf(p, "InstanceId.%d", k);

			if (id == NULL)
				break;
			by_id = strcmp(id, in->id) == 0;
		}
		if (!by_id || !filter_match(in, p) || !ec2emu__visible(in))
			continue;
		fprintf(f, "    <item>\n      <reservationId>r-emu%012x</reservationId>\n"
			   "      <ownerId>000000000000</ownerId>\n      <groupSet/>\n"
			   "      <instancesSet>\n", in->seq);
		ec2emu__put_instance(m, f, in);
		fputs("      </instancesSet>\n    </item>\n", f);
		shown++;
	}
	fputs("  </reservationSet>\n", f);
	if (i < m->ninst)
		fprintf(f, "  <nextToken>emu-%zu</nextToken>\n", i);
	ec2emu__end(a, f, "DescribeInstancesResponse");
}

/* ---- DescribeSpotPriceHistory ----------------------------------------- */

static bool type_wanted(const struct emu_params *p, const char *type)
{
	if (ec2emu__paramf(p, "InstanceType.1") == NULL)
		return true;
	for (int k = 1;; k++) {
		const char *t = ec2emu__paramf(p, "InstanceType.%d", k);

		if (t == NULL)
			return false;
		if (strcmp(t, type) == 0)
			return true;
	}
}

/* AvailabilityZone, or a Filter availability-zone (any of its values). */
static bool zone_wanted(const struct emu_params *p, const char *zone)
{
	const char *one = ec2emu__param(p, "AvailabilityZone");
	bool filtered = false;

	if (one != NULL)
		return strcmp(one, zone) == 0;
	for (int n = 1;; n++) {
		const char *name = ec2emu__paramf(p, "Filter.%d.Name", n);

		if (name == NULL)
			return !filtered;
		if (strcmp(name, "availability-zone") != 0)
			continue;
		filtered = true;
		for (int v = 1;; v++) {
			const char *val = ec2emu__paramf(p, "Filter.%d.Value.%d", n, v);

			if (val == NULL)
				break;
			if (strcmp(val, zone) == 0)
				return true;
		}
	}
}

void ec2emu__spot_price_history(struct ec2emu *m, const struct emu_params *p,
			       struct emu_answer *a)
{
	const char *st = ec2emu__param(p, "StartTime");
	const char *mr = ec2emu__param(p, "MaxResults");
	const char *nt = ec2emu__param(p, "NextToken");
	size_t max = mr != NULL ? (size_t)strtoul(mr, NULL, 10) : 1000, shown = 0;
	size_t skip = nt != NULL && strncmp(nt, "emu-", 4) == 0
			      ? (size_t)strtoul(nt + 4, NULL, 10) : 0, seen = 0;
	bool more = false;
	double now = ec2emu__now(m), from = now - 6 * 3600.0;
	int64_t ns;
	FILE *f;

	if (max == 0 || max > 1000)
		max = 1000;
	if (st != NULL) {
		if (sr_time_parse_rfc3339(st, &ns, NULL) < 0) {
			ec2emu__fail(a, 400, "InvalidParameterValue", "StartTime: '%s' is "
			     "not a time", st);
			return;
		}
		from = m->trace_start + (double)(ns / 1000000000 - m->epoch0);
	}
	if (from < now - 7 * 86400.0)
		from = now - 7 * 86400.0;
	f = ec2emu__begin(a, "DescribeSpotPriceHistoryResponse");
	if (f == NULL)
		return;
	fputs("  <spotPriceHistorySet>\n", f);
	/* newest first: one point per pool per hour of cloud time, on a grid
	 * anchored at the trace start so that repeated calls agree; the
	 * point in effect at StartTime too, as EC2 answers */
	for (double t = m->trace_start + floor((now - m->trace_start) / 3600.0) * 3600.0;
	     t > from - 3600.0 && !more; t -= 3600.0) {
		for (size_t i = 0; i < m->npools && !more; i++) {
			const struct emu_pool *pl = &m->pools[i];
			sr_micros pr;
			char ts[40];

			if (!type_wanted(p, pl->type) || !zone_wanted(p, pl->zone))
				continue;
			pr = ec2emu__spot_price(m, pl, t);
			if (pr < 0 || seen++ < skip)
				continue;
			if (shown == max) {
				more = true;
				break;
			}
			ec2emu__ts(m, t, ts);
			fprintf(f, "    <item><instanceType>%s</instanceType>"
				   "<productDescription>Linux/UNIX</productDescription>"
				   "<spotPrice>%lld.%06lld</spotPrice><timestamp>%s"
				   "</timestamp><availabilityZone>%s</availabilityZone>"
				   "</item>\n", pl->type,
				(long long)(pr / SR_MICROS_PER_USD),
				(long long)(pr % SR_MICROS_PER_USD), ts, pl->zone);
			shown++;
		}
	}
	fputs("  </spotPriceHistorySet>\n", f);
	if (more)
		fprintf(f, "  <nextToken>emu-%zu</nextToken>\n", skip + shown);
	else
		fputs("  <nextToken/>\n", f);
	ec2emu__end(a, f, "DescribeSpotPriceHistoryResponse");
}

/* ---- DescribeInstanceTypeOfferings ------------------------------------ */

void ec2emu__type_offerings(struct ec2emu *m, const struct emu_params *p,
			   struct emu_answer *a)
{
	const char *lt = ec2emu__param(p, "LocationType");
	bool by_zone = lt == NULL || strcmp(lt, "availability-zone") == 0;
	FILE *f;

	if (lt != NULL && !by_zone && strcmp(lt, "region") != 0) {
		ec2emu__fail(a, 400, "InvalidParameterValue", "LocationType: '%s': "
		     "expected region or availability-zone", lt);
		return;
	}
	f = ec2emu__begin(a, "DescribeInstanceTypeOfferingsResponse");
	if (f == NULL)
		return;
	fputs("  <instanceTypeOfferingSet>\n", f);
	for (size_t i = 0; i < m->npools; i++) {
		const struct emu_pool *pl = &m->pools[i];
		bool dup = false;
		const char *fname = ec2emu__param(p, "Filter.1.Name");
		const char *fval = ec2emu__param(p, "Filter.1.Value.1");

		if (fname != NULL && strcmp(fname, "instance-type") == 0 &&
		    fval != NULL && strcmp(fval, pl->type) != 0)
			continue;
		for (size_t j = 0; j < i && !dup; j++)
			dup = strcmp(m->pools[j].type, pl->type) == 0 &&
			      (!by_zone || strcmp(m->pools[j].zone, pl->zone) == 0);
		if (dup)
			continue;
		fprintf(f, "    <item><instanceType>%s</instanceType><locationType>"
			   "%s</locationType><location>%s</location></item>\n",
			pl->type, by_zone ? "availability-zone" : "region",
			by_zone ? pl->zone : m->region);
	}
	fputs("  </instanceTypeOfferingSet>\n", f);
	ec2emu__end(a, f, "DescribeInstanceTypeOfferingsResponse");
}

