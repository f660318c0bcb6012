/* ctl_fixture.h - a spotrund (lib/ctl) on loopback for the API tests:
 * setup/teardown start and stop it in a fresh temp state dir with a
 * script that waits for the test as the "agent" (the test speaks for
 * the nodes); req()/jreq()
 * make one request and parse the reply.  Included by one test file each. */
#ifndef SR_TEST_CTL_FIXTURE_H
#define SR_TEST_CTL_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/fsutil.h"
#include "common/http.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "ctl/ctl.h"

static char dir[64];
static struct ctl *ctl;
static char base[64];
/* The local cloud's "agent" for the nodes the daemon launches: an
 * instance of the local cloud is that process, and one that has exited
 * is a terminated instance (its node ends LOST at the next pass), so
 * setup() makes it a script that stays up while the test lives
 * (fixture_agent_stays_up()): the test speaks for its nodes. */
static const char *fixture_agent = "/bin/true";

static const char job_od[] =
	"name: t\nresources:\n  accelerators: V100:1\n  use_spot: false\n"
	"run: echo hi\nspotrun:\n  deadline: 100h\n  work: 2h\n";

/* Make the nodes' agent a script at `path` that stays up while this
 * test process lives (it polls our pid each second, so nothing is left
 * behind once the test has ended); returns 0 or -1. */
static inline int fixture_agent_stays_up(const char *path)
{
	struct sr_err e = { 0 };
	char body[160];

	snprintf(body, sizeof body, "#!/bin/sh\nwhile kill -0 %ld 2>/dev/null;"
		 " do sleep 1; done\n", (long)getpid());
	if (sr_fs_write_atomic(path, body, strlen(body), 0700, &e))
		return -1;
	fixture_agent = path;
	return 0;
}

/* Start the daemon on dir (again, after a ctl_stop: a restart); manual:
 * no reconciler thread (ctl__reconcile_once drives it). */
static inline int fixture_start(int manual)
{
	struct ctl_config cfg;
	struct sr_err e = { 0 };

	ctl_config_defaults(&cfg);
	cfg.manual_reconcile = manual;
	cfg.state_dir = dir;
	cfg.listen_port = 0;
	cfg.data_dir = "data";
	cfg.agent_path = fixture_agent;
	cfg.provision_ms = 0;
	cfg.tick_ms = 20;
	cfg.heartbeat_timeout_ms = 60000;
	cfg.boot_timeout_ms = 60000;
	/* the only daemon: its lease must outlast any stall of a loaded
	 * machine under TSan, or its writes are fenced (503 not_leader);
	 * the lease itself is tested in test_ctl_fence.c */
	cfg.lease_ms = 60000;
	if (ctl_start(&cfg, &ctl, &e)) {
		fprintf(stderr, "ctl_start: %s\n", e.msg);
		return -1;
	}
	snprintf(base, sizeof base, "http://127.0.0.1:%d", ctl_port(ctl));
	return 0;
}

static char fixture_agent_path[80];

static inline int setup(void **state)
{
	(void)state;
	sr_log_set_level(SR_LOG_WARN);
	snprintf(dir, sizeof dir, "/tmp/sr-ctlapi-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(fixture_agent_path, sizeof fixture_agent_path, "%s.agent", dir);
	if (fixture_agent_stays_up(fixture_agent_path))
		return -1;
	return fixture_start(0);
}

static inline int teardown(void **state)
{
	char cmd[128];

	(void)state;
	ctl_stop(ctl);
	ctl = NULL;
	unlink(fixture_agent_path);
	fixture_agent = "/bin/true";
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd);
}

/* One request with an extra header line (may be NULL); returns status,
 * *out = parsed body (or NULL), *raw = the body as text (caller frees). */
static inline long req_hdr(const char *method, const char *path, const char *token,
		    const char *ctype, const char *extra, const char *body,
		    size_t len, json_t **out, char **raw)
{
	struct sr_http_opts o;
	struct sr_http_resp r;
	struct sr_err e = { 0 };
	char url[4200], auth[200], ct[100];
	const char *h[5] = { NULL };
	int n = 0;
	long st;

	sr_http_opts_default(&o);
	o.max_retries = 0;
	snprintf(url, sizeof url, "%s%s", base, path);
	if (token) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
		h[n++] = auth;
	}
	if (ctype) {
		snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
		h[n++] = ct;
	}
	if (extra)
		h[n++] = extra;
	assert_int_equal(sr_http_request(method, url, h, body, len, &o, &r, &e), 0);
	st = r.status;
	if (out)
		*out = json_loads(r.body ? r.body : "", 0, NULL);
	if (raw)
		*raw = strdup(r.body ? r.body : "");
	sr_http_resp_free(&r);
	return st;
}

static inline long req(const char *method, const char *path, const char *token,
		const char *ctype, const char *body, size_t len, json_t **out,
		char **raw)
{
	return req_hdr(method, path, token, ctype, NULL, body, len, out, raw);
}

static inline long jreq(const char *method, const char *path, const char *token,
		 json_t *body, json_t **out)
{
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	long st = req(method, path, token, s ? "application/json" : NULL, s,
		      s ? strlen(s) : 0, out, NULL);

	free(s);
	json_decref(body);
	return st;
}

static inline const char *err_code(json_t *v)
{
	return json_string_value(json_object_get(json_object_get(v, "error"), "code"));
}

static inline const char *err_msg(json_t *v)
{
	const char *m = json_string_value(json_object_get(json_object_get(v, "error"),
							  "message"));
	return m ? m : "";
}

static inline int64_t create_job(const char *yaml)
{
	json_t *v = NULL;
	long st = jreq("POST", "/v1/jobs", ctl_admin_token(ctl),
		       json_pack("{s:s,s:s}", "spec_yaml", yaml, "spec_name", "t.yaml"),
		       &v);
	int64_t id;

	if (st != 201) /* what refused it (CI saw a 503 once, unexplained) */
		fail_msg("POST /v1/jobs: %ld %s: %s", st, err_code(v) ? err_code(v) : "",
			 err_msg(v));
	id = json_integer_value(json_object_get(json_object_get(v, "job"), "id"));
	assert_true(id > 0);
	json_decref(v);
	return id;
}

static inline json_t *get_job(int64_t id)
{
	char p[64];
	json_t *v = NULL, *j;

	snprintf(p, sizeof p, "/v1/jobs/%lld", (long long)id);
	assert_int_equal(jreq("GET", p, ctl_admin_token(ctl), NULL, &v), 200);
	j = json_incref(json_object_get(v, "job"));
	json_decref(v);
	return j;
}

/* Poll until the job is in `state` (the reconciler runs every 20 ms); up
 * to a minute, since a ThreadSanitizer build runs the daemon ~10x slower. */
static inline json_t *wait_state(int64_t id, const char *state)
{
	for (int i = 0; i < 6000; i++) {
		json_t *j = get_job(id);

		if (strcmp(json_string_value(json_object_get(j, "state")), state) == 0)
			return j;
		json_decref(j);
		usleep(10000);
	}
	{
		json_t *j = get_job(id);
		char *d = json_dumps(j, JSON_COMPACT);

		fprintf(stderr, "job: %s\n", d);
		free(d);
		json_decref(j);
	}
	fail_msg("job %lld never reached %s", (long long)id, state);
	return NULL;
}

/* Node `node`'s token, as its agent gets it: the local provider wrote
 * the node's one-time bootstrap secret to <node dir>/bootstrap (the
 * "agent" here, /bin/true, leaves it there); the first call trades it
 * for the token (POST .../bootstrap), later ones return that token. */
static inline void node_token(int64_t node, char *tok)
{
	static struct { char dir[64]; int64_t node; char tok[80]; } seen[64];
	static int nseen;
	char path[160], url[96], *buf = NULL;
	json_t *v = NULL;
	long st;

	for (int i = 0; i < nseen; i++) {
		if (seen[i].node == node && !strcmp(seen[i].dir, dir)) {
			strcpy(tok, seen[i].tok);
			return;
		}
	}
	snprintf(path, sizeof path, "%s/nodes/%lld/bootstrap", dir, (long long)node);
	assert_int_equal(sr_fs_read_file(path, 256, &buf, NULL, NULL), 0);
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(url, sizeof url, "/v1/nodes/%lld/bootstrap", (long long)node);
	st = jreq("POST", url, buf, json_pack("{s:s}", "nonce",
		  "0123456789abcdef0123456789abcdef"), &v);
	free(buf);
	assert_int_equal(st, 200);
	strcpy(tok, json_string_value(json_object_get(v, "token")));
	json_decref(v);
	if (nseen == 64)
		nseen = 0; /* forget the oldest: a test's nodes are few */
	snprintf(seen[nseen].dir, sizeof seen[nseen].dir, "%s", dir);
	seen[nseen].node = node;
	strcpy(seen[nseen++].tok, tok);
}

static inline int64_t first_node(json_t *job, int rank)
{
	json_t *nodes = json_object_get(job, "nodes"), *n;
	size_t i;
	int64_t id = 0;

	json_array_foreach(nodes, i, n) {
		const char *s = json_string_value(json_object_get(n, "state"));

		if (json_integer_value(json_object_get(n, "rank")) == rank &&
		    strcmp(s, "TERMINATED") && strcmp(s, "LOST"))
			id = json_integer_value(json_object_get(n, "id"));
	}
	return id;
}

/* Wait until job id's rank-0 node has been started by the provider
 * (BOOTING): an agent registers only then (before, the start gate would
 * refuse the process).  Returns the node's id. */
static inline int64_t wait_booting(int64_t id)
{
	json_decref(wait_state(id, "PROVISIONING"));
	for (int i = 0;; i++) {
		json_t *n, *j = get_job(id);
		int64_t node = first_node(j, 0);
		size_t k;
		bool booting = false;

		json_array_foreach(json_object_get(j, "nodes"), k, n) {
			if (json_integer_value(json_object_get(n, "id")) == node)
				booting = !strcmp(json_string_value(json_object_get(
						n, "state")), "BOOTING");
		}
		json_decref(j);
		if (booting)
			return node;
		assert_true(i < 1500);
		usleep(10000);
	}
}

/* Create a job from yaml, wait for its rank-0 node and register it as its
 * agent would; *node and ntok (80 bytes) get the node and its token. */
static inline int64_t start_registered(const char *yaml, int64_t *node,
				       char *ntok)
{
	char p[128];
	json_t *v = NULL;
	int64_t id = create_job(yaml);

	*node = wait_booting(id);
	node_token(*node, ntok);
	snprintf(p, sizeof p, "/v1/nodes/%lld/register", (long long)*node);
	assert_int_equal(jreq("POST", p, ntok, json_object(), &v), 200);
	json_decref(v);
	return id;
}

#endif
