/* Unit tests: the EC2 emulator behaving like EC2 where it hurts
 * (lib/aws/ec2emu_limits.c), seen through the EC2 client (lib/aws) as a
 * driver sees it: request throttling per action class (RequestLimitExceeded,
 * the throttle class, buckets that refill), eventual consistency (a new
 * instance not listed, InvalidInstanceID.NotFound by id and on terminate,
 * listed once visible), capacity failures by draw, instance quotas, and
 * the counters and request log.  No wall-clock assertion: waits are
 * bounded loops on what the emulator answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aws/ec2.h"
#include "aws/ec2emu.h"
#include "common/fsutil.h"
#include "ec2emu_fixture.h"

#define TYPE "g5.xlarge"

struct fx {
	char dir[64], log[128];
	struct ec2emu *emu;
	struct ec2 *c;
	char zone[40];
};

static int start(void **state, const struct ec2emu_opts *tmpl)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct ec2emu_opts eo = *tmpl;
	struct ec2_opts o = { .image_id = "ami-emulated", .max_retries = 0 };
	struct sr_err e = { 0 };
	struct cloud_error err = { 0 };
	char **zones = NULL;
	size_t nz = 0;

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/sr-emulim-XXXXXX");
	eo.data_dir = "data";
	eo.region = "us-east-1";
	if (emu_fixture_start(f->dir, &eo, f->log, sizeof(f->log), &f->emu) < 0)
		return -1;
	if (ec2_open(&o, &f->c, &e) < 0)
		return -1;
	/* the offerings call may meet the throttle too: wait for it */
	for (int i = 0; i < 600; i++) {
		if (ec2_instance_type_zones(f->c, TYPE, &zones, &nz, &err) == 0)
			break;
		usleep(100000);
	}
	if (nz == 0)
		return -1;
	snprintf(f->zone, sizeof(f->zone), "%s", zones[0]);
	ec2_strv_free(zones, nz);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	ec2_close(f->c);
	ec2emu_stop(f->emu);
	sr_fs_rm_tree(f->dir);
	free(f);
	return 0;
}

static int run(struct fx *f, const char *token, bool spot,
	       struct cloud_instance *out, struct cloud_error *err)
{
	struct ec2_run r = {
		.client_token = token, .instance_type = TYPE, .zone = f->zone,
		.spot = spot,
		.tags = { .cluster = "lim", .job_id = 1, .node_id = 1, .attempt = 1 },
		.user_data = "#!/bin/sh\nexec sleep 1000\n",
	};

	return ec2_run_instances(f->c, &r, out, err);
}

static int setup_throttle(void **state)
{
	/* buckets at 1/20 of AWS's: reads hold 5 tokens and get 1 a second */
	struct ec2emu_opts o = { .time_scale = 1, .throttle = true,
				 .throttle_scale = 0.05 };

	return start(state, &o);
}

static void test_throttle(void **state)
{
	struct fx *f = *state;
	struct ec2emu_stats st;
	struct cloud_error err = { 0 };
	struct cloud_instance *v = NULL;
	size_t n = 0;
	int ok = 0, throttled = 0, rc = 0;

	/* far more reads than the bucket holds, at once */
	for (int i = 0; i < 40; i++) {
		rc = ec2_describe_instances(f->c, "lim", NULL, &v, &n, &err);
		cloud_instances_free(v, n);
		v = NULL;
		if (rc == 0) {
			ok++;
			continue;
		}
		assert_int_equal(err.cls, CLOUD_ETHROTTLE);
		assert_string_equal(err.code, "RequestLimitExceeded");
		assert_true(cloud_err_retryable(err.cls));
		throttled++;
	}
	assert_true(throttled > 0);
	assert_true(ok >= 1);
	ec2emu_stats(f->emu, &st);
	assert_int_equal(st.action[EC2EMU_A_DESCRIBE].throttled, (uint64_t)throttled);
	assert_true(st.action[EC2EMU_A_DESCRIBE].calls >= 40);
	/* the bucket refills: a read goes through again */
	for (int i = 0; i < 300; i++) {
		rc = ec2_describe_instances(f->c, "lim", NULL, &v, &n, &err);
		cloud_instances_free(v, n);
		v = NULL;
		if (rc == 0)
			break;
		usleep(100000);
	}
	assert_int_equal(rc, 0);
	/* mutating calls have their own bucket (2.5 tokens here) */
	{
		struct cloud_instance in = { 0 };
		int runs_throttled = 0;
		char tok[32];

		for (int i = 0; i < 8; i++) {
			snprintf(tok, sizeof(tok), "lim-%d", i);
			rc = run(f, tok, false, &in, &err);
			cloud_instance_clear(&in);
			if (rc < 0 && err.cls == CLOUD_ETHROTTLE)
				runs_throttled++;
		}
		assert_true(runs_throttled > 0);
		ec2emu_stats(f->emu, &st);
		assert_int_equal(st.action[EC2EMU_A_RUN].throttled,
				 (uint64_t)runs_throttled);
	}
}

static int setup_consistency(void **state)
{
	/* a new instance stays invisible for up to an hour: in this test,
	 * for good */
	struct ec2emu_opts o = { .time_scale = 1, .consistency_s = 3600,
				 .seed = 7 };

	return start(state, &o);
}

static void test_consistency(void **state)
{
	struct fx *f = *state;
	struct cloud_instance in = { 0 }, *v = NULL;
	struct cloud_error err = { 0 };
	struct ec2emu_stats st;
	const char *ids[2] = { NULL, NULL };
	size_t n = 0;

	assert_int_equal(run(f, "cons-1", true, &in, &err), 0);
	ids[0] = in.id;
	/* not listed by the cluster tag yet */
	assert_int_equal(ec2_describe_instances(f->c, "lim", NULL, &v, &n, &err), 0);
	assert_int_equal(n, 0);
	cloud_instances_free(v, n);
	/* named by id: not found, as EC2 answers right after a launch */
	assert_true(ec2_describe_instances(f->c, "lim", ids, &v, &n, &err) < 0);
	assert_string_equal(err.code, "InvalidInstanceID.NotFound");
	/* the same token again: the same instance, never a second one */
	{
		struct cloud_instance again = { 0 };

		assert_int_equal(run(f, "cons-1", true, &again, &err), 0);
		assert_string_equal(again.id, in.id);
		cloud_instance_clear(&again);
	}
	/* the same token with other parameters: refused, as EC2 does */
	{
		struct cloud_instance other = { 0 };
		struct ec2_run r = {
			.client_token = "cons-1", .instance_type = TYPE,
			.zone = f->zone, .spot = true,
			.tags = { .cluster = "lim", .job_id = 1, .node_id = 1,
				  .attempt = 1 },
			.user_data = "#!/bin/sh\nexec sleep 999\n",
		};

		assert_true(ec2_run_instances(f->c, &r, &other, &err) < 0);
		assert_int_equal(err.cls, CLOUD_ECONFLICT);
		assert_string_equal(err.code, "IdempotentParameterMismatch");
	}
	ec2emu_stats(f->emu, &st);
	assert_int_equal(st.action[EC2EMU_A_DESCRIBE].not_found, 1);
	assert_int_equal(st.action[EC2EMU_A_RUN].calls, 3);
	assert_int_equal(st.action[EC2EMU_A_RUN].mismatch, 1);
	cloud_instance_clear(&in);
}

static int setup_quick_consistency(void **state)
{
	struct ec2emu_opts o = { .time_scale = 1, .consistency_s = 0.5,
				 .seed = 3 };

	return start(state, &o);
}

static void test_becomes_visible(void **state)
{
	struct fx *f = *state;
	struct cloud_instance in = { 0 }, *v = NULL;
	struct cloud_error err = { 0 };
	size_t n = 0;
	bool seen = false;

	assert_int_equal(run(f, "vis-1", true, &in, &err), 0);
	for (int i = 0; i < 300 && !seen; i++) {
		assert_int_equal(ec2_describe_instances(f->c, "lim", NULL, &v, &n,
							&err), 0);
		seen = n == 1 && strcmp(v[0].id, in.id) == 0;
		cloud_instances_free(v, n);
		if (!seen)
			usleep(20000);
	}
	assert_true(seen);
	{
		const char *ids[2] = { in.id, NULL };

		assert_int_equal(ec2_terminate_instances(f->c, ids, 1, &err), 0);
	}
	cloud_instance_clear(&in);
}

static int setup_capacity_quota(void **state)
{
	struct ec2emu_opts o = { .time_scale = 1, .spot_quota = 1,
				 .ondemand_quota = 1, .seed = 11 };

	return start(state, &o);
}

static void test_quota(void **state)
{
	struct fx *f = *state;
	struct cloud_instance in = { 0 };
	struct cloud_error err = { 0 };
	struct ec2emu_stats st;
	char *log = NULL;
	size_t lines = 0;
	uint64_t calls = 0;

	assert_int_equal(run(f, "q-1", false, &in, &err), 0);
	cloud_instance_clear(&in);
	assert_true(run(f, "q-2", false, &in, &err) < 0);
	assert_int_equal(err.cls, CLOUD_EQUOTA);
	assert_string_equal(err.code, "InstanceLimitExceeded");
	/* spot has its own quota */
	assert_int_equal(run(f, "q-3", true, &in, &err), 0);
	cloud_instance_clear(&in);
	assert_true(run(f, "q-4", true, &in, &err) < 0);
	assert_int_equal(err.cls, CLOUD_EQUOTA);
	assert_string_equal(err.code, "MaxSpotInstanceCountExceeded");
	ec2emu_stats(f->emu, &st);
	assert_int_equal(st.action[EC2EMU_A_RUN].quota, 2);
	/* the request log holds one line per call */
	for (int a = 0; a < EC2EMU_NACTIONS; a++)
		calls += st.action[a].calls;
	assert_int_equal(sr_fs_read_file(f->log, 1 << 20, &log, NULL, NULL), 0);
	for (char *p = log; *p != '\0'; p++)
		lines += *p == '\n';
	assert_int_equal(lines, calls);
	assert_non_null(strstr(log, " RunInstances 400 InstanceLimitExceeded "
			       "ImageId="));
	assert_non_null(strstr(log, " RunInstances 200 - ImageId="));
	free(log);
}

static int setup_capacity(void **state)
{
	struct ec2emu_opts o = { .time_scale = 1, .capacity_fail = 1, .seed = 5 };

	return start(state, &o);
}

static void test_capacity(void **state)
{
	struct fx *f = *state;
	struct cloud_instance in = { 0 };
	struct cloud_error err = { 0 };
	struct ec2emu_stats st;

	assert_true(run(f, "c-1", false, &in, &err) < 0);
	assert_int_equal(err.cls, CLOUD_ECAPACITY);
	assert_string_equal(err.code, "InsufficientInstanceCapacity");
	ec2emu_stats(f->emu, &st);
	assert_int_equal(st.action[EC2EMU_A_RUN].capacity, 1);
	assert_string_equal(ec2emu_action_name(EC2EMU_A_SPOT_PRICES),
			    "DescribeSpotPriceHistory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_throttle, setup_throttle, teardown),
		cmocka_unit_test_setup_teardown(test_consistency, setup_consistency,
						teardown),
		cmocka_unit_test_setup_teardown(test_becomes_visible,
						setup_quick_consistency, teardown),
		cmocka_unit_test_setup_teardown(test_quota, setup_capacity_quota,
						teardown),
		cmocka_unit_test_setup_teardown(test_capacity, setup_capacity,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
