/*
 * ckscan.h - find the newest committed checkpoint in a job's checkpoint
 * directory, without reading it.
 *
 * The checkpoint engine (docs/checkpoint-format.md) commits a checkpoint
 * by renaming `step-XXXXXXXX.tmp/` to `step-XXXXXXXX/` after its
 * manifest.json is durable.  So a directory named step-<digits> (no
 * suffix) that holds manifest.json is committed; its checksums are the
 * restorer's business, not the agent's.  The agent only needs the step,
 * to tell spotrund which checkpoint a preempted node left behind.
 */
#ifndef SR_AGENT_CKSCAN_H
#define SR_AGENT_CKSCAN_H

#include <stdint.h>

/* Newest committed step in dir, or -1 when there is none (or dir is
 * missing).  Never fails otherwise. */
int64_t ckscan_newest_step(const char *dir);

/* The recovery point the checkpoint engine's tier-3 uploader publishes in
 * its directory (tier3.json, docs/api.md).  A multi-rank checkpointer
 * keeps one engine per part (rank-NNNNN/, replicated/): then each field
 * is the least over the parts (a step is whole once every part is). */
struct ckscan_tier3 {
	int found;                /* 0: no engine of dir uploads */
	int64_t local_step;       /* newest step on this node's disk, -1 */
	int64_t store_step;       /* newest whole in the store, -1 */
	int64_t store_time_ns;    /* that step's save time (wall ns), 0 */
	int64_t retries;          /* failed attempts since the last commit */
	int64_t behind;           /* checkpoints newer than store_step */
	char last_error[256];     /* the last failure's message, "" */
};

/* Read dir's recovery point (dir/tier3.json, else its parts'). */
void ckscan_tier3(const char *dir, struct ckscan_tier3 *out);

#endif
