/*
 * ec2_watch.c - the EC2 calls of one region that are not launches, on a
 * thread of their own (ec2.h, struct ec2_watch): the instance listing the
 * reconciler reads, the spot price history the market reads, and the
 * terminations the reconciler asks for.  The reconciler never waits on
 * EC2 for them.
 *
 * WHY.  DescribeInstances on every reconciler pass (100 ms) cost 553
 * calls a minute for one job: half the account's read bucket (20/s,
 * shared with every tool of the account), and RequestLimitExceeded for
 * everyone once a second tool ran.  Here one listing per period (5 s by
 * default: 12 a minute per region) serves every pass.
 *
 * THE LOOP (one thread per region):
 *
 *     +-> wait until the next listing, price or termination is due
 *     |     (or stop)
 *     |   terminations queued  -> TerminateInstances, fenced by the epoch
 *     |                           each was asked under; throttled or
 *     |                           failed: back in the queue, backoff
 *     |   listing due          -> DescribeInstances (cluster tag,
 *     |                           paginated) -> the snapshot
 *     |   prices due           -> DescribeSpotPriceHistory for every
 *     |                           type and zone at once (paginated),
 *     |                           since the last answer -> the history
 *     +---
 *
 *   A call that fails (throttled, transient) keeps what was there and
 *   tries again after a backoff with full jitter, doubling up to a
 *   minute: a throttled account is given room instead of more calls.
 *   So a listing or a price query is sent once (ec2_params.once): a
 *   throttled one costs one request, not a round of HTTP retries (it
 *   cost several: 33 DescribeInstances a minute in the ASan soak, 28
 *   of them throttled).  Terminations keep their bounded retries.
 *
 *   A termination EC2 accepted is done only when a listing shows the
 *   instance shutting down, or has not listed it for FRESH_NS since the
 *   answer.  One that a listing taken a period
 *   after the answer still shows running is sent again (once per
 *   listing): EC2 answers InvalidInstanceID.NotFound for an instance it
 *   does not list yet (eventual consistency), which the client takes for
 *   "already gone" - and the instance then ran on, shown stopping here,
 *   so the leak sweep never saw it (the ASan soak's leaked instance,
 *   session 23).
 *
 * WHAT LIST ANSWERS.  The last snapshot, plus every instance this
 * process launched that the snapshot does not show yet (EC2 lists a new
 * instance only after a short while: eventual consistency), for up to
 * FRESH_NS; instances whose termination was asked show as stopping.
 * Before the first listing, or when the snapshot is older than
 * STALE_NS, list answers a transient error: the reconciler then ends and
 * notices nothing on that pass instead of acting on what it cannot see.
 *
 * Threading: every function here may be called from any thread; the
 * state is under one mutex, never held over a call to EC2.
 */
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "ec2_int.h"

#define FRESH_NS (600 * SR_NS_PER_SEC)   /* a launch not listed yet */
#define STALE_NS (300 * SR_NS_PER_SEC)   /* a snapshot too old to act on */
#define BACKOFF_MAX_NS (60 * SR_NS_PER_SEC)
#define TERM_BATCH 200
#define HISTORY_MAX 200000

struct term {
	char id[64];
	int64_t epoch;
	int64_t acked;   /* monotonic ns EC2 accepted it; 0: not yet */
};

struct ec2_watch {
	struct ec2 *c;                /* borrowed */
	char cluster[64];
	int64_t period_ns, price_period_ns, history_s;
	pthread_t th;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;            /* on CLOCK_MONOTONIC */
	bool stop;
	unsigned seed;
	/* the listing */
	struct cloud_instance *snap;
	size_t nsnap;
	bool listed;
	int64_t snap_mono, list_due;
	int list_fails;
	struct cloud_error list_err;
	/* launched here, not listed yet */
	struct { struct cloud_instance inst; int64_t at; } *fresh;
	size_t nfresh, capfresh;
	/* asked to terminate: queued, and shown stopping until listed so */
	struct term *q;
	size_t nq, capq;
	struct term *going;
	size_t ngoing, capgoing;
	int64_t term_due;
	int term_fails;
	/* prices */
	char **types, **zones;
	size_t ntypes, nzones;
	struct ec2_spot_price *hist;
	size_t nhist;
	int64_t price_due, priced_s, price_since_s;
	int price_fails;
	struct ec2_watch_stats stats;
};

static int64_t backoff(struct ec2_watch *w, int64_t base, int fails)
{
	int64_t cap = base;

	for (int i = 0; i < fails && cap < BACKOFF_MAX_NS; i++)
		cap *= 2;
	if (cap > BACKOFF_MAX_NS)
		cap = BACKOFF_MAX_NS;
	/* full jitter, never below a tenth of the period */
	return base / 10 + (int64_t)((double)rand_r(&w->seed) / RAND_MAX *
				     (double)cap);
}

static bool grow(void **v, size_t *cap, size_t n, size_t elem)
{
	void *t;
	size_t nc;

	if (n < *cap)
		return true;
	nc = *cap ? *cap * 2 : 16;
	t = realloc(*v, nc * elem);
	if (t == NULL)
		return false;
	*v = t;
	*cap = nc;
	return true;
}

static bool listed_id(const struct ec2_watch *w, const char *id)
{
	for (size_t i = 0; i < w->nsnap; i++)
		if (strcmp(w->snap[i].id, id) == 0)
			return true;
	return false;
}

/* Drop batch's ids from those shown stopping (lock held). */
static void forget_going(struct ec2_watch *w, const struct term *batch,
			 size_t n)
{
	for (size_t k = 0; k < n; k++)
		for (size_t g = 0; g < w->ngoing; g++)
			if (strcmp(w->going[g].id, batch[k].id) == 0) {
				w->going[g] = w->going[--w->ngoing];
				break;
			}
}

/* Batch's ids were accepted by EC2 at `at` (lock held). */
static void mark_acked(struct ec2_watch *w, const struct term *batch,
		       size_t n, int64_t at)
{
	for (size_t k = 0; k < n; k++)
		for (size_t g = 0; g < w->ngoing; g++)
			if (strcmp(w->going[g].id, batch[k].id) == 0)
				w->going[g].acked = at;
}

static bool queued_id(const struct ec2_watch *w, const char *id)
{
	for (size_t k = 0; k < w->nq; k++)
		if (strcmp(w->q[k].id, id) == 0)
			return true;
	return false;
}

/* ---- one round of each kind of call (the lock not held) -------------- */

static void do_terminate(struct ec2_watch *w, int64_t now)
{
	struct term batch[TERM_BATCH];
	const char *ids[TERM_BATCH];
	struct cloud_error err = { 0 };
	size_t n = 0, k;
	int64_t epoch;
	int rc;

	/* one batch: the queue's head and every id asked under its epoch */
	pthread_mutex_lock(&w->mu);
	epoch = w->nq > 0 ? w->q[0].epoch : 0;
	for (k = 0; k < w->nq && n < TERM_BATCH;) {
		if (w->q[k].epoch != epoch) {
			k++;
			continue;
		}
		batch[n++] = w->q[k];
		w->q[k] = w->q[--w->nq];
	}
	pthread_mutex_unlock(&w->mu);
	if (n == 0)
		return;
	for (k = 0; k < n; k++)
		ids[k] = batch[k].id;
	rc = ec2_terminate_at(w->c, ids, n, epoch, &err);
	pthread_mutex_lock(&w->mu);
	w->stats.terminate_calls++;
	if (rc == 0 || err.cls == CLOUD_EFENCED) {
		/* accepted (done once a listing shows it: do_list), or never
		 * to be sent by this daemon: the leader that holds the lease
		 * now sweeps what is left */
		w->term_fails = 0;
		w->term_due = now;
		if (err.cls == CLOUD_EFENCED) {
			w->stats.fenced += n;
			forget_going(w, batch, n); /* never asked: as it was */
		} else {
			mark_acked(w, batch, n, sr_time_mono_ns());
		}
	} else {
		for (k = 0; k < n && grow((void **)&w->q, &w->capq, w->nq,
					  sizeof(*w->q)); k++)
			w->q[w->nq++] = batch[k];
		w->term_fails++;
		w->term_due = now + backoff(w, SR_NS_PER_SEC, w->term_fails);
		sr_warn("aws", "terminate deferred", "n=%zu err=\"%s\"", n, err.msg);
	}
	pthread_mutex_unlock(&w->mu);
}

static void do_list(struct ec2_watch *w, int64_t now)
{
	struct cloud_instance *v = NULL;
	struct cloud_error err = { 0 };
	size_t n = 0;
	/* once: throttled, it is this loop's backoff that waits, not a
	 * round of HTTP retries that each take a token of the read bucket */
	int rc = ec2__describe(w->c, w->cluster, NULL, true, &v, &n, &err);

	pthread_mutex_lock(&w->mu);
	w->stats.describe_calls++;
	if (rc < 0) {
		w->stats.describe_failed++;
		w->list_err = err;
		w->list_fails++;
		w->list_due = now + backoff(w, w->period_ns, w->list_fails);
		pthread_mutex_unlock(&w->mu);
		sr_warn("aws", "instance listing failed (the last one serves)",
			"region=%s err=\"%s\"", w->c->region, err.msg);
		return;
	}
	cloud_instances_free(w->snap, w->nsnap);
	w->snap = v;
	w->nsnap = n;
	w->listed = true;
	w->snap_mono = sr_time_mono_ns();
	w->list_fails = 0;
	w->list_due = now + w->period_ns;
	/* launches the listing now shows, or too old to wait for */
	for (size_t i = 0; i < w->nfresh;) {
		if (listed_id(w, w->fresh[i].inst.id) ||
		    now - w->fresh[i].at > FRESH_NS) {
			cloud_instance_clear(&w->fresh[i].inst);
			w->fresh[i] = w->fresh[--w->nfresh];
		} else {
			i++;
		}
	}
	/* terminations the listing shows done; one EC2 accepted a period
	 * before this listing was asked for that it still shows running
	 * (a NotFound for an instance not listed yet) is sent again */
	for (size_t i = 0; i < w->ngoing;) {
		struct term *g = &w->going[i];
		bool shown = false, listed = listed_id(w, g->id);

		for (size_t k = 0; k < w->nsnap && !shown; k++)
			shown = strcmp(w->snap[k].id, g->id) == 0 &&
				w->snap[k].state >= CLOUD_INST_STOPPING;
		/* not listed: gone - or not listed yet, as EC2 lists an
		 * instance a while after its launch and answers NotFound to
		 * its termination meanwhile; kept for as long as a launch is
		 * waited for (FRESH_NS) after that answer */
		if (shown || (!listed && g->acked && now - g->acked > FRESH_NS)) {
			*g = w->going[--w->ngoing];
			continue;
		}
		if (listed && g->acked && now - g->acked >= w->period_ns &&
		    !queued_id(w, g->id) &&
		    grow((void **)&w->q, &w->capq, w->nq, sizeof(*w->q))) {
			g->acked = 0;
			w->q[w->nq++] = *g;
			w->stats.terminate_resent++;
			sr_warn("aws", "terminated instance still running: "
				"terminating it again", "region=%s instance=%s",
				w->c->region, g->id);
		}
		i++;
	}
	pthread_mutex_unlock(&w->mu);
}

/* Keep the history's points since now - history_s, merged with v
 * (no duplicates), sorted by (zone, type, time). */
static int hist_cmp(const void *a, const void *b)
{
	const struct ec2_spot_price *x = a, *y = b;
	int c = strcmp(x->zone, y->zone);

	if (c == 0)
		c = strcmp(x->instance_type, y->instance_type);
	if (c == 0 && x->at_s != y->at_s)
		c = x->at_s < y->at_s ? -1 : 1;
	return c;
}

static void merge_prices(struct ec2_watch *w, struct ec2_spot_price *v,
			 size_t n, int64_t now_s)
{
	struct ec2_spot_price *all = realloc(w->hist,
					     (w->nhist + n + 1) * sizeof(*all));
	size_t k = 0;

	if (all == NULL)
		return;
	memcpy(all + w->nhist, v, n * sizeof(*v));
	n += w->nhist;
	qsort(all, n, sizeof(*all), hist_cmp);
	for (size_t i = 0; i < n; i++) {
		bool dup = k > 0 && hist_cmp(&all[k - 1], &all[i]) == 0;
		/* keep the last point before the window: the price then */
		bool next_same = i + 1 < n &&
				 strcmp(all[i + 1].zone, all[i].zone) == 0 &&
				 strcmp(all[i + 1].instance_type,
					all[i].instance_type) == 0;
		bool old = next_same && all[i + 1].at_s < now_s - w->history_s;

		if (dup || old)
			continue;
		all[k++] = all[i];
	}
	if (k > HISTORY_MAX) {
		memmove(all, all + (k - HISTORY_MAX), HISTORY_MAX * sizeof(*all));
		k = HISTORY_MAX;
	}
	w->hist = all;
	w->nhist = k;
}

static void do_prices(struct ec2_watch *w, int64_t now)
{
	struct ec2_spot_price *v = NULL;
	struct cloud_error err = { 0 };
	struct ec2_price_query q;
	int64_t now_s = (int64_t)time(NULL);
	size_t n = 0;
	int rc;

	pthread_mutex_lock(&w->mu);
	q = (struct ec2_price_query){
		.types = (const char *const *)w->types, .ntypes = w->ntypes,
		.zones = (const char *const *)w->zones, .nzones = w->nzones,
		.since_s = w->price_since_s, .max_items = 100000, .once = true,
	};
	pthread_mutex_unlock(&w->mu);
	/* the lists are only set at start: reading them unlocked is safe */
	rc = ec2_spot_prices(w->c, &q, &v, &n, &err);
	pthread_mutex_lock(&w->mu);
	w->stats.price_calls++;
	if (rc < 0) {
		w->price_fails++;
		w->price_due = now + backoff(w, w->period_ns, w->price_fails);
		pthread_mutex_unlock(&w->mu);
		sr_warn("aws", "spot prices unavailable (the last ones serve)",
			"region=%s err=\"%s\"", w->c->region, err.msg);
		return;
	}
	merge_prices(w, v, n, now_s);
	w->priced_s = now_s;
	/* next time only what changed since (a minute's overlap) */
	w->price_since_s = now_s - 60;
	w->price_fails = 0;
	w->price_due = now + w->price_period_ns;
	pthread_mutex_unlock(&w->mu);
	free(v);
}

static void *loop(void *arg)
{
	struct ec2_watch *w = arg;

	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		int64_t now = sr_time_mono_ns(), next = w->list_due;
		bool term = w->nq > 0 && now >= w->term_due;
		bool list = now >= w->list_due;
		bool prices = w->ntypes > 0 && now >= w->price_due;
		struct timespec ts;

		if (w->ntypes > 0 && w->price_due < next)
			next = w->price_due;
		if (w->nq > 0 && w->term_due < next)
			next = w->term_due;
		if (!term && !list && !prices) {
			ts.tv_sec = next / SR_NS_PER_SEC;
			ts.tv_nsec = next % SR_NS_PER_SEC;
			pthread_cond_timedwait(&w->cv, &w->mu, &ts);
			continue;
		}
		pthread_mutex_unlock(&w->mu);
		if (term)
			do_terminate(w, now);
		else if (list)
			do_list(w, now);
		else
			do_prices(w, now);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* ---- API -------------------------------------------------------------- */

static char **strv_dup(const char *const *v, size_t n, bool *oom)
{
	char **out = calloc(n + 1, sizeof(*out));

	if (out == NULL) {
		*oom = true;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		out[i] = strdup(v[i]);
		*oom |= out[i] == NULL;
	}
	return out;
}

int ec2_watch_start(struct ec2 *c, const struct ec2_watch_opts *o,
		    struct ec2_watch **out, struct sr_err *e)
{
	struct ec2_watch *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;
	bool oom = false;
	int rc;

	*out = NULL;
	if (w == NULL)
		return sr_err_set(e, -ENOMEM, "out of memory");
	w->c = c;
	snprintf(w->cluster, sizeof(w->cluster), "%s", o->cluster);
	w->period_ns = o->period_ns > 0 ? o->period_ns : 5 * SR_NS_PER_SEC;
	w->price_period_ns = o->price_period_ns > 0 ? o->price_period_ns
						    : 300 * SR_NS_PER_SEC;
	w->history_s = o->history_s > 0 ? o->history_s : 24 * 3600;
	w->price_since_s = (int64_t)time(NULL) - w->history_s;
	w->seed = (unsigned)sr_time_mono_ns();
	w->types = strv_dup(o->types, o->ntypes, &oom);
	w->zones = strv_dup(o->zones, o->nzones, &oom);
	w->ntypes = o->ntypes;
	w->nzones = o->nzones;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (oom) {
		ec2_watch_stop(w);
		return sr_err_set(e, -ENOMEM, "out of memory");
	}
	rc = pthread_create(&w->th, NULL, loop, w);
	if (rc != 0) {
		ec2_watch_stop(w);
		return sr_err_set(e, -rc, "aws: cannot start the EC2 thread: %s",
				  strerror(rc));
	}
	w->started = true;
	*out = w;
	return 0;
}

void ec2_watch_stop(struct ec2_watch *w)
{
	if (w == NULL)
		return;
	if (w->started) {
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->th, NULL);
	}
	cloud_instances_free(w->snap, w->nsnap);
	for (size_t i = 0; i < w->nfresh; i++)
		cloud_instance_clear(&w->fresh[i].inst);
	free(w->fresh);
	free(w->q);
	free(w->going);
	ec2_strv_free(w->types, w->ntypes);
	ec2_strv_free(w->zones, w->nzones);
	free(w->hist);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

static int copy_inst(const struct cloud_instance *x, struct cloud_instance *o)
{
	*o = *x;
	o->blob = x->blob != NULL ? strdup(x->blob) : NULL;
	return x->blob != NULL && o->blob == NULL ? -1 : 0;
}

int ec2_watch_list(struct ec2_watch *w, struct cloud_instance **out,
		   size_t *n, struct cloud_error *err)
{
	struct cloud_instance *v;
	size_t k = 0;
	int64_t age;
	int rc = 0;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&w->mu);
	age = sr_time_mono_ns() - w->snap_mono;
	if (!w->listed || age > STALE_NS) {
		rc = cloud_err_set(err, w->listed ? w->list_err.cls
						  : CLOUD_ETRANSIENT,
				   w->list_err.code, "EC2 instances of %s: %s%s",
				   w->c->region, w->listed ? "no listing for "
				   "minutes: " : "not listed yet",
				   w->listed ? w->list_err.msg : "");
		goto out;
	}
	v = calloc(w->nsnap + w->nfresh + 1, sizeof(*v));
	if (v == NULL) {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < w->nsnap + w->nfresh; i++) {
		const struct cloud_instance *x = i < w->nsnap
			? &w->snap[i] : &w->fresh[i - w->nsnap].inst;

		if (i >= w->nsnap && listed_id(w, x->id))
			continue;
		if (copy_inst(x, &v[k]) < 0) {
			cloud_instances_free(v, k);
			rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
					   "out of memory");
			goto out;
		}
		for (size_t g = 0; g < w->ngoing; g++)
			if (strcmp(w->going[g].id, v[k].id) == 0 &&
			    v[k].state < CLOUD_INST_STOPPING)
				v[k].state = CLOUD_INST_STOPPING;
		k++;
	}
	*out = v;
	*n = k;
out:
	pthread_mutex_unlock(&w->mu);
	return rc;
}

void ec2_watch_launched(struct ec2_watch *w, const struct cloud_instance *in)
{
	pthread_mutex_lock(&w->mu);
	if (!listed_id(w, in->id) &&
	    grow((void **)&w->fresh, &w->capfresh, w->nfresh, sizeof(*w->fresh)) &&
	    copy_inst(in, &w->fresh[w->nfresh].inst) == 0)
		w->fresh[w->nfresh++].at = sr_time_mono_ns();
	pthread_mutex_unlock(&w->mu);
}

int ec2_watch_terminate(struct ec2_watch *w, const char *const *ids, size_t n,
			int64_t epoch, struct cloud_error *err)
{
	int rc = 0;

	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < n; i++) {
		bool queued = false;

		for (size_t k = 0; k < w->nq && !queued; k++)
			queued = strcmp(w->q[k].id, ids[i]) == 0;
		if (queued)
			continue;
		if (!grow((void **)&w->q, &w->capq, w->nq, sizeof(*w->q)) ||
		    !grow((void **)&w->going, &w->capgoing, w->ngoing,
			  sizeof(*w->going))) {
			rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
					   "out of memory");
			break;
		}
		w->q[w->nq] = (struct term){ .epoch = epoch };
		snprintf(w->q[w->nq].id, sizeof(w->q[0].id), "%s", ids[i]);
		w->nq++;
		w->going[w->ngoing++] = w->q[w->nq - 1];
	}
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/* The history's points of (zone, type): [*lo, *hi), oldest first. */
static void key_range(const struct ec2_watch *w, const char *zone,
		      const char *type, size_t *lo, size_t *hi)
{
	struct ec2_spot_price k = { .at_s = INT64_MIN };
	size_t a = 0, b = w->nhist;

	snprintf(k.zone, sizeof(k.zone), "%s", zone);
	snprintf(k.instance_type, sizeof(k.instance_type), "%s", type);
	while (a < b) { /* the first point not before (zone, type, -inf) */
		size_t m = a + (b - a) / 2;

		if (hist_cmp(&w->hist[m], &k) < 0)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	while (a < w->nhist && strcmp(w->hist[a].zone, zone) == 0 &&
	       strcmp(w->hist[a].instance_type, type) == 0)
		a++;
	*hi = a;
}

int ec2_watch_price_now(struct ec2_watch *w, const char *zone,
			const char *type, sr_micros *per_h, int64_t *at_s)
{
	size_t lo, hi;
	int rc = -SR_ENOTFOUND;

	pthread_mutex_lock(&w->mu);
	key_range(w, zone, type, &lo, &hi);
	if (hi > lo) {
		*per_h = w->hist[hi - 1].price_per_h;
		*at_s = w->priced_s;
		rc = 0;
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

int ec2_watch_price_history(struct ec2_watch *w, const char *zone,
			    const char *type, int64_t now_s, double step_s,
			    int n, double *usd_h)
{
	size_t lo, hi, j;
	int known = 0;

	pthread_mutex_lock(&w->mu);
	key_range(w, zone, type, &lo, &hi);
	j = lo;
	for (int i = 0; i < n; i++) {
		int64_t t = now_s - (int64_t)((double)(n - i) * step_s);

		/* the price in effect at t: the last point at or before it */
		while (j < hi && w->hist[j].at_s <= t)
			j++;
		usd_h[i] = j > lo ? sr_money_to_usd(w->hist[j - 1].price_per_h)
				  : -1;
		known += usd_h[i] >= 0;
	}
	pthread_mutex_unlock(&w->mu);
	return known;
}

void ec2_watch_stats(struct ec2_watch *w, struct ec2_watch_stats *out)
{
	pthread_mutex_lock(&w->mu);
	*out = w->stats;
	out->queued_terminations = w->nq;
	pthread_mutex_unlock(&w->mu);
}
