/*
 * ctl.h - the spotrund daemon as a library: configuration, start, stop.
 *
 * ctl_start() opens the state directory, migrates the database, creates
 * the admin token on first start, starts the HTTP server and the
 * reconciler thread.  Everything it knows lives in the database, so
 * ctl_stop() followed by ctl_start() on the same state dir (or a kill -9
 * and a restart) carries on where it left off.
 */
#ifndef SR_CTL_CTL_H
#define SR_CTL_CTL_H

#include <stdint.h>

#include "common/err.h"

struct ctl;
struct cloud_confs;
struct cloud_prov_def;
struct cloud_timing;

struct ctl_config {
	const char *state_dir;     /* required; created 0700 */
	const char *store;         /* the state's store (lib/store): NULL =
				      SQLite <state_dir>/spotrun.db, or a
				      "postgresql://..." URI (docs/store.md) */
	const char *listen_host;   /* "127.0.0.1" */
	int listen_port;           /* 7077; 0 = ephemeral (tests) */
	/* The providers to open, comma-separated ("local,aws"); NULL or "":
	 * those of `providers`, else the registry's first (local). */
	const char *provider;
	/* The config file's `providers:` section with the flags' overrides
	 * (cloud/conf.h); borrowed, must outlive the daemon.  NULL: none. */
	struct cloud_confs *providers;
	/* The provider table (lib/providers/registry.h); NULL: the built-in
	 * one.  Tests add their own providers here. */
	const struct cloud_prov_def *const *registry;
	const char *agent_path;    /* spotrun-agent binary; NULL = beside exe */
	const char *data_dir;      /* catalog + traces; NULL = catalog_find_data_dir */
	double time_scale;         /* cloud seconds per real second (3600) */
	int64_t notice_ms;         /* the local cloud's notice lead, real ms
				      (cloud_host.notice_ms): a real cloud's
				      notice carries its own time */
	int64_t stop_grace_ms;     /* a stop's grace: after a notice's
				      deadline, or from a stop no cloud
				      timed (a policy move) (5000) */
	int64_t provision_ms;      /* the local cloud's provisioning delay,
				      real ms (cloud_host.provision_ms) */
	/* A real cloud's timing profile for the local cloud (cloud/
	 * timing.h), borrowed, NULL none: each node's boot is drawn from
	 * it (cloud seconds / time_scale) instead of provision_ms; draws
	 * are keyed by timing_seed, the job, the rank and the attempt. */
	const struct cloud_timing *timing;
	uint64_t timing_seed;
	int64_t heartbeat_ms;      /* what agents are told (1000) */
	int64_t heartbeat_timeout_ms; /* node LOST after this silence (10000) */
	int64_t boot_timeout_ms;   /* BOOTING without register -> LOST (30000) */
	int64_t bill_interval_ms;  /* ledger row per node per interval (1000) */
	int64_t tick_ms;           /* reconciler period (100) */
	double trace_start_h;      /* cloud clock at first start, trace hours */
	int http_threads;          /* 4 */
	int64_t lease_ms;          /* the leader's lease (5000; lease.c) */
	int64_t restart_guess_ms;  /* agent + workload start, real ms (3000) */
	const char *policy;        /* lib/sim policy name ("spotrun") */
	int64_t imds_poll_ms;      /* what agents are told (500) */
	const char *tls_cert;      /* PEM certificate (chain) file: serve
				      HTTPS; NULL = plain HTTP */
	const char *tls_key;       /* its PEM private key file */
	int insecure_listen;       /* allow a non-loopback listen_host
				      without TLS (tokens in clear) */
	int manual_reconcile;      /* tests: start no reconciler thread;
				      the caller runs passes itself */
};

/* Defaults for every field except state_dir. */
void ctl_config_defaults(struct ctl_config *cfg);

/* Start the daemon.  On success *out owns it (ctl_stop frees). */
int ctl_start(const struct ctl_config *cfg, struct ctl **out, struct sr_err *e);

/* Port actually bound (for listen_port 0). */
int ctl_port(const struct ctl *c);
/* "http[s]://HOST:PORT" as clients and agents reach it (borrowed). */
const char *ctl_url(const struct ctl *c);
/* Admin token (borrowed). */
const char *ctl_admin_token(const struct ctl *c);

/* Stop threads, close everything.  Nodes (agent processes) keep running:
 * the next start adopts them from the database.  NULL-safe. */
void ctl_stop(struct ctl *c);

#endif
