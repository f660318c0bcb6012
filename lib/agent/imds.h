/*
 * imds.h - AWS instance metadata (IMDSv2) client for spot interruption
 * notices.
 *
 * Protocol (what a real EC2 instance, and spotrund's local provider, serve):
 *
 *   PUT /latest/api/token
 *       X-aws-ec2-metadata-token-ttl-seconds: 21600
 *     -> 200, body = session token (opaque text)
 *   GET /latest/meta-data/spot/instance-action
 *       X-aws-ec2-metadata-token: <token>
 *     -> 404                       no interruption scheduled
 *     -> 200 {"action":"terminate","time":"2026-11-29T14:20:00Z"}
 *     -> 401                       token expired: fetch a new one, retry once
 *
   GET /latest/meta-data/events/recommendations/rebalance
 *       X-aws-ec2-metadata-token: <token>
 *     -> 404                       no rebalance recommendation
 *     -> 200 {"noticeTime":"2026-11-29T14:18:00Z"}
 *
 * A 200 whose body is not that object (bad JSON, unknown action, a time
 * that is not RFC 3339) is an error (-SR_EPARSE) naming the field; the
 * caller reports it and keeps polling.  It is never taken as "no notice"
 * silently, nor as a notice with an invented deadline.
 *
 * The session token is asked for with a TTL (IMDS_TOKEN_TTL_S unless
 * imds_set_token_ttl) and fetched again before it expires: once it is
 * older than its TTL less a margin (60 s, or a quarter of a short TTL),
 * so a GET never carries an expired token.
 *
 * Not thread-safe: one client per polling thread.
 */
#ifndef SR_AGENT_IMDS_H
#define SR_AGENT_IMDS_H

#include <stdint.h>

#include "common/err.h"

#define IMDS_DEFAULT_URL "http://169.254.169.254"
#define IMDS_TOKEN_TTL_S 21600

struct imds;

enum imds_action {
	IMDS_NONE = 0,     /* no notice */
	IMDS_TERMINATE,
	IMDS_STOP,
	IMDS_HIBERNATE,
};

struct imds_notice {
	enum imds_action action;
	int64_t time_ns; /* when the instance goes away, epoch ns; 0 if none */
	/* the rebalance recommendation's noticeTime, epoch ns; 0 if none
	 * (asked until one is seen: imds_poll stops asking after) */
	int64_t rebalance_ns;
};

/* Create a client for base_url (e.g. "http://127.0.0.1:8123", no trailing
 * path).  timeout_ms bounds each request (the poll interval is the natural
 * choice).  Returns NULL on out-of-memory.  Caller owns; imds_destroy(). */
struct imds *imds_create(const char *base_url, long timeout_ms);
void imds_destroy(struct imds *c); /* NULL-safe */
/* The TTL its session tokens are asked for, 1..21600 s (tests). */
void imds_set_token_ttl(struct imds *c, int ttl_s);

/* One poll: fetch a token if there is none (or it is near expiry), then ask
 * for spot/instance-action and, until one was seen, for a rebalance
 * recommendation.  On success fills *out (action IMDS_NONE when the
 * endpoint says 404, rebalance_ns 0 when it says 404) and returns 0.  On a transport failure, an
 * unexpected status or a malformed notice returns a negative code with *e
 * naming what was wrong; *out is then IMDS_NONE. */
int imds_poll(struct imds *c, struct imds_notice *out, struct sr_err *e);

/* Parse a spot/instance-action body, a rebalance recommendation's.
 * Exposed for tests and the fuzzer. */
int imds_parse_notice(const char *body, size_t len, struct imds_notice *out,
		      struct sr_err *e);
int imds_parse_rebalance(const char *body, size_t len, int64_t *time_ns,
			 struct sr_err *e);

const char *imds_action_name(enum imds_action a);

/* When to SIGKILL the workload after a notice whose deadline is
 * notice_ns (epoch ns, the cloud's wall-clock time), as a
 * CLOCK_MONOTONIC time: the lead is measured once against real_now_ns
 * and laid on mono_now_ns, less a fifth of it (at most 1 s) to report
 * before the kill.  A deadline already past gives mono_now_ns.  The only
 * wall-clock read on the notice path: every wait after it is monotonic,
 * so a wall-clock step during the final checkpoint moves nothing. */
int64_t imds_kill_deadline_mono(int64_t notice_ns, int64_t real_now_ns,
				int64_t mono_now_ns);

#endif
