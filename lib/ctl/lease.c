/*
 * lease.c - which spotrund leads: one leader runs the reconciler, under a
 * lease held in the store; the others (standbys) serve reads and refuse
 * writes with the leader's address (docs/store.md).
 *
 * DESIGN.  The lease is one row (table lease: holder, url, epoch,
 * expires_ns; lib/store/schema.c, component "ha").  Every daemon runs
 * ctl__lease_tick() from its reconciler loop:
 *
 *   STANDBY  -- the row has expired (expires_ns < now) --> take it:
 *               holder = me, epoch = epoch + 1, expires = now + lease
 *               (compare-and-set on the epoch read) --> LEADER
 *   LEADER   -- every lease/3: renew (holder = me AND epoch = mine)
 *            -- renewal refused, or not renewed within one lease on this
 *               process's monotonic clock --> STANDBY (steps down)
 *   LEADER   -- clean stop: expires_ns = 0, so a standby takes over at
 *               once
 *
 * Fencing (issue 24: every write).  Every connection that writes - the
 * reconciler's and each HTTP thread's (ctl_req_store) - carries a store
 * fence (store_set_fence): inside every transaction it opens, and around
 * every autocommit write (store.h), under the writers' lock, this
 * process must still lead by its own monotonic clock and the lease row
 * must still name it with its epoch and an unexpired time; otherwise the
 * transaction fails (-ESTALE), the daemon steps down and the request is
 * answered 503 not_leader.  A takeover commits epoch + 1 under the same
 * lock, so once it has, no transaction of the old leader can commit: a
 * work step started by the old leader is never applied twice.  Before
 * that, the router refuses a write (503 not_leader, the store untouched)
 * once the lease is past on this process's monotonic clock
 * (ctl__lease_valid): a leader paused past its lease (SIGSTOP, a VM
 * freeze) knows it lost the lease the moment it runs again.  Frozen
 * inside a transaction, it holds the writers' lock the takeover needs:
 * the server ends a transaction idle for two leases (every daemon
 * connection's store_set_idle_tx_limit, ctl.c), so the standby takes
 * over within about two leases of the freeze, as after a kill -9, and
 * the frozen one's transaction is rolled back, never committed.
 *
 * SQLite is one daemon's store (spotrund holds a flock on the state dir):
 * at its start the daemon takes the lease at once, whoever's row it is
 * (the lock proves that holder dead); later, like on PostgreSQL, only an
 * expired lease is taken.  On any backend an unexpired lease that names
 * this daemon's holder id is taken at once: the id is its state dir's,
 * reclaimed only when the daemon before it is gone (lease_id.c), so a
 * daemon restarted after a kill -9 leads again without waiting out its
 * own dead lease.
 *
 * Clocks: expires_ns is wall-clock time; daemons sharing a store need
 * clocks in step to well under the lease (NTP).  A leader also steps down
 * on its own monotonic clock, so a paused or partitioned leader stops
 * before anyone may take over.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/random.h"
#include "common/timeutil.h"
#include "ctl/ctl_int.h"
#include "ctl/routes.h"
#include "store/store_ctl.h"

int ctl__lease_init(struct ctl *c, struct sr_err *e)
{
	int rc = sr_random_hex(c->lease.holder, 8);

	if (rc < 0)
		return sr_err_set(e, rc, "lease holder id: no randomness");
	pthread_mutex_init(&c->lease.mu, NULL);
	c->lease.mu_init = true;
	return 0;
}

bool ctl__is_leader(const struct ctl *c)
{
	return atomic_load(&c->lease.leader);
}

static int64_t lease_ns(const struct ctl *c);

bool ctl__lease_valid(const struct ctl *c)
{
	return atomic_load(&c->lease.leader) &&
	       sr_time_mono_ns() - atomic_load(&c->lease.renewed_mono) <=
	       lease_ns(c);
}

static _Thread_local bool fenced_now;

void ctl__fenced_clear(void)
{
	fenced_now = false;
}

bool ctl__fenced(void)
{
	return fenced_now;
}

void ctl__leader_url(struct ctl *c, char *buf, size_t n)
{
	pthread_mutex_lock(&c->lease.mu);
	snprintf(buf, n, "%s", c->lease.leader_url);
	pthread_mutex_unlock(&c->lease.mu);
}

static void set_leader_url(struct ctl *c, const char *url)
{
	pthread_mutex_lock(&c->lease.mu);
	snprintf(c->lease.leader_url, sizeof c->lease.leader_url, "%s", url);
	pthread_mutex_unlock(&c->lease.mu);
}

static int64_t lease_ns(const struct ctl *c)
{
	return c->cfg.lease_ms * 1000000;
}

static void step_down(struct ctl *c, const char *why)
{
	if (atomic_exchange(&c->lease.leader, false))
		sr_warn("lease", "stepped down: the reconciler stops", "epoch=%"
			PRId64 " why=\"%s\"", c->lease.epoch, why);
}

int ctl__lease_fence(struct store *s, void *ud, struct sr_err *e)
{
	struct ctl *c = ud;
	int rc;

	if (!atomic_load(&c->lease.leader)) {
		fenced_now = true;
		return sr_err_set(e, -ESTALE, "fenced: this spotrund is not the "
				  "leader");
	}
	if (!ctl__lease_valid(c)) {
		step_down(c, "not renewed within one lease");
		fenced_now = true;
		return sr_err_set(e, -ESTALE, "fenced: lease epoch %" PRId64
				  " is past on this spotrund's clock",
				  (int64_t)c->lease.epoch);
	}
	rc = store_lease_held(s, c->lease.holder, c->lease.epoch,
			      sr_time_real_ns(), e);
	if (rc == 1)
		return 0;
	if (rc == 0) {
		step_down(c, "the lease moved on");
		fenced_now = true;
		rc = sr_err_set(e, -ESTALE, "fenced: lease epoch %" PRId64
				" is no longer this spotrund's", c->lease.epoch);
	}
	return rc;
}

int64_t ctl__lease_epoch(struct ctl *c)
{
	int64_t epoch = atomic_load(&c->lease.epoch);

	/* Not 0 when it does not lead: 0 is "not fenced" to a driver, and a
	 * side effect decided just after a step-down (a launch's commit
	 * fenced, then the terminate of its instance) went out unfenced.
	 * The last epoch held, which fence_ok refuses once stepped down;
	 * CTL_EPOCH_NEVER before it ever led. */
	return epoch > 0 ? epoch : CTL_EPOCH_NEVER;
}

bool ctl__lease_fence_ok(struct ctl *c, int64_t epoch)
{
	int64_t lease = lease_ns(c);
	/* the row's expiry was set before the renewal committed, our
	 * renewed_mono after: stop a fifth of the lease early */
	int64_t margin = lease / 5;

	if (epoch <= 0)
		return true; /* not fenced */
	return atomic_load(&c->lease.leader) &&
	       atomic_load(&c->lease.epoch) == epoch &&
	       sr_time_mono_ns() - atomic_load(&c->lease.renewed_mono) <
		       lease - margin;
}

/* Try to take the lease (standby).  1 = taken, 0 = another holds it. */
static int take(struct ctl *c, struct store *db, int64_t now, struct sr_err *e)
{
	struct store_lease l = { .url = "" };
	int64_t mono = sr_time_mono_ns();
	bool sqlite = store_backend(db) == STORE_SQLITE;
	/* the first try of this process: on SQLite the state's lock
	 * (spotrund) proves any other holder dead */
	bool first = !c->lease.started, mine = false, own = false;
	int rc = store_begin(db, e);

	c->lease.started = true;
	if (!rc)
		rc = store_lease_get(db, &l, e);
	if (!rc)
		mine = !strcmp(l.holder, c->lease.holder);
	/* an unexpired lease is taken only when it is this process's own
	 * (it stepped down, e.g. after a stall: epoch + 1 fences its older
	 * transactions) or, on SQLite, at the daemon's start */
	if (!rc && l.expires_ns >= now && !mine && !(sqlite && first)) {
		set_leader_url(c, l.url);
		store_rollback(db);
		return 0;
	}
	/* unexpired and ours: we stepped down, or this state dir's previous
	 * daemon (gone) held it (lease_id.c) */
	own = !rc && mine && l.expires_ns >= now;
	if (!rc)
		rc = store_lease_take(db, c->lease.holder, c->url, l.epoch,
				      now + lease_ns(c), e);
	if (rc > 0)
		rc = 0;
	else if (rc == 0)
		rc = -SR_ECONFLICT;
	rc = store_end(db, rc, e);
	if (rc)
		return rc == -SR_ECONFLICT ? 0 : rc;
	c->lease.epoch = l.epoch + 1;
	set_leader_url(c, c->url);
	/* ours from before the UPDATE, so never past its row's expiry */
	atomic_store(&c->lease.renewed_mono, mono);
	atomic_store(&c->lease.leader, true);
	sr_info("lease", "this spotrund is the leader", "epoch=%" PRId64
		" lease_ms=%" PRId64 " previous=\"%s\" own_unexpired=%d",
		c->lease.epoch, c->cfg.lease_ms, l.url, own);
	return 1;
}

/* Renew the held lease: 0, or -ESTALE when it is no longer ours. */
static int renew(struct ctl *c, struct store *db, int64_t now, struct sr_err *e)
{
	int rc = store_begin(db, e);

	if (!rc)
		rc = store_lease_renew(db, c->lease.holder, c->lease.epoch,
				       now + lease_ns(c), e);
	if (rc == 0)
		rc = sr_err_set(e, -ESTALE, "the lease (epoch %" PRId64 ") was "
				"taken over", c->lease.epoch);
	else if (rc > 0)
		rc = 0;
	return store_end(db, rc, e);
}

/* Record this daemon among the members (its URL for agents/clients). */
static void member_seen(struct ctl *c, struct store *db, int64_t now)
{
	struct sr_err e = { 0 };
	int rc = store_member_seen(db, c->lease.holder, c->url, now,
				   now - 10 * lease_ns(c), &e);

	if (rc)
		sr_warn("lease", "cannot record this member", "err=\"%s\"",
			sr_err_str(&e, rc));
}

bool ctl__lease_keep(struct ctl *c, struct store *db)
{
	int64_t mono = sr_time_mono_ns();
	struct sr_err e = { 0 };
	int rc;

	if (!atomic_load(&c->lease.leader))
		return false;
	if (mono - atomic_load(&c->lease.renewed_mono) > lease_ns(c)) {
		step_down(c, "not renewed within one lease");
	} else if (mono - atomic_load(&c->lease.renewed_mono) >= lease_ns(c) / 3) {
		rc = renew(c, db, sr_time_real_ns(), &e);
		if (rc == 0)
			atomic_store(&c->lease.renewed_mono, mono);
		else if (rc == -ESTALE)
			step_down(c, sr_err_str(&e, rc));
		else
			sr_warn("lease", "cannot renew the lease (retrying)",
				"epoch=%" PRId64 " err=\"%s\"",
				c->lease.epoch, sr_err_str(&e, rc));
	}
	return atomic_load(&c->lease.leader);
}

void ctl__lease_tick(struct ctl *c, struct store *db)
{
	int64_t mono = sr_time_mono_ns(), now = sr_time_real_ns();
	int64_t third = lease_ns(c) / 3;
	struct sr_err e = { 0 };
	int rc;

	if (!c->lease.member_mono || mono - c->lease.member_mono >= third) {
		member_seen(c, db, now);
		c->lease.member_mono = mono;
	}
	ctl__lease_keep(c, db);
	if (!atomic_load(&c->lease.leader)) {
		rc = take(c, db, now, &e);
		if (rc == 1)
			c->lease.taken_mono = mono;
		else if (rc < 0)
			sr_warn("lease", "cannot read the lease (retrying)",
				"err=\"%s\"", sr_err_str(&e, rc));
	}
}

void ctl__lease_passed(struct ctl *c, int64_t took_ns)
{
	int64_t epoch = c->lease.epoch;

	if (!ctl__is_leader(c))
		return;
	atomic_fetch_add(&c->lease.passes, 1);
	atomic_fetch_add(&c->lease.pass_sum_ns, took_ns);
	atomic_store(&c->lease.pass_last_ns, took_ns);
	if (took_ns > atomic_load(&c->lease.pass_max_ns))
		atomic_store(&c->lease.pass_max_ns, took_ns);
	if (atomic_exchange(&c->lease.passed_epoch, epoch) == epoch)
		return;
	/* the failover time ends here (bench/failover.sh) */
	sr_info("lease", "first reconciler pass as the leader", "epoch=%"
		PRId64 " ms_since_taken=%" PRId64, epoch,
		(sr_time_mono_ns() - c->lease.taken_mono) / 1000000);
}

void ctl__lease_release(struct ctl *c, struct store *db)
{
	struct sr_err e = { 0 };
	int rc;

	if (!db || !atomic_exchange(&c->lease.leader, false))
		return;
	store_set_fence(db, NULL, NULL);
	rc = store_begin(db, &e);
	if (!rc)
		rc = store_lease_renew(db, c->lease.holder, c->lease.epoch, 0, &e);
	rc = store_end(db, rc < 0 ? rc : 0, &e);
	if (rc)
		sr_warn("lease", "cannot release the lease", "err=\"%s\"",
			sr_err_str(&e, rc));
	else
		sr_info("lease", "lease released", "epoch=%" PRId64, c->lease.epoch);
}

struct endpoints {
	const char *self;
	char *buf;
	size_t n, k;
};

static void endpoint_add(void *ud, const char *u)
{
	struct endpoints *p = ud;

	if (!*u || strcmp(u, p->self) == 0 || p->k + strlen(u) + 2 > p->n)
		return;
	p->k += (size_t)snprintf(p->buf + p->k, p->n - p->k, ",%s", u);
}

int ctl__endpoints(struct ctl *c, char *buf, size_t n)
{
	struct endpoints p = { c->url, buf, n, 0 };
	struct store *db = ctl__store(c);
	struct sr_err e = { 0 };

	p.k = (size_t)snprintf(buf, n, "%s", c->url);
	if (db)
		store_members(db, sr_time_real_ns() - 3 * lease_ns(c),
			      endpoint_add, &p, &e);
	return 0;
}

/* GET /v1/lease: whether this daemon leads, its epoch, whether it has
 * completed a reconciler pass in that epoch, the leader's URL as last
 * seen, this daemon's reconciler pass times as the leader, and the
 * writes it answered 503 not_leader (docs/store.md). */
static int lease_get(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	char url[128];
	bool leader = ctl__is_leader(c);
	int64_t epoch = leader ? c->lease.epoch : 0;

	ctl__leader_url(c, url, sizeof url);
	return ctl_resp_json(rs, 200, json_pack(
		"{s:b,s:I,s:s,s:s,s:I,s:b,s:I,s:{s:I,s:f,s:f,s:f}}",
		"leader", leader, "epoch", (json_int_t)epoch,
		"leader_url", url, "url", c->url,
		"lease_ms", (json_int_t)c->cfg.lease_ms,
		"passed", leader && atomic_load(&c->lease.passed_epoch) == epoch,
		"writes_refused", (json_int_t)atomic_load(&c->lease.writes_refused),
		"reconciler", "passes", (json_int_t)atomic_load(&c->lease.passes),
		"sum_ms", (double)atomic_load(&c->lease.pass_sum_ns) / 1e6,
		"max_ms", (double)atomic_load(&c->lease.pass_max_ns) / 1e6,
		"last_ms", (double)atomic_load(&c->lease.pass_last_ns) / 1e6));
}

CTL_ROUTE("GET", "/v1/lease", CTL_AUTH_ADMIN, lease_get)
