/* Unit tests: the reconciler's node pass decisions with an injected
 * clock - a daemon restart never loses a live node whatever the outage
 * (5 s, 15 s, 60 s, 10 min), a silent node is lost one timeout after the
 * restart and not before, a failed provider list() ends or notices
 * nothing, a failed terminate() is retried until the provider confirms
 * it - and paging through more than 4,096 active jobs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl_int.h"
#include "ctl_db_raw.h"
#include "store_bridge.h"
#include "ctl/recon_int.h"
#include "finops/ledger.h"

#define S INT64_C(1000000000)
#define MS INT64_C(1000000)

static char dir[64], path[128];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/sr-ctlrecon-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof path, "%s/spotrun.db", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd);
}

static struct ctl_config cfg_default(void)
{
	struct ctl_config cfg;

	ctl_config_defaults(&cfg);
	return cfg;
}

static struct rnode ready_node(int64_t id, int64_t last_hb, int64_t billed)
{
	struct rnode n;

	memset(&n, 0, sizeof n);
	n.id = id;
	snprintf(n.state, sizeof n.state, "READY");
	n.last_hb_ns = last_hb;
	n.billed_until_ns = billed;
	return n;
}

/* The daemon was down for `down` (real clock); it starts at mono 1000 s
 * and passes every 100 ms.  A live agent reconnects `back` after the
 * start (its retry backoff) and then beats every second. */
static int lost_after_restart(int64_t down, int64_t back)
{
	struct ctl_config cfg = cfg_default();
	struct hbtable t = { 0 };
	struct ctl_node_obs o = { .alive = true };
	int64_t real0 = INT64_C(1800000000) * S, mono0 = 1000 * S;
	struct rnode n = ready_node(7, real0 - down, real0 - down);
	int lost = 0;

	for (int64_t dt = 0; dt <= 60 * S; dt += 100 * MS) {
		int64_t real = real0 + dt, silent;
		enum node_act a;

		if (dt >= back && (dt - back) % S == 0)
			n.last_hb_ns = real; /* the heartbeat lands */
		silent = recon__silence(&t, n.id, n.last_hb_ns, mono0 + dt);
		a = recon__node_act(&cfg, &n, &o, true, real, silent);
		if (a == NODE_LOST_HB || a == NODE_LOST_BOOT)
			lost++;
		if (a == NODE_BILL)
			n.billed_until_ns = real;
	}
	recon__silence_clear(&t);
	return lost;
}

static void test_restart_keeps_live_nodes(void **state)
{
	static const int64_t downs[] = { 5 * S, 15 * S, 60 * S, 600 * S };

	(void)state;
	for (size_t i = 0; i < sizeof downs / sizeof downs[0]; i++) {
		/* agents back at once, or after up to 9.9 s of backoff */
		assert_int_equal(lost_after_restart(downs[i], 0), 0);
		assert_int_equal(lost_after_restart(downs[i], 3 * S), 0);
		assert_int_equal(lost_after_restart(downs[i], 9900 * MS), 0);
	}
}

/* An agent that is really gone is still lost - one timeout after the
 * restart, not before. */
static void test_dead_node_lost_one_timeout_after_start(void **state)
{
	struct ctl_config cfg = cfg_default();
	struct hbtable t = { 0 };
	struct ctl_node_obs o = { .alive = true };
	int64_t real0 = INT64_C(1800000000) * S, mono0 = 5 * S, dt;
	struct rnode n = ready_node(3, real0 - 600 * S, real0);
	enum node_act a = NODE_KEEP;

	(void)state;
	for (dt = 0; dt <= 30 * S; dt += 100 * MS) {
		int64_t silent = recon__silence(&t, n.id, n.last_hb_ns, mono0 + dt);

		a = recon__node_act(&cfg, &n, &o, true, real0 + dt, silent);
		if (a == NODE_LOST_HB)
			break;
	}
	assert_int_equal(a, NODE_LOST_HB);
	assert_true(dt > cfg.heartbeat_timeout_ms * MS);
	assert_true(dt <= cfg.heartbeat_timeout_ms * MS + 100 * MS);
	/* the wall clock stepping back an hour changes nothing */
	recon__silence_clear(&t);
	n.last_hb_ns = real0;
	assert_int_equal(recon__silence(&t, n.id, n.last_hb_ns, mono0), 0);
	assert_int_equal(recon__node_act(&cfg, &n, &o, true, real0 - 3600 * S,
					 recon__silence(&t, n.id, n.last_hb_ns,
							mono0 + S)), NODE_KEEP);
	recon__silence_clear(&t);
}

/* The silence table: sorted inserts, a heartbeat resets only its node,
 * and pruning keeps exactly the live nodes. */
static void test_silence_table(void **state)
{
	struct hbtable t = { 0 };
	struct rnode live[2];

	(void)state;
	assert_int_equal(recon__silence(&t, 5, 100, 10 * S), 0);
	assert_int_equal(recon__silence(&t, 3, 100, 11 * S), 0);
	assert_int_equal(recon__silence(&t, 9, -1, 12 * S), 0);
	assert_int_equal(t.n, 3);
	assert_true(t.v[0].node == 3 && t.v[1].node == 5 && t.v[2].node == 9);
	assert_int_equal(recon__silence(&t, 5, 100, 20 * S), 10 * S);
	assert_int_equal(recon__silence(&t, 5, 200, 21 * S), 0);
	assert_int_equal(recon__silence(&t, 3, 100, 21 * S), 10 * S);
	memset(live, 0, sizeof live);
	live[0].id = 3;
	live[1].id = 9;
	recon__silence_prune(&t, live, 2);
	assert_int_equal(t.n, 2);
	assert_true(t.v[0].node == 3 && t.v[1].node == 9);
	assert_int_equal(recon__silence(&t, 9, -1, 22 * S), 10 * S);
	recon__silence_clear(&t);
}

/* list() failed: its observations are garbage (here: all zero), so a
 * noticed node is kept until its notice deadline and nothing is
 * noticed; when list() works, a gone instance ends at once. */
static void test_failed_list_ends_nothing(void **state)
{
	struct ctl_config cfg = cfg_default();
	struct ctl_node_obs junk = { .alive = false, .notice_ns = 1 };
	int64_t now = INT64_C(1800000000) * S;
	struct rnode n = ready_node(1, now, now);

	(void)state;
	assert_int_equal(recon__node_act(&cfg, &n, &junk, false, now, 0), NODE_KEEP);
	assert_int_equal(recon__node_act(&cfg, &n, &junk, true, now, 0), NODE_NOTICE);
	n.notice_ns = now - S;
	n.kill_ns = now + 60 * S;
	assert_int_equal(recon__node_act(&cfg, &n, &junk, false, now, 0), NODE_KEEP);
	assert_int_equal(recon__node_act(&cfg, &n, &junk, true, now, 0),
			 NODE_END_PREEMPTED);
	/* the notice deadline holds even without a list */
	assert_int_equal(recon__node_act(&cfg, &n, &junk, false, n.kill_ns, 0),
			 NODE_END_PREEMPTED);
}

/* A noticed node the cloud lists as shutting down before its deadline
 * is the pass's to decide (NODE_GOING: its agent may still report); one
 * gone, or noticed without a deadline, ends at once; at the deadline it
 * ends whatever the list says. */
static void test_shutting_down_noticed_node_is_decided_by_the_pass(void **state)
{
	struct ctl_config cfg = cfg_default();
	struct ctl_node_obs stopping = { .alive = false, .stopping = true };
	struct ctl_node_obs gone = { .alive = false };
	int64_t now = INT64_C(1800000000) * S;
	struct rnode n = ready_node(1, now, now);

	(void)state;
	n.notice_ns = now - S;
	n.kill_ns = now + 30 * S;
	assert_int_equal(recon__node_act(&cfg, &n, &stopping, true, now, 0),
			 NODE_GOING);
	assert_int_equal(recon__node_act(&cfg, &n, &gone, true, now, 0),
			 NODE_END_PREEMPTED);
	assert_int_equal(recon__node_act(&cfg, &n, &stopping, true, n.kill_ns, 0),
			 NODE_END_PREEMPTED);
	n.kill_ns = 0;
	assert_int_equal(recon__node_act(&cfg, &n, &stopping, true, now, 0),
			 NODE_END_PREEMPTED);
}

/* ---- terminate() failure, with a fake provider --------------------------- */

static int term_calls, term_fail;

static int fake_terminate(void *st, const char *const *ids, size_t n,
			  struct cloud_error *err)
{
	(void)st;
	(void)ids;
	(void)n;
	term_calls++;
	return term_fail ? cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "scripted")
			 : 0;
}

static int fake_describe(void *st, int pool, struct cloud_offering *o)
{
	(void)st;
	memset(o, 0, sizeof *o);
	o->pool = pool;
	o->spot_available = true;
	o->spot_per_h = 1000000;
	o->ondemand_per_h = 3000000;
	return 0;
}

static const struct cloud_market_ops market_ops = { .name = "fake",
						    .describe = fake_describe };
static const struct cloud_driver_ops fake_ops = { .name = "fake",
						  .terminate = fake_terminate };

/* c's one cloud: the fake market and driver. */
static void fake_cloud(struct ctl *c)
{
	static struct ctl_cloud one;

	snprintf(one.name, sizeof one.name, "fake");
	one.p.mkt = (struct cloud_market){ &market_ops, NULL };
	one.p.drv = (struct cloud_driver){ &fake_ops, NULL };
	c->clouds = &one;
	c->nclouds = 1;
}

static sqlite3 *open_db(void)
{
	struct sr_err e = { 0 };
	sqlite3 *db = NULL;

	assert_int_equal(ctl_db_open(path, &db, &e), 0);
	assert_int_equal(ctl_db_migrate(db, &e), 0);
	return db;
}

static int64_t insert_job(sqlite3 *db)
{
	struct sr_err e = { 0 };

	assert_int_equal(ctl_db_exec(db, "INSERT INTO jobs(name, state, spec_name,"
		" spec_yaml, spec_json, num_nodes, max_restarts, created_ns,"
		" updated_ns, state_since_ns, sim_start_s) VALUES('j', 'RUNNING',"
		" 'j.yaml', 'run: x', '{}', 1, 3, 1, 1, 1, 0)", &e), 0);
	return sqlite3_last_insert_rowid(db);
}

static int64_t pending(sqlite3 *db, int64_t id)
{
	sqlite3_stmt *st = NULL;
	int64_t v;

	assert_int_equal(sqlite3_prepare_v2(db, "SELECT kill_pending FROM nodes"
					    " WHERE id=?", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void test_failed_terminate_is_retried(void **state)
{
	struct ctl *c = calloc(1, sizeof *c);
	struct sr_err e = { 0 };
	sqlite3 *db = open_db();
	struct rnode n;
	int64_t job = insert_job(db), id;
	char sql[512];

	(void)state;
	assert_non_null(c);
	fake_cloud(c);
	snprintf(c->state_dir, sizeof c->state_dir, "%s", dir);
	snprintf(sql, sizeof sql, "INSERT INTO nodes(job_id, rank, state,"
		 " token_hash, provider, cloud, region, zone, instance_type,"
		 " accelerator, accel_count, spot, pool, price_micros, list_micros,"
		 " reserved_micros, created_ns, boot_at_ns, instance_id) VALUES(%lld,"
		 " 0, 'TERMINATED', x'00', 'fake', 'aws', 'r', 'z', 'i', 'V100', 1,"
		 " 1, 0, 1, 1, 1, 1, 1, 'i-4242')", (long long)job);
	assert_int_equal(ctl_db_exec(db, sql, &e), 0);
	id = sqlite3_last_insert_rowid(db);
	memset(&n, 0, sizeof n);
	n.id = id;
	n.job = job;
	snprintf(n.instance, sizeof n.instance, "i-4242");
	/* the database says TERMINATED; the provider fails to terminate */
	term_fail = 1;
	ON_STORE(db, s, (recon__kill(c, s, &n), 0));
	assert_int_equal(pending(db, id), 1);
	/* each pass retries while it fails, then clears once it works */
	term_calls = 0;
	ON_STORE(db, s, (recon__kill_pending(c, s), 0));
	assert_int_equal(term_calls, 1);
	assert_int_equal(pending(db, id), 1);
	term_fail = 0;
	ON_STORE(db, s, (recon__kill_pending(c, s), 0));
	assert_int_equal(term_calls, 2);
	assert_int_equal(pending(db, id), 0);
	ON_STORE(db, s, (recon__kill_pending(c, s), 0));
	assert_int_equal(term_calls, 2);
	sqlite3_close_v2(db);
	free(c);
}

/* Lost work is counted as it was: the time an attempt ran past the
 * checkpoint the next attempt restored (all of it when that checkpoint
 * is older than the attempt), at the attempt's place and price, once per
 * attempt, whatever step the daemon last saw. */
static int64_t lost_s(sqlite3 *db, int64_t job, int64_t attempt, char *pool,
		      size_t n)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	assert_int_equal(sqlite3_prepare_v2(db, "SELECT value_ns, provider || '/' ||"
		" region || '/' || zone, value_cost FROM ledger_lost WHERE job_id=?"
		" AND attempt=?", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, job);
	sqlite3_bind_int64(st, 2, attempt);
	if (sqlite3_step(st) == SQLITE_ROW) {
		v = sqlite3_column_int64(st, 0) / S;
		snprintf(pool, n, "%s", (const char *)sqlite3_column_text(st, 1));
		/* dollars: lost time at the attempt's price ($0.918/h) */
		assert_int_equal(sqlite3_column_int64(st, 2),
				 sr_money_cost(918000, sqlite3_column_int64(st, 0)));
	}
	sqlite3_finalize(st);
	return v;
}

static void test_lost_work_from_the_restored_checkpoint(void **state)
{
	struct ctl *c = calloc(1, sizeof *c);
	struct sr_err e = { 0 };
	sqlite3 *db = open_db();
	sqlite3_stmt *st = NULL;
	struct rjob j;
	int64_t job = insert_job(db), node;
	char sql[512], pool[64];

	(void)state;
	assert_non_null(c);
	fake_cloud(c);
	c->cfg.time_scale = 1; /* cloud seconds = real seconds */
	assert_int_equal(ledger_migrate(db, &e), 0);
	snprintf(sql, sizeof sql, "INSERT INTO nodes(job_id, rank, state,"
		 " token_hash, provider, cloud, region, zone, instance_type,"
		 " accelerator, accel_count, spot, pool, price_micros, list_micros,"
		 " reserved_micros, created_ns, boot_at_ns) VALUES(%lld, 0,"
		 " 'TERMINATED', x'00', 'local', 'aws', 'us-east-1', 'use1-az2',"
		 " 'p3.2xlarge', 'V100', 1, 1, 3, 918000, 3060000, 1, 1, 1)",
		 (long long)job);
	assert_int_equal(ctl_db_exec(db, sql, &e), 0);
	node = sqlite3_last_insert_rowid(db);
	memset(&j, 0, sizeof j);
	j.id = job;
	/* attempt 1 runs 1000..2000 s and commits steps 100 (at 1200 s) and
	 * 200 (1500 s); the daemon last saw step 50 when it was preempted */
	j.attempt = 1;
	j.step = 50;
	j.run_started_ns = 1000 * S;
	assert_int_equal(ON_STORE(db, s, recon__lost_seen(s, job, 1, 100, 1200 * S,
							  &e)), 0);
	assert_int_equal(ON_STORE(db, s, recon__lost_seen(s, job, 1, 200, 1500 * S,
							  &e)), 0);
	/* seen again later: the first report stands */
	assert_int_equal(ON_STORE(db, s, recon__lost_seen(s, job, 2, 200, 2500 * S,
							  &e)), 0);
	assert_int_equal(ON_STORE(db, s, recon__lost_open(c, s, &j, "preemption",
				node, 918000, 2000 * S, &e)), 0);
	/* a snapshot reported as checkpointed but never durable */
	snprintf(sql, sizeof sql, "UPDATE jobs SET ckpt_step=1190 WHERE id=%lld",
		 (long long)job);
	assert_int_equal(ctl_db_exec(db, sql, &e), 0);
	/* attempt 1's own late report counts nothing */
	assert_int_equal(ON_STORE(db, s, recon__lost_settle(c, s, job, 1, 10, false,
				2001 * S, &e)), 0);
	assert_int_equal(lost_s(db, job, 1, pool, sizeof pool), -1);
	/* attempt 2 restored step 200: 2000 - 1500 s lost */
	assert_int_equal(ON_STORE(db, s, recon__lost_settle(c, s, job, 2, 200, true,
				2100 * S, &e)), 0);
	assert_int_equal(lost_s(db, job, 1, pool, sizeof pool), 500);
	assert_string_equal(pool, "aws/us-east-1/use1-az2");
	/* the restore is the truth about what was durable */
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT ckpt_step FROM jobs WHERE id=?",
					    -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, job);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(st, 0), 200);
	sqlite3_finalize(st);
	st = NULL;
	/* a second report of that attempt counts nothing more */
	assert_int_equal(ON_STORE(db, s, recon__lost_settle(c, s, job, 2, 210, false,
				2200 * S, &e)), 0);
	/* attempt 2 (2100..3000 s) commits nothing; attempt 3 restores
	 * step 200 again: all of attempt 2 is lost */
	j.attempt = 2;
	j.step = 300;
	j.run_started_ns = 2100 * S;
	assert_int_equal(ON_STORE(db, s, recon__lost_open(c, s, &j, "preemption",
				node, 918000, 3000 * S, &e)), 0);
	assert_int_equal(ON_STORE(db, s, recon__lost_settle(c, s, job, 3, 200, true,
				3100 * S, &e)), 0);
	assert_int_equal(lost_s(db, job, 2, pool, sizeof pool), 900);
	/* attempt 3 (3100..3600 s) commits 300 at 3400 s and its node is
	 * lost; the job ends before another attempt says what it restored:
	 * counted from its newest commit */
	j.attempt = 3;
	j.run_started_ns = 3100 * S;
	assert_int_equal(ON_STORE(db, s, recon__lost_seen(s, job, 3, 300, 3400 * S,
							  &e)), 0);
	assert_int_equal(ON_STORE(db, s, recon__lost_open(c, s, &j, "lost", node,
				918000, 3600 * S, &e)), 0);
	assert_int_equal(ON_STORE(db, s, recon__lost_settle(c, s, job, -1, -1, false,
				3700 * S, &e)), 0);
	assert_int_equal(lost_s(db, job, 3, pool, sizeof pool), 200);
	/* one lost_work event per attempt, and nothing left pending */
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM events"
		" WHERE job_id=?1 AND type='lost_work'), (SELECT count(*) FROM"
		" lost_pending WHERE job_id=?1)", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, job);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(st, 0), 3);
	assert_int_equal(sqlite3_column_int64(st, 1), 0);
	sqlite3_finalize(st);
	sqlite3_close_v2(db);
	free(c);
}

/* More active jobs than the old fixed array of 4,096: every one is
 * stepped, in order, and finished ones are not. */
static void test_active_jobs_are_paged_not_capped(void **state)
{
	struct sr_err e = { 0 };
	sqlite3 *db = open_db();
	int64_t *ids = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(ctl_db_exec(db, "BEGIN", &e), 0);
	for (int i = 0; i < 5000; i++)
		insert_job(db);
	assert_int_equal(ctl_db_exec(db, "UPDATE jobs SET state='SUCCEEDED'"
				     " WHERE id % 7 = 0; COMMIT", &e), 0);
	assert_int_equal(ON_STORE(db, s, recon__active_jobs(s, &ids, &n)), 0);
	assert_int_equal(n, 5000 - 5000 / 7);
	for (size_t i = 1; i < n; i++)
		assert_true(ids[i] > ids[i - 1] && ids[i] % 7 != 0);
	assert_int_equal(ids[n - 1], 5000);
	free(ids);
	sqlite3_close_v2(db);
}

/* A persisted policy state is versioned: its own bytes round-trip; raw
 * struct bytes (the old format), another version, another policy or
 * another size are refused, so the state is rebuilt, never misread. */
static void test_policy_state_is_versioned(void **state)
{
	const struct policy_ops *ops = policy_find("up");
	size_t sz = ops->state_size, len = 0, plen = 0;
	unsigned char *raw = malloc(sz);
	unsigned char *packed = NULL;
	void *back = NULL;

	(void)state;
	assert_non_null(raw);
	for (size_t i = 0; i < sz; i++)
		raw[i] = (unsigned char)(i * 7 + 1);
	assert_int_equal(place_state_pack("up", raw, sz, (void **)&packed, &plen), 0);
	assert_int_equal(place_state_unpack("up", packed, plen, &back, &len), 0);
	assert_int_equal(len, sz);
	assert_memory_equal(back, raw, sz);
	free(back);
	/* the old format: the struct's bytes alone, of the right size */
	assert_int_equal(place_state_unpack("up", raw, sz, &back, &len),
			 -SR_ECORRUPT);
	assert_null(back);
	/* another policy's name, a truncated blob, another version */
	assert_int_equal(place_state_unpack("ups", packed, plen, &back, &len),
			 -SR_ECORRUPT);
	assert_int_equal(place_state_unpack("up", packed, plen - 1, &back, &len),
			 -SR_ECORRUPT);
	packed[4] ^= 0xff;
	assert_int_equal(place_state_unpack("up", packed, plen, &back, &len),
			 -SR_ECORRUPT);
	free(packed);
	free(raw);
}

/* ---- the deadline guard follows the policy's self_guarded flag --------- */

/* Spot is there, but the deadline leaves no room for a lost tick: every
 * policy not marked self_guarded gets the guard's on-demand whatever it
 * chose; a self_guarded one (greedy) is left to its own rule - which
 * here also says on-demand, with its own reason. */
static void test_guard_follows_self_guarded(void **state)
{
	struct ctl *c = calloc(1, sizeof *c);
	struct place_plan p = { .nspot = 1, .spot = { 0 }, .od = 1,
				.od_price_usd = 3.0, .deadline_s = 10 * 3600.0,
				.work_s = 35900, .restart_s = 60,
				.gap_s = 600, .use_spot = 1 };
	struct place_now now = { .work_done_s = 0, .time_left_s = 10 * 3600.0,
				 .held_pool = -1, .ckpt_pool = -1 };
	int guarded = 0;

	(void)state;
	assert_non_null(c);
	ctl_config_defaults(&c->cfg);
	fake_cloud(c);
	for (size_t i = 0; policy_all[i]; i++) {
		const char *name = policy_all[i]->name;
		struct place_choice ch;
		struct sr_err e = { 0 };
		void *st = NULL;
		size_t len = 0;

		assert_int_equal(place_decide(c, &p, name, &now, &st, &len, &ch, &e), 0);
		if (ch.hold != SIM_OD)
			fail_msg("%s: hold %d, want on-demand", name, (int)ch.hold);
		guarded += !policy_all[i]->self_guarded;
		place_state_free(name, st, len);
	}
	assert_true(guarded >= 3);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restart_keeps_live_nodes),
		cmocka_unit_test(test_dead_node_lost_one_timeout_after_start),
		cmocka_unit_test(test_silence_table),
		cmocka_unit_test(test_failed_list_ends_nothing),
		cmocka_unit_test(test_shutting_down_noticed_node_is_decided_by_the_pass),
		cmocka_unit_test(test_policy_state_is_versioned),
		cmocka_unit_test(test_guard_follows_self_guarded),
		cmocka_unit_test_setup_teardown(test_failed_terminate_is_retried,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_work_from_the_restored_checkpoint,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_active_jobs_are_paged_not_capped,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
