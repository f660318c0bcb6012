/*
 * logbatch.h - split a workload's stdout/stderr into lines and batch them
 * for shipping to spotrund.
 *
 * Bytes arrive in arbitrary chunks from the pipes; logbatch_feed() cuts
 * them into lines (a line longer than LOGBATCH_LINE_MAX is cut into
 * pieces, each shipped as its own line; a trailing partial line waits for
 * more bytes or for logbatch_flush_partial()).  Complete lines queue up
 * until the caller takes them with logbatch_take_json().  The queue is
 * bounded: past LOGBATCH_MAX_QUEUED lines the oldest are dropped and
 * counted, so a daemon outage never grows the agent without bound, and
 * the loss is reported rather than hidden.
 *
 * Not thread-safe.
 */
#ifndef SR_AGENT_LOGBATCH_H
#define SR_AGENT_LOGBATCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define LOGBATCH_LINE_MAX 4096 /* api.md: longer lines are cut */
#define LOGBATCH_MAX_QUEUED 20000

/* stdout/stderr of the workload, and the agent's own lines about it */
enum logbatch_stream { LOGBATCH_STDOUT = 0, LOGBATCH_STDERR = 1, LOGBATCH_AGENT = 2 };
#define LOGBATCH_NSTREAMS 3

struct logbatch;

struct logbatch *logbatch_create(void); /* NULL on out-of-memory */
void logbatch_destroy(struct logbatch *b); /* NULL-safe */

/* Append raw bytes read from `stream` of workload attempt `attempt` at
 * wall-clock time ts_ns. */
int logbatch_feed(struct logbatch *b, enum logbatch_stream stream,
		  int attempt, const char *buf, size_t len, int64_t ts_ns);

/* Queue any partial line of each stream (at EOF). */
int logbatch_flush_partial(struct logbatch *b, int64_t ts_ns);

size_t logbatch_queued(const struct logbatch *b);
uint64_t logbatch_dropped(const struct logbatch *b);

/* Append up to max_lines of the oldest queued lines to the JSON array
 * `events` as node-report log events (docs/api.md):
 * {"type":"log","attempt":N,"stream":"stdout"|"stderr"|"agent","ts":"RFC3339",
 *  "line":"..."}.  The lines stay queued until logbatch_ack(b, n) removes
 * the first n, so a failed report can be retried.  Returns the number
 * appended, or -ENOMEM. */
int logbatch_peek_json(struct logbatch *b, size_t max_lines, json_t *events);
void logbatch_ack(struct logbatch *b, size_t n);

#endif
