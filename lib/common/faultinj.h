/*
 * faultinj.h - make the N-th malloc, write, fsync, database step or HTTP
 * transfer fail, SQLite-style, to test every failure path.
 *
 * DESIGN.  The wrappers in faultinj.c (__wrap_malloc, __wrap_pwrite, ...)
 * are only called in a program linked with the linker's --wrap=SYMBOL
 * for those symbols (the Makefile does so for tests/unit/test_faultinj*):
 * then every call from our own objects goes through a wrapper, which
 * counts it and, once armed, fails the N-th call of the armed kinds the
 * way the real function fails (NULL + ENOMEM, -1 + EIO/ENOSPC,
 * SQLITE_IOERR, CURLE_COULDNT_CONNECT).  Calls from inside shared
 * libraries (libc, libsqlite3, libcurl) are not counted.  In every other
 * program the wrappers are dead code and the counters stay at zero.
 *
 * The counters are atomics: calls from any thread count.  With
 * $SR_FAULT_TRACE set, each injected failure prints a backtrace of where
 * it hit to stderr.
 */
#ifndef SR_COMMON_FAULTINJ_H
#define SR_COMMON_FAULTINJ_H

#include <stdbool.h>
#include <stdint.h>

enum sr_fault_kind {
	SR_FAULT_MALLOC = 1 << 0, /* malloc, calloc, realloc, strdup */
	SR_FAULT_WRITE = 1 << 1,  /* write, pwrite */
	SR_FAULT_FSYNC = 1 << 2,  /* fsync, fdatasync */
	SR_FAULT_SQLITE = 1 << 3, /* SQLite step (lib/store/store_sqlite.c) */
	SR_FAULT_HTTP = 1 << 4,   /* curl_easy_perform */
	SR_FAULT_ALL = 0x1f,
};

/* Fail the n-th (1-based) call of the kinds in `mask` from now on; with
 * `persist`, that call and every later one of those kinds fail.  errno_
 * is what a failing write/fsync sets (EIO, ENOSPC, ...). */
void sr_fault_arm(unsigned mask, uint64_t n, bool persist, int errno_);
/* Stop failing.  Returns how many calls of the armed kinds were made
 * since sr_fault_arm (so a sweep knows when N went past the last one). */
uint64_t sr_fault_disarm(void);
/* How many injected failures happened since sr_fault_arm. */
uint64_t sr_fault_fired(void);
/* True in a program linked with the wrappers (a call was counted). */
bool sr_fault_linked(void);
/* Count a call of `kind`; true if it must fail (for a wrapper kept next
 * to the code it wraps, like lib/store's SQLite step). */
bool sr_fault_hit(unsigned kind);

#endif
