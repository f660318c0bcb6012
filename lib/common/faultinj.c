/*
 * faultinj.c - the wrappers behind faultinj.h.
 *
 * Each __wrap_X counts the call when X's kind is armed and fails it when
 * the count reaches the target; otherwise it calls __real_X.  The
 * __real_ symbols exist only in a link with --wrap=X, so they are weak:
 * in other programs they are NULL and nothing here is ever called.
 */
#include "faultinj.h"

#include <errno.h>
#include <execinfo.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#define W __attribute__((weak))

void *__real_malloc(size_t n) W;
void *__real_calloc(size_t a, size_t b) W;
void *__real_realloc(void *p, size_t n) W;
char *__real_strdup(const char *s) W;
ssize_t __real_write(int fd, const void *b, size_t n) W;
ssize_t __real_pwrite(int fd, const void *b, size_t n, off_t off) W;
int __real_fsync(int fd) W;
int __real_fdatasync(int fd) W;
int __real_curl_easy_perform(void *h) W;

static atomic_uint armed;          /* mask of armed kinds */
static atomic_uint_fast64_t count; /* armed calls since sr_fault_arm */
static atomic_uint_fast64_t target;
static atomic_uint_fast64_t fired;
static atomic_bool persistent, linked;
static atomic_int fail_errno = EIO;

void sr_fault_arm(unsigned mask, uint64_t n, bool persist, int errno_)
{
	atomic_store(&armed, 0);
	atomic_store(&count, 0);
	atomic_store(&fired, 0);
	atomic_store(&target, n);
	atomic_store(&persistent, persist);
	atomic_store(&fail_errno, errno_ ? errno_ : EIO);
	atomic_store(&armed, mask);
}

uint64_t sr_fault_disarm(void)
{
	atomic_store(&armed, 0);
	return atomic_load(&count);
}

uint64_t sr_fault_fired(void)
{
	return atomic_load(&fired);
}

bool sr_fault_linked(void)
{
	return atomic_load(&linked);
}

bool sr_fault_hit(unsigned kind)
{
	uint64_t k, t;

	atomic_store_explicit(&linked, true, memory_order_relaxed);
	if (!(atomic_load_explicit(&armed, memory_order_relaxed) & kind))
		return false;
	k = atomic_fetch_add(&count, 1) + 1;
	t = atomic_load(&target);
	if (k == t || (k > t && atomic_load(&persistent))) {
		atomic_fetch_add(&fired, 1);
		if (getenv("SR_FAULT_TRACE")) {
			/* where the injected failure hit: to find the caller
			 * that reports no message */
			void *pcs[32];
			int npc = backtrace(pcs, 32);

			backtrace_symbols_fd(pcs, npc, 2);
		}
		return true;
	}
	return false;
}

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
	if (sr_fault_hit(SR_FAULT_MALLOC)) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_malloc(n);
}

void *__wrap_calloc(size_t a, size_t b);
void *__wrap_calloc(size_t a, size_t b)
{
	if (sr_fault_hit(SR_FAULT_MALLOC)) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(a, b);
}

void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
	if (sr_fault_hit(SR_FAULT_MALLOC)) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, n);
}

char *__wrap_strdup(const char *s);
char *__wrap_strdup(const char *s)
{
	if (sr_fault_hit(SR_FAULT_MALLOC)) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_strdup(s);
}

ssize_t __wrap_write(int fd, const void *b, size_t n);
ssize_t __wrap_write(int fd, const void *b, size_t n)
{
	if (sr_fault_hit(SR_FAULT_WRITE)) {
		errno = atomic_load(&fail_errno);
		return -1;
	}
	return __real_write(fd, b, n);
}

ssize_t __wrap_pwrite(int fd, const void *b, size_t n, off_t off);
ssize_t __wrap_pwrite(int fd, const void *b, size_t n, off_t off)
{
	if (sr_fault_hit(SR_FAULT_WRITE)) {
		errno = atomic_load(&fail_errno);
		return -1;
	}
	return __real_pwrite(fd, b, n, off);
}

int __wrap_fsync(int fd);
int __wrap_fsync(int fd)
{
	if (sr_fault_hit(SR_FAULT_FSYNC)) {
		errno = atomic_load(&fail_errno);
		return -1;
	}
	return __real_fsync(fd);
}

int __wrap_fdatasync(int fd);
int __wrap_fdatasync(int fd)
{
	if (sr_fault_hit(SR_FAULT_FSYNC)) {
		errno = atomic_load(&fail_errno);
		return -1;
	}
	return __real_fdatasync(fd);
}

int __wrap_curl_easy_perform(void *h);
int __wrap_curl_easy_perform(void *h)
{
	if (sr_fault_hit(SR_FAULT_HTTP))
		return 7; /* CURLE_COULDNT_CONNECT */
	return __real_curl_easy_perform(h);
}
