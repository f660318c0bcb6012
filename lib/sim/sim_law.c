/*
 * sim_law.c - renewal markets with a known law (sim_law.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/rng.h"
#include "sim/sim_law.h"

void sim_law_free(struct sim_law *l)
{
	if (!l)
		return;
	free(l->len[0]);
	free(l->len[1]);
	l->len[0] = l->len[1] = NULL;
}

int sim_law_from_trace(const struct trace *t, int64_t step_s, struct sim_law *l)
{
	size_t i = 0, j;

	memset(l, 0, sizeof *l);
	l->len[0] = malloc(t->n * sizeof(int));
	l->len[1] = malloc(t->n * sizeof(int));
	if (!l->len[0] || !l->len[1]) {
		sim_law_free(l);
		return -ENOMEM;
	}
	while (i < t->n && t->avail[i] == t->avail[0])
		i++;
	for (; i < t->n; i = j) {
		int k = t->avail[i] ? 1 : 0;
		double secs;
		long steps;

		for (j = i; j < t->n && t->avail[j] == t->avail[i]; j++)
			;
		if (j == t->n)
			break; /* cut by the trace's end */
		secs = (double)(j - i) * (double)t->gap_s;
		steps = lround(secs / (double)step_s);
		l->len[k][l->n[k]++] = steps < 1 ? 1 : (int)steps;
	}
	if (l->n[0] < 2 || l->n[1] < 2) {
		sim_law_free(l);
		return -EINVAL;
	}
	return 0;
}

double sim_law_end(const struct sim_law *l, int k, int a, int last)
{
	double ends = 0, alive = 0, expo = 0;

	for (size_t i = 0; i < l->n[k]; i++) {
		int L = l->len[k][i];

		if (L <= a)
			continue;
		alive++;
		if (a < last) {
			ends += L == a + 1;
		} else {
			ends++;
			expo += L - a;
		}
	}
	if (alive == 0)
		return 1;
	return a < last ? ends / alive : ends / expo;
}

int sim_law_draw(const struct sim_law *l, int64_t step_s, size_t n, uint64_t seed,
		 struct trace **out)
{
	uint8_t *av = malloc(n);
	uint64_t x = seed;
	int k = sim__uniform(&x) < 0.5, rc;

	if (!av)
		return -ENOMEM;
	for (size_t i = 0; i < n; k = !k) {
		size_t pick = (size_t)(sim__uniform(&x) * (double)l->n[k]);
		int L = l->len[k][pick < l->n[k] ? pick : l->n[k] - 1];

		for (int s = 0; s < L && i < n; s++)
			av[i++] = (uint8_t)k;
	}
	rc = trace_from_arrays("renewal", step_s, av, NULL, n, -1, out);
	free(av);
	return rc;
}

void sim_law_age(double *age_s, uint8_t *last, int seen, uint8_t avail, int64_t gap_s)
{
	if (seen && *last == avail)
		*age_s += (double)gap_s;
	else
		*age_s = 0;
	*last = avail;
}
