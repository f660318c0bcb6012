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

#endif
