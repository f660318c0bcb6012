/*
 * store_bridge.h - for tests that build a database with raw SQLite calls:
 * ON_STORE(db, s, expr) evaluates expr (an int) with `s`, a struct store
 * over the connection db (lib/store's store_bridge), and closes that
 * store (not db) after it.  Include after cmocka.h.
 */
#ifndef SR_TEST_STORE_BRIDGE_H
#define SR_TEST_STORE_BRIDGE_H

#include "store/store.h"

#define ON_STORE(db, s, expr)                                              \
	({                                                                 \
		struct store *s = NULL, *s##_tmp = NULL;                   \
		struct sr_err s##_e = { 0 };                               \
		int s##_rc;                                                \
		assert_int_equal(store_bridge((db), &s, &s##_tmp, &s##_e), 0); \
		s##_rc = (expr);                                           \
		store_close(s##_tmp);                                      \
		s##_rc;                                                    \
	})

#endif
