/* Unit tests: lib/common/json.c */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fsutil.h"
#include "common/json.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sr-json-XXXXXX");
	return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void test_load_errors(void **state)
{
	const char *txt = "{\n  \"a\": 1,\n  \"b\": [1, 2,,]\n}";
	struct sr_err e = { 0 };
	json_t *v;

	(void)state;
	v = sr_json_load_buf(txt, strlen(txt), "manifest.json", &e);
	assert_null(v);
	assert_int_equal(e.code, -SR_EPARSE);
	assert_memory_equal(e.msg, "manifest.json:3:", 16);

	v = sr_json_load_buf("{\"a\":1,\"a\":2}", 13, "dup", &e);
	assert_null(v);
	assert_non_null(strstr(e.msg, "dup:1:"));
	assert_non_null(strstr(e.msg, "duplicate"));

	v = sr_json_load_buf("", 0, NULL, &e);
	assert_null(v);
	assert_memory_equal(e.msg, "<json>:", 7);
	assert_null(sr_json_load_buf(NULL, 0, "x", &e));
	assert_int_equal(e.code, -EINVAL);

	v = sr_json_load_file("/nonexistent/spotrun.json", &e);
	assert_null(v);
	assert_int_equal(e.code, -ENOENT);
	assert_non_null(strstr(e.msg, "/nonexistent/spotrun.json"));

	v = sr_json_load_buf("42", 2, "n", &e); /* any top-level value */
	assert_non_null(v);
	json_decref(v);
}

static void test_getters(void **state)
{
	const char *txt = "{\"name\":\"a100\",\"count\":8,\"price\":3.5,\"spot\":true,"
			  "\"res\":{\"gpu\":1},\"tags\":[],\"nil\":null,\"big\":2}";
	struct sr_err e = { 0 };
	json_t *v = sr_json_load_buf(txt, strlen(txt), "t", &e), *o, *a;
	const char *s = "default";
	int64_t i = -1;
	double d = -1;
	bool b = false;

	(void)state;
	assert_non_null(v);
	assert_int_equal(sr_json_get_str(v, "name", &s, "job.json", &e), 0);
	assert_string_equal(s, "a100");
	assert_int_equal(sr_json_get_int(v, "count", &i, "job.json", &e), 0);
	assert_int_equal(i, 8);
	assert_int_equal(sr_json_get_num(v, "price", &d, "job.json", &e), 0);
	assert_true(d == 3.5);
	assert_int_equal(sr_json_get_num(v, "count", &d, "job.json", &e), 0);
	assert_true(d == 8.0);
	assert_int_equal(sr_json_get_bool(v, "spot", &b, "job.json", &e), 0);
	assert_true(b);
	assert_int_equal(sr_json_get_obj(v, "res", &o, "job.json", &e), 0);
	assert_true(json_is_object(o));
	assert_int_equal(sr_json_get_arr(v, "tags", &a, "job.json", &e), 0);
	assert_true(json_is_array(a));

	/* optional: absent or null leaves the default */
	s = "dflt";
	assert_int_equal(sr_json_get_str_opt(v, "region", &s, "job.json", &e), 0);
	assert_string_equal(s, "dflt");
	assert_int_equal(sr_json_get_str_opt(v, "nil", &s, "job.json", &e), 0);
	assert_string_equal(s, "dflt");
	i = 77;
	assert_int_equal(sr_json_get_int_opt(v, "zz", &i, "job.json", &e), 0);
	assert_int_equal(i, 77);
	d = 1.25;
	assert_int_equal(sr_json_get_num_opt(v, "zz", &d, "job.json", &e), 0);
	assert_true(d == 1.25);
	b = false;
	assert_int_equal(sr_json_get_bool_opt(v, "zz", &b, "job.json", &e), 0);
	assert_false(b);
	assert_int_equal(sr_json_get_int_opt(v, "big", &i, "job.json", &e), 0);
	assert_int_equal(i, 2);

	/* errors name the context and the field */
	assert_int_equal(sr_json_get_str(v, "region", &s, "job.json", &e), -SR_EPARSE);
	assert_string_equal(e.msg, "job.json: region: missing");
	assert_int_equal(sr_json_get_str(v, "nil", &s, "job.json", &e), -SR_EPARSE);
	assert_string_equal(e.msg, "job.json: nil: missing");
	assert_int_equal(sr_json_get_int(v, "price", &i, "job.json", &e), -SR_EPARSE);
	assert_string_equal(e.msg, "job.json: price: expected integer, got number");
	assert_int_equal(sr_json_get_str_opt(v, "count", &s, "tensors[2]", &e), -SR_EPARSE);
	assert_string_equal(e.msg, "tensors[2]: count: expected string, got integer");
	assert_int_equal(sr_json_get_bool_opt(v, "name", &b, NULL, &e), -SR_EPARSE);
	assert_string_equal(e.msg, "name: expected boolean, got string");
	assert_int_equal(sr_json_get_num_opt(v, "spot", &d, "x", &e), -SR_EPARSE);
	assert_string_equal(e.msg, "x: spot: expected number, got boolean");
	assert_int_equal(sr_json_get_obj(v, "tags", &o, "x", &e), -SR_EPARSE);
	assert_string_equal(e.msg, "x: tags: expected object, got array");
	assert_int_equal(sr_json_get_arr(v, "res", &a, "x", &e), -SR_EPARSE);
	assert_string_equal(e.msg, "x: res: expected array, got object");
	assert_int_equal(sr_json_get_arr(v, "nope", &a, "x", &e), -SR_EPARSE);
	assert_string_equal(e.msg, "x: nope: missing");
	assert_int_equal(sr_json_get_int(a, "k", &i, "x", &e), -SR_EPARSE);
	assert_string_equal(e.msg, "x: expected an object holding 'k'");
	assert_int_equal(sr_json_get_int(NULL, "k", &i, "x", &e), -SR_EPARSE);
	/* values untouched on failure */
	assert_int_equal(i, 2);
	json_decref(v);
}

static void test_check_keys(void **state)
{
	const char *const allowed[] = { "name", "count", NULL };
	struct sr_err e = { 0 };
	json_t *v = json_pack("{s:s,s:i}", "name", "x", "count", 1);

	(void)state;
	assert_int_equal(sr_json_check_keys(v, allowed, "job.json", &e), 0);
	json_object_set_new(v, "cuont", json_integer(2));
	assert_int_equal(sr_json_check_keys(v, allowed, "job.json", &e), -SR_EPARSE);
	assert_string_equal(e.msg, "job.json: unknown field 'cuont'");
	assert_int_equal(sr_json_check_keys(v, NULL, "job.json", &e), -SR_EPARSE);
	json_decref(v);
	v = json_array();
	assert_int_equal(sr_json_check_keys(v, allowed, "a", &e), -SR_EPARSE);
	assert_string_equal(e.msg, "a: expected an object");
	json_decref(v);
}

static void test_dump_and_write(void **state)
{
	struct sr_err e = { 0 };
	json_t *v = json_pack("{s:i,s:s,s:[i,i]}", "zeta", 1, "alpha", "x", "mid", 1, 2);
	json_t *back;
	char path[128], *s;
	struct stat st;

	(void)state;
	s = sr_json_dump(v);
	assert_string_equal(s, "{\"alpha\":\"x\",\"mid\":[1,2],\"zeta\":1}");
	free(s);

	snprintf(path, sizeof(path), "%s/state.json", dir);
	assert_int_equal(sr_json_write_file(v, path, &e), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	back = sr_json_load_file(path, &e);
	assert_non_null(back);
	assert_true(json_equal(v, back));
	json_decref(back);
	assert_int_equal(sr_fs_read_file(path, 1 << 20, &s, NULL, &e), 0);
	assert_memory_equal(s, "{\n  \"alpha\"", 11);
	assert_int_equal(s[strlen(s) - 1], '\n');
	free(s);

	snprintf(path, sizeof(path), "%s/no/such/dir/x.json", dir);
	assert_true(sr_json_write_file(v, path, &e) < 0);
	assert_non_null(strstr(e.msg, "x.json"));
	json_decref(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_getters),
		cmocka_unit_test(test_check_keys),
		cmocka_unit_test(test_dump_and_write),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
