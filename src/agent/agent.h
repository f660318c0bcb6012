/*
 * agent.h - spotrun-agent internals shared by its files.
 *
 *   main.c    options, token, signals; runs agent_run()
 *   agent.c   the main loop: directives, workload, reports, preemption
 *   notice.c  the IMDS polling thread (lib/agent/imds.c does the protocol)
 *   envp.c    the workload's environment (api.md "environment contract")
 *   assign.c  parsing the register reply
 */
#ifndef SR_AGENT_AGENT_H
#define SR_AGENT_AGENT_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "agent/imds.h"
#include "agent/logbatch.h"
#include "agent/procstat.h"
#include "agent/status.h"
#include "agent/workload.h"
#include "common/err.h"
#include "ctlclient/ctlclient.h"

#define AGENT_VERSION "0.1.0"

struct agent_opts {
	const char *api;        /* spotrund base URL */
	int64_t node_id;
	const char *token_file; /* or $SPOTRUN_AGENT_TOKEN */
	const char *workdir;    /* node's private dir */
	const char *imds;       /* IMDS base URL */
	int64_t orphan_timeout_ns; /* exit after this long without spotrund;
				      0 = never */
};

/* The register reply (docs/api.md "POST /v1/nodes/{id}/register"). */
struct assignment {
	int64_t job_id, rank, num_nodes;
	char *setup;            /* NULL if none */
	char *run;
	json_t *envs;           /* object of strings (owned reference) */
	char *workdir;          /* cwd of setup and run */
	char *ckpt_dir;
	long heartbeat_ms, imds_poll_ms;
	char *cloud, *region, *zone, *instance_type, *master_addr; /* may be NULL */
	int spot;               /* -1 unknown */
};

int assignment_parse(json_t *reply, struct assignment *a, struct sr_err *e);
void assignment_free(struct assignment *a);

/* Build the workload environment: inherited environ minus the agent's own
 * secrets, then the job's envs, then the SPOTRUN_* contract.  Returns a
 * malloc'd NULL-terminated array of malloc'd strings (free with
 * envp_free) or NULL on out-of-memory / a bad env name (*e says which). */
char **envp_build(const struct assignment *a, int64_t node_id, int attempt,
		  const char *node_dir, const char *status_file,
		  const char *notice_file, struct sr_err *e);
void envp_free(char **envp);

/* The IMDS polling thread. */
struct notice_watch {
	pthread_t thr;
	int started;
	struct imds *imds;
	long interval_ms;
	int wake_fd[2];         /* [0] read by the main loop, [1] written */
	atomic_int stop;
	atomic_int have;        /* a notice was seen */
	_Atomic int64_t time_ns;/* its deadline (epoch ns) */
	_Atomic int action;
	atomic_int errors;      /* consecutive failed polls */
	pthread_mutex_t mu;     /* guards last_err */
	char last_err[SR_ERR_MSG_MAX];
	atomic_int err_gen;     /* +1 each time last_err changes */
};

int notice_watch_start(struct notice_watch *w, const char *imds_url,
		       long interval_ms, struct sr_err *e);
void notice_watch_stop(struct notice_watch *w);
/* Copy the last poll error if it changed since *gen; returns 1 if so. */
int notice_watch_error(struct notice_watch *w, int *gen, char *buf, size_t n);

int agent_run(const struct agent_opts *o, const char *token);

#endif
