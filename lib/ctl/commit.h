/*
 * commit.h - the committed pools of the enabled providers (a Slurm
 * cluster's partitions: cloud_offering.committed) as FinOps commitments
 * (finops/fconf.h), so that their time is applied to a commitment and
 * their unused nodes count as idle reserved capacity (docs/finops.md
 * "Committed capacity", docs/slurm.md "In the bill").
 */
#ifndef SR_CTL_COMMIT_H
#define SR_CTL_COMMIT_H

#include <stdint.h>

#include "common/err.h"
#include "finops/fconf.h"

struct ctl;

/* Append to fc one commitment per committed pool whose provider, region
 * and instance type no commitment of fc names already (finops.json
 * wins): id and contract "<cloud>-<region>-<instance type>", its nodes
 * (committed_count) at its committed price per node, GPUs per node, over
 * [lo, hi) - the report's window: a cluster is paid for all along, and
 * spotrun knows no contract term of it.  Nothing when hi <= lo.  Any
 * thread (the markets' offerings() answer from their caches).  0 or
 * < 0 with *e set. */
int ctl_commitments_add(struct ctl *c, struct finops_conf *fc, int64_t lo,
			int64_t hi, struct sr_err *e);

#endif
