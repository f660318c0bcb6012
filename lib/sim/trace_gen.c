/*
 * trace_gen.c - the semi-Markov synthetic trace generator (trace_gen.h).
 *
 * Per node, continuous time: a spell of the current state (up or down)
 * is drawn from a Lomax distribution with shape a = tail and scale
 * lambda = mean * (a - 1), so its mean is `mean`:
 *     x = lambda * (U^(-1/a) - 1),  U uniform in (0, 1).
 * The chain starts in a state drawn with the stationary odds up:down and
 * is run for a burn-in of 20 mean cycles before tick 0, so the first
 * ticks are not special.  Tick i is available when every node is up at
 * time i * gap (probes see the market at tick boundaries).
 *
 * Ages matter with a < ~3: the hazard of a Lomax spell falls with its
 * age (a / (lambda + age)), so a spell that has lasted long is likely to
 * last longer - the shape measured on real spot traces, where most runs
 * are short and a few long ones hold most of the time.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "sim/rng.h"
#include "sim/trace_gen.h"

void trace_gen_defaults(struct trace_gen_params *p)
{
	memset(p, 0, sizeof *p);
	p->nodes = 16;
	p->up_h = 20;
	p->down_h = 1;
	p->tail = 1.5;
	p->gap_s = 600;
	p->hours = 720;
	p->spot_price = 1;
	p->od_ratio = 5;
	p->seed = 1;
}

int trace_gen_check(const struct trace_gen_params *p, struct sr_err *e)
{
	if (p->nodes < 1 || p->nodes > TRACE_GEN_MAX_NODES)
		return sr_err_set(e, -EINVAL, "nodes: expected 1..%d, got %d",
				  TRACE_GEN_MAX_NODES, p->nodes);
	if (!(p->up_h > 0 && p->up_h < 1e6))
		return sr_err_set(e, -EINVAL, "up-hours: expected a mean > 0, got %g", p->up_h);
	if (!(p->down_h > 0 && p->down_h < 1e6))
		return sr_err_set(e, -EINVAL, "down-hours: expected a mean > 0, got %g", p->down_h);
	if (!(p->tail > 1 && p->tail <= 1000))
		return sr_err_set(e, -EINVAL,
				  "tail: expected a Lomax shape in (1, 1000] (the mean must exist), got %g",
				  p->tail);
	if (p->gap_s < 1 || p->gap_s > 604800)
		return sr_err_set(e, -EINVAL, "gap-seconds: expected 1..604800, got %lld",
				  (long long)p->gap_s);
	if (!(p->hours * 3600 >= 2.0 * (double)p->gap_s && p->hours <= 24.0 * 3650))
		return sr_err_set(e, -EINVAL,
				  "hours: expected at least two ticks and at most 10 years, got %g",
				  p->hours);
	if (!(p->spot_price > 0 && p->spot_price < 1e6))
		return sr_err_set(e, -EINVAL, "spot-price: expected > 0, got %g", p->spot_price);
	if (!(p->od_ratio >= 1 && p->od_ratio <= 1000))
		return sr_err_set(e, -EINVAL, "od-ratio: expected 1..1000, got %g", p->od_ratio);
	return 0;
}

struct node {
	int up;
	double left_s; /* time left in the current spell */
};

static double spell_s(uint64_t *x, double mean_h, double a)
{
	double lambda = mean_h * 3600.0 * (a - 1);

	return lambda * (pow(sim__uniform(x), -1.0 / a) - 1);
}

/* Advance a node by dt seconds. */
static void node_step(struct node *nd, double dt, const struct trace_gen_params *p,
		      uint64_t *x)
{
	while (nd->left_s <= dt) {
		dt -= nd->left_s;
		nd->up = !nd->up;
		nd->left_s = spell_s(x, nd->up ? p->up_h : p->down_h, p->tail);
	}
	nd->left_s -= dt;
}

int trace_gen(const struct trace_gen_params *p, const char *name,
	      struct trace **out, struct sr_err *e)
{
	struct node *nodes = NULL;
	uint8_t *avail = NULL;
	double *price = NULL;
	uint64_t x = p->seed;
	size_t n;
	double burn_s, gap;
	int rc;

	*out = NULL;
	rc = trace_gen_check(p, e);
	if (rc)
		return rc;
	gap = (double)p->gap_s;
	n = (size_t)floor(p->hours * 3600 / gap);
	nodes = calloc((size_t)p->nodes, sizeof *nodes);
	avail = malloc(n);
	price = malloc(n * sizeof *price);
	if (!nodes || !avail || !price) {
		rc = sr_err_set(e, -ENOMEM, "%s: out of memory", name);
		goto out;
	}
	burn_s = 20 * (p->up_h + p->down_h) * 3600;
	for (int k = 0; k < p->nodes; k++) {
		nodes[k].up = sim__uniform(&x) < p->up_h / (p->up_h + p->down_h);
		nodes[k].left_s = spell_s(&x, nodes[k].up ? p->up_h : p->down_h, p->tail);
		node_step(&nodes[k], burn_s, p, &x);
	}
	for (size_t i = 0; i < n; i++) {
		int all = 1;

		for (int k = 0; k < p->nodes; k++) {
			if (i)
				node_step(&nodes[k], gap, p, &x);
			all &= nodes[k].up;
		}
		avail[i] = (uint8_t)all;
		price[i] = p->spot_price;
	}
	rc = trace_from_arrays(name, p->gap_s, avail, price, n,
			       p->spot_price * p->od_ratio, out);
	if (rc)
		rc = sr_err_set(e, rc, "%s: out of memory", name);
out:
	free(nodes);
	free(avail);
	free(price);
	return rc;
}

int trace_write_skynomad(const struct trace *t, double spot_price,
			 const char *path, struct sr_err *e)
{
	json_t *root = NULL, *data = NULL, *prices = NULL;
	int rc = 0;

	data = json_array();
	prices = t->price ? json_array() : NULL;
	if (!data || (t->price && !prices)) {
		rc = sr_err_set(e, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	for (size_t i = 0; i < t->n; i++) {
		if (json_array_append_new(data, json_integer(t->avail[i] ? 0 : 1)) ||
		    (prices && json_array_append_new(prices, json_real(t->price[i])))) {
			rc = sr_err_set(e, -ENOMEM, "%s: out of memory", path);
			goto out;
		}
	}
	root = json_pack("{s:{s:I,s:{s:f,s:f}},s:O,s:O*}", "metadata",
			 "gap_seconds", (json_int_t)t->gap_s, "price_info",
			 "price", spot_price, "on_demand_price", t->od_price,
			 "data", data, "prices", prices);
	if (!root) {
		rc = sr_err_set(e, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	rc = sr_json_write_file(root, path, e);
out:
	json_decref(root);
	json_decref(data);
	json_decref(prices);
	return rc;
}
