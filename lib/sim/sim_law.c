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

void sim_law2_free(struct sim_law2 *l)
{
	if (!l)
		return;
	for (int j = 0; j < 4; j++) {
		free(l->len[j]);
		free(l->next[j]);
		l->len[j] = NULL;
		l->next[j] = NULL;
	}
}

static int joint_at(const struct trace *const t[2], size_t i)
{
	return (t[0]->avail[i] ? 1 : 0) | (t[1]->avail[i] ? 2 : 0);
}

int sim_law2_from_traces(const struct trace *const t[2], int64_t step_s, struct sim_law2 *l)
{
	size_t n = t[0]->n < t[1]->n ? t[0]->n : t[1]->n, i = 0, j, total = 0;

	memset(l, 0, sizeof *l);
	if (t[0]->gap_s != t[1]->gap_s)
		return -EINVAL;
	for (int k = 0; k < 4; k++) {
		l->len[k] = malloc((n + 1) * sizeof(int));
		l->next[k] = malloc(n + 1);
		if (!l->len[k] || !l->next[k]) {
			sim_law2_free(l);
			return -ENOMEM;
		}
	}
	while (i < n && joint_at(t, i) == joint_at(t, 0))
		i++;
	for (; i < n; i = j) {
		int k = joint_at(t, i);
		long steps;

		for (j = i; j < n && joint_at(t, j) == k; j++)
			;
		if (j == n)
			break; /* cut by the traces' end */
		steps = lround((double)(j - i) * (double)t[0]->gap_s / (double)step_s);
		l->len[k][l->n[k]] = steps < 1 ? 1 : (int)steps;
		l->next[k][l->n[k]++] = (uint8_t)joint_at(t, j);
		total++;
	}
	for (int k = 0; k < 4; k++) {
		for (size_t s = 0; s < l->n[k]; s++) {
			if (!l->n[l->next[k][s]])
				total = 0; /* leads to a state never seen to end */
		}
	}
	if (total < 2) {
		sim_law2_free(l);
		return -EINVAL;
	}
	return 0;
}

double sim_law2_end(const struct sim_law2 *l, int j, int a, int last, double next[4])
{
	double ends = 0, alive = 0, expo = 0, cnt[4] = { 0 }, all[4] = { 0 }, sum = 0;

	for (size_t i = 0; i < l->n[j]; i++) {
		int L = l->len[j][i];

		all[l->next[j][i]]++;
		if (L <= a)
			continue;
		alive++;
		if (a < last) {
			if (L == a + 1) {
				ends++;
				cnt[l->next[j][i]]++;
			}
		} else {
			ends++;
			expo += L - a;
			cnt[l->next[j][i]]++;
		}
	}
	if (ends == 0) /* it cannot end here: any next state will do */
		memcpy(cnt, all, sizeof cnt);
	for (int k = 0; k < 4; k++)
		sum += cnt[k];
	for (int k = 0; k < 4; k++)
		next[k] = sum > 0 ? cnt[k] / sum : 0;
	if (alive == 0)
		return 1;
	return a < last ? ends / alive : ends / expo;
}

int sim_law2_draw(const struct sim_law2 *l, int64_t step_s, size_t n, uint64_t seed,
		  struct trace *out[2])
{
	uint8_t *av[2] = { malloc(n), malloc(n) };
	uint64_t x = seed;
	int k = 0, rc = -ENOMEM, seen = 0;

	out[0] = out[1] = NULL;
	if (!av[0] || !av[1])
		goto out;
	/* Start in a state drawn uniformly from those with spells. */
	for (int j = 0; j < 4; j++)
		seen += l->n[j] > 0;
	for (int j = 0, pick = (int)(sim__uniform(&x) * seen); j < 4; j++) {
		if (l->n[j] > 0 && pick-- == 0) {
			k = j;
			break;
		}
	}
	for (size_t i = 0; i < n;) {
		size_t pick = (size_t)(sim__uniform(&x) * (double)l->n[k]);
		int L;

		pick = pick < l->n[k] ? pick : l->n[k] - 1;
		L = l->len[k][pick];
		for (int s = 0; s < L && i < n; s++, i++) {
			av[0][i] = (uint8_t)(k & 1);
			av[1][i] = (uint8_t)(k >> 1 & 1);
		}
		k = l->next[k][pick];
	}
	rc = trace_from_arrays("renewal-joint-0", step_s, av[0], NULL, n, -1, &out[0]);
	if (!rc)
		rc = trace_from_arrays("renewal-joint-1", step_s, av[1], NULL, n, -1, &out[1]);
	if (rc) {
		trace_free(out[0]);
		out[0] = NULL;
	}
out:
	free(av[0]);
	free(av[1]);
	return rc;
}
