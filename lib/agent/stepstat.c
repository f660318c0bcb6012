/*
 * stepstat.c - steps per second of the workload (see stepstat.h).
 */
#include "agent/stepstat.h"

void stepstat_reset(struct stepstat *s)
{
	s->seen = false;
	s->step = -1;
	s->at_ns = 0;
	s->gap_ns = 0;
	s->rate = -1;
}

double stepstat_rate(struct stepstat *s, int64_t step, int64_t now_ns)
{
	int64_t window;

	if (step < 0)
		return s->seen ? stepstat_rate(s, s->step, now_ns) : -1;
	if (!s->seen || step < s->step) {
		/* the first step seen, or a restore went back: a start */
		s->seen = true;
		s->step = step;
		s->at_ns = now_ns;
		s->gap_ns = 0;
		s->rate = -1;
		return -1;
	}
	if (step > s->step) {
		int64_t dt = now_ns - s->at_ns;

		s->rate = dt > 0 ? (double)(step - s->step) * 1e9 / (double)dt : 0;
		s->gap_ns = dt;
		s->step = step;
		s->at_ns = now_ns;
		return s->rate;
	}
	if (s->rate < 0)
		return -1; /* no advance yet */
	window = s->gap_ns > STEPSTAT_IDLE_NS / 3 ? 3 * s->gap_ns : STEPSTAT_IDLE_NS;
	return now_ns - s->at_ns <= window ? s->rate : 0;
}
