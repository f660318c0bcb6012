/* Unit tests: the AWS compute driver (lib/aws) against the EC2 emulator of
 * the local spot cloud (lib/aws/ec2emu.c, replaying data/): a capacity
 * error in one zone, a spot launch in another, the instance's own process
 * reading its IMDSv2, a spot notice, termination by the cloud, a
 * replacement, idempotent relaunch (no double launch), termination by us,
 * the tag sweep, and the emulator's own error answers.  Waits are bounded
 * loops on observable state, never a wall-clock assertion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aws/ec2.h"
#include "aws/ec2emu.h"
#include "aws/ec2emu_int.h"
#include "common/fsutil.h"
#include "common/testsrv.h"
#include "common/timeutil.h"
#include "ec2emu_fixture.h"

#define TYPE "g5.xlarge"

/* The instance's "machine": records that it booted, then polls its IMDSv2
 * for the spot notice as the agent does, and keeps running. */
static const char node_script[] =
	"#!/bin/sh\n"
	"r=\"$SPOTRUN_NODE_ROOT\"\n"
	"echo up > \"$r/started\"\n"
	"while :; do\n"
	"  t=$(curl -s -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60'"
	" \"$SPOTRUN_IMDS_URL/latest/api/token\")\n"
	"  if curl -sf -H \"X-aws-ec2-metadata-token: $t\""
	" \"$SPOTRUN_IMDS_URL/latest/meta-data/spot/instance-action\""
	" > \"$r/notice.tmp\"; then mv \"$r/notice.tmp\" \"$r/notice\"; fi\n"
	"  sleep 0.05\n"
	"done\n";

struct fx {
	char dir[64];
	struct ec2emu *emu;
	struct cloud_driver d;
	char **zones;
	size_t nz;
};

static int setup_with(void **state, double scale, double notice_s)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct ec2emu_opts eo = { .data_dir = "data", .region = "us-east-1",
				  .time_scale = scale, .notice_s = notice_s };
	struct ec2_opts o = { .image_id = "ami-emulated", .max_retries = 0 };
	struct cloud_error err;
	struct sr_err e = { 0 };
	struct ec2 *c = NULL;

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/sr-ec2emu-XXXXXX");
	if (emu_fixture_start(f->dir, &eo, NULL, 0, &f->emu) < 0)
		return -1;
	if (ec2_open(&o, &c, &e) < 0 || ec2_instance_type_zones(c, TYPE, &f->zones,
								&f->nz, &err) < 0 ||
	    ec2_driver_new(c, &f->d, &e) < 0) {
		fprintf(stderr, "driver: %s %s\n", e.msg, err.msg);
		return -1;
	}
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, 1, 1);
}

/* An accelerated cloud (1 real s = 1 cloud hour) whose notice lasts 30
 * real seconds. */
static int setup_fast(void **state)
{
	return setup_with(state, 3600, 30 * 3600);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	f->d.ops->destroy(f->d.st);
	ec2emu_stop(f->emu);
	ec2_strv_free(f->zones, f->nz);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->dir);
	free(f);
	return 0;
}

/* Provision and wait for the request's outcome. */
static int launch(struct fx *f, const char *zone, int node, int attempt,
		  struct cloud_instance *out, struct cloud_error *err)
{
	char key[CLOUD_IDEM_MAX];
	struct cloud_launch l = {
		.zone = zone, .instance_type = TYPE, .spot = true,
		.tags = { .cluster = "emu-cluster", .job_id = 3, .node_id = node,
			  .attempt = attempt },
		.bootstrap = node_script,
	};
	struct cloud_req *req = NULL;
	int rc;

	cloud_idem_key(&l.tags, key);
	l.idem_key = key;
	rc = f->d.ops->provision(f->d.st, &l, &req, err);
	if (rc < 0)
		return rc;
	while ((rc = f->d.ops->poll(f->d.st, req, out, err)) == -EAGAIN)
		usleep(5000);
	f->d.ops->req_free(f->d.st, req);
	return rc;
}

/* The listed instance `id` (copied), waiting up to ~20 s for `want`. */
static bool wait_state(struct fx *f, const char *id, enum cloud_inst_state want,
		       struct cloud_instance *seen)
{
	for (int i = 0; i < 2000; i++) {
		struct cloud_instance *v = NULL;
		struct cloud_error err;
		size_t n = 0;
		bool hit = false;

		if (f->d.ops->list(f->d.st, "emu-cluster", &v, &n, &err) == 0) {
			for (size_t k = 0; k < n; k++) {
				if (strcmp(v[k].id, id) == 0 && v[k].state == want) {
					*seen = v[k];
					seen->blob = NULL;
					hit = true;
				}
			}
			cloud_instances_free(v, n);
		}
		if (hit)
			return true;
		usleep(10000);
	}
	return false;
}

static bool wait_file(const char *path, char *buf, size_t len)
{
	for (int i = 0; i < 2000; i++) {
		FILE *fp = fopen(path, "r");

		if (fp != NULL) {
			size_t n = fread(buf, 1, len - 1, fp);

			fclose(fp);
			buf[n] = '\0';
			if (n > 0)
				return true;
		}
		usleep(10000);
	}
	return false;
}

static void test_spot_lifecycle(void **state)
{
	struct fx *f = *state;
	struct cloud_instance a, b, again, seen;
	struct cloud_error err = { 0 };
	struct cloud_instance *v = NULL;
	char path[256], buf[256];
	const char *ids[1];
	size_t n = 0;

	assert_true(f->nz >= 3);
	assert_int_equal(ec2emu_set_capacity(f->emu, f->zones[0], TYPE, EC2EMU_NONE), 0);
	assert_int_equal(ec2emu_set_capacity(f->emu, f->zones[1], TYPE, EC2EMU_PLENTY), 0);
	assert_int_equal(ec2emu_set_capacity(f->emu, f->zones[2], TYPE, EC2EMU_PLENTY), 0);

	/* no spot capacity in zone 0: the capacity class, nothing started */
	assert_int_equal(launch(f, f->zones[0], 1, 1, &a, &err), -ENOSPC);
	assert_int_equal(err.cls, CLOUD_ECAPACITY);
	assert_string_equal(err.code, "InsufficientInstanceCapacity");

	/* zone 1 has it */
	assert_int_equal(launch(f, f->zones[1], 1, 2, &a, &err), 0);
	assert_string_equal(a.zone, f->zones[1]);
	assert_true(a.spot);
	assert_int_equal(a.node_id, 1);
	assert_int_equal(a.attempt, 2);
	snprintf(path, sizeof(path), "%s/%s/root/started", f->dir, a.id);
	assert_true(wait_file(path, buf, sizeof(buf)));
	assert_true(wait_state(f, a.id, CLOUD_INST_RUNNING, &seen));

	/* the same idempotency key again: the same instance, no second one */
	assert_int_equal(launch(f, f->zones[1], 1, 2, &again, &err), 0);
	assert_string_equal(again.id, a.id);
	cloud_instance_clear(&again);

	/* the cloud takes it back: notice through the instance's IMDSv2 ... */
	assert_int_equal(ec2emu_preempt(f->emu, a.id), 0);
	snprintf(path, sizeof(path), "%s/%s/root/notice", f->dir, a.id);
	assert_true(wait_file(path, buf, sizeof(buf)));
	assert_non_null(strstr(buf, "\"action\":\"terminate\""));
	/* ... then termination, with the spot reason */
	assert_true(wait_state(f, a.id, CLOUD_INST_GONE, &seen));
	assert_string_equal(seen.reason, "Server.SpotInstanceTermination");

	/* a replacement in another zone */
	assert_int_equal(launch(f, f->zones[2], 1, 3, &b, &err), 0);
	assert_string_equal(b.zone, f->zones[2]);
	assert_string_not_equal(b.id, a.id);
	assert_true(wait_state(f, b.id, CLOUD_INST_RUNNING, &seen));

	/* the sweep sees both, tagged; we terminate the live one */
	assert_int_equal(f->d.ops->list(f->d.st, "emu-cluster", &v, &n, &err), 0);
	assert_int_equal(n, 2);
	for (size_t k = 0; k < n; k++) {
		assert_string_equal(v[k].cluster, "emu-cluster");
		assert_int_equal(v[k].job_id, 3);
	}
	cloud_instances_free(v, n);
	assert_int_equal(f->d.ops->list(f->d.st, "other-cluster", &v, &n, &err), 0);
	assert_int_equal(n, 0);
	free(v);
	ids[0] = b.id;
	assert_int_equal(f->d.ops->terminate(f->d.st, ids, 1, &err), 0);
	assert_true(wait_state(f, b.id, CLOUD_INST_GONE, &seen));
	assert_string_equal(seen.reason, "Client.UserInitiatedShutdown");
	cloud_instance_clear(&a);
	cloud_instance_clear(&b);
}

/* At time_scale 3600 an instance's times are still on the wall clock:
 * the agent reads its notice deadline on its own clock. */
static void test_instance_times_real_clock(void **state)
{
	struct fx *f = *state;
	struct cloud_instance a;
	struct cloud_error err = { 0 };
	struct sr_err e = { 0 };
	char buf[256], *t;
	int64_t before = sr_time_real_ns(), at = 0, now;

	assert_int_equal(ec2emu_set_capacity(f->emu, f->zones[1], TYPE, EC2EMU_PLENTY), 0);
	assert_int_equal(launch(f, f->zones[1], 1, 1, &a, &err), 0);
	assert_int_equal(ec2emu_preempt(f->emu, a.id), 0);
	assert_int_equal(ec2emu__imds_notice(f->emu, a.id, buf, sizeof buf), 0);
	now = sr_time_real_ns();
	t = strstr(buf, "\"time\":\"");
	assert_non_null(t);
	t += 8;
	*strchr(t, '"') = '\0';
	assert_int_equal(sr_time_parse_rfc3339(t, &at, &e), 0);
	/* 30 real seconds ahead (whole seconds); on the cloud clock it
	 * would read 30 hours ahead */
	assert_true(at >= before / SR_NS_PER_SEC * SR_NS_PER_SEC);
	assert_true(at <= now + 40 * SR_NS_PER_SEC);
	assert_true(a.launched_s >= before / SR_NS_PER_SEC - 1);
	assert_true(a.launched_s <= now / SR_NS_PER_SEC + 1);
	cloud_instance_clear(&a);
}

static void test_emulator_errors(void **state)
{
	struct fx *f = *state;
	struct cloud_instance a;
	struct cloud_error err = { 0 };
	struct ec2_opts o = { .image_id = "ami-emulated", .max_retries = 0 };
	struct ec2_spot_price *p = NULL;
	struct ec2 *c = NULL;
	struct sr_err e = { 0 };
	const char *bad[] = { "i-doesnotexist" };
	struct ec2_run r = {
		.client_token = "t-1", .instance_type = TYPE, .zone = "use1-az99",
		.tags = { .cluster = "x" },
	};
	size_t n = 0;

	assert_int_equal(ec2_open(&o, &c, &e), 0);
	/* a zone that does not sell the type */
	assert_int_equal(ec2_run_instances(c, &r, &a, &err), -ENOSPC);
	assert_string_equal(err.code, "Unsupported");
	/* a spot price cap under the market */
	ec2emu_set_capacity(f->emu, f->zones[1], TYPE, EC2EMU_PLENTY);
	r.zone = f->zones[1];
	r.spot = true;
	r.max_price_per_h = 1;
	assert_int_equal(ec2_run_instances(c, &r, &a, &err), -ENOSPC);
	assert_string_equal(err.code, "SpotMaxPriceTooLow");
	/* a type the region does not have */
	r.zone = NULL;
	r.instance_type = "z9.mega";
	assert_int_equal(ec2_run_instances(c, &r, &a, &err), -EINVAL);
	assert_string_equal(err.code, "InvalidParameterValue");
	/* terminating an unknown id is not an error for the driver */
	assert_int_equal(ec2_terminate_instances(c, bad, 1, &err), 0);
	/* prices replayed from the trace */
	assert_int_equal(ec2_spot_price_history(c, TYPE, f->zones[1], 0, 10, &p,
						&n, &err), 0);
	assert_true(n > 0);
	assert_true(p[0].price_per_h > 0);
	assert_string_equal(p[0].zone, f->zones[1]);
	assert_string_equal(p[0].instance_type, TYPE);
	free(p);
	ec2_close(c);
}

/* A stand-in control plane: register hands out a trivial assignment,
 * everything else (heartbeat, report) is acknowledged. */
/* what the fake control plane trades the bootstrap secret for */
#define NODE_TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static int fake_ctl(void *ud, const struct sr_testsrv_req *req, int *status,
		    char **ctype, char **body, size_t *body_len)
{
	size_t n = strlen(req->path);

	(void)ud;
	*status = 200;
	*ctype = strdup("application/json");
	if (n > 10 && strcmp(req->path + n - 10, "/bootstrap") == 0)
		*body = strdup("{\"token\":\"" NODE_TOKEN "\"}");
	else if (n > 9 && strcmp(req->path + n - 9, "/register") == 0)
		*body = strdup("{\"job_id\":3,\"rank\":0,\"num_nodes\":1,"
			       "\"run\":\"exec sleep 600\",\"heartbeat_ms\":100,"
			       "\"imds_poll_ms\":50}");
	else
		*body = strdup("{}");
	*body_len = *body != NULL ? strlen(*body) : 0;
	return 0;
}

/* Index of the first recorded request whose path ends with `suffix` and
 * whose body contains `needle` (may be NULL), waiting up to ~20 s; -1. */
static long wait_request(struct sr_testsrv *s, const char *suffix,
			 const char *needle)
{
	for (int t = 0; t < 2000; t++) {
		size_t n = sr_testsrv_nreq(s);

		for (size_t i = 0; i < n; i++) {
			const struct sr_testsrv_req *r = sr_testsrv_req(s, i);
			size_t pl = strlen(r->path), sl = strlen(suffix);

			if (pl >= sl && strcmp(r->path + pl - sl, suffix) == 0 &&
			    (needle == NULL || strstr(r->body, needle) != NULL))
				return (long)i;
		}
		usleep(10000);
	}
	return -1;
}

/* Whether any process's command line contains tok. */
static bool token_in_some_cmdline(const char *tok)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	bool found = false;

	assert_non_null(d);
	while (!found && (de = readdir(d)) != NULL) {
		char path[300], buf[8192];
		size_t n;
		FILE *fp;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		fp = fopen(path, "r");
		if (fp == NULL)
			continue;
		n = fread(buf, 1, sizeof(buf), fp);
		fclose(fp);
		found = memmem(buf, n, tok, strlen(tok)) != NULL;
	}
	closedir(d);
	return found;
}

/* The driver's own user-data starts the real spotrun-agent inside an
 * emulated instance: it trades the one-time bootstrap secret of its
 * user-data for its node token at the control-plane URL it was given,
 * registers with that token, and reports the spot notice it reads from
 * the instance's IMDSv2.  Neither appears on a command line. */
static void test_bootstrap_starts_agent(void **state)
{
	struct fx *f = *state;
	struct sr_testsrv *ctl = sr_testsrv_start(0);
	char exe[512], agent[600], *script = NULL, hdr[128];
	struct cloud_instance a, seen;
	struct cloud_error err = { 0 };
	struct sr_err e = { 0 };
	char key[CLOUD_IDEM_MAX];
	struct cloud_req *req = NULL;
	struct cloud_launch l = {
		.zone = f->zones[1], .instance_type = TYPE, .spot = true,
		.tags = { .cluster = "emu-cluster", .job_id = 3, .node_id = 5,
			  .attempt = 1 },
	};
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	long reg;
	int rc;

	assert_non_null(ctl);
	sr_testsrv_set_handler(ctl, fake_ctl, NULL);
	assert_true(n > 0);
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0'; /* BUILD/tests */
	snprintf(agent, sizeof(agent), "%s/../bin/spotrun-agent", exe);
	assert_int_equal(access(agent, X_OK), 0);
	assert_int_equal(ec2_bootstrap_script(agent, sr_testsrv_url(ctl), 5,
					      "tok-abc123XYZ-0123456789", NULL, &script,
					      &e), 0);
	ec2emu_set_capacity(f->emu, f->zones[1], TYPE, EC2EMU_PLENTY);
	cloud_idem_key(&l.tags, key);
	l.idem_key = key;
	l.bootstrap = script;
	assert_int_equal(f->d.ops->provision(f->d.st, &l, &req, &err), 0);
	while ((rc = f->d.ops->poll(f->d.st, req, &a, &err)) == -EAGAIN)
		usleep(5000);
	f->d.ops->req_free(f->d.st, req);
	assert_int_equal(rc, 0);

	reg = wait_request(ctl, "/v1/nodes/5/bootstrap", "\"nonce\"");
	assert_true(reg >= 0);
	assert_int_equal(sr_testsrv_req_header(sr_testsrv_req(ctl, (size_t)reg),
					       "authorization", hdr, sizeof(hdr)), 0);
	assert_string_equal(hdr, "Bearer tok-abc123XYZ-0123456789");
	reg = wait_request(ctl, "/v1/nodes/5/register", NULL);
	assert_true(reg >= 0);
	assert_int_equal(sr_testsrv_req_header(sr_testsrv_req(ctl, (size_t)reg),
					       "authorization", hdr, sizeof(hdr)), 0);
	assert_string_equal(hdr, "Bearer " NODE_TOKEN);
	/* no process carries either in its argv */
	assert_false(token_in_some_cmdline("tok-abc123XYZ-0123456789"));
	assert_false(token_in_some_cmdline(NODE_TOKEN));

	assert_int_equal(ec2emu_preempt(f->emu, a.id), 0);
	assert_true(wait_request(ctl, "/v1/nodes/5/report", "\"notice\"") >= 0);
	assert_true(wait_state(f, a.id, CLOUD_INST_GONE, &seen));
	assert_string_equal(seen.reason, "Server.SpotInstanceTermination");
	cloud_instance_clear(&a);
	free(script);
	sr_testsrv_stop(ctl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_spot_lifecycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emulator_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_instance_times_real_clock,
						setup_fast, teardown),
		cmocka_unit_test_setup_teardown(test_bootstrap_starts_agent, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
