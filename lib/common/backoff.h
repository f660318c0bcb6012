/*
 * backoff.h - retry pacing and log rate limiting for loops that talk to a
 * peer that may be gone (the agent to spotrund, the CLI following a job).
 *
 * A struct sr_backoff says when the next attempt may run: after the k-th
 * consecutive failure it waits a random time in [c/2, c] where
 * c = min(cap, base * 2^(k-1)) ("equal jitter": never zero, so a loop
 * that fails at once cannot spin, and never in lock-step with its peers).
 * Times are CLOCK_MONOTONIC nanoseconds (sr_time_mono_ns).
 *
 * A struct sr_ratelimit lets one message through per interval and counts
 * the ones it held back, so a failure repeated a thousand times a second
 * costs one log line per interval that says how many were suppressed.
 *
 * A struct sr_pacer paces requests to a peer that meters us with a token
 * bucket we cannot see (EC2's RunInstances): unlimited until the peer
 * throttles; then a rate that halves at each throttle (at most once per
 * second: a burst of answers to one burst of calls is one signal) and
 * grows by `step` per success (additive increase, multiplicative
 * decrease), unlimited again once it passes `max`.  Unlike a backoff it
 * keeps calls flowing at about the rate the peer grants, instead of
 * stopping everyone after each refusal.
 *
 * Not thread-safe: each belongs to one loop.
 */
#ifndef SR_COMMON_BACKOFF_H
#define SR_COMMON_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

struct sr_backoff {
	int64_t base_ns, cap_ns;
	int fails;        /* consecutive failures */
	int64_t next_ns;  /* no attempt before this; 0 = now */
	unsigned seed;
};

/* base and cap in ns (base >= 1 ms is sensible; cap >= base). */
void sr_backoff_init(struct sr_backoff *b, int64_t base_ns, int64_t cap_ns);
/* A failure at `now`: returns the delay chosen (ns) and sets next_ns. */
int64_t sr_backoff_fail(struct sr_backoff *b, int64_t now);
/* A success: the next attempt may run at once. */
void sr_backoff_ok(struct sr_backoff *b);
/* True when an attempt may run at `now`. */
bool sr_backoff_ready(const struct sr_backoff *b, int64_t now);

struct sr_ratelimit {
	int64_t interval_ns;
	int64_t last_ns;   /* when the last message went through; 0 never */
	long suppressed;   /* held back since then */
};

void sr_ratelimit_init(struct sr_ratelimit *r, int64_t interval_ns);
/* True if a message may go out at `now`; then *suppressed (may be NULL)
 * gets how many were held back before it, and the count restarts. */
bool sr_ratelimit_allow(struct sr_ratelimit *r, int64_t now, long *suppressed);

struct sr_pacer {
	double rate;       /* calls per second; 0 = unlimited */
	double tokens;     /* calls that may go now (at most 1 + rate) */
	int64_t at_ns;     /* of the last refill */
	int64_t cut_ns;    /* of the last decrease */
	double min, max, step, start;
};

/* After a throttle the rate starts at `start`, halves down to `min`, and
 * grows by `step` per success; above `max` it is unlimited again. */
void sr_pacer_init(struct sr_pacer *p, double start, double min, double max,
		   double step);
/* True when a call may go at `now` (it then takes one token). */
bool sr_pacer_take(struct sr_pacer *p, int64_t now);
/* The peer throttled a call; the next one to consider is not before a
 * token refills. */
void sr_pacer_throttled(struct sr_pacer *p, int64_t now);
/* A call went through. */
void sr_pacer_ok(struct sr_pacer *p);

#endif
