/* Unit tests: lib/common/text - unsafe characters in names (controls,
 * bidi overrides, invalid UTF-8) found and escaped for a terminal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"

static void test_unsafe(void **state)
{
	size_t off = 0;
	unsigned cp = 0;

	(void)state;
	assert_int_equal(sr_text_unsafe("llama-8b ft", NULL, NULL), 0);
	assert_int_equal(sr_text_unsafe("caf\xc3\xa9 \xe6\x97\xa5", NULL, NULL), 0);
	assert_int_equal(sr_text_unsafe("a\x1b[2J", &off, &cp), 1);
	assert_int_equal(off, 1);
	assert_int_equal(cp, 0x1b);
	assert_int_equal(sr_text_unsafe("ab\x7f", &off, &cp), 1);
	assert_int_equal(cp, 0x7f);
	assert_int_equal(sr_text_unsafe("evil\xe2\x80\xaeh", &off, &cp), 1);
	assert_int_equal(off, 4);
	assert_int_equal(cp, 0x202e);
	assert_int_equal(sr_text_unsafe("x\xe2\x81\xa6", &off, &cp), 1);  /* U+2066 */
	assert_int_equal(sr_text_unsafe("x\xc2\x85", &off, &cp), 1);      /* C1 NEL */
	assert_int_equal(sr_text_unsafe("x\xc0\xaf", &off, &cp), 1);      /* overlong */
	assert_int_equal(cp, 0xc0);
	assert_int_equal(sr_text_unsafe("x\xed\xa0\x80", NULL, NULL), 1); /* surrogate */
	assert_int_equal(sr_text_unsafe("x\xe2\x80", NULL, NULL), 1);     /* cut */
	/* line and paragraph separators, byte-order mark (issue 24) */
	assert_int_equal(sr_text_unsafe("a\xe2\x80\xa8", NULL, &cp), 1);
	assert_int_equal(cp, 0x2028);
	assert_int_equal(sr_text_unsafe("a\xe2\x80\xa9", NULL, &cp), 1);
	assert_int_equal(cp, 0x2029);
	assert_int_equal(sr_text_unsafe("\xef\xbb\xbf", NULL, &cp), 1);
	assert_int_equal(cp, 0xfeff);
}

static void test_escape(void **state)
{
	char *s;

	(void)state;
	s = sr_text_escape("plain\\name");
	assert_string_equal(s, "plain\\name"); /* nothing unsafe: as is */
	free(s);
	s = sr_text_escape("a\x1b[2Jb\\");
	assert_string_equal(s, "a\\x1b[2Jb\\\\");
	free(s);
	s = sr_text_escape("evil\xe2\x80\xaeh.sh \xc3\xa9\xff");
	assert_string_equal(s, "evil\\u{202E}h.sh \xc3\xa9\\xff");
	free(s);
	s = sr_text_escape("");
	assert_string_equal(s, "");
	free(s);
}

/* FNV-1a's published 64-bit vectors; a caller's own start carries on. */
static void test_fnv1a(void **state)
{
	(void)state;
	assert_true(sr_text_fnv1a("", SR_FNV1A_BASIS) == SR_FNV1A_BASIS);
	assert_true(sr_text_fnv1a("a", SR_FNV1A_BASIS) ==
		    UINT64_C(0xaf63dc4c8601ec8c));
	assert_true(sr_text_fnv1a("foobar", SR_FNV1A_BASIS) ==
		    UINT64_C(0x85944171f73967e8));
	assert_true(sr_text_fnv1a("bar", sr_text_fnv1a("foo", SR_FNV1A_BASIS)) ==
		    sr_text_fnv1a("foobar", SR_FNV1A_BASIS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unsafe),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_fnv1a),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
