/*
 * logbatch.c - line splitting and a bounded queue of log lines
 * (see logbatch.h).
 *
 * The queue is a ring of `struct line` of fixed capacity
 * LOGBATCH_MAX_QUEUED; head is the oldest.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/logbatch.h"
#include "common/timeutil.h"

struct line {
	int64_t ts_ns;
	int attempt;
	uint8_t stream;
	char *text; /* valid UTF-8, NUL-terminated, owned */
};

struct partial {
	char buf[LOGBATCH_LINE_MAX];
	size_t len;
	int attempt;
	int64_t ts_ns; /* time of its first byte */
};

struct logbatch {
	struct line *ring;
	size_t head, count;
	uint64_t dropped;
	struct partial part[LOGBATCH_NSTREAMS];
};

struct logbatch *logbatch_create(void)
{
	struct logbatch *b = calloc(1, sizeof *b);

	if (!b)
		return NULL;
	b->ring = calloc(LOGBATCH_MAX_QUEUED, sizeof *b->ring);
	if (!b->ring) {
		free(b);
		return NULL;
	}
	return b;
}

void logbatch_destroy(struct logbatch *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->count; i++)
		free(b->ring[(b->head + i) % LOGBATCH_MAX_QUEUED].text);
	free(b->ring);
	free(b);
}

/* Length of a valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t need;
	unsigned c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 2;
	else if (c >= 0xe0 && c <= 0xef)
		need = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 4;
	else
		return 0;
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* overlongs, surrogates and > U+10FFFF */
	if (c == 0xe0 && s[1] < 0xa0)
		return 0;
	if (c == 0xed && s[1] >= 0xa0)
		return 0;
	if (c == 0xf0 && s[1] < 0x90)
		return 0;
	if (c == 0xf4 && s[1] >= 0x90)
		return 0;
	return need;
}

/* Copy into a new string, replacing invalid UTF-8 and NUL bytes with '?'
 * and dropping a trailing '\r'.  Returns NULL on out-of-memory. */
static char *clean_copy(const char *p, size_t n)
{
	char *out;
	size_t i = 0, o = 0;

	if (n > 0 && p[n - 1] == '\r')
		n--;
	out = malloc(n + 1);
	if (!out)
		return NULL;
	while (i < n) {
		size_t k = utf8_len((const unsigned char *)p + i, n - i);

		if (k == 0 || p[i] == '\0') {
			out[o++] = '?';
			i++;
			continue;
		}
		memcpy(out + o, p + i, k);
		o += k;
		i += k;
	}
	out[o] = '\0';
	return out;
}

static int enqueue(struct logbatch *b, int stream, int attempt,
		   const char *p, size_t n, int64_t ts_ns)
{
	char *text = clean_copy(p, n);
	struct line *l;

	if (!text)
		return -ENOMEM;
	if (b->count == LOGBATCH_MAX_QUEUED) {
		/* full: drop the oldest, count it */
		free(b->ring[b->head].text);
		b->head = (b->head + 1) % LOGBATCH_MAX_QUEUED;
		b->count--;
		b->dropped++;
	}
	l = &b->ring[(b->head + b->count) % LOGBATCH_MAX_QUEUED];
	l->ts_ns = ts_ns;
	l->stream = (uint8_t)stream;
	l->attempt = attempt;
	l->text = text;
	b->count++;
	return 0;
}

int logbatch_feed(struct logbatch *b, enum logbatch_stream stream,
		  int attempt, const char *buf, size_t len, int64_t ts_ns)
{
	struct partial *pt;
	int rc;

	if ((unsigned)stream >= LOGBATCH_NSTREAMS)
		return -EINVAL;
	pt = &b->part[stream];

	if (pt->len > 0 && pt->attempt != attempt) {
		/* a new attempt's bytes: the old partial line is complete */
		rc = enqueue(b, stream, pt->attempt, pt->buf, pt->len, pt->ts_ns);
		if (rc < 0)
			return rc;
		pt->len = 0;
	}
	pt->attempt = attempt;

	for (size_t i = 0; i < len; i++) {
		if (pt->len == 0)
			pt->ts_ns = ts_ns;
		if (buf[i] == '\n') {
			rc = enqueue(b, stream, attempt, pt->buf, pt->len, pt->ts_ns);
			if (rc < 0)
				return rc;
			pt->len = 0;
			continue;
		}
		pt->buf[pt->len++] = buf[i];
		if (pt->len == LOGBATCH_LINE_MAX) {
			rc = enqueue(b, stream, attempt, pt->buf, pt->len, pt->ts_ns);
			if (rc < 0)
				return rc;
			pt->len = 0;
		}
	}
	return 0;
}

int logbatch_flush_partial(struct logbatch *b, int64_t ts_ns)
{
	int rc;

	for (int s = 0; s < LOGBATCH_NSTREAMS; s++) {
		struct partial *pt = &b->part[s];

		if (pt->len == 0)
			continue;
		rc = enqueue(b, s, pt->attempt, pt->buf, pt->len,
			     pt->ts_ns ? pt->ts_ns : ts_ns);
		if (rc < 0)
			return rc;
		pt->len = 0;
	}
	return 0;
}

size_t logbatch_queued(const struct logbatch *b)
{
	return b->count;
}

uint64_t logbatch_dropped(const struct logbatch *b)
{
	return b->dropped;
}

int logbatch_peek_json(struct logbatch *b, size_t max_lines, json_t *events)
{
	static const char *const names[LOGBATCH_NSTREAMS] = { "stdout", "stderr",
							       "agent" };
	size_t n = b->count < max_lines ? b->count : max_lines;

	for (size_t i = 0; i < n; i++) {
		const struct line *l = &b->ring[(b->head + i) % LOGBATCH_MAX_QUEUED];
		char ts[40];
		json_t *o;

		sr_time_format_rfc3339(l->ts_ns, 3, ts, sizeof ts);
		o = json_pack("{s:s, s:i, s:s, s:s, s:s}", "type", "log",
			      "attempt", l->attempt, "stream",
			      names[l->stream], "ts", ts,
			      "line", l->text);
		if (!o || json_array_append_new(events, o) < 0)
			return -ENOMEM;
	}
	return (int)n;
}

void logbatch_ack(struct logbatch *b, size_t n)
{
	if (n > b->count)
		n = b->count;
	for (size_t i = 0; i < n; i++) {
		free(b->ring[b->head].text);
		b->ring[b->head].text = NULL;
		b->head = (b->head + 1) % LOGBATCH_MAX_QUEUED;
	}
	b->count -= n;
}
