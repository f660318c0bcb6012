/*
 * schema.c - every table of spotrun's store, as numbered migrations of
 * two components ('ctl' and 'ledger'), in both SQL dialects.
 *
 * Never edit a migration that has shipped; append a new one.
 *
 * Tables (all STRICT):
 *   settings   key/value facts that must survive restarts (clock epoch).
 *   jobs       one row per job: spec, state, desired state, counters.
 *              `state` changes only through jobsm_transition().
 *   nodes      one row per node ever requested; never deleted.  A node
 *              belongs to one job and one rank; token_hash is the
 *              SHA-256 of its bearer token (random, given to its agent
 *              once, in exchange for a one-time bootstrap secret).
 *   node_boot  those bootstrap secrets' SHA-256, until used or expired.
 *   uploads    the archives of jobs' files (workdir, file_mounts) by
 *              SHA-256; jobs.files names a job's.
 *   exits      one row per (job, attempt, rank): how that rank's workload
 *              of that attempt ended.  The primary key makes a duplicated
 *              report harmless.
 *   events     append-only log of everything that happened to a job.
 *   logs       workload output lines.
 *   ledger, ledger_event, ledger_plan, ledger_lost, ledger_billed
 *              the cost ledger (lib/finops),
 *              append-only: triggers refuse UPDATE and DELETE.
 *   node_launch  a launch's parameters, sealed (component 'launch').
 *   budget_alerts  each budget crossing alerted (once per level/month).
 *
 * A step's PostgreSQL text is NULL when the SQLite text maps to it by
 * type names alone (store__pg_ddl below); STRICT tables become plain
 * ones, whose declared types PostgreSQL enforces anyway.
 */
#include <stdlib.h>
#include <string.h>

#include "market/joblimits.h"
#include "store/store_int.h"

static const char m1[] =
	"CREATE TABLE settings("
	" key TEXT PRIMARY KEY,"
	" value TEXT NOT NULL) STRICT;"

	"CREATE TABLE jobs("
	" id INTEGER PRIMARY KEY,"
	" name TEXT NOT NULL,"
	" state TEXT NOT NULL CHECK(state IN ('PENDING','PROVISIONING',"
	"  'RUNNING','NOTICE','CHECKPOINTING','PREEMPTED','RECOVERING',"
	"  'SUCCEEDED','FAILED','CANCELLED')),"
	" desired TEXT NOT NULL DEFAULT 'run' CHECK(desired IN ('run','cancel')),"
	" spec_name TEXT NOT NULL,"
	" spec_yaml TEXT NOT NULL,"
	" spec_json TEXT NOT NULL,"       /* normalised spec, see spec.h */
	" workdir TEXT,"
	" envs TEXT,"                      /* JSON object: API env overrides */
	" num_nodes INTEGER NOT NULL CHECK(num_nodes BETWEEN "
	SR_LIMIT_STR(SR_LIMIT_NUM_NODES_MIN) " AND "
	SR_LIMIT_STR(SR_LIMIT_NUM_NODES_MAX) "),"
	" max_restarts INTEGER NOT NULL CHECK(max_restarts >= 0),"
	" restarts INTEGER NOT NULL DEFAULT 0,"
	" attempt INTEGER NOT NULL DEFAULT 0,"
	" preemptions INTEGER NOT NULL DEFAULT 0,"
	" moves INTEGER NOT NULL DEFAULT 0,"
	" recoveries INTEGER NOT NULL DEFAULT 0,"
	" exit_code INTEGER,"
	" created_ns INTEGER NOT NULL,"
	" updated_ns INTEGER NOT NULL,"
	" finished_ns INTEGER,"
	" state_since_ns INTEGER NOT NULL,"
	" sim_start_s REAL NOT NULL,"     /* cloud clock at creation */
	" deadline_s REAL,"               /* cloud seconds after sim_start_s */
	" work_s REAL,"                   /* estimated cloud seconds of work */
	" step INTEGER, total_steps INTEGER, ckpt_step INTEGER,"
	" notice_step INTEGER,"           /* step when the last notice came */
	" notice_ns INTEGER,"             /* wall clock of the last notice */
	" run_started_ns INTEGER,"        /* wall clock the attempt started */
	" run_s REAL NOT NULL DEFAULT 0," /* cloud seconds spent RUNNING */
	" placement TEXT,"                /* JSON of the last placement */
	" recover_reason TEXT,"           /* preempted|lost|crash */
	" candidates TEXT,"               /* JSON {"spot":[pool..],"od":pool} */
	" policy_state BLOB,"             /* the sim policy's memory */
	" policy_tick INTEGER NOT NULL DEFAULT -1," /* last tick decided */
	" decision TEXT,"                 /* JSON {"hold":..,"pool":..} */
	" down_since_ns INTEGER,"         /* training stopped at (recovery) */
	" cost_micros INTEGER NOT NULL DEFAULT 0," /* running sum of ledger costs */
	" message TEXT NOT NULL DEFAULT '') STRICT;"
	"CREATE INDEX jobs_state ON jobs(state);"

	"CREATE TABLE nodes("
	" id INTEGER PRIMARY KEY,"
	" job_id INTEGER NOT NULL REFERENCES jobs(id),"
	" rank INTEGER NOT NULL CHECK(rank >= 0),"
	" state TEXT NOT NULL CHECK(state IN ('REQUESTED','BOOTING','READY',"
	"  'TERMINATED','LOST')),"
	" token_hash BLOB NOT NULL,"
	" provider TEXT NOT NULL, cloud TEXT NOT NULL, region TEXT NOT NULL,"
	" zone TEXT NOT NULL, instance_type TEXT NOT NULL,"
	" accelerator TEXT NOT NULL, accel_count REAL NOT NULL,"
	" spot INTEGER NOT NULL CHECK(spot IN (0,1)),"
	" pool INTEGER NOT NULL,"         /* index into the provider's pools */
	" price_micros INTEGER NOT NULL,"
	" list_micros INTEGER NOT NULL,"
	" reserved_micros INTEGER NOT NULL,"
	" pid INTEGER, pid_start INTEGER,"
	" created_ns INTEGER NOT NULL,"
	" boot_at_ns INTEGER NOT NULL,"   /* provisioning delay ends */
	" registered_ns INTEGER, last_hb_ns INTEGER,"
	" notice_ns INTEGER, kill_ns INTEGER,"
	" terminated_ns INTEGER, end_reason TEXT,"
	" billed_until_ns INTEGER,"
	" cost_micros INTEGER NOT NULL DEFAULT 0,"
	" workload TEXT NOT NULL DEFAULT 'idle',"
	" wl_attempt INTEGER NOT NULL DEFAULT 0,"
	" wl_pgid INTEGER,"
	" cpu_util REAL, gpu_util REAL,"
	" util_sum REAL NOT NULL DEFAULT 0, util_n INTEGER NOT NULL DEFAULT 0,"
	" setup_rc INTEGER,"              /* setup's exit code once reported */
	" agent_exited INTEGER NOT NULL DEFAULT 0) STRICT;"
	"CREATE INDEX nodes_job ON nodes(job_id, rank);"
	"CREATE INDEX nodes_state ON nodes(state);"
	"CREATE INDEX nodes_token ON nodes(token_hash);"

	"CREATE TABLE exits("
	" job_id INTEGER NOT NULL REFERENCES jobs(id),"
	" attempt INTEGER NOT NULL,"
	" rank INTEGER NOT NULL,"
	" node_id INTEGER NOT NULL REFERENCES nodes(id),"
	" exit_code INTEGER,"
	" signal INTEGER,"
	" cause TEXT NOT NULL CHECK(cause IN ('completed','preempted',"
	"  'stopped','crashed')),"
	" ts_ns INTEGER NOT NULL,"
	" PRIMARY KEY(job_id, attempt, rank)) STRICT;"

	"CREATE TABLE events("
	" seq INTEGER PRIMARY KEY,"
	" job_id INTEGER NOT NULL REFERENCES jobs(id),"
	" ts_ns INTEGER NOT NULL,"
	" sim_s REAL NOT NULL,"
	" type TEXT NOT NULL,"
	" from_state TEXT, to_state TEXT,"
	" node_id INTEGER,"
	" message TEXT NOT NULL,"
	" data TEXT) STRICT;"
	"CREATE INDEX events_job ON events(job_id, seq);"

	"CREATE TABLE logs("
	" seq INTEGER PRIMARY KEY,"
	" job_id INTEGER NOT NULL REFERENCES jobs(id),"
	" node_id INTEGER NOT NULL,"
	" rank INTEGER NOT NULL,"
	" attempt INTEGER NOT NULL,"
	" ts_ns INTEGER NOT NULL,"
	" stream TEXT NOT NULL,"
	" line TEXT NOT NULL,"
	" truncated INTEGER NOT NULL DEFAULT 0) STRICT;"
	"CREATE INDEX logs_job ON logs(job_id, seq);";

/* 2: what the job's billed node-hours would have cost at list and at
 * reserved prices (reserved_unknown: some offering had no reserved price). */
static const char m2[] =
	"ALTER TABLE jobs ADD COLUMN list_cost_micros INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN reserved_cost_micros INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN reserved_unknown INTEGER NOT NULL DEFAULT 0;";

/* 3: the workload's pace, measured within one attempt from rank 0's
 * heartbeats (so agent start, interpreter start and restore do not
 * count): wall ns per step. */
static const char m3[] =
	"ALTER TABLE jobs ADD COLUMN pace_attempt INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN pace_step0 INTEGER;"
	"ALTER TABLE jobs ADD COLUMN pace_t0_ns INTEGER;"
	"ALTER TABLE jobs ADD COLUMN step_ns REAL;";

/* 4: a node the policy moves the job off (spot <-> on-demand): its agent
 * is told to checkpoint and stop, then the node is replaced. */
static const char m4[] =
	"ALTER TABLE nodes ADD COLUMN retire INTEGER NOT NULL DEFAULT 0;";

/* 5: the bounded work estimator (workest.h): its estimate of the total
 * work, smoothed pace, observed steps and its sample window. */
static const char m5[] =
	"ALTER TABLE jobs ADD COLUMN est_work_s REAL NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN est_pace_ns REAL NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN est_steps INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN est_attempt INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN est_step0 INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN est_t0_ns INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN est_last_step INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN est_last_ns INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN est_upd_ns INTEGER NOT NULL DEFAULT 0;"
	/* measured restart overhead (workest.h), cloud s; 0 = none yet */
	"ALTER TABLE jobs ADD COLUMN est_restart_s REAL NOT NULL DEFAULT 0;"
	/* lost work pending until a later attempt's restore (recon_lost.c) */
	"ALTER TABLE jobs ADD COLUMN lost_from_step INTEGER;"
	"ALTER TABLE jobs ADD COLUMN lost_attempt INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN lost_node INTEGER;"
	"ALTER TABLE jobs ADD COLUMN lost_price INTEGER NOT NULL DEFAULT 0;"
	/* a terminate the provider failed: retried every node pass */
	"ALTER TABLE nodes ADD COLUMN kill_pending INTEGER NOT NULL DEFAULT 0;";


/* 6: the Idempotency-Key a job was created with and the SHA-256 of that
 * request's body: a retried POST /v1/jobs returns the job it created
 * instead of a second one (docs/api.md "Idempotency"). */
static const char m6[] =
	"ALTER TABLE jobs ADD COLUMN idem_key TEXT;"
	"ALTER TABLE jobs ADD COLUMN idem_hash BLOB;"
	"CREATE UNIQUE INDEX jobs_idem ON jobs(idem_key) WHERE idem_key IS NOT NULL;";

/* 7: a job's secret env values, sealed (lib/ctl/secrets.h); never in
 * clear anywhere in the database. */
static const char m7[] =
	"ALTER TABLE jobs ADD COLUMN secrets_enc BLOB;";

/* 8: the address a node's peers reach it at (the agent's own, or the
 * one its register request came from): rank 0's is the gang's
 * MASTER_ADDR (docs/distributed.md). */
static const char m8[] =
	"ALTER TABLE nodes ADD COLUMN addr TEXT;";

/* 9: the cloud's instance id and its driver's JSON blob, stored with
 * the node (provider contract v2, lib/cloud/compute.h).  A local node
 * of before has its process as its identity: "local-<pid>-<start>".
 * phase refines a node's state while a cloud works on it: 'queued' (a
 * REQUESTED node whose launch the cloud is carrying out: QUEUED in the
 * API) and 'pending' (a BOOTING node whose instance the cloud still
 * boots: PENDING); nodes.state keeps its original CHECK set (SQLite
 * cannot change a CHECK without rebuilding the table). */
static const char m9[] =
	"ALTER TABLE nodes ADD COLUMN instance_id TEXT;"
	"ALTER TABLE nodes ADD COLUMN driver_blob TEXT;"
	"ALTER TABLE nodes ADD COLUMN phase TEXT CHECK(phase IN ('queued',"
	" 'pending'));"
	"UPDATE nodes SET instance_id = 'local-' || pid || '-' ||"
	" coalesce(pid_start, 0) WHERE pid IS NOT NULL AND pid > 0;";

/* 10: a rebalance recommendation (AWS: IMDS events/recommendations/
 * rebalance), the cloud's early warning that the node's capacity is at
 * risk: when it came (wall clock), NULL none.  Not a notice: nothing is
 * ended by it; the planner may read it (docs/providers.md). */
static const char m10[] =
	"ALTER TABLE nodes ADD COLUMN rebalance_ns INTEGER;";

/* 11: one-time bootstrap secrets (lib/ctl/nodeboot.c, issue 24): what a
 * node's user-data carries instead of its token.  hash is the secret's
 * SHA-256; a secret is valid for its node until expires_ns, and once
 * used (nonce_hash: the SHA-256 of the agent's nonce; used_ns) only the
 * same agent's retry of that exchange is answered.  A launch attempt
 * adds a row; the first use deletes the node's other rows. */
static const char m11[] =
	"CREATE TABLE node_boot("
	" hash BLOB PRIMARY KEY,"
	" node_id INTEGER NOT NULL,"
	" expires_ns INTEGER NOT NULL,"
	" nonce_hash BLOB,"
	" used_ns INTEGER) STRICT;"
	"CREATE INDEX node_boot_node ON node_boot(node_id);"
	"CREATE INDEX node_boot_expires ON node_boot(expires_ns);";

/* 12: what spotrun tells a user must be true (issue 28).
 * jobs.deadline_state: what the job was last told about its deadline
 * (lib/ctl/recon_deadline.c): 0 nothing (on track, or none), 1 at risk
 * (a deadline_risk event), 2 missed (a deadline_missed event; final).
 * ckpt_seen: when the daemon first heard of each committed step of a job,
 * and in which attempt; lost_pending: the attempts that ended before
 * their work was safe (preempted, lost, crashed, moved), until the next
 * attempt says what it restored (lib/ctl/recon_lost.c). */
static const char m12[] =
	"ALTER TABLE jobs ADD COLUMN deadline_state INTEGER NOT NULL DEFAULT 0;"
	"CREATE TABLE ckpt_seen("
	" job_id INTEGER NOT NULL REFERENCES jobs(id),"
	" step INTEGER NOT NULL CHECK(step >= 0),"
	" attempt INTEGER NOT NULL,"
	" seen_ns INTEGER NOT NULL,"
	" PRIMARY KEY(job_id, step)) STRICT;"
	"CREATE TABLE lost_pending("
	" job_id INTEGER NOT NULL REFERENCES jobs(id),"
	" attempt INTEGER NOT NULL,"
	" cause TEXT NOT NULL CHECK(cause IN ('preemption','lost','crash',"
	"  'move')),"
	" node_id INTEGER,"
	" price_micros INTEGER NOT NULL CHECK(price_micros >= 0),"
	" started_ns INTEGER NOT NULL,"
	" ended_ns INTEGER NOT NULL,"
	" step INTEGER,"
	" PRIMARY KEY(job_id, attempt)) STRICT;";

/* 13: the recovery point of a job with tier 3 (issue 23), from rank 0's
 * heartbeats: the newest step on its node's disk, and the save time
 * (wall ns) of ckpt_step, the object store's newest. */
static const char m13[] =
	"ALTER TABLE jobs ADD COLUMN ckpt_local_step INTEGER;"
	"ALTER TABLE jobs ADD COLUMN ckpt_store_ns INTEGER;";

/* 14: a job's files (issue 24): the workdir and file_mounts `spotrun
 * launch` read as its user and uploaded as one archive (lib/bundle,
 * POST /v1/uploads), kept by their SHA-256 ("sha256:<hex>"); jobs.files
 * names the one a job brings.  Nothing on the daemon's or a node's disk
 * is read on a job's behalf any more. */
static const char m14[] =
	"CREATE TABLE uploads("
	" id TEXT PRIMARY KEY,"
	" bytes INTEGER NOT NULL CHECK (bytes > 0),"
	" created_ns INTEGER NOT NULL,"
	" data BLOB NOT NULL) STRICT;"
	"ALTER TABLE jobs ADD COLUMN files TEXT;";

/* 15: who pays (issue 34, docs/finops.md "Teams"): a job's chargeback
 * labels, from its job file or its API token's defaults (NULL: none);
 * budget_alerts: one row per budget (scope 'team'|'project', its name),
 * month (YYYY-MM) and level crossed (80, 100), written in the
 * transaction that sends the alert, so each crossing alerts once. */
static const char m15[] =
	"ALTER TABLE jobs ADD COLUMN team TEXT;"
	"ALTER TABLE jobs ADD COLUMN project TEXT;"
	"ALTER TABLE jobs ADD COLUMN cost_center TEXT;"
	"CREATE TABLE budget_alerts("
	" scope TEXT NOT NULL CHECK (scope IN ('team', 'project')),"
	" name TEXT NOT NULL,"
	" month TEXT NOT NULL,"
	" level INTEGER NOT NULL CHECK (level IN (80, 100)),"
	" at_ns INTEGER NOT NULL,"
	" forecast INTEGER NOT NULL,"
	" budget INTEGER NOT NULL,"
	" PRIMARY KEY (scope, name, month, level)) STRICT;";

/* 16: warm spares (issue 33, docs/design/distributed.md "Warm spares"):
 * a node launched as a spare (spare = 1) is booted and set up beside a
 * job's gang, bound to no rank until a notice: its rank is the job's
 * num_nodes, outside the gang's 0..num_nodes-1, so no query of the
 * gang's ranks (addresses, missing ranks, exits) sees it.  adopted_ns:
 * when it took a lost rank's place (its rank then that rank's); NULL
 * while it is still a spare.  spare stays 1 after, so its bill before
 * adopted_ns is the spare's (lib/finops). */
static const char m16[] =
	"ALTER TABLE nodes ADD COLUMN spare INTEGER NOT NULL DEFAULT 0"
	" CHECK (spare IN (0, 1));"
	"ALTER TABLE nodes ADD COLUMN adopted_ns INTEGER;";

/* The ledger's rows are never changed or removed. */
#define APPEND_ONLY_SQLITE(t)                                                \
	"CREATE TRIGGER IF NOT EXISTS " t "_no_update BEFORE UPDATE ON " t  \
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;"          \
	"CREATE TRIGGER IF NOT EXISTS " t "_no_delete BEFORE DELETE ON " t  \
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;"
#define APPEND_ONLY_PG(t)                                                    \
	"CREATE TRIGGER " t "_no_change BEFORE UPDATE OR DELETE ON " t      \
	" FOR EACH ROW EXECUTE FUNCTION spotrun_append_only();"

/* ledger 1: the ledger and its events. */
static const char l1[] =
	"CREATE TABLE IF NOT EXISTS ledger ("
	" id INTEGER PRIMARY KEY,"
	" provider TEXT NOT NULL CHECK (provider <> ''),"
	" region TEXT NOT NULL CHECK (region <> ''),"
	" zone TEXT,"
	" instance_type TEXT NOT NULL CHECK (instance_type <> ''),"
	" accelerator TEXT,"
	" gpus INTEGER NOT NULL CHECK (gpus >= 0),"
	" pricing INTEGER NOT NULL CHECK (pricing IN (0, 1, 2)),"
	" unit_price INTEGER NOT NULL CHECK (unit_price >= 0),"
	" list_price INTEGER NOT NULL CHECK (list_price >= 0),"
	" reserved_price INTEGER CHECK (reserved_price >= 0),"
	" job_id INTEGER CHECK (job_id > 0),"
	" node_id INTEGER NOT NULL CHECK (node_id > 0),"
	" busy INTEGER NOT NULL CHECK (busy IN (0, 1)),"
	" util_permille INTEGER CHECK (util_permille BETWEEN 0 AND 1000),"
	" start_ns INTEGER NOT NULL,"
	" end_ns INTEGER NOT NULL,"
	" billed_ns INTEGER NOT NULL CHECK (billed_ns >= 0),"
	" cost INTEGER NOT NULL CHECK (cost >= 0),"
	" list_cost INTEGER NOT NULL CHECK (list_cost >= 0),"
	" reserved_cost INTEGER CHECK (reserved_cost >= 0),"
	" CHECK (end_ns > start_ns),"
	" UNIQUE (node_id, start_ns)"
	") STRICT;"
	"CREATE INDEX IF NOT EXISTS ledger_by_start ON ledger(start_ns);"
	"CREATE INDEX IF NOT EXISTS ledger_by_job ON ledger(job_id, start_ns);"
	"CREATE TABLE IF NOT EXISTS ledger_event ("
	" id INTEGER PRIMARY KEY,"
	" kind INTEGER NOT NULL CHECK (kind IN (1, 2, 3)),"
	" job_id INTEGER NOT NULL CHECK (job_id > 0),"
	" node_id INTEGER CHECK (node_id > 0),"
	" provider TEXT,"
	" region TEXT,"
	" zone TEXT,"
	" instance_type TEXT,"
	" at_ns INTEGER NOT NULL,"
	" value_ns INTEGER NOT NULL CHECK (value_ns >= 0),"
	" unit_price INTEGER NOT NULL CHECK (unit_price >= 0),"
	" value_cost INTEGER NOT NULL CHECK (value_cost >= 0)"
	") STRICT;"
	"CREATE INDEX IF NOT EXISTS ledger_event_by_job"
	" ON ledger_event(job_id, kind);"
	"CREATE INDEX IF NOT EXISTS ledger_event_by_at ON ledger_event(at_ns);";

/* ledger 2: ledger_plan, the declared work at on-demand prices (what
 * savings are measured against). */
static const char l2[] =
	"CREATE TABLE IF NOT EXISTS ledger_plan ("
	" job_id INTEGER PRIMARY KEY CHECK (job_id > 0),"
	" at_ns INTEGER NOT NULL,"
	" provider TEXT,"
	" region TEXT,"
	" zone TEXT,"
	" instance_type TEXT,"
	" work_ns INTEGER NOT NULL CHECK (work_ns >= 0),"
	" nodes INTEGER NOT NULL CHECK (nodes > 0),"
	" od_price INTEGER NOT NULL CHECK (od_price >= 0),"
	" planned_cost INTEGER NOT NULL CHECK (planned_cost >= 0)"
	") STRICT;";

/* ledger 3: the work lost, one row per attempt whose work did not
 * survive it (lib/ctl/recon_lost.c): value_ns of cloud time from the
 * point the next attempt restored to the attempt's end, at the unit
 * prices of the attempt's nodes.  Since this table, ledger_event's
 * preemption rows (kind 1) count preemptions with value 0. */
static const char l3[] =
	"CREATE TABLE IF NOT EXISTS ledger_lost ("
	" id INTEGER PRIMARY KEY,"
	" job_id INTEGER NOT NULL CHECK (job_id > 0),"
	" attempt INTEGER NOT NULL CHECK (attempt > 0),"
	" cause TEXT NOT NULL CHECK (cause IN ('preemption', 'lost', 'crash',"
	"  'move')),"
	" node_id INTEGER CHECK (node_id > 0),"
	" provider TEXT,"
	" region TEXT,"
	" zone TEXT,"
	" instance_type TEXT,"
	" at_ns INTEGER NOT NULL,"
	" value_ns INTEGER NOT NULL CHECK (value_ns >= 0),"
	" unit_price INTEGER NOT NULL CHECK (unit_price >= 0),"
	" value_cost INTEGER NOT NULL CHECK (value_cost >= 0),"
	" restored_step INTEGER,"
	" UNIQUE (job_id, attempt)"
	") STRICT;"
	"CREATE INDEX IF NOT EXISTS ledger_lost_by_at ON ledger_lost(at_ns);";

/* ledger 4: the bill's figure beside the estimate (`spotrun cost
 * reconcile --apply`, lib/finops/billed.h): per job (0: none), UTC day
 * (days since the epoch) and provider, what the ledger estimated and what
 * the cloud billed, from which bill.  A later row for the same key
 * supersedes (the newest at_ns); none is ever changed. */
static const char l4[] =
	"CREATE TABLE IF NOT EXISTS ledger_billed ("
	" id INTEGER PRIMARY KEY,"
	" job_id INTEGER NOT NULL CHECK (job_id >= 0),"
	" day INTEGER NOT NULL,"
	" provider TEXT NOT NULL,"
	" estimate INTEGER NOT NULL,"
	" billed INTEGER NOT NULL,"
	" source TEXT NOT NULL,"
	" at_ns INTEGER NOT NULL"
	") STRICT;"
	"CREATE INDEX IF NOT EXISTS ledger_billed_by_key"
	" ON ledger_billed(job_id, day, provider, at_ns);";

/* The leader's lease (lib/ctl/lease.c; docs/store.md): one row; `epoch`
 * grows by one at every takeover and fences the leader's reconciler
 * transactions.  members: every daemon sharing this store, with the API
 * URL agents and clients are given.  A component of its own, so its
 * versions never interleave with the ctl schema's. */
static const char h1[] =
	"CREATE TABLE lease ("
	" id INTEGER PRIMARY KEY CHECK (id = 1),"
	" holder TEXT NOT NULL,"
	" url TEXT NOT NULL,"
	" epoch INTEGER NOT NULL CHECK (epoch >= 0),"
	" expires_ns INTEGER NOT NULL"
	") STRICT;"
	"INSERT INTO lease(id, holder, url, epoch, expires_ns)"
	" VALUES(1, '', '', 0, 0);"
	"CREATE TABLE members ("
	" holder TEXT PRIMARY KEY,"
	" url TEXT NOT NULL,"
	" seen_ns INTEGER NOT NULL"
	") STRICT;";

/* A launch's parameters, kept from its first attempt so that its
 * idempotency key (EC2 ClientToken) always goes with the same ones, on
 * any daemon after a failover (lib/ctl/clouds.c).  `sealed` is the
 * launch as JSON sealed with the secrets key (it holds the node's
 * bootstrap text).  A component of its own. */
static const char n1[] =
	"CREATE TABLE node_launch ("
	" node_id INTEGER PRIMARY KEY CHECK (node_id > 0),"
	" idem_key TEXT NOT NULL,"
	" sealed BLOB NOT NULL,"
	" created_ns INTEGER NOT NULL"
	") STRICT;";

static const struct store_migration launch_steps[] = {
	{ n1, NULL, NULL, NULL },
};

static const struct store_migration ha_steps[] = {
	{ h1, NULL, NULL, NULL },
};

static const struct store_migration ctl_steps[] = {
	{ m1, NULL, NULL, NULL }, { m2, NULL, NULL, NULL },
	{ m3, NULL, NULL, NULL }, { m4, NULL, NULL, NULL },
	{ m5, NULL, NULL, NULL }, { m6, NULL, NULL, NULL },
	{ m7, NULL, NULL, NULL }, { m8, NULL, NULL, NULL },
	{ m9, NULL, NULL, NULL }, { m10, NULL, NULL, NULL },
	{ m11, NULL, NULL, NULL }, { m12, NULL, NULL, NULL },
	{ m13, NULL, NULL, NULL }, { m14, NULL, NULL, NULL },
	{ m15, NULL, NULL, NULL }, { m16, NULL, NULL, NULL },
};

static const struct store_migration ledger_steps[] = {
	{ l1, APPEND_ONLY_SQLITE("ledger") APPEND_ONLY_SQLITE("ledger_event"), NULL,
	  "CREATE FUNCTION spotrun_append_only() RETURNS trigger"
	  " LANGUAGE plpgsql AS $$ BEGIN"
	  " RAISE EXCEPTION 'ledger is append-only'"
	  " USING ERRCODE = 'integrity_constraint_violation'; END $$;"
	  APPEND_ONLY_PG("ledger") APPEND_ONLY_PG("ledger_event") },
	{ l2, APPEND_ONLY_SQLITE("ledger_plan"), NULL, APPEND_ONLY_PG("ledger_plan") },
	{ l3, APPEND_ONLY_SQLITE("ledger_lost"), NULL, APPEND_ONLY_PG("ledger_lost") },
	{ l4, APPEND_ONLY_SQLITE("ledger_billed"), NULL, APPEND_ONLY_PG("ledger_billed") },
};

const struct store_component store__components[] = {
	{ "ctl", ctl_steps, sizeof ctl_steps / sizeof ctl_steps[0] },
	{ "ledger", ledger_steps, sizeof ledger_steps / sizeof ledger_steps[0] },
	{ "ha", ha_steps, sizeof ha_steps / sizeof ha_steps[0] },
	{ "launch", launch_steps, sizeof launch_steps / sizeof launch_steps[0] },
};
const size_t store__ncomponents = sizeof store__components /
				  sizeof store__components[0];

static bool word_at(const char *p, const char *w, const char *start)
{
	size_t n = strlen(w);

	if (strncmp(p, w, n))
		return false;
	if (p > start && (p[-1] == '_' || (p[-1] >= 'A' && p[-1] <= 'Z') ||
			  (p[-1] >= 'a' && p[-1] <= 'z')))
		return false;
	return !(p[n] == '_' || (p[n] >= 'A' && p[n] <= 'Z') ||
		 (p[n] >= 'a' && p[n] <= 'z'));
}

char *store__pg_ddl(const char *sql)
{
	static const struct {
		const char *from, *to;
	} map[] = {
		{ "INTEGER PRIMARY KEY",
		  "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY" },
		{ "INTEGER", "BIGINT" },
		{ "REAL", "DOUBLE PRECISION" },
		{ "BLOB", "BYTEA" },
		{ "STRICT", "" },
	};
	size_t n = strlen(sql);
	char *out = malloc(n * 4 + 1), *o = out;
	bool quoted = false;

	if (!out)
		return NULL;
	for (const char *p = sql; *p;) {
		size_t i;

		if (*p == '\'') {
			quoted = !quoted;
			*o++ = *p++;
			continue;
		}
		for (i = 0; !quoted && i < sizeof map / sizeof map[0]; i++) {
			if (word_at(p, map[i].from, sql))
				break;
		}
		if (quoted || i == sizeof map / sizeof map[0]) {
			*o++ = *p++;
			continue;
		}
		o = stpcpy(o, map[i].to);
		p += strlen(map[i].from);
	}
	*o = 0;
	return out;
}
