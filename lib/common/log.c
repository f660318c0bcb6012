/*
 * log.c - logfmt lines, one write(2) each, with secrets redacted.
 *
 * A line is built in three steps: format the caller's kv string, replace
 * the values of sensitive keys (token=..., api_key="...") with
 * [REDACTED], then assemble "ts= level= mod= msg=" + kv and replace every
 * registered secret anywhere in the result.  Memory for long lines is
 * malloc'd; if that fails a short fixed line says so (never abort).
 */
#include "log.h"
#include "timeutil.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <strings.h>
#include <unistd.h>

#define MAX_SECRETS 64
#define REDACTED "[REDACTED]"

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int log_level = SR_LOG_INFO;
static int log_fd = -1;
static char *secrets[MAX_SECRETS];
static int secret_refs[MAX_SECRETS]; /* registrations not yet forgotten */
static int nsecrets;

static const char *const level_names[] = { "debug", "info", "warn", "error", "off" };
static const char *const sensitive_keys[] = {
	"token", "secret", "password", "authorization", "api_key", NULL
};

static void log_init(void)
{
	const char *env = getenv("SPOTRUN_LOG_LEVEL");
	enum sr_log_level lvl;

	if (env != NULL && sr_log_level_parse(env, &lvl) == 0)
		__atomic_store_n(&log_level, (int)lvl, __ATOMIC_RELAXED);
}

int sr_log_level_parse(const char *s, enum sr_log_level *out)
{
	if (s == NULL)
		return -EINVAL;
	for (int i = SR_LOG_DEBUG; i <= SR_LOG_OFF; i++) {
		if (strcasecmp(s, level_names[i]) == 0) {
			*out = (enum sr_log_level)i;
			return 0;
		}
	}
	if (strcasecmp(s, "warning") == 0) {
		*out = SR_LOG_WARN;
		return 0;
	}
	return -EINVAL;
}

void sr_log_set_level(enum sr_log_level lvl)
{
	pthread_once(&log_once, log_init);
	__atomic_store_n(&log_level, (int)lvl, __ATOMIC_RELAXED);
}

enum sr_log_level sr_log_get_level(void)
{
	pthread_once(&log_once, log_init);
	return (enum sr_log_level)__atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

void sr_log_set_fd(int fd)
{
	__atomic_store_n(&log_fd, fd, __ATOMIC_RELAXED);
}

void sr_log_secret(const char *secret)
{
	char *copy;

	if (secret == NULL || strlen(secret) < 4)
		return;
	pthread_mutex_lock(&log_mu);
	for (int i = 0; i < nsecrets; i++) {
		if (strcmp(secrets[i], secret) == 0) {
			secret_refs[i]++;
			goto out;
		}
	}
	if (nsecrets == MAX_SECRETS)
		goto out;
	copy = strdup(secret);
	if (copy != NULL) {
		secret_refs[nsecrets] = 1;
		secrets[nsecrets++] = copy;
	}
out:
	pthread_mutex_unlock(&log_mu);
}

void sr_log_secret_forget(const char *secret)
{
	if (secret == NULL)
		return;
	pthread_mutex_lock(&log_mu);
	for (int i = 0; i < nsecrets; i++) {
		if (strcmp(secrets[i], secret) != 0)
			continue;
		if (--secret_refs[i] > 0)
			break;
		OPENSSL_cleanse(secrets[i], strlen(secrets[i]));
		free(secrets[i]);
		nsecrets--;
		secrets[i] = secrets[nsecrets];
		secret_refs[i] = secret_refs[nsecrets];
		secrets[nsecrets] = NULL;
		break;
	}
	pthread_mutex_unlock(&log_mu);
}

/* A growable string; on allocation failure `oom` is set and appends stop. */
struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *np;

		while (cap < b->len + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (np == NULL) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_put(b, s, strlen(s));
}

static bool key_sensitive(const char *k, size_t n)
{
	for (int i = 0; sensitive_keys[i] != NULL; i++) {
		size_t sl = strlen(sensitive_keys[i]);

		if (n < sl || strncasecmp(k + n - sl, sensitive_keys[i], sl) != 0)
			continue;
		/* exact, or suffix after '_' / '-' / '.': aws_secret, x-api_key */
		if (n == sl || k[n - sl - 1] == '_' || k[n - sl - 1] == '-' ||
		    k[n - sl - 1] == '.')
			return true;
	}
	return false;
}

/* Copy kv into b, replacing values of sensitive keys; newlines escaped. */
static void put_kv_redacted(struct sbuf *b, const char *kv)
{
	const char *p = kv;

	while (*p != '\0') {
		const char *k = p, *v, *end;

		while (*p != '\0' && *p != '=' && *p != ' ')
			p++;
		if (*p != '=') { /* bare word or space */
			sb_put(b, k, (size_t)(p - k));
			if (*p == ' ')
				sb_put(b, p++, 1);
			continue;
		}
		v = ++p;
		if (*p == '"') {
			p++;
			while (*p != '\0' && *p != '"') {
				if (*p == '\\' && p[1] != '\0')
					p++;
				p++;
			}
			if (*p == '"')
				p++;
		} else {
			while (*p != '\0' && *p != ' ')
				p++;
		}
		end = p;
		sb_put(b, k, (size_t)(v - k));
		if (key_sensitive(k, (size_t)(v - 1 - k))) {
			sb_puts(b, REDACTED);
			continue;
		}
		for (const char *c = v; c < end; c++) {
			if (*c == '\n')
				sb_puts(b, "\\n");
			else if (*c == '\r')
				sb_puts(b, "\\r");
			else
				sb_put(b, c, 1);
		}
	}
}

static void put_quoted(struct sbuf *b, const char *s)
{
	sb_put(b, "\"", 1);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			sb_put(b, "\\", 1);
			sb_put(b, s, 1);
		} else if (c == '\n') {
			sb_puts(b, "\\n");
		} else if (c == '\t') {
			sb_puts(b, "\\t");
		} else if (c < 0x20 || c == 0x7f) {
			sb_puts(b, "?");
		} else {
			sb_put(b, s, 1);
		}
	}
	sb_put(b, "\"", 1);
}

/* Replace every registered secret in b->p.  Returns a new sbuf. */
static struct sbuf redact_secrets(struct sbuf in)
{
	struct sbuf out = { 0 };

	pthread_mutex_lock(&log_mu);
	for (int i = 0; i < nsecrets && !in.oom; i++) {
		const char *p = in.p, *hit;
		size_t sl = strlen(secrets[i]);

		if (strstr(p, secrets[i]) == NULL)
			continue;
		out = (struct sbuf){ 0 };
		hit = strstr(p, secrets[i]);
		while (hit != NULL) {
			sb_put(&out, p, (size_t)(hit - p));
			sb_puts(&out, REDACTED);
			p = hit + sl;
			hit = strstr(p, secrets[i]);
		}
		sb_puts(&out, p);
		free(in.p);
		in = out;
	}
	pthread_mutex_unlock(&log_mu);
	return in;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

void sr_log(enum sr_log_level lvl, const char *mod, const char *msg,
	    const char *kvfmt, ...)
{
	static const char oom_line[] = "level=error mod=log msg=\"out of memory formatting a log line\"\n";
	struct sbuf line = { 0 };
	char ts[40], *kv = NULL;
	int fd, kvlen;
	va_list ap;

	if ((int)lvl < (int)sr_log_get_level() || lvl >= SR_LOG_OFF || (int)lvl < 0)
		return;
	fd = __atomic_load_n(&log_fd, __ATOMIC_RELAXED);
	if (fd < 0)
		fd = STDERR_FILENO;

	if (kvfmt != NULL) {
		va_start(ap, kvfmt);
		kvlen = vasprintf(&kv, kvfmt, ap);
		va_end(ap);
		if (kvlen < 0) {
			kv = NULL;
			goto oom;
		}
	}
	if (sr_time_format_rfc3339(sr_time_real_ns(), 3, ts, sizeof(ts)) < 0)
		snprintf(ts, sizeof(ts), "?");

	sb_puts(&line, "ts=");
	sb_puts(&line, ts);
	sb_puts(&line, " level=");
	sb_puts(&line, level_names[lvl]);
	sb_puts(&line, " mod=");
	sb_puts(&line, mod != NULL && mod[0] != '\0' ? mod : "-");
	sb_puts(&line, " msg=");
	put_quoted(&line, msg != NULL ? msg : "");
	if (kv != NULL && kv[0] != '\0') {
		sb_puts(&line, " ");
		put_kv_redacted(&line, kv);
	}
	line = redact_secrets(line);
	sb_puts(&line, "\n");
	if (line.oom)
		goto oom;
	write_all(fd, line.p, line.len);
	goto out;
oom:
	write_all(fd, oom_line, sizeof(oom_line) - 1);
out:
	free(kv);
	free(line.p);
}
