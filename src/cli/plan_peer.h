/*
 * plan_peer.h - what `spotrun plan` says of spotrun.peer_replicas (issue
 * 33, restore from a peer; docs/distributed.md "Peer copies"): each node
 * keeps K copies of another rank's checkpoint part beside its own, and
 * they must fit its RAM.
 */
#ifndef SR_CLI_PLAN_PEER_H
#define SR_CLI_PLAN_PEER_H

#include <jansson.h>
#include <stdint.h>

#include "market/jobspec.h"
#include "market/plan.h"

/* Bytes of the peer copies one node keeps: K x spotrun.checkpoint.size
 * (a rank's part is at most the whole state: rank 0 of a DDP gang holds
 * it all); 0 without peer copies or without a size. */
uint64_t plan_peer_bytes(const struct jobspec *js);

/* 0 when the copies fit the first feasible placement's RAM (or there are
 * none, or the size or RAM is unknown); -1 after printing to stderr why
 * not, naming spotrun.peer_replicas and the file. */
int plan_peer_check(const struct plan_result *r, const struct jobspec *js,
		    const char *file);

/* The plan's "peer copies:" lines (nothing without the key). */
void plan_peer_print(const struct plan_result *r, const struct jobspec *js);

/* {"replicas", "bytes_per_node", "fits"} or NULL without the key (new
 * reference). */
json_t *plan_peer_json(const struct plan_result *r, const struct jobspec *js);

#endif
