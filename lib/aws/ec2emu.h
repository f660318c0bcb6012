/*
 * ec2emu.h - an EC2 emulator for the local spot cloud.
 *
 * It answers the EC2 Query API (Version 2016-11-15, the subset the driver
 * uses: RunInstances, DescribeInstances, TerminateInstances,
 * DescribeSpotPriceHistory, DescribeInstanceTypeOfferings) with
 * well-formed EC2 XML, for the AWS pools of one region of the local
 * market (cloud/localmkt.h: catalog offerings whose spot availability and
 * price replay real traces).  Zones are the catalog's zone ids
 * ("use1-az4").
 *
 *   - RunInstances starts a local "instance": its user-data, decoded, run
 *     by /bin/sh in a new session under <work_dir>/<instance-id>/, with
 *       SPOTRUN_NODE_ROOT=<that dir>/root
 *       SPOTRUN_IMDS_URL=<emulator>/imds/<instance-id>
 *       SPOTRUN_EMU_HIDE=<work_dir> (every instance's disk and user-data:
 *         what a real instance cannot see of the others)
 *     (the driver's bootstrap script honours them).  Spot launches fail
 *     with InsufficientInstanceCapacity when the pool's trace has no
 *     capacity now, and with SpotMaxPriceTooLow under the current price.
 *     ClientToken is idempotent: the same token with the same parameters
 *     answers the instance it started; with other parameters,
 *     IdempotentParameterMismatch, as EC2 does.
 *   - Each instance has its own IMDSv2 at /imds/<id>/latest/...:
 *     api/token, meta-data/instance-id, meta-data/spot/instance-action
 *     (404 until a notice, then {"action":"terminate","time":...}).
 *   - When a spot pool loses capacity (trace replay) or ec2emu_preempt()
 *     is called, a running spot instance gets its notice; notice_s later
 *     its process session is killed and it is terminated with state
 *     reason Server.SpotInstanceTermination.
 *
 * Lifecycle: pending --boot_s--> running --Terminate--> shutting-down
 * --(process gone)--> terminated; terminated instances stay listed.
 *
 * Clock: cloud time sim_s = trace_start_s + time_scale * (real seconds
 * since start).  Price-history timestamps are the start's wall-clock
 * time plus the cloud seconds elapsed (the market's clock).  An
 * instance's own times - launchTime and the IMDS notice "time" - are on
 * the wall clock, as the instance's agent reads them: at time_scale
 * 1800 a notice_s of 120 reads "terminate in 0.07 s", which is when the
 * emulator kills it.
 *
 * EC2 where it hurts (all off by default; ec2emu_limits.c has the
 * numbers): request-token-bucket throttling per action class with the
 * bucket sizes and refill rates AWS documents (RequestLimitExceeded),
 * eventual consistency (a new instance invisible to DescribeInstances
 * for a random short time: InvalidInstanceID.NotFound), capacity errors
 * by pool and instance quotas.  Random draws come from opts.seed.
 * Every call is counted by action and outcome (ec2emu_stats) and, with
 * opts.request_log, written as one line "<epoch ns> <Action> <status>
 * <code|->" (a RunInstances line goes on with what it carried: ImageId=,
 * InstanceType=, SubnetId=, SecurityGroupId.1=): an EC2 endpoint that
 * logs what a client costs.
 *
 * The emulator accepts any credentials but requires a SigV4
 * Authorization header.  It listens on 127.0.0.1 only.
 *
 * Threading: the HTTP server and the clock run on their own threads;
 * every function here is thread-safe.
 */
#ifndef SR_AWS_EC2EMU_H
#define SR_AWS_EC2EMU_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

struct ec2emu_opts {
	const char *data_dir;   /* catalog + traces (the repo's data/) */
	const char *work_dir;   /* instance directories (must exist) */
	const char *region;     /* NULL: "us-east-1" */
	int port;               /* 0: ephemeral */
	double time_scale;      /* cloud seconds per real second; 0: 1 */
	double trace_start_s;   /* cloud time at start */
	double boot_s;          /* pending -> running, cloud s; < 0: 0 */
	double notice_s;        /* notice -> termination, cloud s; 0: 120 */
	/* EC2 where it hurts */
	bool throttle;          /* token buckets, RequestLimitExceeded */
	double throttle_scale;  /* x bucket sizes and refill rates; 0: 1 */
	double background_rps;  /* other tools' read calls per s */
	double bucket_fill;     /* buckets start this full (others have
				   been busy); 0: full */
	double consistency_s;   /* a new instance is invisible for
				   U[0, this) real s; 0: at once */
	double capacity_fail;   /* P(a launch finds no capacity) */
	int spot_quota;         /* instances not terminated; 0: none */
	int ondemand_quota;
	uint64_t seed;
	const char *request_log; /* append one line per call; NULL: none */
	int run_latency_ms;     /* RunInstances answers this late (the
				   instance starts then): a launch in flight
				   long enough to kill its caller in it */
};

/* What a client cost, by action. */
enum ec2emu_action {
	EC2EMU_A_RUN, EC2EMU_A_DESCRIBE, EC2EMU_A_TERMINATE,
	EC2EMU_A_SPOT_PRICES, EC2EMU_A_OFFERINGS, EC2EMU_A_OTHER,
	EC2EMU_NACTIONS
};

struct ec2emu_action_stats {
	uint64_t calls;         /* every call answered, throttled included */
	uint64_t throttled;     /* RequestLimitExceeded */
	uint64_t not_found;     /* InvalidInstanceID.NotFound */
	uint64_t capacity;      /* InsufficientInstanceCapacity */
	uint64_t quota;         /* MaxSpotInstanceCountExceeded, ... */
	uint64_t mismatch;      /* IdempotentParameterMismatch */
	uint64_t other_errors;
};

struct ec2emu_stats {
	struct ec2emu_action_stats action[EC2EMU_NACTIONS];
};

struct ec2emu;

/* Start.  *out is the caller's (ec2emu_stop).  On failure *out is NULL
 * and *e names the data, directory or port at fault. */
int ec2emu_start(const struct ec2emu_opts *o, struct ec2emu **out,
		 struct sr_err *e);

/* "http://127.0.0.1:PORT" (borrowed, valid until stop). */
const char *ec2emu_url(const struct ec2emu *m);

/* Give running spot instance `id` its interruption notice now.
 * -SR_ENOTFOUND if no such running spot instance. */
int ec2emu_preempt(struct ec2emu *m, const char *id);

/* Eventual consistency over for instance `id`: DescribeInstances lists
 * it and TerminateInstances knows it from now on (for deterministic
 * tests of what a client does meanwhile).  -SR_ENOTFOUND if no such
 * instance. */
int ec2emu_reveal(struct ec2emu *m, const char *id);

/* Every pool that holds a running spot instance loses its capacity now
 * (pinned to EC2EMU_NONE) and each such instance gets its notice, as
 * when the cloud reclaims the pool.  Returns the number noticed. */
int ec2emu_reclaim_all(struct ec2emu *m);

/* Override the spot capacity of (zone, instance type), for deterministic
 * tests and demos: EC2EMU_TRACE (the default), EC2EMU_NONE, EC2EMU_PLENTY.
 * -ENOSPC when too many overrides are set. */
enum ec2emu_capacity { EC2EMU_TRACE, EC2EMU_NONE, EC2EMU_PLENTY };
int ec2emu_set_capacity(struct ec2emu *m, const char *zone,
			const char *instance_type, enum ec2emu_capacity c);

/* A copy of the counters so far. */
void ec2emu_stats(struct ec2emu *m, struct ec2emu_stats *out);
/* "RunInstances", ...; "other". */
const char *ec2emu_action_name(enum ec2emu_action a);

/* Kill every instance's processes, stop the server, free.  NULL-safe. */
void ec2emu_stop(struct ec2emu *m);

#endif
