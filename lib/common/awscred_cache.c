/*
 * awscred_cache.c - credentials kept fresh for a long-lived client
 * (awscred.h, struct sr_awscred_cache).
 *
 *   FRESH --(expires within REFRESH_S, or expire() called)--> STALE
 *   STALE --(one thread resolves the chain again)--> FRESH    on success
 *                                                 \-> STALE  on failure
 *   either way the next attempt waits RETRY_NS (10 s), unless expire()
 *   while STALE: signing goes on with the old credentials until their
 *   expires_s (or, after expire(), not at all): then -EKEYEXPIRED.
 *
 * Only one thread refreshes at a time, without holding the lock over the
 * network (STS, SSO, IMDS): the others keep signing with what is there.
 * The state (source, expiry, the last refresh's error) is what `spotrun
 * check` shows and what the daemon alerts on (sr_awscred_cache_health).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awscred_int.h"
#include "log.h"
#include "timeutil.h"

#define RETRY_NS (10 * SR_NS_PER_SEC)

struct sr_awscred_cache {
	pthread_mutex_t mu;
	struct sr_awscred cur;
	int64_t refreshed_s;
	int64_t next_try_ns;     /* monotonic; the next refresh waits */
	int64_t retry_ns;        /* RETRY_NS (tests set 0) */
	bool force;              /* the cloud said they expired */
	bool refreshing;         /* a thread is resolving now */
	int refreshes;
	int last_rc;
	char last_err[SR_ERR_MSG_MAX];
};

int sr_awscred_cache_open(struct sr_awscred_cache **out, struct sr_err *e)
{
	struct sr_awscred_cache *cc = calloc(1, sizeof(*cc));
	int rc;

	*out = NULL;
	if (cc == NULL)
		return sr_err_set(e, -ENOMEM, "out of memory");
	rc = sr_awscred_resolve(&cc->cur, e);
	if (rc < 0) {
		free(cc);
		return rc;
	}
	pthread_mutex_init(&cc->mu, NULL);
	cc->retry_ns = RETRY_NS;
	cc->refreshed_s = (int64_t)time(NULL);
	*out = cc;
	return 0;
}

void sr_awscred_cache_close(struct sr_awscred_cache *cc)
{
	if (cc == NULL)
		return;
	sr_awscred_free(&cc->cur);
	pthread_mutex_destroy(&cc->mu);
	free(cc);
}

static bool due(const struct sr_awscred_cache *cc, int64_t now_s)
{
	return cc->force || (cc->cur.expires_s > 0 &&
			     now_s + SR_AWSCRED_REFRESH_S >= cc->cur.expires_s);
}

/* Resolve again, the lock not held; called by the one refreshing thread
 * (cc->refreshing set).  Returns the resolve's code, *e its message. */
static int refresh(struct sr_awscred_cache *cc, struct sr_err *e)
{
	struct sr_awscred fresh;
	int rc = sr_awscred_resolve(&fresh, e);

	pthread_mutex_lock(&cc->mu);
	cc->refreshing = false;
	cc->last_rc = rc;
	if (rc < 0) {
		snprintf(cc->last_err, sizeof(cc->last_err), "%s",
			 sr_err_str(e, rc));
		cc->next_try_ns = sr_time_mono_ns() + cc->retry_ns;
		pthread_mutex_unlock(&cc->mu);
		sr_warn("aws", "credentials not refreshed", "source=\"%s\" "
			"err=\"%s\"", cc->cur.source, sr_err_str(e, rc));
		return rc;
	}
	sr_awscred_free(&cc->cur);
	cc->cur = fresh;
	/* a source that hands out credentials shorter-lived than REFRESH_S
	 * is asked at most every RETRY_NS, not on every call */
	cc->next_try_ns = sr_time_mono_ns() + cc->retry_ns;
	cc->last_err[0] = '\0';
	cc->force = false;
	cc->refreshes++;
	cc->refreshed_s = (int64_t)time(NULL);
	pthread_mutex_unlock(&cc->mu);
	sr_info("aws", "credentials refreshed", "source=\"%s\"", fresh.source);
	return 0;
}

int sr_awscred_cache_refresh(struct sr_awscred_cache *cc, struct sr_err *e)
{
	pthread_mutex_lock(&cc->mu);
	if (cc->refreshing) {
		pthread_mutex_unlock(&cc->mu);
		return 0; /* another thread is at it */
	}
	cc->refreshing = true;
	pthread_mutex_unlock(&cc->mu);
	return refresh(cc, e);
}

int sr_awscred_cache_sign(struct sr_awscred_cache *cc,
			  const struct sr_sigv4_req *r, char ***sig,
			  struct sr_err *e)
{
	int64_t now = (int64_t)time(NULL);
	struct sr_sigv4_creds cr;
	int rc;

	*sig = NULL;
	pthread_mutex_lock(&cc->mu);
	if (due(cc, now) && !cc->refreshing &&
	    sr_time_mono_ns() >= cc->next_try_ns) {
		struct sr_err re = { 0 };

		cc->refreshing = true;
		pthread_mutex_unlock(&cc->mu);
		refresh(cc, &re);
		pthread_mutex_lock(&cc->mu);
	}
	if (cc->force || (cc->cur.expires_s > 0 && now >= cc->cur.expires_s)) {
		rc = sr_err_set(e, -EKEYEXPIRED, "aws credentials from %s expired%s%s",
				cc->cur.source, cc->last_rc < 0 ? "; refresh: " : "",
				cc->last_rc < 0 ? cc->last_err : "");
		pthread_mutex_unlock(&cc->mu);
		return rc;
	}
	cr = sr_awscred_view(&cc->cur);
	rc = sr_sigv4_sign(r, &cr, sig, e);
	pthread_mutex_unlock(&cc->mu);
	return rc;
}

void sr_awscred__cache_retry(struct sr_awscred_cache *cc, int64_t ns)
{
	pthread_mutex_lock(&cc->mu);
	cc->retry_ns = ns;
	cc->next_try_ns = 0;
	pthread_mutex_unlock(&cc->mu);
}

void sr_awscred_cache_expire(struct sr_awscred_cache *cc)
{
	pthread_mutex_lock(&cc->mu);
	cc->force = true;
	cc->next_try_ns = 0;
	pthread_mutex_unlock(&cc->mu);
}

void sr_awscred_cache_state(struct sr_awscred_cache *cc,
			    struct sr_awscred_state *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&cc->mu);
	snprintf(out->source, sizeof(out->source), "%s", cc->cur.source);
	out->kind = cc->cur.kind;
	out->expires_s = cc->cur.expires_s;
	out->renew_until_s = cc->cur.renew_until_s;
	snprintf(out->renew_hint, sizeof(out->renew_hint), "%s",
		 cc->cur.renew_hint);
	out->refreshed_s = cc->refreshed_s;
	out->refreshes = cc->refreshes;
	out->last_rc = cc->last_rc;
	snprintf(out->last_err, sizeof(out->last_err), "%s", cc->last_err);
	pthread_mutex_unlock(&cc->mu);
}

int sr_awscred_cache_health(struct sr_awscred_cache *cc, int64_t now_s,
			    char *msg, size_t n)
{
	int lvl;

	pthread_mutex_lock(&cc->mu);
	lvl = sr_awscred_health(&cc->cur, now_s, msg, n);
	if (lvl == 0 && cc->last_rc < 0) {
		bool gone = cc->force || (cc->cur.expires_s > 0 &&
					  now_s >= cc->cur.expires_s);

		lvl = gone ? 2 : 1;
		if (msg != NULL)
			snprintf(msg, n, "aws credentials from %s %s and cannot be "
				 "refreshed: %s", cc->cur.source,
				 gone ? "expired" : "expire soon", cc->last_err);
	}
	pthread_mutex_unlock(&cc->mu);
	return lvl;
}
