/*
 * recon_spare.c - warm spares (issue 33; docs/distributed.md "Warm
 * spares", docs/design/distributed.md).
 *
 * A job with `spotrun: {spares: N}` (without the key: the plan's choice,
 * place_spare.c) keeps N spot nodes booted beside its gang while it
 * runs, in the cheapest spot pool of the gang's cloud and region that
 * has capacity now.  A spare registers, runs the job's setup
 * at once (src/agent) and then idles, bound to no rank: its node row is
 * spare=1 with the job's num_nodes as its rank (schema.c, 16), so no
 * query of the gang's ranks sees it (recon__nodes_live leaves it out).
 *
 * When a rank needs a node (a notice: reconcile.c replace_noticed; a lost
 * node: RECOVERING), recon__place_missing first gives the rank to a live
 * spare (READY ones first): the recovery then waits for no boot and no
 * setup.  Its bill as a spare ends at the adoption (a ledger row closed
 * there), so FinOps tells the spare's time from the rank's.  The next
 * pass of the RUNNING job launches the next spare.
 *
 * Spares are kept while the gang runs on spot (an on-demand gang expects
 * no notice), and a move's ranks (recover_reason "migrate") never go to
 * one: the policy chose where they go.
 *
 * A spare is preemptible: its notice ends it (no preemption of the job is
 * counted: recon_preempt.c), and the pool is marked like any noticed
 * pool, so the next spare goes elsewhere or waits.  A spare whose setup
 * failed is ended and the job keeps no more spares (the run's own setup
 * will say what is wrong).
 *
 * Early replacements (recon_early.c) are spares too, kept beside the
 * plan's count while a gang node is at risk (a rebalance
 * recommendation); one beyond both counts is
 * released (event spare_released, with its bill).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/money.h"
#include "ctl/jobsm.h"
#include "ctl/recon_int.h"
#include "store/store_ctl.h"

/* The job's spares still waiting for a rank, live, by id.  *out
 * malloc'd. */
static int spares_live(struct ctl *c, struct store *db, int64_t job,
		       struct rnode **out, size_t *n)
{
	return recon__nodes_query(c, db, "state IN ('REQUESTED','BOOTING',"
				  "'READY') AND job_id=?1 AND spare=1 AND"
				  " adopted_ns IS NULL", job, out, n);
}

/* One spare takes rank `rank`, in a transaction of its own. */
static int adopt_one(struct ctl *c, struct store *db, const struct rjob *j,
		     const struct rnode *x, int rank, int64_t now)
{
	struct sr_err e = { 0 };
	double sim = ctl__sim_at(c, now);
	bool ready = strcmp(x->state, "READY") == 0;
	bool setup = x->setup_rc == 0;
	char msg[200];
	json_t *d;
	int rc;

	d = json_pack("{s:I,s:i,s:s,s:b,s:f}", "node_id", (json_int_t)x->id,
		      "rank", rank, "state", x->state, "setup_done", setup,
		      "spare_s", (double)(now - x->created_ns) / 1e9 *
		      c->cfg.time_scale);
	snprintf(msg, sizeof msg, "warm spare node %" PRId64 " (%s%s) takes rank "
		 "%d", x->id, ready ? "ready" : x->state,
		 setup ? ", set up" : "", rank);
	rc = store_begin(db, &e);
	if (!rc)
		rc = recon__node_bill(c, db, x, now, &e);
	if (!rc)
		rc = store_node_adopt(db, x->id, rank, now, &e);
	if (!rc)
		rc = ctl_event_append(db, j->id, "spare_adopted", NULL, NULL, x->id,
				      now, sim, d, msg, &e);
	json_decref(d);
	rc = store_end(db, rc, &e);
	if (rc)
		sr_error("recon", "spare adoption failed", "job=%" PRId64
			 " node=%" PRId64 " err=\"%s\"", j->id, x->id,
			 sr_err_str(&e, rc));
	else
		sr_info("recon", "spare adopted", "job=%" PRId64 " node=%" PRId64
			" rank=%d", j->id, x->id, rank);
	return rc;
}

int recon__spares_adopt(struct ctl *c, struct store *db, const struct rjob *j,
			int *ranks, int *nr, int64_t now)
{
	struct rnode *v = NULL;
	size_t n = 0;
	int taken = 0, rc;

	/* a move chose where the ranks go (on-demand, another pool): a
	 * spot spare would undo it.  A job of no spares may have an early
	 * replacement (recon_early.c): the query says. */
	if (strcmp(j->recover_reason, "migrate") == 0)
		return 0;
	rc = spares_live(c, db, j->id, &v, &n);
	if (rc)
		return rc;
	/* READY spares first (booted; set up when setup_rc is 0), then the
	 * ones still booting: either saves what a new node would boot */
	for (int pass = 0; pass < 2 && *nr > 0; pass++) {
		for (size_t i = 0; i < n && *nr > 0; i++) {
			bool ready = strcmp(v[i].state, "READY") == 0;

			if (v[i].notice_ns || v[i].retire || ready != (pass == 0) ||
			    (v[i].setup_rc != INT64_MIN && v[i].setup_rc != 0))
				continue;
			rc = adopt_one(c, db, j, &v[i], ranks[*nr - 1], now);
			if (rc == -SR_ECONFLICT)
				continue; /* adopted by another pass meanwhile */
			if (rc)
				goto out;
			(*nr)--;
			taken++;
		}
	}
	rc = 0;
out:
	free(v);
	return rc ? rc : taken;
}

/* The pool of a new spare: spot, the gang's cloud and region, open now,
 * cheapest spot price, not `avoid` unless no other is open; -1 none. */
static int spare_pool(struct ctl *c, const struct rjob *j, int gang_pool,
		      int avoid)
{
	struct cloud_offering g, o;
	sr_micros best = -1;
	int pool = -1;

	if (ctl__describe(c, gang_pool, &g))
		return -1;
	for (int i = 0; i < j->plan.nspot; i++) {
		int p = j->plan.spot[i];

		if (p == avoid || ctl__describe(c, p, &o) || o.spot_per_h < 0 ||
		    strcmp(o.cloud, g.cloud) || strcmp(o.region, g.region) ||
		    !ctl__spot_open(c, p) || (best >= 0 && o.spot_per_h >= best))
			continue;
		best = o.spot_per_h;
		pool = p;
	}
	return pool < 0 && avoid >= 0 ? spare_pool(c, j, gang_pool, -1) : pool;
}

/* End spare x (noticed, or its setup failed) and say why. */
static void spare_end(struct ctl *c, struct store *db, const struct rjob *j,
		      const struct rnode *x, const char *reason)
{
	struct sr_err e = { 0 };
	int64_t now = ctl__now(c);
	int rc = store_begin(db, &e);

	if (!rc)
		rc = recon__node_end(c, db, x, "TERMINATED", reason, now, &e);
	rc = store_end(db, rc, &e);
	if (rc) {
		sr_error("recon", "ending a spare failed", "job=%" PRId64
			 " node=%" PRId64 " err=\"%s\"", j->id, x->id,
			 sr_err_str(&e, rc));
		return;
	}
	if (x->notice_ns && x->spot)
		ctl__pool_mark(c, x->pool);
	recon__kill(c, db, x);
}

/* A spare of the job failed its setup once: keep no more. */
static bool setup_failed_once(struct ctl *c, struct store *db, int64_t job)
{
	struct rnode *v = NULL;
	size_t n = 0;
	bool failed = recon__nodes_query(c, db, "job_id=?1 AND spare=1 AND"
					 " setup_rc IS NOT NULL AND setup_rc<>0",
					 job, &v, &n) == 0 && n > 0;

	free(v);
	return failed;
}

/* Launch a spare in `pool` (offering o): the have+1st of the plan's, or
 * an early replacement when the plan's are all there (ea). */
static int spare_launch(struct ctl *c, struct store *db, const struct rjob *j,
			const struct cloud_offering *o, int have,
			const struct recon_early *ea)
{
	struct sr_err e = { 0 };
	int64_t now = ctl__now(c);
	bool early = have >= j->plan.spares;
	char msg[640], where[128], sig[96];
	json_t *d;
	int rc;

	d = json_pack("{s:i,s:s,s:s,s:s,s:s,s:I,s:i,s:i}", "pool", o->pool,
		      "cloud", o->cloud, "region", o->region, "zone", o->zone,
		      "instance_type", o->instance_type, "price_micros_per_hour",
		      (json_int_t)o->spot_per_h, "spares", have + 1,
		      "wanted", j->plan.spares + (early ? ea->want : 0));
	recon__where(o->cloud, o->region, o->zone, where, sizeof where);
	if (!early) {
		snprintf(msg, sizeof msg, "warm spare %d of %d: a spot %s in %s "
			 "at $%.4f/h", have + 1, j->plan.spares, o->instance_type,
			 where, sr_money_to_usd(o->spot_per_h));
	} else {
		snprintf(sig, sizeof sig, "a rebalance recommendation %.0f s "
			 "ago", ea->age_s);
		json_object_set_new(d, "for_node", json_integer(ea->node));
		json_object_set_new(d, "signal", json_string("rebalance"));
		json_object_set_new(d, "horizon_s", json_real(ea->horizon_s));
		json_object_set_new(d, "saved_s", json_real(ea->saved_s));
		json_object_set_new(d, "delay_micros_per_hour",
				    json_integer(ea->delay_per_h));
		snprintf(msg, sizeof msg, "early replacement for node %" PRId64
			 " (%s): a spot %s in %s at $%.4f/h, kept up to %.0f s "
			 "without a notice (then its bill passes the %.0f s of "
			 "boot and setup it saves, at $%.2f/h of delay)", ea->node,
			 sig, o->instance_type, where,
			 sr_money_to_usd(o->spot_per_h), ea->horizon_s,
			 ea->saved_s, sr_money_to_usd(ea->delay_per_h));
	}
	rc = store_begin(db, &e);
	if (!rc)
		rc = recon__nodes_create(c, db, j, NULL, 1, o->pool, true, true,
					 now, &e);
	if (!rc)
		rc = ctl_event_append(db, j->id, early ? "early_replacement" :
				      "spare", NULL, NULL, 0, now,
				      ctl__sim_at(c, now), d, msg, &e);
	json_decref(d);
	rc = store_end(db, rc, &e);
	if (rc)
		sr_error("recon", "spare launch failed", "job=%" PRId64
			 " err=\"%s\"", j->id, sr_err_str(&e, rc));
	return rc;
}

/* Release spare x, beyond the `want` the job keeps now: an early
 * replacement whose node got no notice within its horizon (or any spare
 * of a gang now on on-demand).  Its bill (a spare's line of the job's
 * cost) is said. */
static void spare_release(struct ctl *c, struct store *db, const struct rjob *j,
			  const struct rnode *x, int want)
{
	struct sr_err e = { 0 };
	int64_t now = ctl__now(c);
	double h = (double)(now - x->created_ns) / 3600e9 * c->cfg.time_scale;
	char msg[240];
	json_t *d = json_pack("{s:I,s:f,s:I}", "node_id", (json_int_t)x->id,
			      "hours", h, "cost_micros",
			      (json_int_t)sr_money_hours(h, x->price));
	int rc;

	snprintf(msg, sizeof msg, "spare node %" PRId64 " released: the job "
		 "keeps %d spare(s) now (no early replacement is wanted); it "
		 "cost $%.4f for %.3f node-h", x->id, want,
		 sr_money_to_usd(sr_money_hours(h, x->price)), h);
	rc = store_begin(db, &e);
	if (!rc)
		rc = recon__node_end(c, db, x, "TERMINATED", "released", now, &e);
	if (!rc)
		rc = ctl_event_append(db, j->id, "spare_released", NULL, NULL,
				      x->id, now, ctl__sim_at(c, now), d, msg, &e);
	json_decref(d);
	rc = store_end(db, rc, &e);
	if (rc) {
		sr_error("recon", "releasing a spare failed", "job=%" PRId64
			 " node=%" PRId64 " err=\"%s\"", j->id, x->id,
			 sr_err_str(&e, rc));
		return;
	}
	recon__kill(c, db, x);
}

void recon__spares_keep(struct ctl *c, struct store *db, const struct rjob *j,
			const struct rnode *gang, size_t ng)
{
	struct recon_early ea = { 0 };
	struct cloud_offering o;
	struct rnode *v = NULL;
	size_t n = 0;
	int have = 0, want, pool = -1;

	if (j->state != JOB_RUNNING || ng == 0)
		return;
	/* the hot path: a job that keeps no spare, has no node at risk and
	 * no live spare (this pass's node list) costs no query */
	if ((!gang[0].spot || (j->plan.spares <= 0 &&
			       recon__early_avoid(gang, ng) < 0)) &&
	    !recon__job_spared(c, j->id))
		return;
	/* a gang on on-demand nodes expects no notice: no spare, and no
	 * early replacement */
	if (gang[0].spot) {
		pool = spare_pool(c, j, gang[0].pool, recon__early_avoid(gang, ng));
		if (pool >= 0 && ctl__describe(c, pool, &o))
			pool = -1;
	}
	/* priced at the new spare's pool; with none open now, at the
	 * gang's node's (a standing replacement is not released for it) */
	if (gang[0].spot)
		recon__early_price(c, j, gang, ng, pool >= 0 ? o.spot_per_h :
				   gang[0].price, ctl__now(c), &ea);
	want = (gang[0].spot ? j->plan.spares : 0) + ea.want;
	if (spares_live(c, db, j->id, &v, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		if (v[i].notice_ns)
			spare_end(c, db, j, &v[i], "preempted");
		else if (v[i].setup_rc != INT64_MIN && v[i].setup_rc != 0)
			spare_end(c, db, j, &v[i], "setup_failed");
		else
			v[have++] = v[i];
	}
	/* beyond the plan's and the early ones: the newest go first */
	while (have > want && have > 0)
		spare_release(c, db, j, &v[--have], want);
	free(v);
	if (have >= want || pool < 0 || setup_failed_once(c, db, j->id))
		return;
	(void)spare_launch(c, db, j, &o, have, &ea);
}
