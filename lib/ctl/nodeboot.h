/*
 * nodeboot.h - how a node gets its token without the token ever being
 * written where its workload could read it (issue 24).
 *
 * A node's bootstrap channel (EC2 user-data, the local cloud's startup
 * document) is readable from the node for its whole life (IMDS serves
 * user-data to any process), so it carries no token.  It carries a
 * one-time bootstrap secret instead:
 *
 *   - issued by the control plane for ONE node (ctl__boot_issue), before
 *     the launch that carries it, its SHA-256 and expiry stored in table
 *     node_boot in a fenced transaction; the clear secret exists only in
 *     the bootstrap text the provider hands the instance;
 *   - valid while its node is live (REQUESTED, BOOTING or READY) and
 *     unused, for at most CTL_BOOT_TTL_NS (or the boot timeout plus a
 *     minute, if longer).  A booting instance whose agent never calls is
 *     declared LOST at the boot timeout, which ends its secret too; the
 *     hour bounds an instance its cloud keeps pending (no boot timeout
 *     runs while it is);
 *   - exchanged by the agent at its first contact: POST
 *     /v1/nodes/{id}/bootstrap, "Authorization: Bearer <secret>", body
 *     {"nonce": "<32..128 hex the agent drew>"} -> 200 {"token": T}: a
 *     fresh random node token, whose SHA-256 replaces the node's
 *     token_hash (only the hash is stored; T lives in the agent's
 *     memory);
 *   - refused on second use (401): once used, only a retry of that same
 *     exchange (the same nonce, which never left the agent) is answered,
 *     with a new token that replaces the one whose reply was lost;
 *     refused when expired, when it is another node's, or when the node
 *     is no longer live (409).
 *
 * A launch retried after a crash (the cloud answering its idempotency
 * key with the instance it already started) adds a secret; every
 * unexpired one of the node stays valid until the first is used, so the
 * instance that exists has a valid one whichever attempt started it.
 * The first use deletes the node's others.  Node tokens are random:
 * nothing on disk derives them.
 */
#ifndef SR_CTL_NODEBOOT_H
#define SR_CTL_NODEBOOT_H

#include <stdint.h>

#include "common/err.h"
#include "common/timeutil.h"
#include "ctl/auth.h"

struct ctl;
struct store;

/* The longest a bootstrap secret is valid (see above). */
#define CTL_BOOT_TTL_NS (3600 * SR_NS_PER_SEC)
#define CTL_BOOT_GRACE_NS (60 * SR_NS_PER_SEC)

/* A new bootstrap secret for node_id into out (64 hex characters and a
 * NUL), its hash committed on db (the caller's connection: fenced on the
 * reconciler's); expired secrets of every node are dropped on the way.
 * 0 or a negative code with e; out is wiped on failure.  The caller
 * wipes out once the bootstrap text is handed over. */
int ctl__boot_issue(struct ctl *c, struct store *db, int64_t node_id,
		    char out[CTL_TOKEN_HEX + 1], struct sr_err *e);

/* Register POST /v1/nodes/{id}/bootstrap (called once by ctl_start). */
void ctl__routes_boot(void);

#endif
