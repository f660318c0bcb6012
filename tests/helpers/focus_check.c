/*
 * focus_check.c - FILE.csv [FILE-contract-commitment.csv]: run the FOCUS
 * 1.3 checker (tests/unit/focus_check.h) over every row of an export that
 * spotrun cost --focus wrote, as tests/py/test_finops_focus13.py does on
 * a live daemon's.  Prints "ok N rows" and exits 0, or the first broken
 * rule (row, column, value, the spec section) and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>

/* the checker's cmocka vocabulary, outside cmocka */
#define fail_msg(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr), exit(1))
#define assert_true(c) do { if (!(c)) fail_msg("assertion failed: %s", #c); } while (0)
#define assert_int_equal(a, b) assert_true((a) == (b))
#define MAXR 4096

#include "common/fsutil.h"
#include "../unit/finops_fixture.h"
#include "../unit/focus_check.h"

static struct csv cu, cc;

int main(int argc, char **argv)
{
	char *a = NULL, *b = NULL;

	if (argc < 2 || argc > 3)
		fail_msg("usage: focus_check COST_AND_USAGE.csv [CONTRACT_COMMITMENT.csv]");
	if (sr_fs_read_file(argv[1], 64 << 20, &a, NULL, NULL))
		fail_msg("%s: cannot read", argv[1]);
	csv_parse(a, &cu);
	if (argc == 3) {
		if (sr_fs_read_file(argv[2], 64 << 20, &b, NULL, NULL))
			fail_msg("%s: cannot read", argv[2]);
		csv_parse(b, &cc);
		fc_check_cc(&cc);
	}
	fc_check_cu(&cu, argc == 3 ? &cc : NULL);
	printf("ok %d rows\n", cu.nrows - 1);
	csv_free(&cu);
	csv_free(&cc);
	free(a);
	free(b);
	return 0;
}
