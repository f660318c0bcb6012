/*
 * backoff.c - exponential backoff with equal jitter, and a log rate
 * limiter (see backoff.h).
 */
#include "backoff.h"

#include <stdlib.h>

#include "timeutil.h"

void sr_backoff_init(struct sr_backoff *b, int64_t base_ns, int64_t cap_ns)
{
	b->base_ns = base_ns > 0 ? base_ns : 1;
	b->cap_ns = cap_ns >= b->base_ns ? cap_ns : b->base_ns;
	b->fails = 0;
	b->next_ns = 0;
	b->seed = (unsigned)sr_time_mono_ns() ^ (unsigned)(uintptr_t)b;
}

int64_t sr_backoff_fail(struct sr_backoff *b, int64_t now)
{
	int64_t c = b->base_ns, half, d;
	uint64_t r;

	if (b->fails < 62)
		b->fails++;
	for (int i = 1; i < b->fails && c < b->cap_ns; i++)
		c *= 2;
	if (c > b->cap_ns)
		c = b->cap_ns;
	half = c / 2;
	r = ((uint64_t)rand_r(&b->seed) << 31) | (uint64_t)rand_r(&b->seed);
	d = half + (int64_t)(r % (uint64_t)(c - half + 1));
	b->next_ns = now + d;
	return d;
}

void sr_backoff_ok(struct sr_backoff *b)
{
	b->fails = 0;
	b->next_ns = 0;
}

bool sr_backoff_ready(const struct sr_backoff *b, int64_t now)
{
	return now >= b->next_ns;
}

void sr_ratelimit_init(struct sr_ratelimit *r, int64_t interval_ns)
{
	r->interval_ns = interval_ns;
	r->last_ns = 0;
	r->suppressed = 0;
}

bool sr_ratelimit_allow(struct sr_ratelimit *r, int64_t now, long *suppressed)
{
	if (r->last_ns != 0 && now - r->last_ns < r->interval_ns) {
		r->suppressed++;
		return false;
	}
	if (suppressed)
		*suppressed = r->suppressed;
	r->suppressed = 0;
	r->last_ns = now;
	return true;
}
