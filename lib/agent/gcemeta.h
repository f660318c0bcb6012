/*
 * gcemeta.h - the GCE metadata server's hanging GETs, for preemption and
 * maintenance notices (the agent's `gce` notice source).
 *
 * Protocol (what a GCE VM, and the GCE emulator, serve):
 *
 *   GET /computeMetadata/v1/instance/preempted          (first: at once)
 *   GET /computeMetadata/v1/instance/preempted?wait_for_change=true
 *         &last_etag=ETAG&timeout_sec=S                 (then: hangs)
 *       Metadata-Flavor: Google
 *     -> 200 "FALSE" | "TRUE", ETag: <etag>, Metadata-Flavor: Google
 *        (a hanging GET answers when the value's ETag differs from
 *        last_etag, or after S seconds with the same value and ETag)
 *   The same for instance/maintenance-event:
 *        "NONE" | "MIGRATE_ON_HOST_MAINTENANCE" |
 *        "TERMINATE_ON_HOST_MAINTENANCE"
 *
 * last_etag is kept across reconnects: after a dropped connection the
 * next GET still names the last value seen, so a change made while no
 * GET was hanging is answered at once, never missed.  An answer without
 * Metadata-Flavor: Google (not the metadata server), another status, or
 * a value outside the lists is an error naming it (-SR_EPARSE /
 * -SR_EHTTP); the caller reports it and asks again.
 *
 * Not thread-safe: one client per watching thread.
 */
#ifndef SR_AGENT_GCEMETA_H
#define SR_AGENT_GCEMETA_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

#define GCEMETA_PREEMPTED "instance/preempted"
#define GCEMETA_MAINTENANCE "instance/maintenance-event"
#define GCEMETA_HANG_S 60

struct gcemeta;

/* A client of base_url ("http://169.254.169.254") for key (one of the
 * two above); hang_s bounds a hanging GET (1..300, 0: GCEMETA_HANG_S);
 * cancel (borrowed, may be NULL) stops a GET in flight within ~50 ms.
 * NULL on out of memory.  gcemeta_destroy. */
struct gcemeta *gcemeta_create(const char *base_url, const char *key,
			       int hang_s, atomic_int *cancel);
void gcemeta_destroy(struct gcemeta *c); /* NULL-safe */

/* One GET (hanging after the first answer): the value into
 * value[0..n) (trimmed), *changed whether it differs from the last one
 * answered (true on the first).  0, or a negative code with *e set. */
int gcemeta_next(struct gcemeta *c, char *value, size_t n, bool *changed,
		 struct sr_err *e);

/* The ETag held (tests). */
const char *gcemeta_etag(const struct gcemeta *c);

/* Check a value of key: 0, or -SR_EPARSE naming it (the fuzzer's). */
int gcemeta_parse(const char *key, const char *body, size_t len, char *value,
		  size_t n, struct sr_err *e);

#endif
