/*
 * catalog.h - GPU offerings: what can be rented where, at what price, and
 * how often a spot instance of it is taken away.
 *
 * Sources (see docs/market.md and data/catalog/SOURCE.md):
 *   - SkyPilot catalog CSVs, schema v8 (AWS, GCP, Lambda) and v6 (Azure),
 *     read by column name.  GCP splits a machine's price into a host row
 *     (machine type) and an accelerator row; the loader joins them.
 *   - data/offerings.csv, the headline 8-GPU offerings with reserved prices,
 *     spot preemption rates and network tiers, each value with its source.
 *     It overlays the SkyPilot rows of the same cloud and instance type and
 *     adds offerings the SkyPilot data lacks (CoreWeave).
 *
 * Ownership: a struct catalog owns its offerings array.  Offerings are
 * plain values (no pointers), so they can be copied freely.  Read `items`
 * and `n` directly; change them only through these functions.
 *
 * Money is int64 micro-dollars per instance-hour (one instance = one node
 * holding accel_count accelerators); -1 means "not offered / unknown".
 * Errors follow lib/common/err.h: 0 or a negative code, with `e` filled as
 * "file:line: column X: reason".
 */
#ifndef SR_MARKET_CATALOG_H
#define SR_MARKET_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"

/* Interconnect between nodes, ordered by capability. */
enum catalog_net {
	CATALOG_NET_UNKNOWN = 0,
	CATALOG_NET_ETHERNET,   /* plain TCP, incl. GPUDirect-TCPX */
	CATALOG_NET_RDMA,       /* RoCE or AWS EFA: RDMA over Ethernet */
	CATALOG_NET_INFINIBAND,
};

/* Where an offering's hazard came from. */
enum catalog_hazard_src {
	CATALOG_HAZARD_NONE = 0, /* no spot offering */
	CATALOG_HAZARD_DEFAULT,  /* CATALOG_DEFAULT_PREEMPT_PER_24H estimate */
	CATALOG_HAZARD_TABLE,    /* data/offerings.csv (band or estimate) */
	CATALOG_HAZARD_TRACE,    /* fitted with catalog_hazard_from_trace() */
};

/* Preemptions per node per 24 h assumed for a spot row that no other
 * source describes.  An estimate; see docs/market.md. */
#define CATALOG_DEFAULT_PREEMPT_PER_24H 1.0

struct catalog_offering {
	char cloud[16];          /* "aws", "gcp", "azure", "lambda", ... */
	char region[40];
	char zone[40];           /* "" when the source has no zones */
	char instance_type[48];
	char accelerator[24];    /* "H100", "A100-80GB", ... */
	double accel_count;      /* per node; fractional for AWS g6f */
	double vcpus, memory_gib;/* per node; 0 when the source has none */
	sr_micros ondemand_per_h;/* -1: not listed */
	sr_micros spot_per_h;    /* -1: no spot offering */
	sr_micros reserved_per_h;/* amortized 1-year commitment; -1: unknown */
	double hazard_per_h;     /* spot preemptions per node-hour; 0 if none */
	enum catalog_hazard_src hazard_src;
	char hazard_from[64];    /* where the hazard came from, in words */
	double outage_h;         /* mean hours the pool stays without spot
				    capacity after a preemption, and that
				    spell's coefficient of variation (fitted
				    to the traces with the hazard); 0 = not
				    measured */
	double outage_cv;
	double up_cv;            /* the up spells' (capacity back to the
				    next loss) coefficient of variation:
				    > 1 when losses come in bursts; 0 = not
				    measured (exponential) */
	double hazard_disp;      /* how much the market varies from day to
				    day (traces): the variance of a day's
				    scale g (its rate and outages x g,
				    read from its share of hours up) over
				    its mean squared; 0 = not measured */
	enum catalog_net net;
	char source[64];         /* "aws.csv:123" or "offerings.csv:4" */
	/* a provider's own pool (providers/liveprice.h: a Slurm partition,
	 * capacity already paid for): reserved_per_h is its committed
	 * price, and the job waits queue_wait_s (-1 unknown) in its queue
	 * first, as queue_basis says; 0 and "" for the catalog's rows */
	int committed;
	int64_t queue_wait_s;
	char queue_basis[120];
};

/* One row of DIR/catalog/aws_zones.csv: a zone's name and its ID. */
struct catalog_zone {
	char cloud[16];
	char region[40];
	char name[40];           /* "us-east-1a" */
	char id[40];             /* "use1-az1", as the offerings name it */
};

struct catalog {
	struct catalog_offering *items; /* owned; n valid entries */
	size_t n, cap;
	struct catalog_zone *zones;     /* owned; n_zones entries */
	size_t n_zones;
};

void catalog_init(struct catalog *c);
void catalog_free(struct catalog *c); /* NULL-safe; leaves c empty */

/* Append a copy of *o.  0 or -ENOMEM. */
int catalog_add(struct catalog *c, const struct catalog_offering *o);

/* Load one SkyPilot vms.csv.  `cloud` names the cloud ("aws", "gcp", ...);
 * NULL takes it from the file name ("gcp.csv" -> "gcp").  Rows append to
 * c; on error c keeps the rows of earlier files only. */
int catalog_load_skypilot(struct catalog *c, const char *path,
			  const char *cloud, struct sr_err *e);

/* The same from memory; `name` is used in messages as the file name. */
int catalog_load_skypilot_buf(struct catalog *c, const char *buf,
			      size_t len, const char *name, const char *cloud,
			      struct sr_err *e);

/* Apply data/offerings.csv (format in docs/market.md): every row overlays
 * the offerings of its cloud + instance type already in c (reserved price
 * as a ratio to on-demand, hazard, network, accelerator count), and is
 * added as an offering itself when c has none of that type. */
int catalog_load_offerings(struct catalog *c, const char *path,
			   struct sr_err *e);
int catalog_load_offerings_buf(struct catalog *c, const char *buf,
			       size_t len, const char *name, struct sr_err *e);

/* Load DIR/catalog/{aws,gcp,azure,lambda}.csv (those present) and then
 * DIR/offerings.csv, and give every spot row without a hazard the
 * default.  DIR is usually "data". */
int catalog_load_dir(struct catalog *c, const char *dir, struct sr_err *e);

/* Fit per-pool hazards from the single-node spot traces under DIR/traces
 * (catalog_trace.c; DIR/traces/cbl/{availability,preemption}/1-node/
 * CLOUD-DATE/ZONE_GPU_COUNT.json, 1 = up) and give them to the matching
 * spot offerings (cloud, zone through the zone table, GPU, count), with
 * hazard_src TRACE.  Several traces of one pool are pooled (all losses
 * over all hours up).  A missing traces folder is not an error. */
int catalog_load_trace_rates(struct catalog *c, const char *dir,
			     struct sr_err *e);

/* Load a zone table (CSV with Region,ZoneName,ZoneId) for `cloud`; on
 * error c keeps the zones of earlier tables only. */
int catalog_load_zones(struct catalog *c, const char *path, const char *cloud,
		       struct sr_err *e);
int catalog_load_zones_buf(struct catalog *c, const char *buf, size_t len,
			   const char *name, const char *cloud, struct sr_err *e);

/* ---- checking names (catalog_check.c) ----------------------------------
 * Each returns 0, or -EINVAL with e saying which value is unknown and
 * naming the nearest valid ones ("unknown GPU 'H1000'; nearest: H100,
 * H200, A100"), so a command can exit 2 instead of printing nothing. */

/* A GPU name (case-insensitive) and, when count > 0, that per-node count. */
int catalog_check_gpu(const struct catalog *c, const char *name, double count,
		      struct sr_err *e);
/* A cloud, a region (of that cloud when cloud is set) and a zone (ID or
 * name, of that region / cloud when given).  Empty or NULL fields are
 * not checked.  When zone_id is not NULL it receives the zone's ID
 * ("us-east-1a" -> "use1-az4"), or "" without a zone. */
int catalog_check_place(const struct catalog *c, const char *cloud,
			const char *region, const char *zone, char *zone_id,
			size_t n, struct sr_err *e);

/* Resolve the data directory: $SPOTRUN_DATA, else "data" relative to the
 * working directory, else the one beside the executable's ../../data
 * (build tree) or ../share/spotrun/data (install).  Writes into buf. */
int catalog_find_data_dir(char *buf, size_t n);

/* Filter for catalog_select(). Zero/NULL fields match everything. */
struct catalog_filter {
	const char *accelerator; /* case-insensitive exact name */
	double accel_count;      /* >0: exact per-node count */
	int spot_only;           /* only rows with a spot price */
	const char *cloud;
	const char *region;
	const char *zone;        /* zone ID (resolve names: catalog_check_place) */
	enum catalog_net min_net;
};

/* Indices of matching offerings, sorted cheapest first (by spot price
 * when spot_only, else by on-demand, unknown prices last).  *out is
 * malloc'd (caller frees); *n_out may be 0. */
int catalog_select(const struct catalog *c, const struct catalog_filter *f,
		   size_t **out, size_t *n_out);

/* Parse "H100:8" / "H100" (count 1).  name gets the accelerator. */
int catalog_parse_accel(const char *s, char *name, size_t n, double *count);

/* The clouds whose markets the catalog models (offering.cloud; a job's
 * infra names them): aws, gcp, azure, lambda, coreweave. */
extern const char *const catalog_clouds[];
extern const size_t catalog_n_clouds;
/* The URI scheme of the object store a catalog cloud's own buckets live
 * in ("s3" for aws, "gs" for gcp, "az" for azure; compared ignoring
 * case), or NULL when the cloud has none spotrun reaches. */
const char *catalog_cloud_store(const char *cloud);

/* Up to 3 of names[0..n) nearest to s (edit distance, ignoring case),
 * as "a, b, c" into out; "" when names is empty. */
void catalog_nearest(const char *s, const char *const *names, size_t n,
		     char *out, size_t outn);

/* Names for enums ("infiniband", ...) and parsing them back. */
const char *catalog_net_name(enum catalog_net n);
int catalog_net_parse(const char *s, enum catalog_net *out);
const char *catalog_hazard_src_name(enum catalog_hazard_src s);

/* ---- preemption hazard ------------------------------------------------ */

/* Hazard per hour from an expected count of preemptions per 24 h. */
double catalog_hazard_from_per24h(double per_24h);

/* Hazard per hour from a monthly interruption-frequency band as published
 * by the AWS Spot Instance Advisor ("<5%", "5-10%", "10-15%", "15-20%",
 * ">20%"): the fraction f of instances interrupted within a 30-day month,
 * taken at the band's midpoint (2.5%, 7.5%, 12.5%, 17.5%, 25%), converted
 * as -ln(1 - f) / 720 h.  Returns -EINVAL for an unknown band. */
int catalog_hazard_from_band(const char *band, double *hazard_per_h);

/* Fit a hazard from an availability trace: avail[i] != 0 means a spot
 * instance was up during tick i, ticks are gap_s seconds.  Maximum
 * likelihood for an exponential lifetime: (number of up->down
 * transitions) / (hours up).  Returns -EINVAL when the trace has no up
 * time; a trace with up time and no loss gives 0. */
int catalog_hazard_from_trace(const int *avail, size_t n, double gap_s,
			      double *hazard_per_h);

#endif
