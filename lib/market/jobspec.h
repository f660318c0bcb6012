/*
 * jobspec.h - job files: a SkyPilot-compatible subset plus `spotrun:`.
 *
 *   name: llama-8b-ft
 *   num_nodes: 2
 *   resources:
 *     accelerators: H100:8          # or {H100: 8}
 *     use_spot: true
 *     infra: aws/us-east-1          # or any_of: [{infra: gcp}, ...]
 *   envs: {HF_HOME: /data/hf}
 *   setup: pip install -r requirements.txt
 *   run: torchrun train.py
 *   spotrun:
 *     deadline: 36h                 # or RFC 3339, e.g. 2026-12-01T12:00:00Z
 *     work: 20h                     # compute hours (duration or number)
 *     criticality: standard         # critical | standard | best-effort
 *     checkpoint: {size: 40GB, interval: 30m, stall: 20s,
 *                  restore_bandwidth: 1GB/s, uri: s3://b/jobs/x,
 *                  alert_intervals: 3}
 *     max_hourly_cost: 120          # $/h for the whole gang
 *     max_cost: 3000                # $ for the job
 *     max_restarts: 20
 *     network: rdma                 # any | ethernet | rdma | infiniband
 *     autostop: 30m
 *     p_target: 0.99
 *     provisioning: 5m              # resume overheads (defaults below)
 *     image_pull: 3m
 *     spares: 1                     # warm spare nodes; default: the plan's
 *     delay_cost_per_hour: 40       #  choice, priced against this ($/h of
 *                                   #  delay; default the job's own $/h)
 *     train_through_notice: true    # a gang trains on after a notice until
 *                                   #  its replacement is ready or the last
 *                                   #  safe moment (default false)
 *     peer_replicas: 1              # each rank keeps a copy of the previous
 *                                   #  rank's checkpoint part (needs
 *                                   #  checkpoint.uri; default 0)
 *     team: ml-research             # who pays (chargeback labels,
 *     project: llama                #  docs/finops.md "Teams"): letters,
 *     cost_center: CC-1234          #  digits and . _ - : / @ +, <= 63
 *     preempt_signal: USR1          # sent to the workload at a notice or
 *                                   #  stop (TERM, INT, HUP, QUIT, USR1,
 *                                   #  USR2; default TERM)
 *     sync_quiet: 5s                # a bucket mount's file is uploaded
 *                                   #  once unchanged this long (2s)
 *
 * SkyPilot's task keys are accepted too (resources.cloud/region/zone,
 * any_of, ordered, accelerators as a list or dict, cpus, memory,
 * disk_size, image_id, ports, job_recovery (and its older name
 * spot_recovery), secrets, workdir, file_mounts with local paths and
 * buckets): docs/jobs.md has the key-by-key table.
 *
 * Unknown keys and bad values fail with "file:line: key.path: reason",
 * all of them in one pass, each with a suggestion where one exists.
 * The same struct serialises to JSON (jobspec_to_json / _from_json), the
 * form in which the daemon stores jobs.
 *
 * Ownership: jobspec_parse*() and jobspec_from_json() fill a caller-owned
 * struct jobspec whose strings and arrays it owns; release them with
 * jobspec_free().  On failure the struct is left freed (empty).
 */
#ifndef SR_MARKET_JOBSPEC_H
#define SR_MARKET_JOBSPEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"
#include "market/catalog.h"

enum jobspec_crit {
	JOBSPEC_CRIT_STANDARD = 0, /* spot with on-demand fallback */
	JOBSPEC_CRIT_CRITICAL,     /* reserved or on-demand only */
	JOBSPEC_CRIT_BEST_EFFORT,  /* spot only */
};

enum jobspec_deadline {
	JOBSPEC_DEADLINE_NONE = 0,
	JOBSPEC_DEADLINE_RELATIVE, /* deadline_ns is a duration from submit */
	JOBSPEC_DEADLINE_ABSOLUTE, /* deadline_ns is Unix-epoch ns (UTC) */
};

/* One allowed location: "aws", "aws/us-east-1", "aws/us-east-1/use1-az5"
 * (or the zone name "us-east-1a"); empty fields mean "any".  An any_of /
 * ordered entry may name its own accelerators; accel "" means the job's. */
struct jobspec_infra {
	char cloud[16];
	char region[40];
	char zone[40];
	char accel[24];
	int accel_count;
};

/* One accelerator choice: accelerators: [A100:8, H100:8] gives two. */
struct jobspec_accel {
	char name[24];
	int count;
};

struct jobspec_env {
	char *key, *value; /* owned */
};

/* file_mounts: remote path -> local source path. */
struct jobspec_mount {
	char *dst, *src;   /* owned */
};

/* file_mounts DST: a bucket (SkyPilot's storage mounts; jobspec_mount.c,
 * docs/jobs.md "Running a SkyPilot spot task unchanged").  MOUNT and
 * MOUNT_CACHED: DST is a local directory restored from the bucket and
 * synced back to it (tier 3); COPY: the bucket's contents copied into
 * DST before setup, nothing written back. */
enum jobspec_mode {
	JOBSPEC_MODE_MOUNT = 0,     /* SkyPilot's default */
	JOBSPEC_MODE_MOUNT_CACHED,
	JOBSPEC_MODE_COPY,
};

struct jobspec_bucket {
	char *dst;          /* owned; as written: "/checkpoint", "~/data" */
	char *uri;          /* owned; what lib/objstore opens: s3://B[/P],
			     * gs://B[/P], az://ACCOUNT/CONTAINER[/P] */
	char *name;         /* owned; SkyPilot's name: (no source), NULL */
	char *source;       /* owned; source: as written, NULL with name: */
	char store[8];      /* "s3", "gcs", "azure" */
	enum jobspec_mode mode;
};

/* What a parse found: every error (the parse fails if n_errors > 0) and
 * every note about a key accepted but honoured only in part, each one
 * line "file:line: key.path: reason[; suggestion]".  Owned; release with
 * jobspec_diag_free(). */
struct jobspec_diag {
	char **errors;
	size_t n_errors;
	char **notes;
	size_t n_notes;
};

/* resources.image_id given per region (SkyPilot's map form). */
struct jobspec_image {
	char region[40];
	char *image;                /* owned */
};

/* Defaults the parser fills in when a key is absent. */
#define JOBSPEC_DEFAULT_P_TARGET 0.99
#define JOBSPEC_DEFAULT_PROVISION_S 300
#define JOBSPEC_DEFAULT_IMAGE_PULL_S 180
#define JOBSPEC_DEFAULT_RESTORE_BPS 1e9  /* 1 GB/s */
#define JOBSPEC_DEFAULT_ALERT_INTERVALS 3 /* checkpoint.alert_intervals */
#define JOBSPEC_DEFAULT_STALL_BPS 2e9    /* stall = size / 2 GB/s */
#define JOBSPEC_LABEL_MAX 64             /* team/project/cost_center + NUL */
#define JOBSPEC_DEFAULT_SYNC_QUIET_MS 2000 /* sync_quiet */
#define JOBSPEC_SYNC_QUIET_MIN_MS 100      /* sync_quiet's bounds */
#define JOBSPEC_SYNC_QUIET_MAX_MS 600000

struct jobspec {
	char *name;                 /* owned; NULL if absent */
	/* resources */
	char accel[24];             /* "" if absent */
	int accel_count;            /* per node; 0 if absent */
	int use_spot;               /* -1 unset, 0, 1 */
	struct jobspec_infra *infra;/* owned; n_infra == 0: anywhere */
	size_t n_infra;
	int num_nodes;              /* >= 1 */
	struct jobspec_env *envs;   /* owned */
	size_t n_envs;
	char *setup, *run;          /* owned; NULL if absent */
	/* SkyPilot resources beyond the accelerators (docs/jobs.md) */
	struct jobspec_accel *accels;/* owned; every choice; accel = accels[0] */
	size_t n_accels;
	int infra_ordered;          /* any_of came from resources.ordered */
	double cpus, memory_gib;    /* per node; 0: any */
	int cpus_plus, memory_plus; /* 1: "8+" (at least), 0: exactly */
	int disk_gb;                /* 0: provider default */
	char *image_id;             /* owned; NULL: provider default */
	struct jobspec_image *images;/* owned; image_id as a map per region */
	size_t n_images;
	char **ports;               /* owned; "8080" or "10020-10040" */
	size_t n_ports;
	char *recovery;             /* job_recovery.strategy; owned; NULL */
	int max_restarts_on_errors; /* job_recovery: workload failures restarted; -1 unset */
	struct jobspec_env *secrets;/* owned; value NULL: from the environment */
	size_t n_secrets;
	char *workdir;              /* owned; local directory, NULL if absent */
	struct jobspec_mount *mounts;/* owned; local sources */
	size_t n_mounts;
	struct jobspec_bucket *buckets;/* owned; bucket file_mounts */
	size_t n_buckets;
	/* spotrun: */
	enum jobspec_deadline deadline_kind;
	int64_t deadline_ns;
	double work_h;              /* 0 if absent */
	enum jobspec_crit criticality;
	uint64_t ckpt_bytes;        /* 0 if absent */
	int64_t ckpt_interval_ns;   /* 0: choose the optimal interval */
	int64_t ckpt_stall_ns;      /* -1: size / JOBSPEC_DEFAULT_STALL_BPS */
	double restore_bps;         /* bytes per second */
	char *ckpt_uri;             /* spotrun.checkpoint.uri (tier 3), or NULL:
				     * nodes share the control plane's dir */
	int ckpt_alert_intervals;   /* the "checkpoint" alert fires when the
				     * store's copy lags this many checkpoints
				     * (tier 3); default 3 */
	int64_t provision_ns, image_pull_ns;
	sr_micros max_hourly_cost;  /* -1: no limit */
	sr_micros max_cost;         /* -1: no limit */
	int spares;                 /* warm spare nodes; -1: the plan's choice */
	sr_micros delay_cost_per_h; /* $/h of delay; -1: the job's own $/h */
	int train_through_notice;   /* 1: train through the notice's lead
				     * (docs/distributed.md); default 0 */
	int peer_replicas;          /* copies of each rank's part on the next
				     * ranks (docs/distributed.md); default 0 */
	int max_restarts;           /* -1: no limit */
	enum catalog_net network;   /* minimum tier; UNKNOWN = any */
	int64_t autostop_ns;        /* 0: none */
	double p_target;            /* (0, 1] */
	int preempt_signal;         /* the workload's "checkpoint and exit"
				     * signal (common/signame.h); SIGTERM */
	int64_t sync_quiet_ns;      /* bucket mounts: a file is stable once
				     * unchanged this long; default
				     * JOBSPEC_DEFAULT_SYNC_QUIET_MS */
	/* chargeback labels (docs/finops.md "Teams"); "" when absent: the
	 * API token's defaults apply */
	char team[JOBSPEC_LABEL_MAX];
	char project[JOBSPEC_LABEL_MAX];
	char cost_center[JOBSPEC_LABEL_MAX];
};

/* NULL when s is a valid label value (1..JOBSPEC_LABEL_MAX-1 bytes of
 * letters, digits and . _ - : / @ +), else why not (static text). */
const char *jobspec_label_bad(const char *s);

/* Set every field to its default (no allocation). */
void jobspec_init(struct jobspec *js);
void jobspec_free(struct jobspec *js); /* NULL-safe; leaves js initialised */

/* Parse a YAML job file.  `name` is the file name used in messages.
 * Every problem in the file is found in one pass: e gets the first and
 * a count of the rest; the _diag forms also return all of them and the
 * notes (d may be NULL; the caller frees it with jobspec_diag_free). */
int jobspec_parse_file(const char *path, struct jobspec *js, struct sr_err *e);
int jobspec_parse_buf(const char *buf, size_t len, const char *name,
		      struct jobspec *js, struct sr_err *e);
int jobspec_parse_file_diag(const char *path, struct jobspec *js,
			    struct jobspec_diag *d, struct sr_err *e);
int jobspec_parse_buf_diag(const char *buf, size_t len, const char *name,
			   struct jobspec *js, struct jobspec_diag *d,
			   struct sr_err *e);
void jobspec_diag_free(struct jobspec_diag *d); /* NULL-safe */

/* Does offering o fit the job's accelerators (any choice), infra /
 * any_of, cpus, memory and network?  Zones compare as given; resolve
 * zone names first (catalog_resolve_infra). */
int jobspec_offer_ok(const struct jobspec *js, const struct catalog_offering *o);

/* Cross-field checks also run by the parsers: accelerators present,
 * use_spot vs criticality, ... `name` prefixes messages. */
int jobspec_validate(const struct jobspec *js, const char *name,
		     struct sr_err *e);

/* JSON: a new reference (caller json_decref()s), NULL on out-of-memory.
 * Money in micro-dollars (_micros), durations in ns (_ns), sizes in
 * bytes; keys follow the YAML layout (docs/market.md). */
json_t *jobspec_to_json(const struct jobspec *js);
int jobspec_from_json(json_t *obj, struct jobspec *js, struct sr_err *e);

/* The deadline as hours after `submit_ns` (Unix ns); +inf if none. */
double jobspec_deadline_h(const struct jobspec *js, int64_t submit_ns);

/* Checkpoint stall in hours (explicit, or derived from the size). */
double jobspec_stall_h(const struct jobspec *js);

/* Parse "40GB", "40GiB", "1.5TB", "512MB", "4096" (bytes).  Decimal
 * units are powers of 1000, binary (KiB..TiB) of 1024. */
int jobspec_parse_size(const char *s, uint64_t *out);

/* "aws", "aws/us-east-1", "aws/us-east-1/use1-az5"; "*" = any.  The
 * cloud is lower-cased (whether a cloud is known is the caller's to
 * check: jobspec_cloud_known).  0 or -EINVAL. */
int jobspec_infra_parse(const char *s, struct jobspec_infra *out);
/* The inverse, into buf ("*" for an empty cloud).  Returns buf. */
char *jobspec_infra_format(const struct jobspec_infra *in, char *buf, size_t n);

/* The image the task asks for in `region` (NULL: any): its entry in
 * the per-region map, else the one image_id, else NULL (the provider's
 * configured image).  Borrowed from js. */
const char *jobspec_image_for(const struct jobspec *js, const char *region);

/* Clouds a job may name: the catalog's (aws, gcp, azure, lambda,
 * coreweave) and the infra names the enabled providers' registry adds
 * (jobspec_set_infra_source).  1 if known. */
int jobspec_cloud_known(const char *cloud);
/* Who knows the infra names beyond the catalog's clouds: the provider
 * registry (lib/providers/registry.h, prov_infra_*), installed by the
 * daemon and the CLI at start, before any parse.  known(name): 1 if a
 * provider sells `name`; names(): "slurm, ..." for messages ("" none).
 * NULL functions: the catalog's clouds only (the default). */
void jobspec_set_infra_source(int (*known)(const char *name),
			      void (*names)(char *buf, size_t cap));

/* A bucket mount from outside the parser (the stored JSON, an API
 * request): its DST, store and URI as the parser makes them.  0 or
 * -SR_EPARSE naming file_mounts.DST. */
int jobspec_bucket_check(const struct jobspec_bucket *b, struct sr_err *e);

/* "MOUNT", "MOUNT_CACHED", "COPY"; parse is case-blind: 0 or -EINVAL. */
const char *jobspec_mode_name(enum jobspec_mode m);
int jobspec_mode_parse(const char *s, enum jobspec_mode *out);

const char *jobspec_crit_name(enum jobspec_crit c);
int jobspec_crit_parse(const char *s, enum jobspec_crit *out);

#endif
