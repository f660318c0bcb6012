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
 * Zones (trace_gen_market): zone k ANDs its own nodes (stream seed + k)
 * with the nodes all zones share (one stream), so a shared node's outage
 * is every zone's - correlated outages, as the bundled multi-zone traces
 * show (both zones down 14-53% of the time against 6-40% if they were
 * independent).  The forced outage masks ticks [0, outage_h): the nodes
 * run on underneath, so what shows after it is the stationary process,
 * and the blips are independent ticks of availability, each with
 * probability gap / blip_h.  Prices: log price an AR(1) around the
 * spot price.  Each of these draws from a stream of its own.
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
	if (p->shared < 0 || p->shared > p->nodes)
		return sr_err_set(e, -EINVAL, "shared-nodes: expected 0..nodes (%d), got %d",
				  p->nodes, p->shared);
	if (!(p->outage_h >= 0 && p->outage_h < p->hours))
		return sr_err_set(e, -EINVAL,
				  "outage-hours: expected 0 or more and less than hours (%g), got %g",
				  p->hours, p->outage_h);
	if (!(p->blip_h == 0 || (p->blip_h * 3600 >= (double)p->gap_s && p->blip_h < 1e6)))
		return sr_err_set(e, -EINVAL,
				  "blip-hours: expected 0 (no blips) or at least one tick (%g h), got %g",
				  (double)p->gap_s / 3600, p->blip_h);
	if (!(p->price_vol >= 0 && p->price_vol <= 2))
		return sr_err_set(e, -EINVAL, "price-vol: expected 0..2, got %g", p->price_vol);
	return 0;
}

/* Streams besides a zone's own nodes (seed + k): the shared nodes, and
 * each zone's blips and prices, so that turning one on moves nothing
 * else. */
#define SHARED_STREAM UINT64_C(0xD1B54A32D192ED03)
#define BLIP_STREAM UINT64_C(0x8CB92BA72F3D8DD7)
#define PRICE_STREAM UINT64_C(0xA0761D6478BD642F)
/* Half-life of a spot price excursion. */
#define PRICE_HALF_LIFE_S (6 * 3600.0)

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

/* avail[i] &= "all of k nodes up at tick i", the nodes drawn from seed:
 * started from the stationary odds, burnt in for 20 mean cycles, then
 * stepped tick by tick (the order of draws is the generator's from its
 * first version, so old seeds give old traces).  Returns 0 or -ENOMEM. */
static int nodes_and(const struct trace_gen_params *p, int k, uint64_t seed,
		     uint8_t *avail, size_t n)
{
	struct node *nodes;
	uint64_t x = seed;
	double burn_s = 20 * (p->up_h + p->down_h) * 3600, gap = (double)p->gap_s;

	if (!k)
		return 0;
	nodes = calloc((size_t)k, sizeof *nodes);
	if (!nodes)
		return -ENOMEM;
	for (int j = 0; j < k; j++) {
		nodes[j].up = sim__uniform(&x) < p->up_h / (p->up_h + p->down_h);
		nodes[j].left_s = spell_s(&x, nodes[j].up ? p->up_h : p->down_h, p->tail);
		node_step(&nodes[j], burn_s, p, &x);
	}
	for (size_t i = 0; i < n; i++) {
		int all = 1;

		for (int j = 0; j < k; j++) {
			if (i)
				node_step(&nodes[j], gap, p, &x);
			all &= nodes[j].up;
		}
		avail[i] &= (uint8_t)all;
	}
	free(nodes);
	return 0;
}

/* The forced outage: spot down for its ticks but for one-tick blips. */
static void outage(const struct trace_gen_params *p, uint64_t seed, uint8_t *avail,
		   size_t n)
{
	size_t end = (size_t)floor(p->outage_h * 3600 / (double)p->gap_s + 0.5);
	double blip = p->blip_h > 0 ? (double)p->gap_s / (p->blip_h * 3600) : 0;
	uint64_t x = seed ^ BLIP_STREAM;

	for (size_t i = 0; i < end && i < n; i++)
		avail[i] = blip > 0 && sim__uniform(&x) < blip;
}

/* Spot prices: spot * exp(x - vol^2 / 2), x a stationary AR(1) of sd vol
 * reverting with PRICE_HALF_LIFE_S (so the mean price is spot_price). */
static void prices(const struct trace_gen_params *p, uint64_t seed, double *price,
		   size_t n)
{
	double v = p->price_vol, phi = exp2(-(double)p->gap_s / PRICE_HALF_LIFE_S);
	double q = sqrt(1 - phi * phi), z = 0;
	uint64_t x = seed ^ PRICE_STREAM;

	for (size_t i = 0; i < n; i++) {
		if (v > 0) {
			double g = sqrt(-2 * log(sim__uniform(&x))) *
				   cos(2 * M_PI * sim__uniform(&x));

			z = i ? phi * z + q * g : g;
		}
		price[i] = p->spot_price * exp(v * z - v * v / 2);
	}
}

int trace_gen_market(const struct trace_gen_params *p, int zones,
		     const char *const *names, struct trace **out, struct sr_err *e)
{
	uint8_t *shared = NULL, *avail = NULL;
	double *price = NULL;
	size_t n;
	int rc, k;

	for (k = 0; k < zones && k < TRACE_GEN_MAX_ZONES; k++)
		out[k] = NULL;
	rc = trace_gen_check(p, e);
	if (rc)
		return rc;
	if (zones < 1 || zones > TRACE_GEN_MAX_ZONES)
		return sr_err_set(e, -EINVAL, "zones: expected 1..%d, got %d",
				  TRACE_GEN_MAX_ZONES, zones);
	n = (size_t)floor(p->hours * 3600 / (double)p->gap_s);
	shared = malloc(n);
	avail = malloc(n);
	price = malloc(n * sizeof *price);
	if (!shared || !avail || !price) {
		rc = -ENOMEM;
		goto out;
	}
	memset(shared, 1, n);
	rc = nodes_and(p, p->shared, p->seed ^ SHARED_STREAM, shared, n);
	for (k = 0; k < zones && !rc; k++) {
		uint64_t seed = p->seed + (uint64_t)k;

		memcpy(avail, shared, n);
		rc = nodes_and(p, p->nodes - p->shared, seed, avail, n);
		if (rc)
			break;
		outage(p, seed, avail, n);
		prices(p, seed, price, n);
		rc = trace_from_arrays(names[k], p->gap_s, avail, price, n,
				       p->spot_price * p->od_ratio, &out[k]);
	}
out:
	if (rc) {
		for (k = 0; k < zones; k++) {
			trace_free(out[k]);
			out[k] = NULL;
		}
		rc = sr_err_set(e, rc, "%s: out of memory", names[0]);
	}
	free(shared);
	free(avail);
	free(price);
	return rc;
}

int trace_gen(const struct trace_gen_params *p, const char *name,
	      struct trace **out, struct sr_err *e)
{
	return trace_gen_market(p, 1, &name, out, e);
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
