/* Unit tests: spotrund's API against the faults of issue 10 - a retried
 * POST /v1/jobs (Idempotency-Key), auth scheme case, oversize ids and
 * queries, libmicrohttpd's own errors as JSON, limits shared by the job
 * file and the API, names with control characters, and node reports for
 * an attempt that is not the node's. */
#include "ctl_fixture.h"
#include "ctl/api_body.h"
#include "ctl/secrets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static const char *job_body =
	"{\"spec_yaml\":\"name: idem\\nresources:\\n  accelerators: V100:1\\n"
	"  use_spot: false\\nrun: echo hi\\nspotrun:\\n  deadline: 100h\\n"
	"  work: 2h\\n\"}";

static int64_t job_id_of(json_t *v)
{
	return json_integer_value(json_object_get(json_object_get(v, "job"), "id"));
}

static int count_jobs(void)
{
	json_t *v = NULL;
	int n;

	assert_int_equal(jreq("GET", "/v1/jobs", ctl_admin_token(ctl), NULL, &v),
			 200);
	n = (int)json_array_size(json_object_get(v, "jobs"));
	json_decref(v);
	return n;
}

static void test_idempotency_key(void **state)
{
	const char *tok = ctl_admin_token(ctl);
	const char *k1 = "Idempotency-Key: 3f2a9c1e8b7d6a5f4e3d2c1b0a998877";
	const char *other = "{\"spec_yaml\":\"run: x\\n\"}";
	json_t *v = NULL;
	int64_t id;

	(void)state;
	assert_int_equal(req_hdr("POST", "/v1/jobs", tok, "application/json", k1,
				 job_body, strlen(job_body), &v, NULL), 201);
	id = job_id_of(v);
	assert_true(id > 0);
	json_decref(v);
	/* the same request again (a retry): the same job, not a new one */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(req_hdr("POST", "/v1/jobs", tok, "application/json",
					 k1, job_body, strlen(job_body), &v, NULL),
				 200);
		assert_int_equal(job_id_of(v), id);
		json_decref(v);
	}
	assert_int_equal(count_jobs(), 1);
	/* the key with another body is a client bug: 409, nothing created */
	assert_int_equal(req_hdr("POST", "/v1/jobs", tok, "application/json", k1,
				 other, strlen(other), &v, NULL), 409);
	assert_non_null(strstr(err_msg(v), "different request"));
	json_decref(v);
	/* a malformed key */
	assert_int_equal(req_hdr("POST", "/v1/jobs", tok, "application/json",
				 "Idempotency-Key: a b", job_body,
				 strlen(job_body), &v, NULL), 400);
	assert_non_null(strstr(err_msg(v), "Idempotency-Key"));
	json_decref(v);
	/* no key: each POST is a new job */
	assert_int_equal(req("POST", "/v1/jobs", tok, "application/json",
			     job_body, strlen(job_body), &v, NULL), 201);
	assert_int_not_equal(job_id_of(v), id);
	json_decref(v);
	assert_int_equal(count_jobs(), 2);
}

/* "Smaller" items of issue 10. */
static void test_scheme_ids_queries(void **state)
{
	const char *tok = ctl_admin_token(ctl);
	char hdr[200], path[400], *q;
	json_t *v = NULL;

	(void)state;
	/* the auth scheme is case-insensitive (RFC 9110) */
	snprintf(hdr, sizeof hdr, "Authorization: bearer %s", tok);
	assert_int_equal(req_hdr("GET", "/v1/jobs", NULL, NULL, hdr, NULL, 0, &v,
				 NULL), 200);
	json_decref(v);
	snprintf(hdr, sizeof hdr, "Authorization: BEARER  %s", tok);
	assert_int_equal(req_hdr("GET", "/v1/jobs", NULL, NULL, hdr, NULL, 0, &v,
				 NULL), 200);
	json_decref(v);
	assert_int_equal(req_hdr("GET", "/v1/jobs", NULL, NULL,
				 "Authorization: Basic Zm9vOmJhcg==", NULL, 0, &v,
				 NULL), 401);
	json_decref(v);
	/* a 200-digit id is a bad id, not an unknown route */
	memcpy(path, "/v1/jobs/", 9);
	memset(path + 9, '7', 200);
	path[209] = '\0';
	assert_int_equal(jreq("GET", path, tok, NULL, &v), 400);
	assert_string_equal(err_code(v), "bad_request");
	assert_non_null(strstr(err_msg(v), "path parameter id"));
	json_decref(v);
	/* the documented 1,024-byte query limit */
	q = malloc(1200);
	assert_non_null(q);
	strcpy(q, "/v1/jobs?limit=5&pad=");
	memset(q + strlen(q), 'x', 1024 - strlen("limit=5&pad=") + 1);
	q[strlen("/v1/jobs?") + 1025] = '\0';
	assert_int_equal(jreq("GET", q, tok, NULL, &v), 400);
	assert_non_null(strstr(err_msg(v), "query string longer than 1024"));
	json_decref(v);
	q[strlen(q) - 1] = '\0'; /* exactly 1024 */
	assert_int_equal(jreq("GET", q, tok, NULL, &v), 200);
	json_decref(v);
	free(q);
}

/* One raw request (Connection: close) of head + pad bytes of 'a' at
 * "%PAD%"; the whole answer, malloc'd. */
static char *raw(const char *head, size_t pad)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	const char *at = strstr(head, "%PAD%");
	size_t cap = 1 << 16, len = 0;
	char *out = malloc(cap), *req;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t rl;
	ssize_t n;

	assert_non_null(out);
	assert_true(fd >= 0);
	sa.sin_port = htons((uint16_t)ctl_port(ctl));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	rl = strlen(head) + pad;
	req = malloc(rl + 1);
	assert_non_null(req);
	if (at) {
		size_t pre = (size_t)(at - head);

		memcpy(req, head, pre);
		memset(req + pre, 'a', pad);
		strcpy(req + pre + pad, at + 5);
		rl -= 5;
	} else {
		strcpy(req, head);
	}
	for (size_t off = 0; off < rl; off += (size_t)n) {
		n = send(fd, req + off, rl - off, MSG_NOSIGNAL);
		if (n <= 0)
			break; /* the server may answer and close early */
	}
	while ((n = recv(fd, out + len, cap - 1 - len, 0)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(fd);
	free(req);
	return out;
}

/* status, and whether the answer is our JSON error with that code */
static int raw_status(const char *ans, const char *code)
{
	char want[80];

	snprintf(want, sizeof want, "\"code\":\"%s\"", code);
	if (!strstr(ans, "Content-Type: application/json") || !strstr(ans, want))
		return -1;
	return atoi(ans + strlen("HTTP/1.1 "));
}

/* Heads over our limits but within libmicrohttpd's pool reach the
 * handler and get JSON (were: HTML pages from libmicrohttpd). */
static void test_oversize_heads_json(void **state)
{
	static const char hdr[] = "GET /v1/jobs HTTP/1.1\r\nHost: x\r\n"
				  "X-Big: %PAD%\r\nConnection: close\r\n\r\n";
	static const char uri[] = "GET /v1/%PAD% HTTP/1.1\r\nHost: x\r\n"
				  "Connection: close\r\n\r\n";
	char *a;

	(void)state;
	a = raw(hdr, CTL_HEADERS_MAX / 2);
	assert_int_equal(raw_status(a, "unauthorized"), 401); /* under: routed */
	free(a);
	a = raw(hdr, CTL_HEADERS_MAX + 1);
	assert_int_equal(raw_status(a, "headers_too_large"), 431);
	free(a);
	a = raw(hdr, 48 * 1024);  /* over libmicrohttpd's default pool */
	assert_int_equal(raw_status(a, "headers_too_large"), 431);
	free(a);
	a = raw(uri, 40 * 1024);
	assert_int_equal(raw_status(a, "bad_request"), 400);
	assert_non_null(strstr(a, "longer than 1024 bytes"));
	free(a);
	/* the residue docs/api.md lists: libmicrohttpd answers these itself,
	 * before any callback (the status is right; the body is its own) */
	a = raw("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n"
		"Connection: close\r\n\r\n", 0);
	assert_int_equal(atoi(a + strlen("HTTP/1.1 ")), 400);
	free(a);
	a = raw(hdr, CTL_CONN_MEMORY + 1024);
	assert_int_equal(atoi(a + strlen("HTTP/1.1 ")), 431);
	free(a);
}

/* Two framings of one body are refused, never guessed between: a proxy
 * in front could read the other one (request smuggling). */
static void test_ambiguous_framing(void **state)
{
	char *a;

	(void)state;
	a = raw("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
		"Content-Length: 40\r\nConnection: close\r\n\r\n{}", 0);
	assert_int_equal(raw_status(a, "bad_request"), 400);
	assert_non_null(strstr(a, "more than one Content-Length"));
	free(a);
	a = raw("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n"
		"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
		"2\r\n{}\r\n0\r\n\r\n", 0);
	assert_int_equal(raw_status(a, "bad_request"), 400);
	assert_non_null(strstr(a, "both Content-Length and Transfer-Encoding"));
	free(a);
	/* one Content-Length, as every client sends: routed (no token) */
	a = raw("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
		"Content-Type: application/json\r\nConnection: close\r\n\r\n"
		"{}", 0);
	assert_int_equal(raw_status(a, "unauthorized"), 401);
	free(a);
}

static long post_yaml(const char *yaml, json_t **v)
{
	return jreq("POST", "/v1/jobs", ctl_admin_token(ctl),
		    json_pack("{s:s}", "spec_yaml", yaml), v);
}

static void test_limits_and_names(void **state)
{
	json_t *v = NULL;

	(void)state;
	/* one table: what the job file refuses, the API refuses with a 400
	 * (was: accepted, then a 500 from the schema) */
	assert_int_equal(post_yaml("num_nodes: 1025\nresources:\n  accelerators: "
				   "V100:1\nrun: x\n", &v), 400);
	assert_non_null(strstr(err_msg(v), "1..1024"));
	json_decref(v);
	assert_int_equal(post_yaml("resources:\n  accelerators: V100:1\nrun: x\n"
				   "spotrun:\n  max_restarts: 5000\n", &v), 400);
	assert_non_null(strstr(err_msg(v), "0..1000"));
	json_decref(v);
	assert_int_equal(jreq("POST", "/v1/jobs", ctl_admin_token(ctl),
			      json_pack("{s:s,s:i}", "spec_yaml", "run: x\n",
					"max_restarts", 1001), &v), 400);
	assert_non_null(strstr(err_msg(v), "0 to 1000"));
	json_decref(v);
	/* names with ESC or U+202E are refused */
	assert_int_equal(post_yaml("name: \"a\\e[2Jb\"\nresources:\n  accelerators:"
				   " V100:1\nrun: x\n", &v), 400);
	assert_non_null(strstr(err_msg(v), "U+001B at byte 1"));
	json_decref(v);
	assert_int_equal(post_yaml("name: \"evil\xe2\x80\xaeh.sh\"\nresources:\n"
				   "  accelerators: V100:1\nrun: x\n", &v), 400);
	assert_non_null(strstr(err_msg(v), "U+202E"));
	json_decref(v);
	assert_int_equal(jreq("POST", "/v1/jobs", ctl_admin_token(ctl),
			      json_pack("{s:s,s:s}", "spec_yaml", "run: x\n",
					"spec_name", "x\x1b.yaml"), &v), 400);
	assert_non_null(strstr(err_msg(v), "spec_name"));
	json_decref(v);
	assert_int_equal(count_jobs(), 0);
}

/* A node reports an exit for attempt 999: refused, nothing recorded. */
static void test_exit_for_a_wrong_attempt(void **state)
{
	char ntok[80], p[128];
	json_t *v = NULL, *j;
	int64_t id, node;

	(void)state;
	id = start_registered(job_od, &node, ntok);
	j = wait_state(id, "RUNNING");
	json_decref(j);
	snprintf(p, sizeof p, "/v1/nodes/%lld/report", (long long)node);
	assert_int_equal(jreq("POST", p, ntok, json_pack("{s:[{s:s,s:i,s:i,s:s}]}",
			      "events", "type", "exit", "attempt", 999,
			      "exit_code", 0, "cause", "completed"), &v), 400);
	assert_non_null(strstr(err_msg(v), "attempt 999"));
	json_decref(v);
	assert_int_equal(jreq("POST", p, ntok, json_pack("{s:[{s:s,s:i,s:i,s:s}]}",
			      "events", "type", "exit", "attempt", 0,
			      "exit_code", 0, "cause", "completed"), &v), 400);
	json_decref(v);
	j = get_job(id);
	assert_string_equal(json_string_value(json_object_get(j, "state")),
			    "RUNNING");
	json_decref(j);
	/* the right attempt is taken */
	assert_int_equal(jreq("POST", p, ntok, json_pack("{s:[{s:s,s:i,s:i,s:s}]}",
			      "events", "type", "exit", "attempt", 1,
			      "exit_code", 0, "cause", "completed"), &v), 200);
	json_decref(v);
	json_decref(wait_state(id, "SUCCEEDED"));
}

/* Issue 10 item 4: a state dir that already exists 0755, holding a 0644
 * database, is tightened (0700, 0600, the WAL too); a group- or
 * world-writable one is refused. */
static void test_state_dir_permissions(void **state)
{
	struct ctl_config cfg;
	struct sr_err e = { 0 };
	struct ctl *c = NULL;
	char d[64], p[128];
	struct stat sb;
	FILE *f;

	(void)state;
	sr_log_set_level(SR_LOG_OFF);
	snprintf(d, sizeof d, "/tmp/sr-perm-XXXXXX");
	assert_non_null(mkdtemp(d));
	assert_int_equal(chmod(d, 0755), 0);
	snprintf(p, sizeof p, "%s/spotrun.db", d);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(chmod(p, 0644), 0);
	ctl_config_defaults(&cfg);
	cfg.state_dir = d;
	cfg.listen_port = 0;
	cfg.data_dir = "data";
	cfg.agent_path = "/bin/true";
	assert_int_equal(ctl_start(&cfg, &c, &e), 0);
	assert_int_equal(stat(d, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	snprintf(p, sizeof p, "%s/spotrun.db-wal", d);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0077, 0);
	ctl_stop(c);
	c = NULL;
	/* others may write it: refused, with what to do */
	assert_int_equal(chmod(d, 0777), 0);
	sr_err_clear(&e);
	assert_int_equal(ctl_start(&cfg, &c, &e), -EACCES);
	assert_null(c);
	assert_non_null(strstr(e.msg, "mode 777"));
	assert_non_null(strstr(e.msg, "chmod 700"));
	assert_int_equal(chmod(d, 0700), 0);
	snprintf(p, sizeof p, "rm -rf '%s'", d);
	assert_int_equal(system(p), 0);
	sr_log_set_level(SR_LOG_WARN);
}

/* Issue 10 item 6: a listen address other hosts can reach needs TLS
 * (refused before anything is bound). */
static void test_listen_needs_tls(void **state)
{
	struct ctl_config cfg;
	struct sr_err e = { 0 };
	struct ctl *c = NULL;
	char d[64], cmd[128];

	(void)state;
	snprintf(d, sizeof d, "/tmp/sr-listen-XXXXXX");
	assert_non_null(mkdtemp(d));
	ctl_config_defaults(&cfg);
	cfg.state_dir = d;
	cfg.listen_host = "0.0.0.0";
	cfg.listen_port = 0;
	cfg.data_dir = "data";
	cfg.agent_path = "/bin/true";
	assert_int_equal(ctl_start(&cfg, &c, &e), -EACCES);
	assert_non_null(strstr(e.msg, "--listen 0.0.0.0"));
	assert_non_null(strstr(e.msg, "--tls-cert"));
	assert_non_null(strstr(e.msg, "--insecure-listen"));
	/* a key without a certificate is a usage error */
	cfg.tls_key = "/nonexistent.key";
	sr_err_clear(&e);
	assert_int_equal(ctl_start(&cfg, &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--tls-cert and --tls-key"));
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
	assert_int_equal(system(cmd), 0);
}

/* True if the file at path holds the bytes of needle. */
static bool file_has(const char *path, const char *needle)
{
	char *buf = NULL;
	size_t n = 0;
	bool found = false;

	if (sr_fs_read_file(path, 64 << 20, &buf, &n, NULL) < 0)
		return false;
	found = memmem(buf, n, needle, strlen(needle)) != NULL;
	free(buf);
	return found;
}

/* Issue 10 item 4: secret values are never in the database in clear
 * (not in the YAML, the spec, the envs, the WAL), yet the node gets them. */
static void test_secrets_sealed(void **state)
{
	static const char yaml[] =
		"name: sec\nresources:\n  accelerators: V100:1\n  use_spot: false\n"
		"secrets:\n  WANDB_API_KEY: sk-live-AAAA1234\n  HF_TOKEN:\n"
		"envs:\n  PLAIN: visible\nrun: echo hi\n"
		"spotrun:\n  deadline: 100h\n  work: 2h\n";
	const char *tok = ctl_admin_token(ctl);
	char ntok[80], p[160], db[128];
	json_t *v = NULL, *j, *envs;
	int64_t id, node;

	(void)state;
	/* a secret without a value anywhere: refused, naming it */
	assert_int_equal(jreq("POST", "/v1/jobs", tok, json_pack("{s:s}",
			      "spec_yaml", yaml), &v), 400);
	assert_non_null(strstr(err_msg(v), "secrets.HF_TOKEN"));
	json_decref(v);
	assert_int_equal(jreq("POST", "/v1/jobs", tok, json_pack("{s:s,s:{s:s}}",
			      "spec_yaml", yaml, "envs", "HF_TOKEN",
			      "hf-secret-BBBB"), &v), 201);
	id = job_id_of(v);
	json_decref(v);
	/* the API shows the keys, not the values */
	j = get_job(id);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
		json_object_get(j, "spec"), "secrets"), "WANDB_API_KEY")),
		"<redacted>");
	json_decref(j);
	/* the node gets them */
	node = wait_booting(id);
	node_token(node, ntok);
	snprintf(p, sizeof p, "/v1/nodes/%lld/register", (long long)node);
	assert_int_equal(jreq("POST", p, ntok, json_object(), &v), 200);
	envs = json_object_get(v, "envs");
	assert_string_equal(json_string_value(json_object_get(envs, "WANDB_API_KEY")),
			    "sk-live-AAAA1234");
	assert_string_equal(json_string_value(json_object_get(envs, "HF_TOKEN")),
			    "hf-secret-BBBB");
	assert_string_equal(json_string_value(json_object_get(envs, "PLAIN")),
			    "visible");
	json_decref(v);
	/* nowhere in the database files */
	snprintf(db, sizeof db, "%s/spotrun.db", dir);
	snprintf(p, sizeof p, "%s/spotrun.db-wal", dir);
	assert_true(file_has(db, "visible") || file_has(p, "visible"));
	assert_false(file_has(db, "sk-live-AAAA1234"));
	assert_false(file_has(p, "sk-live-AAAA1234"));
	assert_false(file_has(db, "hf-secret-BBBB"));
	assert_false(file_has(p, "hf-secret-BBBB"));
}

static void test_secrets_yaml_redaction(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "name: a\nsecrets:\n  K: v1\n  L: 'v 2'\nrun: x\n",
		  "name: a\nsecrets:\n  K: \"<redacted>\"\n  L: \"<redacted>\"\nrun: x\n" },
		{ "secrets: {K: v1, L: \"v2\"}\nenvs: {K: keep}\n",
		  "secrets: {K: \"<redacted>\", L: \"<redacted>\"}\nenvs: {K: keep}\n" },
		{ "secrets:\n  K:\n  L: v\nrun: x\n",
		  "secrets:\n  K:\n  L: \"<redacted>\"\nrun: x\n" },
		{ "envs:\n  secrets: not-this\nrun: x\n",
		  "envs:\n  secrets: not-this\nrun: x\n" },
	};
	char *out = NULL;
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_int_equal(ctl_secrets_redact_yaml(cases[i].in,
				 strlen(cases[i].in), &out, &n), 0);
		assert_string_equal(out, cases[i].out);
		assert_int_equal(n, strlen(cases[i].out));
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_idempotency_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scheme_ids_queries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits_and_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversize_heads_json, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ambiguous_framing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_exit_for_a_wrong_attempt, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_secrets_sealed, setup, teardown),
		cmocka_unit_test(test_secrets_yaml_redaction),
		cmocka_unit_test(test_state_dir_permissions),
		cmocka_unit_test(test_listen_needs_tls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
