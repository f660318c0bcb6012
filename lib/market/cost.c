/*
 * cost.c - NETC, checkpoint intervals, makespan distribution.
 *
 * Segments.  A failure-free run is n_full segments of s_f = tau + delta
 * hours (compute then checkpoint) and one last segment of s_l = W -
 * n_full*tau hours (no checkpoint).  With q = exp(-Lambda*s) the chance a
 * segment attempt survives, the preemptions hitting a segment are
 * geometric: P(N_i = j) = (1-q)^j q, E[N_i] = e^{Lambda s} - 1.  The time
 * lost to each is exponential truncated to [0, s):
 *   E[L]   = 1/Lambda - s q / (1 - q)
 *   E[L^2] = (2/Lambda^2 - q (s^2 + 2s/Lambda + 2/Lambda^2)) / (1 - q)
 * and the segment takes s + sum_j (L_j + R).  Segments are independent,
 * so means and variances add.  The total N is negative binomial over the
 * full segments convolved with the last segment's geometric; given N, the
 * lost times are treated as i.i.d. draws from the failure-weighted mixture
 * of the two truncated exponentials.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "cost.h"

#define PMF_EPS 1e-12
#define PMF_MAX 200000

struct seg {
	double s, q, en, el, el2; /* length, survival, E[N], E[L], E[L^2] */
};

struct model {
	double lam, R, t_train;
	int n_full;
	struct seg f, l; /* full and last segment */
	double wf;       /* share of failures in full segments */
	double mu, var;  /* mixture mean and variance of L */
	double smax;
};

int cost_params_check(const struct cost_params *p)
{
	if (!p || !(p->work_h > 0) || !isfinite(p->work_h) || p->nodes < 1 ||
	    !(p->hazard_per_h >= 0) || !isfinite(p->hazard_per_h) ||
	    p->price_per_h < 0 || !(p->ckpt_stall_h >= 0) ||
	    !isfinite(p->ckpt_stall_h) || !(p->resume_h >= 0) ||
	    !isfinite(p->resume_h) || !isfinite(p->ckpt_interval_h))
		return -EINVAL;
	return 0;
}

static void seg_init(struct seg *g, double lam, double s)
{
	g->s = s;
	g->q = exp(-lam * s);
	if (lam <= 0 || s <= 0) {
		g->q = 1;
		g->en = g->el = g->el2 = 0;
		return;
	}
	g->en = expm1(lam * s);
	/* -expm1(-x) = 1 - q without cancellation */
	double one_q = -expm1(-lam * s);
	g->el = 1.0 / lam - s * g->q / one_q;
	g->el2 = (2.0 / (lam * lam) -
		  g->q * (s * s + 2.0 * s / lam + 2.0 / (lam * lam))) / one_q;
	if (g->el2 < g->el * g->el)
		g->el2 = g->el * g->el;
}

static int model_init(const struct cost_params *p, struct model *m)
{
	double tau = p->ckpt_interval_h, W = p->work_h;
	double nf, nl;

	if (cost_params_check(p))
		return -EINVAL;
	m->lam = p->hazard_per_h * p->nodes;
	m->R = p->resume_h;
	m->n_full = 0;
	if (tau > 0 && tau < W) {
		double k = ceil(W / tau - 1e-9) - 1;

		if (k > 1e7)
			return -EINVAL;
		m->n_full = (int)k;
	}
	m->t_train = W + m->n_full * p->ckpt_stall_h;
	seg_init(&m->f, m->lam, m->n_full ? tau + p->ckpt_stall_h : 0);
	seg_init(&m->l, m->lam, W - m->n_full * (m->n_full ? tau : 0));
	nf = m->n_full * m->f.en;
	nl = m->l.en;
	m->wf = nf + nl > 0 ? nf / (nf + nl) : 0;
	m->mu = m->wf * m->f.el + (1 - m->wf) * m->l.el;
	m->var = m->wf * m->f.el2 + (1 - m->wf) * m->l.el2 - m->mu * m->mu;
	if (m->var < 0)
		m->var = 0;
	m->smax = fmax(m->f.s, m->l.s);
	return 0;
}

/* Variance of one segment's time: compound geometric sum of (L + R). */
static double seg_var(const struct seg *g, double R)
{
	double one_q = 1 - g->q, ey, vy, vn;

	if (g->en <= 0)
		return 0;
	ey = g->el + R;
	vy = g->el2 - g->el * g->el;
	vn = one_q / (g->q * g->q);
	return g->en * vy + vn * ey * ey;
}

int cost_estimate(const struct cost_params *p, struct cost_estimate *out)
{
	struct model m;
	double en;

	if (model_init(p, &m))
		return -EINVAL;
	en = m.n_full * m.f.en + m.l.en;
	out->gang_hazard_per_h = m.lam;
	out->n_ckpt = m.n_full;
	out->t_train_h = m.t_train;
	out->n_preempt = en;
	out->t_lost_h = en > 0 ? m.mu : 0;
	out->makespan_h = m.t_train + en * (out->t_lost_h + m.R);
	out->makespan_sd_h = sqrt(m.n_full * seg_var(&m.f, m.R) + seg_var(&m.l, m.R));
	out->c_resume = sr_money_cost(p->price_per_h,
				      (int64_t)llround(m.R * 3600e9));
	out->netc = cost_netc(p->price_per_h, m.t_train, en, out->t_lost_h,
			      out->c_resume);
	return 0;
}

sr_micros cost_netc(sr_micros price_per_h, double t_train_h, double n_preempt,
		    double t_lost_h, sr_micros c_resume)
{
	double c = (double)price_per_h;
	double v = c * t_train_h + n_preempt * (c * t_lost_h + (double)c_resume);

	if (!(v < 9.2e18))
		return INT64_MAX;
	return (sr_micros)llround(v);
}

/* pmf of the total number of preemptions; *n entries, malloc'd. */
static double *n_pmf(const struct model *m, size_t *n, double *tail)
{
	size_t cap = 64, j = 0;
	double *v = malloc(cap * sizeof *v), lp, lq1, cum = 0, nb, prev = 0;
	double k = m->n_full, pf = 1 - m->f.q, ql = m->l.q;

	if (!v)
		return NULL;
	lq1 = pf > 0 ? log(pf) : -INFINITY;
	lp = k > 0 ? k * log(m->f.q) : 0; /* log NB(0) */
	for (;;) {
		double c;

		if (j > 0)
			lp += (k > 0) ? log((j + k - 1) / (double)j) + lq1 : -INFINITY;
		nb = exp(lp);
		/* conv with geometric(ql): C(j) = ql*NB(j) + (1-ql)*C(j-1) */
		c = ql * nb + (1 - ql) * prev;
		if (j == cap) {
			double *w = realloc(v, 2 * cap * sizeof *v);

			if (!w) {
				free(v);
				return NULL;
			}
			v = w;
			cap *= 2;
		}
		v[j++] = c;
		prev = c;
		cum += c;
		if (cum >= 1 - PMF_EPS || j >= PMF_MAX)
			break;
	}
	*n = j;
	*tail = fmax(0, 1 - cum);
	return v;
}

static double norm_cdf(double z)
{
	return 0.5 * erfc(-z / M_SQRT2);
}

static double trunc_cdf(const struct seg *g, double lam, double x)
{
	if (g->en <= 0 || x >= g->s)
		return 1;
	if (x <= 0)
		return 0;
	return expm1(-lam * x) / expm1(-lam * g->s);
}

/* E[(L - a)^+] for L ~ truncated exponential on [0, s). */
static double trunc_excess(const struct seg *g, double lam, double a)
{
	if (g->en <= 0 || a >= g->s)
		return 0;
	if (a <= 0)
		return g->el - a;
	return (exp(-lam * a) / lam - g->q * (g->s - a + 1 / lam)) /
	       (-expm1(-lam * g->s));
}

/* P(S_j <= x) where S_j is the lost time of j preemptions. */
static double lost_cdf(const struct model *m, size_t j, double x)
{
	double sd;

	if (x < 0)
		return 0;
	if (j == 0)
		return 1;
	if (j == 1)
		return m->wf * trunc_cdf(&m->f, m->lam, x) +
		       (1 - m->wf) * trunc_cdf(&m->l, m->lam, x);
	if (x >= (double)j * m->smax)
		return 1;
	sd = sqrt((double)j * m->var);
	if (sd <= 0)
		return x >= (double)j * m->mu ? 1 : 0;
	return norm_cdf((x - (double)j * m->mu) / sd);
}

/* E[(X - a)^+] for X ~ Normal(mean, sd^2). */
static double norm_excess(double mean, double sd, double a)
{
	double z;

	if (sd <= 0)
		return mean > a ? mean - a : 0;
	z = (mean - a) / sd;
	return (mean - a) * norm_cdf(z) + sd * exp(-0.5 * z * z) / sqrt(2 * M_PI);
}

/* E[(S_j - a)^+]. */
static double lost_excess(const struct model *m, size_t j, double a)
{
	double mean = (double)j * m->mu;

	if (j == 0)
		return a < 0 ? -a : 0;
	if (j == 1)
		return m->wf * trunc_excess(&m->f, m->lam, a) +
		       (1 - m->wf) * trunc_excess(&m->l, m->lam, a);
	if (a <= 0)
		return mean - a;
	return norm_excess(mean, sqrt((double)j * m->var), a);
}

enum dist_kind { DIST_CDF, DIST_EXCESS };

/* P(T <= D) or E[(T - D)^+]; < 0 if p is invalid or out of memory. */
static double dist_eval(const struct cost_params *p, double D,
			enum dist_kind kind)
{
	struct model m;
	struct cost_estimate est;
	double *pmf, tail, sum = 0;
	size_t n;

	if (model_init(p, &m) || cost_estimate(p, &est))
		return -1;
	if (m.lam <= 0 || (m.f.en <= 0 && m.l.en <= 0)) {
		if (kind == DIST_CDF)
			return m.t_train <= D ? 1 : 0;
		return fmax(0, m.t_train - D);
	}
	if (m.n_full * m.f.en + m.l.en > 5000) {
		/* large expected counts: one normal approximation of T */
		double sd = fmax(est.makespan_sd_h, 1e-9);

		if (kind == DIST_CDF)
			return norm_cdf((D - est.makespan_h) / sd);
		return norm_excess(est.makespan_h, sd, D);
	}
	pmf = n_pmf(&m, &n, &tail);
	if (!pmf)
		return -1;
	for (size_t j = 0; j < n; j++) {
		double a = D - m.t_train - (double)j * m.R;

		sum += pmf[j] * (kind == DIST_CDF ? lost_cdf(&m, j, a)
						  : lost_excess(&m, j, a));
	}
	free(pmf);
	return sum;
}

double cost_p_finish_by(const struct cost_params *p, double deadline_h)
{
	double v = dist_eval(p, deadline_h, DIST_CDF);

	return v < 0 ? -1 : fmin(1, v);
}

double cost_expected_overrun_h(const struct cost_params *p, double deadline_h)
{
	return dist_eval(p, deadline_h, DIST_EXCESS);
}

double cost_young_interval_h(double delta_h, double mtbf_h)
{
	if (!(mtbf_h > 0) || isinf(mtbf_h) || !(delta_h >= 0))
		return 0;
	return sqrt(2.0 * delta_h * mtbf_h);
}

double cost_daly_interval_h(double delta_h, double mtbf_h)
{
	double x;

	if (!(mtbf_h > 0) || isinf(mtbf_h) || !(delta_h >= 0))
		return 0;
	if (delta_h >= 2.0 * mtbf_h)
		return mtbf_h;
	x = delta_h / (2.0 * mtbf_h);
	return sqrt(2.0 * delta_h * mtbf_h) * (1.0 + sqrt(x) / 3.0 + x / 9.0) -
	       delta_h;
}

double cost_restore_h(uint64_t ckpt_bytes, double restore_bytes_per_s)
{
	if (!(restore_bytes_per_s > 0))
		return 0;
	return (double)ckpt_bytes / restore_bytes_per_s / 3600.0;
}
