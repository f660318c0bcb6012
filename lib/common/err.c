/*
 * err.c - error codes to words, and the sr_err context message.
 */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const sr_msgs[] = {
	[SR_EPARSE - SR_E_BASE] = "malformed input",
	[SR_ECHECKSUM - SR_E_BASE] = "checksum mismatch",
	[SR_ECORRUPT - SR_E_BASE] = "corrupt file or object",
	[SR_EHTTP - SR_E_BASE] = "HTTP failure",
	[SR_ETIMEOUT - SR_E_BASE] = "timed out",
	[SR_ENOTFOUND - SR_E_BASE] = "not found",
	[SR_ECONFLICT - SR_E_BASE] = "conflicting state",
	[SR_EUNSUPPORTED - SR_E_BASE] = "not supported",
};

const char *sr_strerror(int code)
{
	static __thread char buf[128];
	int c = -code;

	if (code == 0)
		return "success";
	if (code > 0)
		return "invalid error code (positive)";
	if (c > SR_E_BASE && c < SR_E_LAST)
		return sr_msgs[c - SR_E_BASE];
	if (c >= SR_E_BASE)
		return "unknown spotrun error";
	/* GNU strerror_r: may return a static string or fill buf. */
	return strerror_r(c, buf, sizeof(buf));
}

void sr_err_clear(struct sr_err *e)
{
	if (e == NULL)
		return;
	e->code = 0;
	e->msg[0] = '\0';
}

int sr_err_set(struct sr_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return code;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return code;
}

int sr_err_prefix(struct sr_err *e, const char *fmt, ...)
{
	char old[SR_ERR_MSG_MAX];
	char pre[SR_ERR_MSG_MAX];
	char both[2 * SR_ERR_MSG_MAX + 2];
	va_list ap;

	if (e == NULL)
		return 0;
	memcpy(old, e->msg, sizeof(old));
	old[sizeof(old) - 1] = '\0';
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	if (old[0] == '\0' && e->code != 0)
		snprintf(old, sizeof(old), "%s", sr_strerror(e->code));
	snprintf(both, sizeof(both), "%s: %s", pre, old);
	memcpy(e->msg, both, sizeof(e->msg));
	e->msg[sizeof(e->msg) - 1] = '\0';
	return e->code;
}

const char *sr_err_str(const struct sr_err *e, int code)
{
	if (e != NULL && e->msg[0] != '\0')
		return e->msg;
	return sr_strerror(code);
}
