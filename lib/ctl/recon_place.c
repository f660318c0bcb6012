/*
 * recon_place.c - the reconciler's market side: feed the policy once per
 * policy tick and create the nodes it asks for.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloud/timing.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "ctl/auth.h"
#include "ctl/jobsm.h"
#include "ctl/recon_int.h"
#include "store/store_ctl.h"
#include "finops/ledger.h"

/* Policy ticks of market history shown before the first decision:
 * two days at the 10-minute tick. */
#define WARMUP_TICKS 288

double recon__work_total(const struct rjob *j, double scale)
{
	/* The declared work, refined by the bounded estimator (workest.h)
	 * once the workload's pace has been measured - never re-derived
	 * from one pace reading. */
	(void)scale;
	return j->est_work_s > 0 ? j->est_work_s : j->work_s;
}

double recon__work_done(const struct rjob *j, double scale)
{
	double total = recon__work_total(j, scale);

	if (j->total_steps > 0 && j->ckpt_step >= 0)
		return total * fmin(1.0, (double)j->ckpt_step / (double)j->total_steps);
	if (j->total_steps > 0)
		return 0;
	return fmin(j->run_s, 0.99 * total);
}

/* ---- capacity marks ----------------------------------------------------------- */

void ctl__pool_mark(struct ctl *c, int pool)
{
	int64_t now = ctl__now(c);
	int64_t until = now + (int64_t)((double)PLACE_GAP_S / c->cfg.time_scale * 1e9);
	size_t k = 0;

	/* drop expired marks and this pool's old one */
	for (size_t i = 0; i < c->nmarks; i++) {
		if (c->marks[i].until_ns > now && c->marks[i].pool != pool)
			c->marks[k++] = c->marks[i];
	}
	c->nmarks = k;
	if (c->nmarks < CTL_MARKS_MAX)
		c->marks[c->nmarks++] = (struct ctl_mark){ pool, until };
}

bool ctl__spot_open(struct ctl *c, int pool)
{
	struct cloud_offering o;
	int64_t now = ctl__now(c);

	for (size_t i = 0; i < c->nmarks; i++) {
		if (c->marks[i].pool == pool && c->marks[i].until_ns > now)
			return false;
	}
	return ctl__describe(c, pool, &o) == 0 && o.spot_available;
}

/* What a real cloud lets us know of the last `ticks` policy ticks of the
 * job's spot pools (market.h): the market view's price history, and
 * spot availability as OUR OWN record shows it - a tick in which one of
 * our nodes there got a preemption notice, or a launch there failed for
 * capacity or quota, was without spot; any other tick counts as with
 * it.  avail and price are [ticks][nspot], oldest tick first. */
struct unavail {
	int64_t since;
	double gap_ns;
	int ticks, nspot, i;
	uint8_t *avail;
};

static void mark_unavail(void *ud, int64_t at)
{
	struct unavail *u = ud;
	int t = (int)((double)(at - u->since) / u->gap_ns);

	if (t >= 0 && t < u->ticks)
		u->avail[t * u->nspot + u->i] = 0;
}

static int warm_history(struct ctl *c, struct store *db,
			const struct place_plan *p, int ticks, uint8_t *avail,
			double *price)
{
	int64_t now = ctl__now(c);
	double gap_ns = (double)p->gap_s / c->cfg.time_scale * 1e9;
	int64_t since = now - (int64_t)(gap_ns * ticks);
	double *h = calloc((size_t)ticks, sizeof *h);
	struct sr_err e = { 0 };
	int rc = 0;

	if (!h)
		return -ENOMEM;
	memset(avail, 1, (size_t)ticks * (size_t)p->nspot);
	for (int i = 0; !rc && i < p->nspot; i++) {
		struct unavail u = { since, gap_ns, ticks, p->nspot, i, avail };
		struct cloud_offering o;
		double last = -1;

		ctl__price_history(c, p->spot[i], (double)p->gap_s, ticks, h);
		if (ctl__describe(c, p->spot[i], &o) == 0 && o.spot_per_h >= 0)
			last = sr_money_to_usd(o.spot_per_h);
		/* an unknown price is the next known one (the price now last) */
		for (int t = ticks - 1; t >= 0; t--) {
			if (h[t] < 0)
				h[t] = last;
			last = h[t];
			price[t * p->nspot + i] = last > 0 ? last : 0;
		}
		rc = store_pool_unavailable(db, p->spot[i], since, mark_unavail,
					    &u, &e);
	}
	free(h);
	return rc;
}

static int load_state(struct ctl *c, struct store *db, int64_t id, void **blob,
		      size_t *len, struct place_choice *last)
{
	struct sr_err e = { 0 };
	void *b = NULL;
	char *ds = NULL;
	size_t n = 0;
	json_t *d;
	int rc;

	*blob = NULL;
	*len = 0;
	memset(last, 0, sizeof *last);
	last->pool = -1;
	rc = store_job_policy_load(db, id, &b, &n, &ds, &e);
	if (rc)
		return rc;
	if (b && n > 0) {
		rc = place_state_unpack(c->cfg.policy, b, n, blob, len);
		if (rc == -SR_ECORRUPT) {
			sr_warn("recon", "stored policy state not usable",
				"job=%" PRId64 " bytes=%zu: another format, "
				"version or policy; rebuilt from the market's "
				"past", id, n);
			rc = 0;
		}
	}
	d = ds ? json_loads(ds, 0, NULL) : NULL;
	if (d) {
		last->hold = (enum sim_hold)json_integer_value(json_object_get(d, "hold"));
		last->pool = (int)json_integer_value(json_object_get(d, "pool"));
		last->spot = json_is_true(json_object_get(d, "spot"));
		snprintf(last->why, sizeof last->why, "%s",
			 json_string_value(json_object_get(d, "why")) ?: "");
		json_decref(d);
	}
	free(b);
	free(ds);
	return rc;
}

static int save_state(struct ctl *c, struct store *db, int64_t id, int64_t tick,
		      const void *state, size_t state_len,
		      const struct place_choice *ch, struct sr_err *e)
{
	json_t *d = json_pack("{s:i,s:i,s:b,s:s}", "hold", (int)ch->hold,
			      "pool", ch->pool, "spot", ch->spot, "why", ch->why);
	char *ds = d ? json_dumps(d, JSON_COMPACT) : NULL;
	void *blob = NULL;
	size_t len = 0;
	int rc = 0;

	json_decref(d);
	if (state)
		rc = place_state_pack(c->cfg.policy, state, state_len, &blob, &len);
	if (rc) {
		free(ds);
		return sr_err_set(e, rc, "policy state");
	}
	rc = store_begin(db, e);
	if (!rc)
		rc = store_job_policy_save(db, id, blob, len, ds, tick, e);
	rc = store_end(db, rc, e);
	free(ds);
	free(blob);
	return rc;
}

void recon__place_now(struct ctl *c, struct rjob *j, const struct rnode *live,
		      size_t nlive, double sim, struct place_now *now)
{
	memset(now, 0, sizeof *now);
	j->plan.work_s = recon__work_total(j, c->cfg.time_scale);
	/* A restart takes what restarts have measured, when that is more
	 * than the plan's guess (a loaded machine, a slow image). */
	if (j->est_restart_s > j->plan.restart_s)
		j->plan.restart_s = j->est_restart_s;
	now->work_done_s = recon__work_done(j, c->cfg.time_scale);
	now->elapsed_s = sim - j->sim_start_s;
	now->time_left_s = j->deadline_s - now->elapsed_s;
	now->held_pool = -1;
	for (size_t i = 0; i < nlive; i++) {
		if (!live[i].notice_ns) {
			now->held_pool = live[i].pool;
			now->held_spot = live[i].spot;
			break;
		}
	}
	now->ckpt_pool = j->last_pool;
}

int recon__policy_tick(struct ctl *c, struct store *db, struct rjob *j,
		       const struct rnode *live, size_t nlive, bool fresh,
		       struct place_choice *ch, struct sr_err *e)
{
	struct place_now now = { 0 };
	double sim = ctl__sim_now(c);
	bool owns = place_state_owns(c->cfg.policy);
	struct ctl_pol *pol;
	void *blob = NULL;
	size_t len = 0;
	int64_t tick;
	int rc;

	if (!j->plan_ok)
		return sr_err_set(e, -SR_ECORRUPT, "job %" PRId64 ": bad plan", j->id);
	/* Ticks on the absolute cloud grid, like the traces' 10-minute
	 * ticks, so the market cannot change in the middle of one. */
	tick = (int64_t)floor(sim / (double)j->plan.gap_s) -
	       (int64_t)floor(j->sim_start_s / (double)j->plan.gap_s);
	if (tick < 0)
		tick = 0;
	rc = load_state(c, db, j->id, &blob, &len, ch);
	if (rc)
		goto out;
	/* The state in memory wins; a stored one is used only when this
	 * process has none (a restart) and the policy's state owns no
	 * memory - otherwise its bytes hold another process's pointers. */
	pol = ctl__pol_get(c, j->id);
	if (pol || owns) {
		free(blob);
		blob = NULL;
		len = 0;
	}
	if (pol) {
		/* Borrowed for this call; put back at out. */
		blob = pol->state;
		len = pol->len;
		pol->state = NULL;
		pol->len = 0;
	}
	/* A decision for spot in a pool that has lost its capacity since
	 * (a finer-grained trace, a failed launch) is stale: decide again. */
	if (tick <= j->policy_tick &&
	    (!fresh || ch->hold != SIM_SPOT || ctl__spot_open(c, ch->pool)))
		goto out;
	recon__place_now(c, j, live, nlive, sim, &now);
	now.tick = tick;
	/* No memory yet (first decision, or the daemon restarted): show the
	 * policy the market's recent past first. */
	if (!blob) {
		size_t cells = (size_t)WARMUP_TICKS * (size_t)(j->plan.nspot ?
							       j->plan.nspot : 1);
		uint8_t *av = malloc(cells);
		double *pr = malloc(cells * sizeof *pr);

		rc = av && pr ? warm_history(c, db, &j->plan, WARMUP_TICKS, av, pr) :
		     -ENOMEM;
		if (rc)
			sr_err_set(e, rc, "job %" PRId64 ": market history", j->id);
		else
			rc = place_warmup(c, &j->plan, c->cfg.policy, WARMUP_TICKS,
					  av, pr, &blob, &len, e);
		free(av);
		free(pr);
		if (rc)
			goto out;
	}
	now.preempted = (j->state == JOB_RECOVERING || j->state == JOB_NOTICE ||
			 j->state == JOB_CHECKPOINTING) &&
			strcmp(j->recover_reason, "preempted") == 0;
	rc = place_decide(c, &j->plan, c->cfg.policy, &now, &blob, &len, ch, e);
	if (!rc)
		rc = save_state(c, db, j->id, tick, owns ? NULL : blob,
				owns ? 0 : len, ch, e);
	if (!rc)
		j->policy_tick = tick;
out:
	if (blob && ctl__pol_put(c, j->id, blob, len) != 0)
		place_state_free(c->cfg.policy, blob, len);
	return rc;
}

/* How long the local cloud takes to boot rank `rank`'s node, real ns:
 * a draw from the timing profile, else the provisioning delay. */
static int64_t boot_ns(const struct ctl *c, const struct rjob *j, int rank)
{
	uint64_t key = c->cfg.timing_seed * UINT64_C(0x100000001b3) ^
		       (uint64_t)j->id << 32 ^ (uint64_t)j->restarts << 16 ^
		       (uint64_t)j->attempt << 8 ^ (uint64_t)rank;

	if (!c->cfg.timing)
		return c->cfg.provision_ms * 1000000;
	return (int64_t)(cloud_timing_boot_s(c->cfg.timing, key) /
			 c->cfg.time_scale * 1e9);
}

int recon__nodes_create(struct ctl *c, struct store *db, const struct rjob *j,
			const int *ranks, int nranks, int pool, bool spot,
			bool spare, int64_t now, struct sr_err *e)
{
	struct cloud_offering o;
	int rc;

	rc = ctl__describe(c, pool, &o);
	if (rc)
		return sr_err_set(e, rc, "pool %d: not in the market", pool);
	for (int i = 0; i < nranks && !rc; i++) {
		char tok[CTL_TOKEN_HEX + 1];
		unsigned char dg[CTL_DIGEST_LEN];
		int rank = spare ? j->num_nodes : ranks[i];
		struct store_node_new nn = {
			.job = j->id, .rank = rank, .spare = spare, .token_hash = dg,
			.token_hash_len = CTL_DIGEST_LEN,
			.provider = ctl__prov_name(c, pool), .cloud = o.cloud,
			.region = o.region, .zone = o.zone,
			.instance_type = o.instance_type,
			.accelerator = o.accelerator, .accel_count = o.accel_count,
			.spot = spot, .pool = pool,
			.price_micros = spot ? o.spot_per_h : o.ondemand_per_h,
			.list_micros = o.ondemand_per_h,
			.reserved_micros = o.reserved_per_h, .created_ns = now,
			.boot_at_ns = now + boot_ns(c, j, rank),
		};
		int64_t id = 0;

		/* A placeholder nobody holds, until the node's agent trades
		 * its bootstrap secret for a token (nodeboot.h) */
		rc = ctl_token_new(tok);
		if (rc)
			break;
		ctl_token_digest(tok, dg);
		explicit_bzero(tok, sizeof tok);
		rc = store_node_insert(db, &nn, &id, e);
	}
	return rc;
}

/* ---- job rows ---------------------------------------------------------------- */

int recon__job_set(struct store *db, int64_t id, const char *assign, int64_t a,
		   struct sr_err *e)
{
	char sql[256];
	struct store_stmt *st = NULL;
	int rc;

	snprintf(sql, sizeof sql, "UPDATE jobs SET %s WHERE id=?2", assign);
	rc = store_prepare(db, sql, &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, a);
	store_bind_i64(st, 2, id);
	rc = recon__run(st, e, assign);
	store_done(st);
	return rc;
}

/* ---- placement of missing ranks ---------------------------------------------- */

/* Update the job's human message (no event: nothing changed state). */
void recon__job_set_msg(struct store *db, int64_t id, const char *msg)
{
	struct sr_err e = { 0 };
	int rc = store_job_set_message(db, id, msg, &e);

	if (rc)
		sr_warn("recon", "cannot set the job message", "job=%" PRId64
			" err=\"%s\"", id, sr_err_str(&e, rc));
}

static json_t *placement_json(struct ctl *c, int pool, bool spot, const char *why)
{
	struct cloud_offering o;

	if (ctl__describe(c, pool, &o))
		return NULL;
	return json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:f,s:b,s:I,s:s}",
		"provider", ctl__prov_name(c, pool), "pool", pool, "cloud", o.cloud,
		"region", o.region, "zone", o.zone, "instance_type", o.instance_type,
		"accelerator", o.accelerator, "accelerator_count", o.accel_count,
		"spot", spot, "price_micros_per_hour",
		(json_int_t)(spot ? o.spot_per_h : o.ondemand_per_h), "why", why);
}

static bool same_place(struct ctl *c, int a, int b)
{
	struct cloud_offering x, y;

	if (ctl__describe(c, a, &x) ||
	    ctl__describe(c, b, &y))
		return false;
	return strcmp(x.cloud, y.cloud) == 0 && strcmp(x.region, y.region) == 0 &&
	       strcmp(x.zone, y.zone) == 0;
}

/* The job's planned on-demand cost, the baseline of honest savings
 * (finops/report.h): its declared work on its nodes at the price of the
 * plan's on-demand pool (or the chosen pool's on-demand price when the
 * plan has none).  Once per job, at its first placement. */
static int record_plan(struct ctl *c, struct store *db, const struct rjob *j,
		       int pool, int64_t now, struct sr_err *e)
{
	struct cloud_offering o;
	struct ledger_plan lp = { 0 };

	if (ctl__describe(c, j->plan.od >= 0 ? j->plan.od : pool, &o) || o.ondemand_per_h < 0)
		return 0; /* no on-demand price to plan against */
	lp.job_id = j->id;
	lp.at_ns = now;
	lp.provider = o.cloud;
	lp.region = o.region;
	lp.zone = o.zone[0] ? o.zone : NULL;
	lp.instance_type = o.instance_type;
	lp.work_ns = (int64_t)(j->work_s * 1e9);
	lp.nodes = j->num_nodes;
	lp.od_price = o.ondemand_per_h;
	return ledger_plan_add(db, &lp, NULL, e);
}

bool recon__work_finished(const struct rjob *j)
{
	return j->total_steps > 0 && j->ckpt_step >= j->total_steps;
}

/* The policy waits, but the job's work is all checkpointed: nothing is
 * left to gain by waiting, and the workload only has to restore and
 * report completion.  Take the cheapest node there is now - spot where a
 * pool has capacity, else on-demand - rather than wait without end. */
static void finisher(struct ctl *c, const struct rjob *j,
		     struct place_choice *ch)
{
	sr_micros best = -1;
	struct cloud_offering o;

	if (j->plan.od >= 0 && j->plan.crit != JOBSPEC_CRIT_BEST_EFFORT &&
	    ctl__describe(c, j->plan.od, &o) == 0 &&
	    o.ondemand_per_h >= 0) {
		best = o.ondemand_per_h;
		ch->hold = SIM_OD;
		ch->pool = j->plan.od;
		ch->spot = false;
	}
	for (int i = 0; i < j->plan.nspot; i++) {
		if (j->plan.crit == JOBSPEC_CRIT_CRITICAL || j->plan.use_spot == 0)
			break;
		if (ctl__describe(c, j->plan.spot[i], &o) ||
		    !ctl__spot_open(c, j->plan.spot[i]) || o.spot_per_h < 0 ||
		    (best >= 0 && o.spot_per_h >= best))
			continue;
		best = o.spot_per_h;
		ch->hold = SIM_SPOT;
		ch->pool = j->plan.spot[i];
		ch->spot = true;
	}
	if (best >= 0)
		snprintf(ch->why, sizeof ch->why, "all %" PRId64 " steps are "
			 "checkpointed: the cheapest node now (%s) to finish",
			 j->total_steps, ch->spot ? "spot" : "on-demand");
}

/* live[i] is one node of an allocation that ends with a noticed node's
 * (provider.h, CLOUD_CAP_GROUP_ALLOC: its launch group, the nodes placed
 * with it in one pass): its rank is placed again with the noticed ones,
 * as one group, before its own notice comes. */
static bool group_doomed(struct ctl *c, const struct rnode *live,
			 size_t nlive, size_t i)
{
	int k = ctl__cloud_of(c, live[i].pool);

	if (k < 0 || !(c->clouds[k].caps & CLOUD_CAP_GROUP_ALLOC))
		return false;
	for (size_t q = 0; q < nlive; q++) {
		if (live[q].notice_ns && live[q].job == live[i].job &&
		    live[q].pool == live[i].pool &&
		    live[q].created_ns == live[i].created_ns)
			return true;
	}
	return false;
}

/* A rank placed while others of its gang run on spot goes to their
 * pool, while it is up, even where the policy would move the gang to
 * another: a gang split across pools is not what the policy planned, and
 * a move of the gang is made whole (reconcile.c maybe_migrate). */
static void gang_pool(struct ctl *c, const struct rnode *live, size_t nlive,
		      struct place_choice *ch)
{
	struct cloud_offering o;
	int held = -1;

	if (ch->hold != SIM_SPOT)
		return;
	for (size_t i = 0; i < nlive && held < 0; i++) {
		if (!live[i].notice_ns && live[i].spot)
			held = live[i].pool;
	}
	if (held < 0 || held == ch->pool || ctl__describe(c, held, &o) ||
	    !o.spot_available || !ctl__spot_open(c, held))
		return;
	ch->pool = held;
	snprintf(ch->why, sizeof ch->why, "spot in pool %d, beside the rest of "
		 "the gang", held);
}

/* The placement that carries out a move of the gang (reconcile.c
 * maybe_migrate) goes to the pool the move was decided for, while it is
 * open.  The policy ticks on while the gang takes its final checkpoint,
 * and a later tick, deciding with the gang still in the old pool, may
 * keep it there: placing on that decision would restart the gang where
 * it was, for nothing (test_dist_gang's gang did, session 25).  The
 * simulator moves at the tick it decides; this keeps the product to the
 * same move.  Lost with the daemon's memory: after a restart the policy
 * decides again. */
static void move_pool(struct ctl *c, const struct rjob *j,
		      struct place_choice *ch)
{
	struct ctl_pol *pol = ctl__pol_get(c, j->id);
	int to;

	/* only the placement after the move's stop takes (and ends) it */
	if (!pol || pol->move_pool < 0 || j->state != JOB_RECOVERING ||
	    strcmp(j->recover_reason, "migrate") != 0)
		return;
	to = pol->move_pool;
	pol->move_pool = -1;
	if (!ctl__spot_open(c, to))
		return;
	ch->hold = SIM_SPOT;
	ch->pool = to;
	ch->spot = true;
	snprintf(ch->why, sizeof ch->why, "spot in pool %d, where the move "
		 "was decided", to);
}

/* Create nodes for the ranks that have none, where the policy says.
 * Returns 1 if nodes were created, 0 if waiting, < 0 on error. */
int recon__place_missing(struct ctl *c, struct store *db, struct rjob *j,
			 const struct rnode *live, size_t nlive)
{
	struct place_choice ch;
	struct sr_err e = { 0 };
	int ranks[RECON_MAX_NODES], nr = 0;
	int64_t now = ctl__now(c);
	double sim = ctl__sim_at(c, now);
	json_t *pl = NULL, *d = NULL;
	char *pls = NULL, msg[320], where[128];
	bool moved;
	int rc;

	for (int r = 0; r < j->num_nodes && r < RECON_MAX_NODES; r++) {
		bool have = false;

		for (size_t i = 0; i < nlive; i++)
			have |= live[i].rank == r && !live[i].notice_ns &&
				!group_doomed(c, live, nlive, i);
		if (!have)
			ranks[nr++] = r;
	}
	/* a warm spare takes a missing rank before any node is placed */
	if (nr > 0 && recon__spares_adopt(c, db, j, ranks, &nr, now) < 0)
		return -EIO;
	if (nr == 0)
		return 1;
	rc = recon__policy_tick(c, db, j, live, nlive, true, &ch, &e);
	if (rc)
		goto fail;
	move_pool(c, j, &ch);
	gang_pool(c, live, nlive, &ch);
	if ((ch.hold == SIM_NONE || ch.pool < 0) && recon__work_finished(j))
		finisher(c, j, &ch);
	if (ch.hold == SIM_NONE || ch.pool < 0) {
		recon__job_set_msg(db, j->id, ch.why);
		return 0;
	}
	pl = placement_json(c, ch.pool, ch.spot, ch.why);
	pls = pl ? json_dumps(pl, JSON_COMPACT) : NULL;
	if (!pls) {
		rc = -ENOMEM;
		goto fail;
	}
	moved = j->last_pool >= 0 && !same_place(c, j->last_pool, ch.pool);
	rc = store_begin(db, &e);
	if (rc)
		goto fail;
	rc = recon__nodes_create(c, db, j, ranks, nr, ch.pool, ch.spot, false,
				 now, &e);
	if (!rc)
		rc = store_job_set_placement(db, j->id, pls, moved, &e);
	snprintf(msg, sizeof msg, "%d node(s) in %s %s (%s): %s", nr,
		 recon__where(json_string_value(json_object_get(pl, "cloud")),
			      json_string_value(json_object_get(pl, "region")),
			      json_string_value(json_object_get(pl, "zone")),
			      where, sizeof where),
		 json_string_value(json_object_get(pl, "instance_type")),
		 ch.spot ? "spot" : "on-demand", ch.why);
	if (!rc && j->state == JOB_PENDING)
		rc = record_plan(c, db, j, ch.pool, now, &e);
	if (!rc)
		rc = ctl_event_append(db, j->id, moved ? "move" : "placement", NULL, NULL,
				   0, now, sim, pl, msg, &e);
	if (!rc && ch.hold == SIM_OD && j->plan.crit == JOBSPEC_CRIT_STANDARD &&
	    j->plan.use_spot != 0 && j->plan.nspot > 0) {
		d = json_pack("{s:f,s:f}", "time_left_s", j->deadline_s -
			      (sim - j->sim_start_s), "work_left_s",
			      recon__work_total(j, c->cfg.time_scale) -
			      recon__work_done(j, c->cfg.time_scale));
		rc = ctl_event_append(db, j->id, "deadline_risk", NULL, NULL, 0, now, sim,
				   d, "deadline at risk on spot: falling back to "
				   "on-demand", &e);
	}
	/* placed at a notice (reconcile.c replace_noticed): the gang is still
	 * checkpointing, the state moves on from there */
	if (!rc && (j->state == JOB_PENDING || j->state == JOB_RECOVERING))
		rc = jobsm_move(db, j->id, j->state, JOB_PROVISIONING, now, sim,
				      msg, &e);
	rc = store_end(db, rc, &e);
	if (rc)
		goto fail;
	sr_info("recon", moved ? "job moves" : "job placed", "job=%" PRId64
		" pool=%d spot=%d nodes=%d", j->id, ch.pool, ch.spot, nr);
	json_decref(pl);
	json_decref(d);
	free(pls);
	return 1;
fail:
	sr_error("recon", "placement failed", "job=%" PRId64 " err=\"%s\"", j->id,
		 sr_err_str(&e, rc));
	json_decref(pl);
	json_decref(d);
	free(pls);
	return rc < 0 ? rc : -EIO;
}

