/*
 * log.h - levelled logfmt lines on stderr.
 *
 *     ts=2026-11-29T14:14:28.123Z level=info mod=ckpt msg="saved" step=12
 *
 * The kv part is a printf format producing space-separated key=value
 * pairs.  Values of keys named token, secret, password, authorization or
 * api_key are replaced with "[REDACTED]", and so is every string
 * registered with sr_log_secret() wherever it appears in a line.
 * Thread-safe: one write(2) per line.
 */
#ifndef SR_COMMON_LOG_H
#define SR_COMMON_LOG_H

enum sr_log_level { SR_LOG_DEBUG, SR_LOG_INFO, SR_LOG_WARN, SR_LOG_ERROR, SR_LOG_OFF };

/* Minimum level printed.  Default INFO, or $SPOTRUN_LOG_LEVEL
 * (debug|info|warn|error|off) read at first use. */
void sr_log_set_level(enum sr_log_level lvl);
enum sr_log_level sr_log_get_level(void);

/* Send lines to fd instead of stderr (tests).  -1 restores stderr. */
void sr_log_set_fd(int fd);

/* Register a secret that must never appear in a log line (copied; up to
 * 64 secrets; strings shorter than 4 bytes are ignored).  Registrations
 * are counted: the secret is redacted until each was forgotten. */
void sr_log_secret(const char *secret);
/* Undo one sr_log_secret() of a secret no longer used (credentials that
 * were refreshed and wiped), so the list never fills up.  NULL-safe. */
void sr_log_secret_forget(const char *secret);

/* Parse "debug", "info", ...; returns -EINVAL if unknown. */
int sr_log_level_parse(const char *s, enum sr_log_level *out);

void sr_log(enum sr_log_level lvl, const char *mod, const char *msg,
	    const char *kvfmt, ...) __attribute__((format(printf, 4, 5)));

#define sr_debug(mod, msg, ...) sr_log(SR_LOG_DEBUG, mod, msg, __VA_ARGS__)
#define sr_info(mod, msg, ...)  sr_log(SR_LOG_INFO, mod, msg, __VA_ARGS__)
#define sr_warn(mod, msg, ...)  sr_log(SR_LOG_WARN, mod, msg, __VA_ARGS__)
#define sr_error(mod, msg, ...) sr_log(SR_LOG_ERROR, mod, msg, __VA_ARGS__)

#endif
