/*
 * sim.c - run one window of a market with an online policy.
 *
 * One tick, boundary k (now = k * gap):
 *
 *   1. preemption   held SPOT in region r and avail[r][k] == 0: the
 *                   instance is gone; work rolls back to the last
 *                   checkpoint (nothing is lost with continuous ckpt).
 *   2. deadline     now >= deadline and work left: missed (see below).
 *   3. decide       the policy sees policy_obs and picks NONE / SPOT r /
 *                   OD; the deadline guard (policy.c) is applied unless
 *                   the policy is self_guarded (greedy); SPOT in a region without spot becomes NONE.
 *   4. start        a new start (first launch, relaunch, spot<->od, region
 *                   change) owes R seconds of overhead; moving the
 *                   checkpoint to another region costs egress once.
 *                   Leaving an instance voluntarily checkpoints first.
 *   5. run          a held tick is billed in full at its price, yields
 *                   gap - overhead (>= 0) of work, capped at what is left;
 *                   the job is done the moment the work is.
 *
 * A miss is completed on on-demand after the deadline and billed, so that
 * cutting corners never looks cheap.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "sim/sim.h"

#define EPS 1e-6

int sim_market_init(struct sim_market *m, struct trace *const *t, int n,
		    double spot_price, double od_price, int force_od,
		    struct sr_err *e)
{
	memset(m, 0, sizeof *m);
	if (n < 1 || n > SIM_MAX_REGIONS)
		return sr_err_set(e, -EINVAL, "need 1 to %d traces, got %d",
				  SIM_MAX_REGIONS, n);
	m->nregions = n;
	m->gap_s = t[0]->gap_s;
	m->n = t[0]->n;
	m->od_price = -1;
	for (int r = 0; r < n; r++) {
		if (t[r]->gap_s != m->gap_s)
			return sr_err_set(e, -EINVAL,
					  "%s: gap_seconds %lld differs from %s's %lld; regions must share the tick length",
					  t[r]->name, (long long)t[r]->gap_s,
					  t[0]->name, (long long)m->gap_s);
		if (t[r]->n < m->n)
			m->n = t[r]->n;
		m->avail[r] = t[r]->avail;
		m->price[r] = t[r]->price;
		m->const_price[r] = spot_price;
		m->name[r] = t[r]->name;
		if (!force_od && t[r]->od_price > 0 &&
		    (m->od_price < 0 || t[r]->od_price < m->od_price)) {
			m->od_price = t[r]->od_price;
			m->od_region = r;
		}
	}
	if (m->od_price < 0) {
		m->od_price = od_price;
		m->od_region = 0;
	}
	return 0;
}

int sim_params_check(const struct sim_params *p, struct sr_err *e)
{
	static const double max_h = 24.0 * 365 * 10;
	const struct {
		const char *name;
		double v, lo;
		int strict;
	} f[] = {
		{ "work_hours", p->work_h, 0, 1 },
		{ "deadline_hours", p->deadline_h, 0, 1 },
		{ "restart_hours", p->restart_h, 0, 0 },
		{ "ckpt_interval_hours", p->ckpt_interval_h, 0, 0 },
		{ "ckpt_gb", p->ckpt_gb, 0, 0 },
		{ "egress_per_gb", p->egress_per_gb, 0, 0 },
		{ "history_hours", p->history_h, 0, 0 },
	};

	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
		double v = f[i].v;

		if (!isfinite(v) || v < f[i].lo || (f[i].strict && v <= f[i].lo) ||
		    (i < 4 && v > max_h))
			return sr_err_set(e, -EINVAL, "%s: expected a number %s 0%s, got %g",
					  f[i].name, f[i].strict ? ">" : ">=",
					  i < 4 ? " and at most 10 years" : "", v);
	}
	if (p->work_h + p->restart_h > p->deadline_h + EPS / 3600)
		return sr_err_set(e, -EINVAL,
				  "work_hours %g + restart_hours %g = %g h exceeds deadline_hours %g: no schedule can meet the deadline",
				  p->work_h, p->restart_h, p->work_h + p->restart_h,
				  p->deadline_h);
	return 0;
}

void sim_job(const struct sim_market *m, const struct sim_params *p,
	     struct policy_job *job)
{
	memset(job, 0, sizeof *job);
	job->work_s = p->work_h * 3600;
	job->deadline_s = p->deadline_h * 3600;
	job->restart_s = p->restart_h * 3600;
	job->ckpt_interval_s = p->ckpt_interval_h * 3600;
	job->egress_usd = p->ckpt_gb * p->egress_per_gb;
	job->gap_s = m->gap_s;
	job->nregions = m->nregions;
	job->od_price = m->od_price;
	job->od_region = m->od_region;
	job->prior = p->prior;
	job->zone_pairs = p->zone_pairs;
}

size_t sim_window_ticks(const struct sim_market *m, const struct sim_params *p)
{
	return (size_t)ceil(p->deadline_h * 3600 / (double)m->gap_s - 1e-9);
}

/* Cost of finishing `left` seconds of work on on-demand after a miss. */
static double finish_on_od(const struct policy_job *job, double left,
			   double ovh, double *secs)
{
	double ticks = ceil((left + ovh) / (double)job->gap_s - 1e-9);

	*secs = left + ovh;
	return ticks * (double)job->gap_s / 3600.0 * job->od_price;
}

static int run_window(const struct sim_market *m, size_t start,
		      const struct sim_params *p, const struct policy_ops *pol,
		      void *state, struct sim_result *r,
		      struct policy_choice *log, size_t log_cap)
{
	struct policy_job job;
	struct policy_obs o;
	uint8_t av[SIM_MAX_REGIONS];
	double pr[SIM_MAX_REGIONS];
	double gap, now, work = 0, ovh = 0;
	enum sim_hold hold = SIM_NONE;
	int region = -1, ckpt_region = -1, guard = !pol->self_guarded;
	size_t ticks = sim_window_ticks(m, p);

	memset(r, 0, sizeof *r);
	for (size_t k = 0; log && k < log_cap; k++)
		log[k] = (struct policy_choice){ (enum sim_hold)-1, -1 };
	if (start > m->n || m->n - start < ticks || p->work_h <= 0 ||
	    p->deadline_h <= 0 || p->restart_h < 0)
		return -EINVAL;
	sim_job(m, p, &job);
	gap = (double)job.gap_s;
	memset(state, 0, pol->state_size);
	pol->reset(state, &job);
	if (pol->observe && p->history_h > 0) {
		size_t h = (size_t)(p->history_h * 3600 / gap);

		for (size_t i = start > h ? start - h : 0; i < start; i++) {
			for (int g = 0; g < m->nregions; g++) {
				av[g] = m->avail[g][i];
				pr[g] = sim_spot_price(m, g, i);
			}
			pol->observe(state, &job, av, pr);
		}
	}

	for (size_t k = 0;; k++) {
		struct policy_choice c;
		size_t i = start + k;
		int preempted = 0;
		double price, prog, used;

		now = (double)k * gap;
		/* At k == ticks, i is one past the window: only the miss below. */
		if (k < ticks && hold == SIM_SPOT && !m->avail[region][i]) {
			preempted = 1;
			r->preemptions++;
			hold = SIM_NONE;
			region = -1;
			ovh = 0;
			if (job.ckpt_interval_s > 0)
				work -= fmod(work, job.ckpt_interval_s);
		}
		if (now >= job.deadline_s - EPS || k >= ticks) {
			double secs, o2 = hold == SIM_OD ? ovh : job.restart_s;

			r->cost += finish_on_od(&job, job.work_s - work, o2, &secs);
			r->finish_s = now + secs;
			r->met = 0;
			return 0;
		}
		for (int g = 0; g < m->nregions; g++) {
			av[g] = m->avail[g][i];
			pr[g] = sim_spot_price(m, g, i);
		}
		o = (struct policy_obs){
			.tick = (int64_t)k, .work_done_s = work,
			.work_left_s = job.work_s - work,
			.time_left_s = job.deadline_s - now,
			.overhead_left_s = ovh, .hold = hold, .region = region,
			.ckpt_region = ckpt_region, .preempted = preempted,
			.avail = av, .spot_price = pr,
		};
		c = pol->decide(state, &job, &o);
		if (c.hold == SIM_SPOT &&
		    (c.region < 0 || c.region >= m->nregions || !av[c.region]))
			c = (struct policy_choice){ SIM_NONE, -1 };
		if (guard)
			c = policy_guard(&job, &o, c);
		if (c.hold == SIM_OD)
			c.region = job.od_region;
		if (c.hold == SIM_NONE)
			c.region = -1;
		if (log && k < log_cap)
			log[k] = c;

		if (policy_is_new_start(&o, c)) {
			ovh = job.restart_s;
			r->starts++;
			if (ckpt_region >= 0 && ckpt_region != c.region && work > 0)
				r->cost += job.egress_usd;
			ckpt_region = c.region;
		}
		hold = c.hold;
		region = c.region;
		if (hold == SIM_NONE) {
			ovh = 0;
			continue;
		}
		price = hold == SIM_SPOT ? pr[region] : job.od_price;
		r->cost += price * gap / 3600.0;
		if (hold == SIM_SPOT)
			r->spot_ticks++;
		else
			r->od_ticks++;
		used = ovh < gap ? ovh : gap;
		ovh -= used;
		prog = gap - used;
		if (prog >= job.work_s - work - EPS) {
			r->finish_s = now + used + (job.work_s - work);
			/* met = 0 if it finished inside the tick that crosses the deadline. */
			r->met = r->finish_s <= job.deadline_s + EPS;
			return 0;
		}
		work += prog;
	}
}

int sim_run(const struct sim_market *m, size_t start,
	    const struct sim_params *p, const struct policy_ops *pol,
	    void *state, struct sim_result *r, struct policy_choice *log,
	    size_t log_cap)
{
	int rc = run_window(m, start, p, pol, state, r, log, log_cap);

	if (!rc && pol->destroy)
		pol->destroy(state);
	return rc;
}
