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

void sr_pacer_init(struct sr_pacer *p, double start, double min, double max,
		   double step)
{
	*p = (struct sr_pacer){ .min = min, .max = max, .step = step,
				.start = start };
}

static void refill(struct sr_pacer *p, int64_t now)
{
	if (p->at_ns != 0 && now > p->at_ns)
		p->tokens += p->rate * (double)(now - p->at_ns) / 1e9;
	if (p->tokens > 1 + p->rate)
		p->tokens = 1 + p->rate;
	p->at_ns = now;
}

bool sr_pacer_take(struct sr_pacer *p, int64_t now)
{
	if (p->rate <= 0)
		return true;
	refill(p, now);
	if (p->tokens < 1)
		return false;
	p->tokens -= 1;
	return true;
}

void sr_pacer_throttled(struct sr_pacer *p, int64_t now)
{
	if (p->rate > 0 && p->cut_ns != 0 && now - p->cut_ns < 1000000000LL)
		return; /* one burst of refusals: one decrease */
	refill(p, now);
	p->rate = p->rate <= 0 ? p->start : p->rate / 2;
	if (p->rate < p->min)
		p->rate = p->min;
	p->tokens = 0;
	p->at_ns = now;
	p->cut_ns = now;
}

void sr_pacer_ok(struct sr_pacer *p)
{
	if (p->rate <= 0)
		return;
	p->rate += p->step;
	if (p->rate > p->max)
		p->rate = 0; /* unlimited again */
}
