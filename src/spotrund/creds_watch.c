/*
 * creds_watch.c - a cloud's credentials that will run out are said
 * before a job needs them (issue 26, "Credentials as the AWS CLI finds
 * them").
 *
 * Every 10 s, on the leader's reconciler thread (a tick hook), every
 * open provider with credentials (cloud_provider_ops.cred_check) is asked
 * how they stand: good; running out within the hour with nothing that
 * renews them unaided (an exported session, an SSO login: the check says
 * what to do); or gone.  When that changes a line is logged, and while it
 * is not good every unfinished job gets one `credentials` event for it
 * (jobs submitted later too) - what `spotrun events` shows and what
 * finops_hooks.c turns into an alert (warning; error once they are
 * gone).  When they are good again, the jobs that were told get
 * "renewed ...", which resolves the alert.  Launches meanwhile wait
 * (CLOUD_ECREDS) instead of failing a job.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "ctl/ctl_int.h"
#include "ctl/jobsm.h"
#include "router.h"

#define EVERY_NS (10 * SR_NS_PER_SEC)
#define MAX_CLOUDS 64

/* An event with msg for each unfinished job that had (told) or had not
 * (!told) a credentials event since since_ns; one transaction. */
static void tell_jobs(struct ctl *c, struct store *db, const char *msg,
		      int64_t since_ns, bool told)
{
	struct store_stmt *st = NULL;
	struct sr_err e = { 0 };
	int64_t *ids = NULL, now = ctl__now(c);
	size_t n = 0;
	int rc;

	rc = store_prepare(db, told ?
			   "SELECT id FROM jobs WHERE state NOT IN ('SUCCEEDED',"
			   " 'FAILED', 'CANCELLED') AND id IN (SELECT job_id FROM"
			   " events WHERE type = 'credentials' AND ts_ns >= ?1)" :
			   "SELECT id FROM jobs WHERE state NOT IN ('SUCCEEDED',"
			   " 'FAILED', 'CANCELLED') AND id NOT IN (SELECT job_id"
			   " FROM events WHERE type = 'credentials' AND ts_ns >= ?1)",
			   &st, &e);
	if (rc == 0)
		store_bind_i64(st, 1, since_ns);
	while (rc == 0 && (rc = store_step(st, &e)) == 1) {
		int64_t *g = realloc(ids, (n + 1) * sizeof *ids);

		if (!g) {
			rc = sr_err_set(&e, -ENOMEM, "out of memory");
			break;
		}
		ids = g;
		ids[n++] = store_col_i64(st, "id");
		rc = 0;
	}
	store_done(st);
	if (rc == 0 && n > 0) {
		rc = store_begin(db, &e);
		for (size_t i = 0; rc == 0 && i < n; i++)
			rc = ctl_event_append(db, ids[i], "credentials", NULL, NULL,
					      0, now, ctl__sim_at(c, now), NULL, msg,
					      &e);
		rc = store_end(db, rc, &e);
	}
	if (rc < 0)
		sr_warn("creds", "cannot record a credentials event", "err=\"%s\"",
			sr_err_str(&e, rc));
	free(ids);
}

static void creds_watch_tick(struct ctl *c, struct store *db)
{
	static int64_t last;
	static struct {
		int level;
		int64_t since_ns;     /* when it became that */
		char msg[SR_ERR_MSG_MAX + 64];
	} w[MAX_CLOUDS];
	int64_t mono = sr_time_mono_ns();

	if ((last && mono - last < EVERY_NS) || !ctl__is_leader(c))
		return;
	last = mono;
	for (size_t i = 0; i < c->nclouds && i < MAX_CLOUDS; i++) {
		const struct cloud_provider *p = &c->clouds[i].p;
		const char *name = c->clouds[i].name;
		struct sr_err e = { 0 };
		int64_t exp = 0, was;
		int rc, lvl;

		if (!p->ops || !p->ops->cred_check)
			continue;
		rc = p->ops->cred_check(p->st, &exp, &e);
		lvl = rc == 0 ? 0 : rc > 0 ? 1 : 2;
		if (lvl != w[i].level) {
			was = w[i].since_ns;
			w[i].since_ns = ctl__now(c);
			if (lvl == 0) {
				snprintf(w[i].msg, sizeof w[i].msg, "renewed: %s%s%s "
					 "credentials are good again", name,
					 p->region[0] ? " " : "", p->region);
				sr_info("creds", "credentials renewed", "provider=%s "
					"region=%s", name, p->region);
				tell_jobs(c, db, w[i].msg, was, true);
			} else {
				snprintf(w[i].msg, sizeof w[i].msg, "%s%s%s: %s", name,
					 p->region[0] ? " " : "", p->region, e.msg);
				if (lvl == 2)
					sr_error("creds", "credentials gone: launches "
						 "wait", "provider=%s region=%s msg=\"%s\"",
						 name, p->region, w[i].msg);
				else
					sr_warn("creds", "credentials run out soon",
						"provider=%s region=%s msg=\"%s\"", name,
						p->region, w[i].msg);
			}
			w[i].level = lvl;
		}
		if (w[i].level != 0) /* jobs submitted since hear it too */
			tell_jobs(c, db, w[i].msg, w[i].since_ns, false);
	}
}

#ifdef CTL_TICK_HOOK
CTL_TICK_HOOK(creds_watch_tick)
#endif
