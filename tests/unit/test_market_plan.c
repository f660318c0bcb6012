/*
 * test_market_plan.c - governance rules, filters, ranking and feasibility
 * of the planner, on a small synthetic catalog whose numbers are easy to
 * check by hand, plus one run on the shipped data.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "market/plan.h"

#define USD(x) ((sr_micros)llround((x) * 1000000.0))

static void add(struct catalog *c, const char *cloud, const char *region,
		const char *type, const char *acc, double n, double od,
		double spot, double res, double per24, enum catalog_net net)
{
	struct catalog_offering o = { 0 };

	snprintf(o.cloud, sizeof o.cloud, "%s", cloud);
	snprintf(o.region, sizeof o.region, "%s", region);
	snprintf(o.instance_type, sizeof o.instance_type, "%s", type);
	snprintf(o.accelerator, sizeof o.accelerator, "%s", acc);
	o.accel_count = n;
	o.ondemand_per_h = od < 0 ? -1 : USD(od);
	o.spot_per_h = spot < 0 ? -1 : USD(spot);
	o.reserved_per_h = res < 0 ? -1 : USD(res);
	o.hazard_per_h = catalog_hazard_from_per24h(per24);
	o.hazard_src = spot < 0 ? CATALOG_HAZARD_NONE : CATALOG_HAZARD_TABLE;
	o.net = net;
	assert_int_equal(catalog_add(c, &o), 0);
}

static int setup(void **state)
{
	struct catalog *c = malloc(sizeof *c);

	catalog_init(c);
	add(c, "aws", "us-east-1", "p5", "H100", 8, 50, 15, 30, 1, CATALOG_NET_RDMA);
	add(c, "gcp", "us-central1", "a3", "H100", 8, 40, 20, -1, 0.5, CATALOG_NET_ETHERNET);
	add(c, "cw", "us-east", "cw8", "H100", 8, 45, -1, 28, 0, CATALOG_NET_INFINIBAND);
	add(c, "aws", "us-east-1", "p4d", "A100", 8, 30, 9, 20, 1, CATALOG_NET_RDMA);
	add(c, "aws", "us-east-1", "p5.4x", "H100", 1, 7, 2, 5, 1, CATALOG_NET_ETHERNET);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	catalog_free(*state);
	free(*state);
	return 0;
}

static void job(struct jobspec *js, enum jobspec_crit crit, double work_h,
		double deadline_h)
{
	jobspec_init(js);
	strcpy(js->accel, "H100");
	js->accel_count = 8;
	js->work_h = work_h;
	js->criticality = crit;
	js->ckpt_bytes = 40000000000ULL;
	if (deadline_h > 0) {
		js->deadline_kind = JOBSPEC_DEADLINE_RELATIVE;
		js->deadline_ns = (int64_t)(deadline_h * 3600e9);
	}
}

static int count_mode(const struct plan_result *r, enum plan_mode m)
{
	int n = 0;

	for (size_t i = 0; i < r->n; i++)
		n += r->items[i].mode == m;
	return n;
}

static void test_governance(void **state)
{
	struct catalog *c = *state;
	struct jobspec js;
	struct plan_result r;
	struct sr_err e = { 0 };

	/* critical: reserved and on-demand only */
	job(&js, JOBSPEC_CRIT_CRITICAL, 10, 20);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_int_equal(r.n, 5); /* 3 on-demand + 2 reserved */
	assert_int_equal(count_mode(&r, PLAN_RESERVED), 2);
	assert_int_equal(count_mode(&r, PLAN_ONDEMAND), 3);
	assert_int_equal(r.items[0].mode, PLAN_RESERVED);
	assert_string_equal(r.items[0].o.cloud, "cw"); /* $28/h < $30/h */
	assert_int_equal(r.items[0].expected_cost, USD(280));
	assert_true(r.items[0].est.n_preempt == 0);
	plan_result_free(&r);

	/* standard: spot with on-demand fallback, and on-demand */
	job(&js, JOBSPEC_CRIT_STANDARD, 10, 20);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_int_equal(count_mode(&r, PLAN_SPOT_FALLBACK), 2);
	assert_int_equal(count_mode(&r, PLAN_ONDEMAND), 3);
	assert_int_equal(count_mode(&r, PLAN_RESERVED) + count_mode(&r, PLAN_SPOT), 0);
	assert_int_equal(r.items[0].mode, PLAN_SPOT_FALLBACK);
	assert_string_equal(r.items[0].o.cloud, "aws");
	assert_true(r.items[0].p_meet == 1.0);
	plan_result_free(&r);

	js.use_spot = 1;
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(count_mode(&r, PLAN_SPOT_FALLBACK), 2);
	plan_result_free(&r);
	js.use_spot = 0;
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_int_equal(r.n, 3);
	assert_int_equal(count_mode(&r, PLAN_ONDEMAND), 3);
	plan_result_free(&r);

	/* best-effort: spot only, no fallback */
	job(&js, JOBSPEC_CRIT_BEST_EFFORT, 10, 20);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(count_mode(&r, PLAN_SPOT), 2);
	assert_true(r.items[0].p_fallback == 0);
	plan_result_free(&r);
}

static void test_filters(void **state)
{
	struct catalog *c = *state;
	struct jobspec js;
	struct plan_result r;
	struct sr_err e = { 0 };
	struct jobspec_infra aws = { "aws", "", "", "", 0 };

	job(&js, JOBSPEC_CRIT_CRITICAL, 10, 0);
	js.network = CATALOG_NET_INFINIBAND;
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	for (size_t i = 0; i < r.n; i++)
		assert_string_equal(r.items[i].o.cloud, "cw");
	assert_int_equal(r.n, 2);
	plan_result_free(&r);

	js.network = CATALOG_NET_RDMA; /* RDMA or better */
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_int_equal(r.n, 4);
	plan_result_free(&r);

	js.network = CATALOG_NET_UNKNOWN;
	js.infra = &aws;
	js.n_infra = 1;
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_int_equal(r.n, 2);
	for (size_t i = 0; i < r.n; i++)
		assert_string_equal(r.items[i].o.instance_type, "p5");
	plan_result_free(&r);
	js.infra = NULL;
	js.n_infra = 0;

	/* max $/h counts the whole gang: 2 nodes x $28 = $56 > $50 */
	js.num_nodes = 2;
	js.max_hourly_cost = USD(50);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_int_equal(r.n, 0);
	plan_result_free(&r);
	js.max_hourly_cost = USD(58);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.items[0].price_per_h, USD(56));
	plan_result_free(&r);
}

static void test_feasibility_and_ranking(void **state)
{
	struct catalog *c = *state;
	struct jobspec js;
	struct plan_result r;
	struct sr_err e = { 0 };

	/* a deadline with 1 % slack: spot alone cannot promise 0.99 */
	job(&js, JOBSPEC_CRIT_BEST_EFFORT, 24, 24.24);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_int_equal(r.n_feasible, 0);
	for (size_t i = 0; i < r.n; i++) {
		assert_false(r.items[i].feasible);
		assert_true(r.items[i].p_meet < 0.99);
		assert_non_null(strstr(r.items[i].why, "P(meet deadline)"));
	}
	plan_result_free(&r);

	/* the same deadline is safe with on-demand fallback */
	job(&js, JOBSPEC_CRIT_STANDARD, 24, 24.5);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_int_equal(r.n_feasible, r.n);
	for (size_t i = 0; i < r.n; i++) {
		const struct plan_placement *p = &r.items[i];

		if (i)
			assert_true(r.items[i - 1].expected_cost <= p->expected_cost);
		if (p->mode == PLAN_SPOT_FALLBACK) {
			assert_true(p->p_fallback > 0 && p->p_fallback <= 1);
			/* never more than the whole job on that on-demand price */
			assert_true(p->expected_cost <
				    (sr_micros)(p->o.ondemand_per_h * (24 + r.resume_h)));
		}
	}
	/* savings against the cheapest on-demand ($40/h x 24 h) */
	assert_int_equal(r.baseline_od, USD(960));
	assert_int_equal(r.baseline_reserved, USD(28 * 24));
	assert_true(fabs(r.items[0].savings_vs_od -
			 (1 - (double)r.items[0].expected_cost / USD(960))) < 1e-12);
	plan_result_free(&r);

	/* max_restarts 0 rules out spot, max_cost rules out the rest */
	job(&js, JOBSPEC_CRIT_STANDARD, 24, 0);
	js.max_restarts = 0;
	js.max_cost = USD(1000);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_int_equal(r.n_feasible, 1);
	assert_int_equal(r.items[0].mode, PLAN_ONDEMAND);
	assert_int_equal(r.items[0].expected_cost, USD(960));
	assert_true(isinf(r.deadline_h));
	assert_string_equal(plan_risk(&r, &r.items[0]), "n/a");
	for (size_t i = 1; i < r.n; i++)
		assert_false(r.items[i].feasible);
	json_t *j = plan_to_json(&r, &js);
	assert_int_equal(json_array_size(json_object_get(j, "placements")), r.n);
	assert_true(json_is_null(json_object_get(j, "deadline_h")));
	json_decref(j);
	plan_result_free(&r);
}

/* The warm spare (spare.h): priced in the placement's region against
 * the delay it saves. */
static void test_spare(void **state)
{
	struct catalog *c = *state;
	struct jobspec js;
	struct plan_result r;
	struct sr_err e = { 0 };
	const struct plan_spare *s = &r.spare;
	double saved_h;

	job(&js, JOBSPEC_CRIT_BEST_EFFORT, 24, 0);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_true(r.n_feasible > 0 && r.items[0].mode == PLAN_SPOT);
	/* the cheapest spot H100:8 in the placement's own region (never
	 * the 1-GPU p5.4x, never another region) */
	assert_true(s->priced);
	assert_string_equal(s->o.region, r.items[0].o.region);
	assert_string_equal(s->o.instance_type, r.items[0].o.instance_type);
	assert_int_equal(s->price_per_h, r.items[0].o.spot_per_h);
	saved_h = (double)(js.provision_ns + js.image_pull_ns) / 3600e9;
	assert_true(fabs(s->saved_s - saved_h * 3600) < 1e-9);
	assert_true(s->recoveries == r.items[0].est.n_preempt &&
		    s->recoveries > 0);
	assert_int_equal(s->cost, llround((double)s->price_per_h *
					  r.items[0].est.makespan_h));
	/* delay at the gang's own $/h: a few minutes saved per recovery do
	 * not pay a second node for the whole run */
	assert_int_equal(s->delay_per_h, r.items[0].price_per_h);
	assert_int_equal(s->value, llround((double)s->delay_per_h *
					   s->recoveries * saved_h));
	assert_int_equal(s->keep, 0);
	assert_false(s->fixed);
	assert_non_null(strstr(s->why, "does not pay"));
	assert_true(isinf(s->slack_h));
	json_t *j = plan_to_json(&r, &js), *sj = json_object_get(j, "spare");
	assert_int_equal(json_integer_value(json_object_get(sj, "keep")), 0);
	assert_int_equal(json_integer_value(json_object_get(sj, "cost_micros")),
			 s->cost);
	assert_true(json_is_null(json_object_get(sj, "slack_h")));
	json_decref(j);
	plan_result_free(&r);

	/* an hour of delay worth $100k: it pays */
	js.delay_cost_per_h = USD(100000);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_true(s->value > s->cost);
	assert_int_equal(s->keep, 1);
	assert_non_null(strstr(s->why, "it pays"));
	plan_result_free(&r);

	/* no delay cost, but a deadline without room for the downtime */
	job(&js, JOBSPEC_CRIT_STANDARD, 24, 24.5);
	js.delay_cost_per_h = 0;
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_true(s->priced && s->value == 0);
	assert_true(s->slack_h < s->recoveries * s->saved_s / 3600);
	assert_int_equal(s->keep, 1);
	assert_non_null(strstr(s->why, "deadline needs it"));
	plan_result_free(&r);

	/* spotrun.spares sets the count */
	job(&js, JOBSPEC_CRIT_BEST_EFFORT, 24, 0);
	js.spares = 2;
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_true(s->fixed && s->keep == 2 && s->priced);
	plan_result_free(&r);

	/* on-demand has nothing to recover from */
	job(&js, JOBSPEC_CRIT_CRITICAL, 24, 0);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_false(s->priced);
	assert_int_equal(s->keep, 0);
	assert_non_null(strstr(s->why, "no preemption"));
	plan_result_free(&r);
}

static void test_errors(void **state)
{
	struct catalog *c = *state;
	struct jobspec js;
	struct plan_result r;
	struct sr_err e = { 0 };

	job(&js, JOBSPEC_CRIT_STANDARD, 0, 10);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "spotrun.work"));
	job(&js, JOBSPEC_CRIT_STANDARD, 5, 10);
	js.accel[0] = '\0';
	assert_int_equal(plan_make(c, &js, 0, &r, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "resources.accelerators"));
	job(&js, JOBSPEC_CRIT_STANDARD, 5, 0);
	js.deadline_kind = JOBSPEC_DEADLINE_ABSOLUTE;
	js.deadline_ns = 1000;
	assert_int_equal(plan_make(c, &js, 2000, &r, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "already passed"));
}

/* Spot checkpoint interval: Daly's optimum for the gang's MTBF. */
static void test_interval(void **state)
{
	struct catalog *c = *state;
	struct jobspec js;
	struct plan_result r;
	struct sr_err e = { 0 };

	job(&js, JOBSPEC_CRIT_BEST_EFFORT, 10, 0);
	js.num_nodes = 2;
	js.ckpt_stall_ns = 60 * INT64_C(1000000000);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	for (size_t i = 0; i < r.n; i++) {
		double lam = r.items[i].o.hazard_per_h * 2;
		double want = cost_daly_interval_h(1.0 / 60, 1 / lam);

		assert_true(fabs(r.items[i].ckpt_interval_h - want) < 1e-12);
	}
	/* the control plane re-derives the same inputs */
	struct cost_params cp;
	struct cost_estimate est;
	assert_int_equal(plan_cost_params(&js, &r.items[0].o, r.items[0].mode, &cp), 0);
	assert_true(cp.ckpt_interval_h == r.items[0].ckpt_interval_h);
	assert_true(fabs(cp.resume_h - r.resume_h) < 1e-15);
	assert_int_equal(cost_estimate(&cp, &est), 0);
	assert_int_equal(est.netc, r.items[0].est.netc);
	assert_int_equal(cp.price_per_h, r.items[0].price_per_h);
	struct catalog_offering no_res = r.items[0].o;
	no_res.reserved_per_h = -1;
	assert_int_equal(plan_cost_params(&js, &no_res, PLAN_RESERVED, &cp), -EINVAL);
	plan_result_free(&r);
	js.ckpt_interval_ns = 1800 * INT64_C(1000000000);
	assert_int_equal(plan_make(c, &js, 0, &r, &e), 0);
	assert_true(fabs(r.items[0].ckpt_interval_h - 0.5) < 1e-12);
	plan_result_free(&r);
}

static void test_shipped_data(void **state)
{
	struct catalog c;
	struct jobspec js;
	struct plan_result r;
	struct sr_err e = { 0 };

	(void)state;
	catalog_init(&c);
	assert_int_equal(catalog_load_dir(&c, "data", &e), 0);
	assert_int_equal(jobspec_parse_file("examples/jobs/h100x8.yaml", &js, &e), 0);
	assert_int_equal(plan_make(&c, &js, 0, &r, &e), 0);
	assert_true(r.n_feasible > 0);
	assert_int_equal(r.items[0].mode, PLAN_SPOT_FALLBACK);
	for (size_t i = 0; i < r.n; i++) {
		assert_true(r.items[i].price_per_h <= js.max_hourly_cost);
		assert_true(!strcmp(r.items[i].o.cloud, "aws") ||
			    !strcmp(r.items[i].o.cloud, "gcp"));
	}
	plan_result_free(&r);
	jobspec_free(&js);
	assert_int_equal(jobspec_parse_file("examples/jobs/critical.yaml", &js, &e), 0);
	assert_int_equal(plan_make(&c, &js, 0, &r, &e), 0);
	assert_true(r.n > 0);
	for (size_t i = 0; i < r.n; i++) {
		assert_true(r.items[i].mode == PLAN_RESERVED ||
			    r.items[i].mode == PLAN_ONDEMAND);
		assert_int_equal(r.items[i].o.net, CATALOG_NET_INFINIBAND);
	}
	plan_result_free(&r);
	jobspec_free(&js);
	catalog_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_governance),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_feasibility_and_ranking),
		cmocka_unit_test(test_spare),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_interval),
		cmocka_unit_test(test_shipped_data),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
