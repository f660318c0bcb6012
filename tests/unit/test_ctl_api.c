/* Unit tests: spotrund's HTTP API (lib/ctl) end to end on loopback -
 * authentication, bad bodies, limits, the node API driving the job state
 * machine (the test plays the agent), and the local IMDSv2 endpoint.
 * The provider is told to start a script that waits for this test
 * process as the "agent" (ctl_fixture.h), so the nodes are real
 * processes that live as long as the test, and the test speaks for them:
 * an agent that exited would be a terminated instance, its node LOST. */
#include "ctl_fixture.h"

#include "common/proc.h"
#include "ctl/ctl_int.h"

/* ---- tests ------------------------------------------------------------------- */

static void test_health_and_auth(void **state)
{
	json_t *v = NULL;
	char path[160];
	struct stat sb;

	(void)state;
	assert_int_equal(jreq("GET", "/healthz", NULL, NULL, &v), 200);
	assert_true(json_is_true(json_object_get(v, "ok")));
	json_decref(v);
	assert_int_equal(jreq("GET", "/v1/jobs", NULL, NULL, &v), 401);
	assert_string_equal(err_code(v), "unauthorized");
	json_decref(v);
	assert_int_equal(jreq("GET", "/v1/jobs", "0123456789abcdef0123456789abcdef"
			      "0123456789abcdef0123456789abcdef", NULL, &v), 401);
	assert_string_equal(err_code(v), "unauthorized");
	json_decref(v);
	/* a prefix of the right token is still wrong */
	snprintf(path, sizeof path, "%.20s", ctl_admin_token(ctl));
	assert_int_equal(jreq("GET", "/v1/jobs", path, NULL, &v), 401);
	json_decref(v);
	assert_int_equal(jreq("GET", "/v1/jobs", ctl_admin_token(ctl), NULL, &v), 200);
	assert_true(json_is_array(json_object_get(v, "jobs")));
	json_decref(v);
	/* the token file is private */
	snprintf(path, sizeof path, "%s/api.token", dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
}

static void test_bad_requests(void **state)
{
	const char *tok = ctl_admin_token(ctl);
	json_t *v = NULL;
	char *big;
	size_t n = 2 * 1024 * 1024;

	(void)state;
	/* malformed JSON names line and column */
	assert_int_equal(req("POST", "/v1/jobs", tok, "application/json",
			     "{\"spec_yaml\": \n  ,}", 19, &v, NULL), 400);
	assert_string_equal(err_code(v), "bad_request");
	assert_non_null(strstr(err_msg(v), "request body:2:"));
	json_decref(v);
	/* unknown field */
	assert_int_equal(jreq("POST", "/v1/jobs", tok, json_pack("{s:s,s:i}",
			      "spec_yaml", job_od, "priority", 3), &v), 400);
	assert_non_null(strstr(err_msg(v), "unknown field 'priority'"));
	json_decref(v);
	/* wrong type */
	assert_int_equal(jreq("POST", "/v1/jobs", tok, json_pack("{s:i}",
			      "spec_yaml", 3), &v), 400);
	assert_non_null(strstr(err_msg(v), "spec_yaml"));
	json_decref(v);
	/* bad YAML: the job parser's file:line message comes back */
	assert_int_equal(jreq("POST", "/v1/jobs", tok, json_pack("{s:s,s:s}",
			      "spec_yaml", "name: x\nresources:\n  accelerators: V100:1\n"
			      "  colour: red\nrun: x\n", "spec_name", "bad.yaml"), &v), 400);
	assert_non_null(strstr(err_msg(v), "bad.yaml:4"));
	json_decref(v);
	/* no such accelerator in the market */
	assert_int_equal(jreq("POST", "/v1/jobs", tok, json_pack("{s:s}",
			      "spec_yaml", "resources:\n  accelerators: TPU9:1\nrun: x\n"),
			      &v), 400);
	assert_non_null(strstr(err_msg(v), "accelerators"));
	json_decref(v);
	/* wrong content type */
	assert_int_equal(req("POST", "/v1/jobs", tok, "text/plain", "{}", 2, &v,
			     NULL), 415);
	assert_string_equal(err_code(v), "unsupported_media_type");
	json_decref(v);
	/* oversized body */
	big = malloc(n);
	assert_non_null(big);
	memset(big, ' ', n);
	assert_int_equal(req("POST", "/v1/jobs", tok, "application/json", big, n,
			     &v, NULL), 413);
	assert_string_equal(err_code(v), "payload_too_large");
	json_decref(v);
	free(big);
	/* routes, ids, methods, queries */
	assert_int_equal(jreq("GET", "/v1/jobs/999999", tok, NULL, &v), 404);
	json_decref(v);
	assert_int_equal(jreq("GET", "/v1/jobs/abc", tok, NULL, &v), 400);
	assert_non_null(strstr(err_msg(v), "id"));
	json_decref(v);
	assert_int_equal(jreq("GET", "/v1/nope", tok, NULL, &v), 404);
	json_decref(v);
	assert_int_equal(jreq("DELETE", "/v1/jobs", tok, NULL, &v), 405);
	assert_string_equal(err_code(v), "method_not_allowed");
	json_decref(v);
	assert_int_equal(jreq("GET", "/v1/jobs?limit=0", tok, NULL, &v), 400);
	assert_non_null(strstr(err_msg(v), "limit"));
	json_decref(v);
	assert_int_equal(jreq("GET", "/v1/jobs?state=DONE", tok, NULL, &v), 400);
	json_decref(v);
}

static void test_job_lifecycle_node_api(void **state)
{
	const char *tok = ctl_admin_token(ctl);
	char ntok[80], p[128], other[80];
	json_t *v = NULL, *j;
	int64_t id, node, id2, node2;

	(void)state;
	id = create_job(job_od);
	/* the token exists once the provider started the node */
	node = wait_booting(id);
	assert_true(node > 0);
	node_token(node, ntok);

	/* the node token opens only its own node's routes */
	assert_int_equal(jreq("GET", "/v1/jobs", ntok, NULL, &v), 403);
	assert_string_equal(err_code(v), "forbidden");
	json_decref(v);
	snprintf(p, sizeof p, "/v1/nodes/%lld/heartbeat", (long long)node + 1000);
	assert_int_equal(jreq("POST", p, ntok, json_object(), &v), 403);
	json_decref(v);

	/* register: the assignment */
	snprintf(p, sizeof p, "/v1/nodes/%lld/register", (long long)node);
	assert_int_equal(jreq("POST", p, ntok, json_pack("{s:i,s:s}", "pid", 42,
			      "addr", "10.0.3.17"), &v), 200);
	assert_int_equal(json_integer_value(json_object_get(v, "job_id")), id);
	assert_string_equal(json_string_value(json_object_get(v, "run")), "echo hi");
	assert_non_null(strstr(json_string_value(json_object_get(v, "ckpt_dir")),
			       "/ckpt"));
	json_decref(v);
	j = wait_state(id, "RUNNING");
	assert_int_equal(json_integer_value(json_object_get(j, "attempt")), 1);
	json_decref(j);

	/* heartbeat: directive run attempt 1; bad bodies are 400 */
	snprintf(p, sizeof p, "/v1/nodes/%lld/heartbeat", (long long)node);
	assert_int_equal(jreq("POST", p, ntok, json_pack("{s:s,s:i,s:i,s:i,s:f}",
			      "workload", "running", "attempt", 1, "step", 5,
			      "total_steps", 10, "cpu_util", 0.5), &v), 200);
	assert_string_equal(json_string_value(json_object_get(json_object_get(v,
				"directive"), "action")), "run");
	/* the gang's rendezvous: the address rank 0's agent registered */
	assert_string_equal(json_string_value(json_object_get(json_object_get(v,
				"directive"), "master_addr")), "10.0.3.17");
	assert_string_equal(json_string_value(json_array_get(json_object_get(
		json_object_get(v, "directive"), "node_ips"), 0)), "10.0.3.17");
	json_decref(v);
	/* the nodes API serves that address */
	j = get_job(id);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
		json_object_get(j, "nodes"), 0), "addr")), "10.0.3.17");
	json_decref(j);
	snprintf(other, sizeof other, "/v1/nodes?job=%lld", (long long)id);
	assert_int_equal(jreq("GET", other, tok, NULL, &v), 200);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
		json_object_get(v, "nodes"), 0), "addr")), "10.0.3.17");
	json_decref(v);
	/* a second progress report of the same attempt measures the pace */
	j = get_job(id);
	assert_true(json_is_null(json_object_get(j, "sim_step_s")));
	json_decref(j);
	usleep(20000);
	assert_int_equal(jreq("POST", p, ntok, json_pack("{s:s,s:i,s:i,s:i}",
			      "workload", "running", "attempt", 1, "step", 9,
			      "total_steps", 10), &v), 200);
	json_decref(v);
	j = get_job(id);
	assert_true(json_real_value(json_object_get(j, "sim_step_s")) > 0);
	assert_int_equal(json_integer_value(json_object_get(j, "step")), 9);
	json_decref(j);
	assert_int_equal(jreq("POST", p, ntok, json_pack("{s:s}", "workload",
			      "dancing"), &v), 400);
	assert_non_null(strstr(err_msg(v), "workload"));
	json_decref(v);
	assert_int_equal(jreq("POST", p, ntok, json_pack("{s:f}", "cpu_util", 1.5),
			      &v), 400);
	json_decref(v);

	/* report: logs, checkpoint, then the workload completes */
	snprintf(p, sizeof p, "/v1/nodes/%lld/report", (long long)node);
	assert_int_equal(jreq("POST", p, ntok, json_pack("{s:[{s:s,s:s},{s:s}]}",
			      "events", "type", "log", "line", "x", "type", "bogus"),
			      &v), 400);
	assert_non_null(strstr(err_msg(v), "events[1]"));
	json_decref(v);
	assert_int_equal(jreq("POST", p, ntok, json_pack(
		"{s:[{s:s,s:i,s:s,s:s},{s:s,s:i,s:i,s:f,s:b,s:b},{s:s,s:i,s:i,s:s}]}",
		"events",
		"type", "log", "attempt", 1, "stream", "stdout", "line", "hello",
		"type", "checkpoint", "attempt", 1, "step", 5, "stall_ms", 3.5,
		"final", 0, "durable", 1,
		"type", "exit", "attempt", 1, "exit_code", 0, "cause", "completed"),
		&v), 200);
	assert_int_equal(json_integer_value(json_object_get(v, "accepted")), 3);
	json_decref(v);
	j = wait_state(id, "SUCCEEDED");
	assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 0);
	/* the last heartbeat said step 9 of 10; every rank exited 0 */
	assert_int_equal(json_integer_value(json_object_get(j, "step")), 10);
	assert_int_equal(json_integer_value(json_object_get(j, "ckpt_step")), 5);
	json_decref(j);

	/* the node is gone: 409 from now on */
	snprintf(p, sizeof p, "/v1/nodes/%lld/heartbeat", (long long)node);
	assert_int_equal(jreq("POST", p, ntok, json_object(), &v), 409);
	assert_string_equal(err_code(v), "conflict");
	json_decref(v);
	/* logs and events */
	snprintf(p, sizeof p, "/v1/jobs/%lld/logs", (long long)id);
	assert_int_equal(jreq("GET", p, tok, NULL, &v), 200);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
		json_object_get(v, "lines"), 0), "line")), "hello");
	assert_true(json_is_true(json_object_get(v, "done")));
	json_decref(v);
	/* cancel of a finished job is a conflict */
	snprintf(p, sizeof p, "/v1/jobs/%lld/cancel", (long long)id);
	assert_int_equal(jreq("POST", p, tok, NULL, &v), 409);
	json_decref(v);

	/* a second job: cancel while provisioning */
	id2 = create_job(job_od);
	node2 = wait_booting(id2);
	node_token(node2, other);
	assert_string_not_equal(other, ntok);
	snprintf(p, sizeof p, "/v1/jobs/%lld/cancel", (long long)id2);
	assert_int_equal(jreq("POST", p, tok, NULL, &v), 202);
	json_decref(v);
	json_decref(wait_state(id2, "CANCELLED"));
}

static void test_crash_restarts_then_fails(void **state)
{
	const char yaml[] = "name: crash\nresources:\n  accelerators: V100:1\n"
			    "  use_spot: false\nrun: exit 3\nspotrun:\n"
			    "  max_restarts: 2\n";
	char ntok[80], p[128];
	json_t *v = NULL, *j;
	int64_t id, node, port, last_port = 0;

	(void)state;
	id = start_registered(yaml, &node, ntok);
	for (int attempt = 1; attempt <= 3; attempt++) {
		/* the healthy node is kept: the workload restarts in place */
		for (int i = 0;; i++) {
			j = get_job(id);
			if (json_integer_value(json_object_get(j, "attempt")) == attempt &&
			    strcmp(json_string_value(json_object_get(j, "state")),
				   "RUNNING") == 0)
				break;
			json_decref(j);
			assert_true(i < 1500);
			usleep(10000);
		}
		assert_int_equal(first_node(j, 0), node);
		json_decref(j);
		snprintf(p, sizeof p, "/v1/nodes/%lld/heartbeat", (long long)node);
		assert_int_equal(jreq("POST", p, ntok, json_pack("{s:s,s:i}",
				      "workload", "exited", "attempt", attempt - 1), &v), 200);
		assert_string_equal(json_string_value(json_object_get(json_object_get(
			v, "directive"), "action")), "run");
		assert_int_equal(json_integer_value(json_object_get(json_object_get(
			v, "directive"), "attempt")), attempt);
		/* registered without an address: where its request came from */
		assert_string_equal(json_string_value(json_object_get(
			json_object_get(v, "directive"), "master_addr")), "127.0.0.1");
		/* a fresh rendezvous port per attempt, below the ephemeral range */
		port = json_integer_value(json_object_get(json_object_get(v,
			"directive"), "master_port"));
		assert_true(port >= 20000 && port < 32000);
		assert_int_not_equal(port, last_port);
		last_port = port;
		json_decref(v);
		snprintf(p, sizeof p, "/v1/nodes/%lld/report", (long long)node);
		assert_int_equal(jreq("POST", p, ntok, json_pack(
			"{s:[{s:s,s:i,s:i,s:s}]}", "events", "type", "exit",
			"attempt", attempt, "exit_code", 3, "cause", "crashed"), &v), 200);
		json_decref(v);
	}
	j = wait_state(id, "FAILED");
	assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 3);
	assert_int_equal(json_integer_value(json_object_get(j, "restarts")), 2);
	json_decref(j);
}

/* A job's bucket file_mounts reach its node's assignment as
 * bucket_mounts (issue 30), apart from the local file_mounts. */
static void test_register_bucket_mounts(void **state)
{
	const char yaml[] = "name: b\nresources:\n  accelerators: V100:1\n"
			    "  use_spot: false\nrun: echo hi\nfile_mounts:\n"
			    "  /checkpoint:\n    source: s3://my-ckpts/run1/\n"
			    "    mode: MOUNT_CACHED\n  /data: gs://my-data/set\n"
			    "spotrun:\n  deadline: 100h\n  work: 2h\n"
			    "  preempt_signal: USR1\n  sync_quiet: 5s\n";
	char ntok[80], p[128];
	json_t *v = NULL, *b, *m;
	int64_t id, node;

	(void)state;
	id = create_job(yaml);
	node = wait_booting(id);
	node_token(node, ntok);
	snprintf(p, sizeof p, "/v1/nodes/%lld/register", (long long)node);
	assert_int_equal(jreq("POST", p, ntok, json_object(), &v), 200);
	b = json_object_get(v, "bucket_mounts");
	assert_int_equal(json_array_size(b), 2);
	for (size_t i = 0; i < 2; i++) {
		const char *dst;

		m = json_array_get(b, i);
		dst = json_string_value(json_object_get(m, "dst"));
		assert_non_null(dst);
		if (!strcmp(dst, "/checkpoint")) {
			assert_string_equal(json_string_value(json_object_get(m, "uri")),
					    "s3://my-ckpts/run1");
			assert_string_equal(json_string_value(json_object_get(m, "store")),
					    "s3");
			assert_string_equal(json_string_value(json_object_get(m, "mode")),
					    "MOUNT_CACHED");
		} else {
			assert_string_equal(dst, "/data");
			assert_string_equal(json_string_value(json_object_get(m, "uri")),
					    "gs://my-data/set");
			assert_string_equal(json_string_value(json_object_get(m, "mode")),
					    "COPY");
		}
	}
	assert_int_equal(json_object_size(json_object_get(v, "file_mounts")), 0);
	/* the task's notice signal and the syncers' quiet time */
	assert_string_equal(json_string_value(json_object_get(v, "preempt_signal")),
			    "USR1");
	assert_int_equal(json_integer_value(json_object_get(v, "sync_quiet_ms")),
			 5000);
	/* SKYPILOT_TASK_ID: sky-managed-YYYY-MM-DD-HH-MM-SS-UUUUUU_NAME_ID-0 */
	{
		const char *t = json_string_value(json_object_get(v, "task_id"));
		char tail[64];
		int y, mo, d, h, mi, sec, us, n = 0;

		assert_non_null(t);
		snprintf(tail, sizeof tail, "_b_%lld-0", (long long)id);
		assert_int_equal(sscanf(t, "sky-managed-%4d-%2d-%2d-%2d-%2d-%2d-%6d%n",
					&y, &mo, &d, &h, &mi, &sec, &us, &n), 7);
		assert_string_equal(t + n, tail);
		assert_true(y >= 2024 && mo >= 1 && mo <= 12);
	}
	json_decref(v);
	snprintf(p, sizeof p, "/v1/jobs/%lld/cancel", (long long)id);
	assert_int_equal(jreq("POST", p, ctl_admin_token(ctl), NULL, &v), 202);
	json_decref(v);
	json_decref(wait_state(id, "CANCELLED"));
}

static void test_imds(void **state)
{
	char ntok[80], p[160], tok[128];
	struct sr_http_opts o;
	struct sr_http_resp r;
	json_t *v = NULL;
	int64_t id, node;
	const char *h[2] = { NULL, NULL };
	char hdr[200];

	(void)state;
	sr_http_opts_default(&o);
	o.max_retries = 0;
	id = create_job(job_od);
	node = wait_booting(id);
	node_token(node, ntok);

	snprintf(p, sizeof p, "/imds/%lld/latest/api/token", (long long)node);
	assert_int_equal(req("PUT", p, NULL, NULL, NULL, 0, NULL, NULL), 400);
	snprintf(p, sizeof p, "%s/imds/%lld/latest/api/token", base, (long long)node);
	h[0] = "X-aws-ec2-metadata-token-ttl-seconds: 99999";
	assert_int_equal(sr_http_request("PUT", p, h, NULL, 0, &o, &r, NULL), 0);
	assert_int_equal(r.status, 400);
	sr_http_resp_free(&r);
	h[0] = "X-aws-ec2-metadata-token-ttl-seconds: 60";
	assert_int_equal(sr_http_request("PUT", p, h, NULL, 0, &o, &r, NULL), 0);
	assert_int_equal(r.status, 200);
	snprintf(tok, sizeof tok, "%s", r.body);
	sr_http_resp_free(&r);

	snprintf(p, sizeof p, "%s/imds/%lld/latest/meta-data/spot/instance-action",
		 base, (long long)node);
	/* no token, a forged one, then another node's: 401 */
	assert_int_equal(sr_http_request("GET", p, NULL, NULL, 0, &o, &r, NULL), 0);
	assert_int_equal(r.status, 401);
	sr_http_resp_free(&r);
	h[0] = "X-aws-ec2-metadata-token: 9999999999.00";
	assert_int_equal(sr_http_request("GET", p, h, NULL, 0, &o, &r, NULL), 0);
	assert_int_equal(r.status, 401);
	sr_http_resp_free(&r);
	snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s", tok);
	h[0] = hdr;
	assert_int_equal(sr_http_request("GET", p, h, NULL, 0, &o, &r, NULL), 0);
	assert_int_equal(r.status, 404);     /* no interruption scheduled */
	sr_http_resp_free(&r);
	{
		char p2[200];

		snprintf(p2, sizeof p2, "%s/imds/%lld/latest/meta-data/spot/"
			 "instance-action", base, (long long)node + 1);
		assert_int_equal(sr_http_request("GET", p2, h, NULL, 0, &o, &r,
						 NULL), 0);
		assert_true(r.status == 401 || r.status == 404);
		sr_http_resp_free(&r);
	}
	/* the IMDS is the local cloud's, not the control plane's: a notice
	 * the node reports (as on EC2) schedules no interruption there */
	{
		char rp[128];

		snprintf(rp, sizeof rp, "/v1/nodes/%lld/report", (long long)node);
		assert_int_equal(jreq("POST", rp, ntok, json_pack("{s:[{s:s,s:s}]}",
				      "events", "type", "notice", "time",
				      "2030-01-01T00:00:00Z"), &v), 200);
		json_decref(v);
	}
	assert_int_equal(sr_http_request("GET", p, h, NULL, 0, &o, &r, NULL), 0);
	assert_int_equal(r.status, 404);
	sr_http_resp_free(&r);
}

/* The local cloud interrupts a spot instance (an injected interruption,
 * <state>/interrupts/<node>): its IMDSv2 serves the notice, on the wall
 * clock, notice_ms ahead. */
static void test_imds_local_interruption(void **state)
{
	static const char job_spot[] =
		"name: t\nresources:\n  accelerators: V100:1\n  use_spot: true\n"
		"run: echo hi\nspotrun:\n  deadline: 100h\n  work: 2h\n";
	char script[128], p[200], hdr[200], path[128];
	const char *h[2] = { NULL, NULL };
	struct sr_http_opts o;
	struct sr_http_resp r;
	struct sr_err e = { 0 };
	int64_t id, node, before, at = 0;
	json_t *v;
	int status = 0;

	(void)state;
	sr_http_opts_default(&o);
	o.max_retries = 0;
	/* an "agent" that lives long enough to be interrupted */
	snprintf(script, sizeof script, "%s/agent.sh", dir);
	assert_int_equal(sr_fs_write_atomic(script, "#!/bin/sh\nexec sleep 20\n",
					    24, 0700, &e), 0);
	snprintf(ctl->agent_path, sizeof ctl->agent_path, "%s", script);
	id = create_job(job_spot);
	node = wait_booting(id);
	snprintf(path, sizeof path, "%s/interrupts", dir);
	assert_int_equal(sr_fs_mkdir_p(path, 0700), 0);
	snprintf(path, sizeof path, "%s/interrupts/%lld", dir, (long long)node);
	before = sr_time_real_ns();
	assert_int_equal(sr_fs_write_atomic(path, "", 0, 0600, &e), 0);
	snprintf(p, sizeof p, "%s/imds/%lld/latest/api/token", base, (long long)node);
	h[0] = "X-aws-ec2-metadata-token-ttl-seconds: 600";
	assert_int_equal(sr_http_request("PUT", p, h, NULL, 0, &o, &r, NULL), 0);
	assert_int_equal(r.status, 200);
	snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s", r.body);
	sr_http_resp_free(&r);
	h[0] = hdr;
	snprintf(p, sizeof p, "%s/imds/%lld/latest/meta-data/spot/instance-action",
		 base, (long long)node);
	for (int i = 0; i < 3000 && status != 200; i++) { /* up to ~30 s */
		assert_int_equal(sr_http_request("GET", p, h, NULL, 0, &o, &r,
						 NULL), 0);
		status = r.status;
		if (status != 200) {
			sr_http_resp_free(&r);
			usleep(10000);
		}
	}
	assert_int_equal(status, 200);
	v = json_loads(r.body, 0, NULL);
	sr_http_resp_free(&r);
	assert_string_equal(json_string_value(json_object_get(v, "action")),
			    "terminate");
	assert_int_equal(sr_time_parse_rfc3339(json_string_value(json_object_get(v,
			 "time")), &at, &e), 0);
	json_decref(v);
	/* notice_ms (5 s) after the cloud saw it, in whole seconds */
	assert_true(at >= before / SR_NS_PER_SEC * SR_NS_PER_SEC);
	assert_true(at <= sr_time_real_ns() + 6 * SR_NS_PER_SEC);
	snprintf(ctl->agent_path, sizeof ctl->agent_path, "%s", fixture_agent);
}

/* The fixture daemon's local compute driver (cloud/compute.h). */
static struct cloud_driver *local_drv(void)
{
	struct cloud_driver *d = NULL;

	for (size_t i = 0; i < ctl->nclouds; i++) {
		if (strcmp(ctl->clouds[i].name, "local") == 0)
			d = &ctl->clouds[i].p.drv;
	}
	assert_non_null(d);
	return d;
}

/* The local cloud's nodes run `body` (a shell script written to `name`
 * in the test dir) as their agent from now on. */
static void use_agent(const char *name, const char *body)
{
	struct sr_err e = { 0 };
	char script[128];

	snprintf(script, sizeof script, "%s/%s", dir, name);
	assert_int_equal(sr_fs_write_atomic(script, body, strlen(body), 0700,
					    &e), 0);
	snprintf(ctl->agent_path, sizeof ctl->agent_path, "%s", script);
}

/* l provisioned on d and polled to its instance *a (the caller clears). */
static void launch(struct cloud_driver *d, const struct cloud_launch *l,
		   struct cloud_instance *a)
{
	struct cloud_error err = { 0 };
	struct cloud_req *q = NULL;

	assert_int_equal(d->ops->provision(d->st, l, &q, &err), 0);
	assert_int_equal(d->ops->poll(d->st, q, a, &err), 0);
	d->ops->req_free(d->st, q);
}

/* The local cloud's compute driver on its own (cloud/compute.h): the
 * same idempotency key answers with the same instance (one process),
 * list() finds it by its cluster tag, terminate() ends it for good. */
static void test_local_driver_contract(void **state)
{
	struct cloud_driver *d = local_drv();
	struct cloud_launch l = { 0 };
	struct cloud_instance a, b, *v = NULL;
	struct cloud_error err = { 0 };
	struct cloud_req *q = NULL;
	char boot[256];
	const char *ids[1];
	size_t n = 0;

	(void)state;
	use_agent("agent2.sh", "#!/bin/sh\nexec sleep 20\n");
	snprintf(boot, sizeof boot, "{\"api\":\"%s\",\"node\":999,\"bootstrap\":"
		 "\"00\"}", base);
	/* a cluster of its own: the daemon's leak sweep leaves it alone */
	l.tags = (struct cloud_tags){ "test-cluster", 1, 999, 1 };
	l.idem_key = "sr-test-999-1";
	l.instance_type = "p3.2xlarge";
	l.pool = 0;
	l.bootstrap = boot;
	launch(d, &l, &a);
	assert_int_equal(strncmp(a.id, "local-", 6), 0);
	assert_int_equal(a.state, CLOUD_INST_RUNNING);
	assert_non_null(a.blob);
	launch(d, &l, &b);
	assert_string_equal(b.id, a.id); /* no second process */
	cloud_instance_clear(&b);
	assert_int_equal(d->ops->list(d->st, "test-cluster", &v, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].id, a.id);
	assert_int_equal(v[0].node_id, 999);
	assert_int_equal(v[0].state, CLOUD_INST_RUNNING);
	cloud_instances_free(v, n);
	ids[0] = a.id;
	assert_int_equal(d->ops->terminate(d->st, ids, 1, &err), 0);
	assert_int_equal(d->ops->list(d->st, "test-cluster", &v, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].state, CLOUD_INST_GONE);
	cloud_instances_free(v, n);
	/* a bootstrap that is not the local startup document: invalid */
	l.idem_key = "sr-test-999-2";
	l.bootstrap = "#!/bin/sh\n";
	assert_int_equal(d->ops->provision(d->st, &l, &q, &err), 0);
	assert_int_equal(d->ops->poll(d->st, q, &b, &err), -EINVAL);
	assert_int_equal(err.cls, CLOUD_EINVALID);
	d->ops->req_free(d->st, q);
	cloud_instance_clear(&a);
	snprintf(ctl->agent_path, sizeof ctl->agent_path, "%s", fixture_agent);
}

/* A noticed instance whose interruption time passed while the daemon was
 * down (the local cloud lives in it) is taken as the cloud opens again -
 * before the daemon serves a node or lists - not at the first reconciler
 * pass: on a real cloud the node was gone at its deadline, so nothing it
 * did since may reach the daemon (in test_ctl_crash's kill -9 test,
 * SPOTRUN_SEED=656135, such a node finished its job after the restart, its
 * report held by the agent's retry backoff; the cloud then took it, the
 * report was lost and the job's end ran twice). */
static void test_local_cloud_takes_overdue_instances_at_open(void **state)
{
	struct cloud_driver *d = local_drv();
	struct cloud_launch l = { 0 };
	struct cloud_instance a;
	struct sr_err e = { 0 };
	char boot[256], rec[200];
	long long pid = 0, start = 0;
	json_t *r;
	char *s;

	(void)state;
	use_agent("agent3.sh", "#!/bin/sh\nexec sleep 600\n");
	snprintf(boot, sizeof boot, "{\"api\":\"%s\",\"node\":998,\"bootstrap\":"
		 "\"00\"}", base);
	l.tags = (struct cloud_tags){ "test-cluster", 1, 998, 1 };
	l.idem_key = "sr-test-998-1";
	l.instance_type = "p3.2xlarge";
	l.bootstrap = boot;
	launch(d, &l, &a);
	assert_int_equal(sscanf(a.id, "local-%lld-%lld", &pid, &start), 2);
	cloud_instance_clear(&a);
	/* its interruption, due a second ago, in the cloud's own record */
	snprintf(rec, sizeof rec, "%s/localcloud/sr-test-998-1.json", dir);
	r = json_load_file(rec, 0, NULL);
	assert_non_null(r);
	json_object_set_new(r, "notice_ns", json_integer(sr_time_real_ns() -
							 SR_NS_PER_SEC));
	s = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	assert_non_null(s);
	assert_int_equal(sr_fs_write_atomic(rec, s, strlen(s), 0600, &e), 0);
	free(s);
	assert_true(sr_proc_alive(pid, start));
	/* the daemon stops (its nodes live on) and starts again, no pass */
	ctl_stop(ctl);
	assert_int_equal(fixture_start(1), 0);
	/* SIGKILLed at the open: gone as soon as the kernel delivers it (no
	 * pass runs, so without the catch-up it lives on) */
	for (int i = 0; i < 1000 && sr_proc_alive(pid, start); i++)
		usleep(10000);
	assert_false(sr_proc_alive(pid, start));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_health_and_auth),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_job_lifecycle_node_api),
		cmocka_unit_test(test_crash_restarts_then_fails),
		cmocka_unit_test(test_register_bucket_mounts),
		cmocka_unit_test(test_imds),
		cmocka_unit_test(test_imds_local_interruption),
		cmocka_unit_test(test_local_driver_contract),
		cmocka_unit_test(test_local_cloud_takes_overdue_instances_at_open),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
