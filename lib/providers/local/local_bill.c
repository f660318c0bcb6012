/*
 * local_bill.c - the local cloud's own bill: FOCUS Cost and Usage lines
 * in <state>/localcloud/bill.csv, written when an instance ends, as a
 * cloud's billing export would hold them (docs/finops.md "Matching the
 * bill"; what `spotrun cost reconcile` is tested against).
 *
 * Per ended instance:
 *   compute  its pool's price (spot or on-demand) integrated over every
 *            cloud second from launch to end (the trace's price at each
 *            second, where spotrun's ledger takes one price per billing
 *            interval), ResourceId = the instance id
 *   disk     an EBS-like volume: LOCAL_DISK_GB at LOCAL_DISK_PRICE per
 *            GB-month, prorated over the cloud hours; ResourceId
 *            "vol-<instance>", ServiceCategory Storage
 * and, when a test asks for them (files, like interrupts/):
 *   <state>/bill/egress-<node>  bytes sent out: Networking line at
 *                               LOCAL_EGRESS_PER_GB
 *   <state>/bill/credit-<node>  dollars: a Credit line (negative)
 *   <state>/bill/leak-<name>    an instance "local-leak-<name>" spotrun
 *                               launched and lost (the local cloud's start
 *                               gate makes a real one impossible): billed
 *                               like this one, tagged for its job
 * Every line carries the instance's tags (spotrun/node-id, spotrun/job-id,
 * spotrun/cluster), as clouds copy an instance's tags to its volumes.
 * Lines are appended (O_APPEND, fsync) under the records' mutex.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "providers/local/local_int.h"

#define LOCAL_DISK_GB 100
#define LOCAL_DISK_PRICE 80000          /* micro-$ per GB-month (gp3-like) */
#define LOCAL_EGRESS_PER_GB 90000       /* micro-$ per GB */
#define HOURS_PER_MONTH 730

static const char header[] =
	"BilledCost,BillingCurrency,ChargeCategory,ChargeDescription,"
	"ChargePeriodEnd,ChargePeriodStart,ConsumedQuantity,ConsumedUnit,"
	"PricingCategory,RegionId,ResourceId,ResourceType,ServiceCategory,"
	"ServiceName,ServiceProviderName,Tags\r\n";

/* micro-dollars as "12.345678" / "-0.2" */
static void money(char *buf, size_t n, int64_t m)
{
	snprintf(buf, n, "%s%" PRId64 ".%06" PRId64, m < 0 ? "-" : "",
		 (m < 0 ? -m : m) / 1000000, (m < 0 ? -m : m) % 1000000);
}

static int line(FILE *f, int64_t cost, const char *cat, const char *desc,
		const char *ps, const char *pe, double hours, const char *pcat,
		const char *region, const char *rid, const char *rtype,
		const char *scat, const char *tags)
{
	char c[40];

	money(c, sizeof c, cost);
	/* no field holds a comma or quote but Tags and the description */
	return fprintf(f, "%s,USD,%s,\"%s\",%s,%s,%.6f,Hours,%s,%s,%s,%s,%s,"
		       "spotrun local compute,spotrun local cloud,\"%s\"\r\n", c,
		       cat, desc, pe, ps, hours, pcat, region, rid, rtype, scat,
		       tags) < 0 ? -EIO : 0;
}

/* A number from <state>/bill/<what>-<id>, or -1 when absent. */
static double injected(const struct local_prov *d, const char *what, const char *id)
{
	char p[2400], *buf = NULL;
	size_t len;
	double v = -1;

	snprintf(p, sizeof p, "%s/bill/%s-%s", d->h->state_dir, what, id);
	if (sr_fs_read_file(p, 64, &buf, &len, NULL) == 0) {
		v = strtod(buf, NULL);
		free(buf);
	}
	return v;
}

/* The instance's price integrated over [sim0, sim1), micro-dollars. */
static int64_t integrate(const struct local_prov *d, int pool, bool spot,
			 double sim0, double sim1, char *region, size_t rn)
{
	double step = (sim1 - sim0) / 20000, acc = 0;
	struct cloud_offering o;

	if (step < 1)
		step = 1;
	region[0] = '\0';
	for (double t = sim0; t < sim1; t += step) {
		double dt = t + step > sim1 ? sim1 - t : step;

		if (localmkt_describe(d->m, pool, t, &o))
			break;
		snprintf(region, rn, "%s", o.region);
		acc += (double)(spot && o.spot_per_h >= 0 ? o.spot_per_h :
				o.ondemand_per_h) * dt / 3600.0;
	}
	return (int64_t)(acc + 0.5);
}

void local__bill(struct local_prov *d, const struct local_billed *b)
{
	char path[2400], ps[40], pe[40], tags[256], node[24], rid[160], desc[200],
	     region[40];
	double hours = (b->gone_sim - b->launched_sim) / 3600.0, v;
	int64_t compute;
	struct stat sb;
	FILE *f;
	int rc = 0, fd;

	if (!b->id[0] || b->gone_sim <= b->launched_sim || b->gone_ns <= 0)
		return;
	compute = integrate(d, b->pool, b->spot, b->launched_sim, b->gone_sim,
			    region, sizeof region);
	sr_time_format_rfc3339(b->launched_ns - b->launched_ns % SR_NS_PER_SEC, 0,
			       ps, sizeof ps);
	sr_time_format_rfc3339(b->gone_ns - b->gone_ns % SR_NS_PER_SEC, 0, pe,
			       sizeof pe);
	if (!strcmp(ps, pe))
		sr_time_format_rfc3339(b->gone_ns - b->gone_ns % SR_NS_PER_SEC +
				       SR_NS_PER_SEC, 0, pe, sizeof pe);
	snprintf(node, sizeof node, "%" PRId64, b->node);
	snprintf(tags, sizeof tags, "{\"\"spotrun/node-id\"\":%" PRId64 ","
		 "\"\"spotrun/job-id\"\":%" PRId64 ",\"\"spotrun/cluster\"\":"
		 "\"\"%s\"\"}", b->node, b->job, b->cluster);
	snprintf(path, sizeof path, "%s/bill.csv", d->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "a"))) {
		if (fd >= 0)
			close(fd);
		sr_warn("local", "cannot write the bill", "path=%s err=\"%s\"", path,
			sr_strerror(-errno));
		return;
	}
	if (fstat(fd, &sb) == 0 && sb.st_size == 0)
		rc |= fputs(header, f) < 0;
	snprintf(desc, sizeof desc, "%s %s, %.4f cloud h", b->itype,
		 b->spot ? "spot" : "on-demand", hours);
	rc |= line(f, compute, "Usage", desc, ps, pe, hours, b->spot ? "Dynamic" :
		   "Standard", region, b->id, "Virtual Machine", "Compute", tags);
	snprintf(rid, sizeof rid, "vol-%s", b->id);
	snprintf(desc, sizeof desc, "%d GB volume", LOCAL_DISK_GB);
	rc |= line(f, (int64_t)((double)LOCAL_DISK_GB * LOCAL_DISK_PRICE * hours /
				HOURS_PER_MONTH + 0.5), "Usage", desc, ps, pe, hours,
		   "Standard", region, rid, "Volume", "Storage", tags);
	if ((v = injected(d, "egress", node)) > 0) {
		snprintf(rid, sizeof rid, "egress-%s", b->id);
		snprintf(desc, sizeof desc, "%.0f bytes out", v);
		rc |= line(f, (int64_t)(v / 1e9 * LOCAL_EGRESS_PER_GB + 0.5), "Usage",
			   desc, ps, pe, hours, "Standard", region, rid,
			   "Data Transfer", "Networking", tags);
	}
	if ((v = injected(d, "credit", node)) > 0)
		rc |= line(f, -(int64_t)(v * 1e6 + 0.5), "Credit", "promotional credit",
			   ps, pe, hours, "Standard", region, b->id, "Virtual Machine",
			   "Compute", tags);
	if ((v = injected(d, "leak", node)) > 0) {
		snprintf(rid, sizeof rid, "local-leak-%s", node);
		snprintf(tags, sizeof tags, "{\"\"spotrun/job-id\"\":%" PRId64 ","
			 "\"\"spotrun/cluster\"\":\"\"%s\"\"}", b->job, b->cluster);
		rc |= line(f, compute, "Usage", "an instance spotrun did not record",
			   ps, pe, hours, b->spot ? "Dynamic" : "Standard", region,
			   rid, "Virtual Machine", "Compute", tags);
	}
	rc |= fflush(f) != 0 || fsync(fd) != 0;
	rc |= fclose(f) != 0;
	if (rc)
		sr_warn("local", "bill write failed", "path=%s", path);
}
