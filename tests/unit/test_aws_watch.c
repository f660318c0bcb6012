/* Unit tests: lib/aws/ec2_watch.c - a region's EC2 calls off the caller's
 * thread, against the EC2 emulator: list() answers from the periodic
 * listing (the emulator counts one DescribeInstances per period, however
 * often list() is called), shows a launch EC2 does not list yet (eventual
 * consistency), shows a queued termination as stopping and sends it,
 * and sends it again while EC2 still lists the instance running (a
 * NotFound answered before EC2 listed it);
 * fenced calls are not sent once the lease is gone (RunInstances and
 * TerminateInstances); a throttled listing keeps the last one serving
 * and costs one request (no HTTP retries under the watch's backoff);
 * the spot price history of several types comes in one paginated call.
 * Waits are bounded loops on what the emulator answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aws/ec2.h"
#include "aws/ec2emu.h"
#include "common/fsutil.h"
#include "common/timeutil.h"
#include "ec2emu_fixture.h"

#define TYPE "g5.xlarge"
#define PERIOD_NS (200 * 1000000LL)

struct fx {
	char dir[64];
	struct ec2emu *emu;
	struct ec2 *c;
	struct ec2_watch *w;
	char zone[40];
	atomic_bool lease_held;
};

/* How long a test waits for something the watcher's thread does: only a
 * bound on a hung test (a loaded machine under TSan takes its time), not
 * a speed asserted. */
#define WAIT_NS (INT64_C(120) * 1000000000)

static bool waited_out(int64_t t0)
{
	return sr_time_mono_ns() - t0 > WAIT_NS;
}
static bool fence(void *ud, int64_t epoch)
{
	struct fx *f = ud;

	return epoch == 7 && atomic_load(&f->lease_held);
}

static int start_retries(void **state, struct ec2emu_opts *eo, bool prices,
			 int max_retries)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct ec2_opts o = { .image_id = "ami-emulated",
			      .max_retries = max_retries };
	struct sr_err e = { 0 };
	struct cloud_error err = { 0 };
	const char *types[] = { "g5.xlarge", "p3.2xlarge" };
	struct ec2_watch_opts wo = { .cluster = "wc", .period_ns = PERIOD_NS };
	char **zones = NULL;
	size_t nz = 0;

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/sr-watch-XXXXXX");
	eo->data_dir = "data";
	eo->region = "us-east-1";
	if (emu_fixture_start(f->dir, eo, NULL, 0, &f->emu) < 0 ||
	    ec2_open(&o, &f->c, &e) < 0)
		return -1;
	atomic_store(&f->lease_held, true);
	ec2_set_fence(f->c, fence, f);
	for (int64_t t0 = sr_time_mono_ns(); nz == 0 && !waited_out(t0);) {
		if (ec2_instance_type_zones(f->c, TYPE, &zones, &nz, &err) < 0)
			usleep(100000);
	}
	if (nz == 0)
		return -1;
	snprintf(f->zone, sizeof(f->zone), "%s", zones[0]);
	ec2_strv_free(zones, nz);
	if (prices) {
		wo.types = types;
		wo.ntypes = 2;
		wo.history_s = 6 * 3600;
	}
	if (ec2_watch_start(f->c, &wo, &f->w, &e) < 0)
		return -1;
	*state = f;
	return 0;
}

static int start(void **state, struct ec2emu_opts *eo, bool prices)
{
	return start_retries(state, eo, prices, 0);
}

static int teardown(void **state)
{
	struct fx *f = *state;

	ec2_watch_stop(f->w);
	ec2_close(f->c);
	ec2emu_stop(f->emu);
	sr_fs_rm_tree(f->dir);
	free(f);
	return 0;
}

/* list() until pred(v, n, arg) holds (bounded); returns whether it did. */
static bool wait_list(struct fx *f, bool (*pred)(struct cloud_instance *,
						 size_t, const char *),
		      const char *arg)
{
	for (int64_t t0 = sr_time_mono_ns(); !waited_out(t0);) {
		struct cloud_instance *v = NULL;
		struct cloud_error err = { 0 };
		size_t n = 0;
		bool ok = false;

		if (ec2_watch_list(f->w, &v, &n, &err) == 0)
			ok = pred(v, n, arg);
		cloud_instances_free(v, n);
		if (ok)
			return true;
		usleep(20000);
	}
	return false;
}

static bool any(struct cloud_instance *v, size_t n, const char *arg)
{
	(void)v;
	(void)n;
	(void)arg;
	return true;
}

static bool has_state(struct cloud_instance *v, size_t n, const char *arg)
{
	/* arg: "<id>:<state digit>" */
	const char *colon = strrchr(arg, ':');

	for (size_t i = 0; i < n; i++)
		if (strncmp(v[i].id, arg, (size_t)(colon - arg)) == 0 &&
		    (int)v[i].state == colon[1] - '0')
			return true;
	return false;
}

static int launch(struct fx *f, const char *token, int64_t epoch,
		  struct cloud_instance *out, struct cloud_error *err)
{
	struct ec2_run r = {
		.client_token = token, .instance_type = TYPE, .zone = f->zone,
		.spot = false, .epoch = epoch,
		.tags = { .cluster = "wc", .job_id = 1, .node_id = 1, .attempt = 1 },
		.user_data = "#!/bin/sh\nexec sleep 1000\n",
	};

	return ec2_run_instances(f->c, &r, out, err);
}

static int setup_consistency(void **state)
{
	struct ec2emu_opts eo = { .time_scale = 1, .consistency_s = 3600 };

	return start(state, &eo, false);
}

static void test_listing_from_cache(void **state)
{
	struct fx *f = *state;
	struct ec2emu_stats st0, st1;
	struct ec2_watch_stats ws;
	struct cloud_instance in = { 0 }, *v = NULL;
	struct cloud_error err = { 0 };
	char want[96];
	size_t n = 0;

	assert_true(wait_list(f, any, NULL));
	/* a thousand list() calls cost EC2 nothing more than the period's */
	ec2emu_stats(f->emu, &st0);
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(ec2_watch_list(f->w, &v, &n, &err), 0);
		cloud_instances_free(v, n);
	}
	ec2emu_stats(f->emu, &st1);
	assert_true(st1.action[EC2EMU_A_DESCRIBE].calls -
		    st0.action[EC2EMU_A_DESCRIBE].calls <= 5);

	/* a launch EC2 does not list yet is listed from the answer */
	assert_int_equal(launch(f, "w-1", 7, &in, &err), 0);
	ec2_watch_launched(f->w, &in);
	snprintf(want, sizeof(want), "%s:%d", in.id, CLOUD_INST_PENDING);
	assert_true(wait_list(f, has_state, want));
	/* and stays listed across the periodic listings that miss it */
	usleep(3 * PERIOD_NS / 1000);
	assert_true(wait_list(f, has_state, want));
	ec2_watch_stats(f->w, &ws);
	assert_true(ws.describe_calls >= 2);
	cloud_instance_clear(&in);
}

/* EC2 answers a termination of an instance it does not list yet
 * (eventual consistency) with InvalidInstanceID.NotFound, which the
 * client takes for "already gone"; the instance runs on once EC2 lists
 * it.  The watch terminates it again until a listing shows it going -
 * it used to show it stopping for ever, so the daemon's leak sweep
 * never saw it (the ASan soak's leaked instance, session 23). */
static void test_terminate_before_ec2_lists_it(void **state)
{
	struct fx *f = *state;
	struct cloud_instance in = { 0 };
	struct cloud_error err = { 0 };
	struct ec2emu_stats st;
	struct ec2_watch_stats ws = { 0 };
	const char *ids[1];
	char want[96];
	uint64_t d0;

	assert_true(wait_list(f, any, NULL));
	assert_int_equal(launch(f, "nf-1", 7, &in, &err), 0);
	ec2_watch_launched(f->w, &in);
	ids[0] = in.id;
	assert_int_equal(ec2_watch_terminate(f->w, ids, 1, 7, &err), 0);
	for (int64_t t0 = sr_time_mono_ns(); !waited_out(t0);) {
		ec2_watch_stats(f->w, &ws);
		if (ws.terminate_calls >= 1)
			break;
		usleep(10000);
	}
	ec2emu_stats(f->emu, &st);
	assert_true(st.action[EC2EMU_A_TERMINATE].not_found >= 1);
	/* a listing that still misses it, taken after the answer: the
	 * termination must outlive it (it was dropped as done, and the
	 * instance ran on: a failure of the TSan pass in session 26) */
	ec2_watch_stats(f->w, &ws);
	d0 = ws.describe_calls;
	for (int64_t t0 = sr_time_mono_ns(); ws.describe_calls < d0 + 2 &&
	     !waited_out(t0); usleep(10000))
		ec2_watch_stats(f->w, &ws);
	assert_true(ws.describe_calls >= d0 + 2);
	/* EC2 lists it now: running, whatever the first answer said */
	assert_int_equal(ec2emu_reveal(f->emu, in.id), 0);
	snprintf(want, sizeof(want), "%s:%d", in.id, CLOUD_INST_GONE);
	assert_true(wait_list(f, has_state, want));
	ec2_watch_stats(f->w, &ws);
	assert_true(ws.terminate_resent >= 1);
	assert_int_equal(ws.queued_terminations, 0);
	ec2emu_stats(f->emu, &st);
	assert_true(st.action[EC2EMU_A_TERMINATE].calls >= 2);
	cloud_instance_clear(&in);
}

static int setup_plain(void **state)
{
	struct ec2emu_opts eo = { .time_scale = 1 };

	return start(state, &eo, true);
}

static void test_terminate_and_fence(void **state)
{
	struct fx *f = *state;
	struct cloud_instance a = { 0 }, b = { 0 };
	struct cloud_error err = { 0 };
	struct ec2emu_stats st;
	struct ec2_watch_stats ws;
	const char *ids[1];
	char want[96];

	assert_int_equal(launch(f, "t-1", 7, &a, &err), 0);
	assert_int_equal(launch(f, "t-2", 7, &b, &err), 0);
	snprintf(want, sizeof(want), "%s:%d", a.id, CLOUD_INST_RUNNING);
	assert_true(wait_list(f, has_state, want));
	/* queued: shown stopping at once, then gone as EC2 lists it */
	ids[0] = a.id;
	assert_int_equal(ec2_watch_terminate(f->w, ids, 1, 7, &err), 0);
	snprintf(want, sizeof(want), "%s:%d", a.id, CLOUD_INST_STOPPING);
	assert_true(wait_list(f, has_state, want));
	snprintf(want, sizeof(want), "%s:%d", a.id, CLOUD_INST_GONE);
	assert_true(wait_list(f, has_state, want));

	/* the lease is lost: nothing more is sent */
	atomic_store(&f->lease_held, false);
	ec2emu_stats(f->emu, &st);
	ids[0] = b.id;
	assert_int_equal(ec2_watch_terminate(f->w, ids, 1, 7, &err), 0);
	for (int64_t t0 = sr_time_mono_ns(); !waited_out(t0);) {
		ec2_watch_stats(f->w, &ws);
		if (ws.fenced == 1)
			break;
		usleep(10000);
	}
	assert_int_equal(ws.fenced, 1);
	{
		struct ec2emu_stats st2;
		struct cloud_instance c = { 0 };

		ec2emu_stats(f->emu, &st2);
		assert_int_equal(st2.action[EC2EMU_A_TERMINATE].calls,
				 st.action[EC2EMU_A_TERMINATE].calls);
		/* a launch decided under the lost epoch is not sent either */
		assert_true(launch(f, "t-3", 7, &c, &err) < 0);
		assert_int_equal(err.cls, CLOUD_EFENCED);
		ec2emu_stats(f->emu, &st2);
		assert_int_equal(st2.action[EC2EMU_A_RUN].calls,
				 st.action[EC2EMU_A_RUN].calls);
	}
	/* b still runs: EC2 was never asked */
	snprintf(want, sizeof(want), "%s:%d", b.id, CLOUD_INST_RUNNING);
	assert_true(wait_list(f, has_state, want));
	atomic_store(&f->lease_held, true);
	cloud_instance_clear(&a);
	cloud_instance_clear(&b);
}

static void test_prices(void **state)
{
	struct fx *f = *state;
	struct ec2_watch_stats ws;
	struct ec2emu_stats st;
	sr_micros now = 0;
	int64_t at = 0;
	double h[12];
	int known = 0;

	for (int64_t t0 = sr_time_mono_ns(); !waited_out(t0);) {
		if (ec2_watch_price_now(f->w, f->zone, TYPE, &now, &at) == 0)
			break;
		usleep(20000);
	}
	assert_true(now > 0);
	/* the history: hourly points of the last 6 hours */
	known = ec2_watch_price_history(f->w, f->zone, TYPE, time(NULL), 1800,
					12, h);
	assert_true(known >= 10);
	for (int i = 12 - known; i < 12; i++)
		assert_true(h[i] > 0);
	assert_int_equal(ec2_watch_price_history(f->w, "nowhere-1a", TYPE,
						 time(NULL), 60, 12, h), 0);
	assert_true(h[0] < 0);
	/* both types in one call, not one call per type */
	ec2_watch_stats(f->w, &ws);
	ec2emu_stats(f->emu, &st);
	assert_int_equal(ws.price_calls, 1);
	assert_int_equal(st.action[EC2EMU_A_SPOT_PRICES].calls, 1);
}

static int setup_throttle(void **state)
{
	/* reads: 1 token, one more every 10 s; the listing outruns it.  The
	 * client's HTTP retries are on (2, the default): the watch's calls
	 * must not use them */
	struct ec2emu_opts eo = { .time_scale = 1, .throttle = true,
				  .throttle_scale = 0.01 };

	return start_retries(state, &eo, false, 2);
}

static void test_throttled_listing_serves_last(void **state)
{
	struct fx *f = *state;
	struct ec2_watch_stats ws, ws2;
	struct ec2emu_stats st;
	uint64_t sent;

	assert_true(wait_list(f, any, NULL));
	for (int64_t t0 = sr_time_mono_ns(); !waited_out(t0);) {
		ec2_watch_stats(f->w, &ws);
		if (ws.describe_failed > 0)
			break;
		usleep(20000);
	}
	assert_true(ws.describe_failed > 0);
	/* a throttled listing cost EC2 one DescribeInstances: the watch's
	 * backoff asks again, not a round of HTTP retries that each take a
	 * token of the read bucket (the ASan soak saw 33 a minute, 28 of
	 * them throttled, against a budget of 30): one request per listing
	 * done, and one under way at most */
	ec2emu_stats(f->emu, &st);
	ec2_watch_stats(f->w, &ws2);
	sent = st.action[EC2EMU_A_DESCRIBE].calls;
	assert_true(st.action[EC2EMU_A_DESCRIBE].throttled > 0);
	assert_true(sent >= ws.describe_calls);
	assert_true(sent <= ws2.describe_calls + 1);
	/* the last listing still answers */
	assert_true(wait_list(f, any, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_listing_from_cache,
						setup_consistency, teardown),
		cmocka_unit_test_setup_teardown(test_terminate_before_ec2_lists_it,
						setup_consistency, teardown),
		cmocka_unit_test_setup_teardown(test_terminate_and_fence,
						setup_plain, teardown),
		cmocka_unit_test_setup_teardown(test_prices, setup_plain, teardown),
		cmocka_unit_test_setup_teardown(test_throttled_listing_serves_last,
						setup_throttle, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
