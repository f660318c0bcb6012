/*
 * slurm_burst.h - spot bursting for Slurm users (docs/slurm.md, "Spot
 * bursting"): what `spotrun slurm resume|suspend|resume-fail|node`
 * (src/cli/cmd_slurm.c) reads from Slurm and what it sends spotrund.
 *
 * Slurm's power saving asks spotrun for a State=CLOUD node by running
 * its ResumeProgram with the node list.  Each node becomes one spotrun
 * spot job named slurm-<cluster>-<node> whose run is `spotrun slurm node
 * <node>`: slurmd for that node name on the spot instance.  Its deadline
 * is the earliest `deadline=DURATION` in the comments of the Slurm jobs
 * allocated the node, else the partition's default, else the default of
 * all partitions; its work the longest of their time limits.
 *
 * Everything here is text in, values out (no commands run): the parsers
 * are fuzzed (fuzz/fuzz_slurm_parsers.c).  Prefix slurm_burst_.
 */
#ifndef SR_PROVIDERS_SLURM_BURST_H
#define SR_PROVIDERS_SLURM_BURST_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define SLURM_BURST_NAME_MAX 64     /* a node name, with its NUL */
#define SLURM_BURST_NODES_MAX 1024  /* nodes of one ResumeProgram call */
#define SLURM_BURST_JOBS_MAX 64     /* Slurm jobs read on one node */
#define SLURM_BURST_DEFS_MAX 32     /* --deadline options */
/* the drain reason of a spot notice; a replacement lifts only this one */
#define SLURM_BURST_REASON "spotrun: spot notice"

/* A node name spotrun takes: 1..63 of [A-Za-z0-9_.-], not starting with
 * '-' or '.' (it becomes a job name and an argument of slurmd). */
bool slurm_burst_name_ok(const char *s);

/* `scontrol show hostnames LIST` output (one name a line) into names:
 * the count, or -EINVAL naming the bad line, -E2BIG past max. */
int slurm_burst_parse_hostnames(const char *text,
				char (*names)[SLURM_BURST_NAME_MAX], int max,
				struct sr_err *e);

/* The `deadline=DURATION` word of a Slurm job's comment (words split by
 * blanks, commas and semicolons; "1h30m", "2d"): 1 and *out_s, 0 when
 * the comment has none, -EINVAL naming the word. */
int slurm_burst_comment_deadline(const char *comment, int64_t *out_s,
				 struct sr_err *e);

/* One Slurm job on the node: `squeue -h -w NODE -o %i|%P|%l|%k`. */
struct slurm_burst_job {
	long long id;
	char partition[40];
	int64_t limit_s;        /* its time limit, -1 none */
	char comment[256];      /* cut to fit */
};

/* Those lines into v (at most max kept): the count, or -EINVAL naming
 * the line. */
int slurm_burst_parse_jobs(const char *text, struct slurm_burst_job *v,
			   int max, struct sr_err *e);

/* A default deadline: `--deadline DURATION` (partition "") or
 * `--deadline PARTITION=DURATION`. */
struct slurm_burst_deadline {
	char partition[40];
	int64_t s;
};

int slurm_burst_parse_deadline_opt(const char *arg,
				   struct slurm_burst_deadline *out,
				   struct sr_err *e);

/* What a node's spot job needs: the deadline (seconds from now, -1 none)
 * and the work (seconds, -1 unknown), and where the deadline came from
 * ("job 12's comment", "partition burst's default"). */
struct slurm_burst_need {
	int64_t deadline_s, work_s;
	char why[96];
};

/* From the node's jobs v[0..n) and the defaults: the earliest deadline of
 * a comment, else the default of the first job's partition, else the
 * default of all.  -EINVAL (naming the job) for a bad comment. */
int slurm_burst_need_of(const struct slurm_burst_job *v, int n,
			const struct slurm_burst_deadline *defs, int ndefs,
			struct slurm_burst_need *out, struct sr_err *e);

/* The spot job of one node. */
struct slurm_burst_spec {
	const char *name;          /* slurm-<cluster>-<node> */
	const char *node;          /* the Slurm node name */
	const char *accelerators;  /* "V100:1": the GPUs of one node */
	const char *spotrun;       /* the spotrun program on the instance */
	const char *slurmd;        /* slurmd on the instance */
	const char *bin;           /* Slurm's commands there, "" PATH */
	const char *slurm_conf;    /* SLURM_CONF there, "" none */
	struct slurm_burst_need need;
};

/* The job file (YAML; every value quoted, the run fixed text that takes
 * the node from $SPOTRUN_SLURM_NODE): 0 and *out (malloc'd; caller
 * frees), or -EINVAL naming a bad field, -ENOMEM. */
int slurm_burst_job_yaml(const struct slurm_burst_spec *s, char **out,
			 struct sr_err *e);

/* One line of `sinfo -h -n NODE -o %T|%E` (state|reason): whether the
 * node answers (no '*' or '~' in its state) and is drained for
 * SLURM_BURST_REASON.  0, or -EINVAL for a line without '|'. */
int slurm_burst_node_line(const char *line, bool *responding,
			  bool *spot_drained);

#endif
