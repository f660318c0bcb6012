/*
 * errmsg.c - the calling thread's last error message, and words for codes.
 *
 * Public functions that fail leave a message here (spotckpt_errmsg()) that
 * names the file, field or tensor at fault; the code itself is returned.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

_Static_assert((int)SPOTCKPT_EPARSE == (int)SR_EPARSE, "code mismatch");
_Static_assert((int)SPOTCKPT_ECHECKSUM == (int)SR_ECHECKSUM, "code mismatch");
_Static_assert((int)SPOTCKPT_ECORRUPT == (int)SR_ECORRUPT, "code mismatch");
_Static_assert((int)SPOTCKPT_ETIMEOUT == (int)SR_ETIMEOUT, "code mismatch");
_Static_assert((int)SPOTCKPT_ENOTFOUND == (int)SR_ENOTFOUND, "code mismatch");
_Static_assert((int)SPOTCKPT_ECONFLICT == (int)SR_ECONFLICT, "code mismatch");
_Static_assert((int)SPOTCKPT_EUNSUPPORTED == (int)SR_EUNSUPPORTED, "code mismatch");

static __thread char t_msg[SR_ERR_MSG_MAX];

int ckpt__fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t_msg, sizeof t_msg, fmt, ap);
	va_end(ap);
	return code;
}

int ckpt__fail_err(const struct sr_err *e, int code)
{
	snprintf(t_msg, sizeof t_msg, "%s", sr_err_str(e, code));
	return code;
}

int ckpt__fail_default(int code, const char *what)
{
	if (code < 0 && !t_msg[0])
		snprintf(t_msg, sizeof t_msg, "%s: %s", what, sr_strerror(code));
	return code;
}

void ckpt__errmsg_clear(void)
{
	t_msg[0] = '\0';
}

SPOTCKPT_API const char *spotckpt_errmsg(void)
{
	return t_msg;
}

SPOTCKPT_API const char *spotckpt_strerror(int code)
{
	return sr_strerror(code);
}

SPOTCKPT_API int32_t spotckpt_abi_version(void)
{
	return SPOTCKPT_ABI_VERSION;
}
