/*
 * agent.h - spotrun-agent internals shared by its files.
 *
 *   main.c    options, token, signals; runs agent_run()
 *   agent.c   the main loop: directives, reports, preemption notices
 *   workrun.c the workload: setup/run, stop, exit, final checkpoint
 *   notice.c  the IMDS polling thread (lib/agent/imds.c does the protocol)
 *   envp.c    the workload's environment (api.md "environment contract")
 *   assign.c  parsing the register reply
 *   boot.c    first contact: the bootstrap secret traded for the token
 *   watch.c   the main loop's watchdog: stall lines, keep-alive heartbeats
 */
#ifndef SR_AGENT_AGENT_H
#define SR_AGENT_AGENT_H

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/imds.h"
#include "agent/logbatch.h"
#include "agent/procstat.h"
#include "agent/status.h"
#include "agent/ckscan.h"
#include "agent/gpustat.h"
#include "agent/stepstat.h"
#include "agent/workload.h"
#include "azure/schedev.h"
#include "common/backoff.h"
#include "common/err.h"
#include "ctlclient/ctlclient.h"

#define AGENT_VERSION "0.1.0"

struct agent_opts {
	const char *api;        /* spotrund base URL */
	int64_t node_id;
	const char *token_file; /* or $SPOTRUN_AGENT_TOKEN */
	const char *workdir;    /* node's private dir */
	const char *imds;       /* IMDS base URL */
	int64_t retry_base_ns, retry_cap_ns; /* the retry backoff (0: the
					      RETRY_* defaults) */
	int64_t orphan_timeout_ns; /* exit after this long without spotrund;
				      0 = never */
	/* workload isolation (isolate.h, docs/security.md) */
	enum agent_iso { AGENT_ISO_AUTO, AGENT_ISO_STRICT, AGENT_ISO_OFF } isolation;
	const char *private_paths[ISO_MAX_PATHS - 2]; /* --private, NULL-ended */
	/* Where preemption notices come from (notice.c, docs/agent.md
	 * "Notice sources"): NOTICE_SRC_* bits (--notice). */
	unsigned notice_sources;
	int notice_signal;          /* the signal source's signal (SIGUSR1) */
	int64_t notice_lead_ns;     /* its lead: the kill comes this long
				       after the signal (30 s) */
};

#define NOTICE_SRC_IMDS 0x1    /* IMDSv2: instance-action + rebalance */
#define NOTICE_SRC_SIGNAL 0x2  /* a scheduler's signal (Slurm) */
#define NOTICE_SRC_SCHEDEV 0x4 /* Azure Scheduled Events (lib/azure) */
#define NOTICE_SRC_GCE 0x8     /* GCE metadata: preempted, maintenance */

/* --notice LIST ("imds", "signal", "scheduled-events", "imds,signal",
 * "none") into bits:
 * 0 or -EINVAL naming the word. */
int notice_sources_parse(const char *list, unsigned *out, struct sr_err *e);
/* "TERM", "USR1", "USR2" (with or without SIG): the signal, or -1. */
int notice_signal_parse(const char *name);

/* A bucket mount (issue 30; docs/jobs.md): the job file's DST, its
 * bucket URI and mode. */
enum bucket_mode { BUCKET_MOUNT, BUCKET_MOUNT_CACHED, BUCKET_COPY };
struct bucket_mount {
	char *dst;              /* as the job file names it */
	char *uri;
	enum bucket_mode mode;
};

/* The register reply (docs/api.md "POST /v1/nodes/{id}/register"). */
struct assignment {
	int64_t job_id, rank, num_nodes;
	int spare;              /* a warm spare: rank is num_nodes (none)
				 * until a `run` directive names one */
	int setup_ahead;        /* run setup at registration (a spare, or a
				 * replacement while the gang trains through
				 * a notice) */
	int train_through;      /* hold a notice back from the workload
				 * until spotrund (or the last safe moment)
				 * says stop */
	char *setup;            /* NULL if none */
	char *run;
	json_t *envs;           /* object of strings (owned reference) */
	char *workdir;          /* cwd of setup and run */
	char *ckpt_dir;
	char *ckpt_uri;       /* tier 3 (object store) or NULL */
	int64_t ckpt_alert_intervals; /* ckpt_error when the store lags more
				       * checkpoints than this (default 3) */
	long heartbeat_ms, imds_poll_ms;
	char *cloud, *region, *zone, *instance_type, *master_addr; /* may be NULL */
	char *node_ips;         /* one address per line, rank 0 first; NULL */
	int master_port;        /* the run directive's, 0 = envp_master_port */
	int spot;               /* -1 unknown */
	/* SkyPilot-style jobs (docs/jobs.md) */
	json_t *mounts;         /* file_mounts {dst: src}, owned ref; NULL */
	int sync_workdir;       /* setup and run in the node's workdir/ */
	int files;              /* the job brings files (GET .../files) */
	int64_t gpus_per_node;  /* 0 unknown */
	char *task_id;          /* SKYPILOT_TASK_ID (the daemon's); NULL */
	int shared_disk;        /* the reply named node_dir: this node shares
				 * spotrund's disk (the local cloud) */
	char *home;             /* where file_mounts ~/X went (sync.c); the
				 * workload's HOME when it differs; NULL */
	struct bucket_mount *buckets; /* "bucket_mounts", malloc'd [nbuckets] */
	size_t nbuckets;
	int64_t sync_quiet_ms;  /* a file is stable after this (2000) */
	int stop_signal;        /* "preempt_signal": what the workload gets
				 * at a notice or a stop (SIGTERM) */
};

int assignment_parse(json_t *reply, struct assignment *a, struct sr_err *e);

struct agent;
/* Copy the job's workdir (when sync_workdir) and file_mounts into the
 * node's directory, once, before setup (sync.c).  On success the copy of
 * the workdir becomes the workload's cwd.  0 or a negative code with e. */
int agent_sync_files(struct agent *ag, struct sr_err *e);
void assignment_free(struct assignment *a);

/* The node's files named in the workload's environment. */
struct envp_files {
	const char *node_dir;      /* SPOTRUN_NODE_DIR */
	const char *status_file;   /* SPOTRUN_STATUS_FILE (the workload's) */
	const char *progress_file; /* SPOTRUN_PROGRESS_FILE (libspotckpt's) */
	const char *notice_file;   /* SPOTRUN_NOTICE_FILE */
	const char *python_dir;    /* put on PYTHONPATH unless the job sets
				      PYTHONPATH itself; NULL = none */
	const char *home;          /* HOME, when not the agent's; NULL */
	const char *sync_request;  /* SPOTRUN_SYNC_REQUEST (bucket mounts'
				      sync_now), NULL = none */
	const char *sync_answers;  /* SPOTRUN_SYNC_ANSWERS, ':'-separated */
	const char *sync_pids;     /* SPOTRUN_SYNC_PIDS, ' '-separated: the
				      uploading syncers (SIGUSR2 = a round
				      now), NULL = none */
};

/* Build the workload environment: inherited environ minus the agent's own
 * secrets, then the job's envs, then the SPOTRUN_* contract.  Returns a
 * malloc'd NULL-terminated array of malloc'd strings (free with
 * envp_free) or NULL on out-of-memory / a bad env name (*e says which). */
char **envp_build(const struct assignment *a, int64_t node_id, int attempt,
		  const struct envp_files *f, struct sr_err *e);

/* The folder holding the spotrun Python package this agent was built or
 * installed with (build: <repo>/python; installed:
 * PREFIX/lib/python3.X/dist-packages), found from the agent's own path;
 * NULL when there is none.  Static storage (pypath.c). */
const char *agent_python_dir(void);
void envp_free(char **envp);
/* The torch.distributed rendezvous port of a job's attempt: the same on
 * every node, different for consecutive attempts, in
 * [ENVP_PORT_BASE, ENVP_PORT_BASE + ENVP_PORT_SPAN). */
#define ENVP_PORT_BASE 20000
#define ENVP_PORT_SPAN 12000
uint16_t envp_master_port(int64_t job_id, int attempt);

/* The notice sources: the IMDS polling thread (NOTICE_SRC_IMDS) and a
 * scheduler's signal (NOTICE_SRC_SIGNAL, its handler); both wake the
 * main loop through the pipe. */
struct notice_watch {
	pthread_t thr;
	int started;
	struct imds *imds;
	struct schedev *se;     /* NOTICE_SRC_SCHEDEV's client */
	long interval_ms;
	int wake_fd[2];         /* [0] read by the main loop, [1] written */
	atomic_int stop;
	atomic_int have;        /* a notice was seen (IMDS) */
	_Atomic int64_t time_ns;/* its deadline (epoch ns) */
	_Atomic int action;
	/* the Scheduled Events notice (set before `have`): its type and
	 * the event to acknowledge once the final checkpoint is in */
	_Atomic int se_type;
	char se_event[64];
	_Atomic int64_t rebalance_ns; /* a rebalance recommendation, 0 none */
	atomic_int errors;      /* consecutive failed polls */
	pthread_mutex_t mu;     /* guards last_err */
	char last_err[SR_ERR_MSG_MAX];
	atomic_int err_gen;     /* +1 each time last_err changes */
	/* the gce source: one hanging GET per key (gcemeta.h) */
	pthread_t gthr[2];
	int gstarted;
	const char *gce_url;    /* borrowed: o->imds */
};

/* Start the sources of o->notice_sources (the IMDS at o->imds, polled
 * every interval_ms; the signal's handler). */
int notice_watch_start(struct notice_watch *w, const struct agent_opts *o,
		       long interval_ms, struct sr_err *e);
/* Catch `sig` as the signal source's notice (main, at start: a signal
 * before the main loop runs is kept); -1 with errno on failure. */
int notice_signal_install(int sig);
/* The scheduler's signal arrived (the signal source). */
bool notice_signal_seen(void);
void notice_watch_stop(struct notice_watch *w);
/* Copy the last poll error if it changed since *gen; returns 1 if so. */
int notice_watch_error(struct notice_watch *w, int *gen, char *buf, size_t n);

/* `spotrun-agent --dirsync ...` (dirsync_main.c): a bucket mount's
 * syncer; the process's exit status. */
int agent_dirsync_main(int argc, char **argv);

/* `spotrun-agent --gpu-stat ...` (gpustat_main.c): NVML's view of the
 * node's GPUs, as the agent reads them. */
int agent_gpustat_main(int argc, char **argv);

/* Run the agent with its node token, or (token NULL) with the one-time
 * bootstrap secret it trades for one at first contact (boot.c). */
int agent_run(const struct agent_opts *o, const char *token,
	      const char *bootstrap);

/* The signal that asked the agent to quit (main.c's handler), 0 if none:
 * SIGINT, and SIGTERM unless it is the signal source's notice signal. */
extern volatile sig_atomic_t agent_quit_signal;

/* ---- agent internals shared by agent.c and workrun.c ------------------ */

#define MS (INT64_C(1000000))
#define STOP_GRACE_NS (60 * SR_NS_PER_SEC)   /* stop/exit directive */
#define SIGNAL_GRACE_NS (3 * SR_NS_PER_SEC)  /* agent itself told to quit */
/* a leader dead of the notice signal, its group alive: how long its
 * leftovers wait for the agent's own copy of that signal (workrun.c) */
#define NOTICE_SIGNAL_WAIT_NS (5 * SR_NS_PER_SEC)
#define REPORT_EVERY_NS (500 * MS)
#define MAX_EVENTS_PER_REPORT 1000
#define MAX_PENDING_EVENTS 5000
/* spotrund unreachable or failing: retry after 200 ms, doubling, jittered,
 * at most every 5 s; one "request failed" line per 30 s at most */
#define RETRY_BASE_NS (200 * MS)
#define RETRY_CAP_NS (5 * SR_NS_PER_SEC)
#define FAIL_LOG_EVERY_NS (30 * SR_NS_PER_SEC)
#define REGISTER_GIVE_UP_NS (60 * SR_NS_PER_SEC)

enum wkind { W_NONE, W_SETUP, W_RUN };

/* The main loop's watchdog and keep-alive (watch.c): what the loop does
 * now, and what its last heartbeat said, for the thread that speaks for
 * it while one pass blocks. */
struct agent_watch {
	pthread_t thr;
	int started;
	int wake[2];                   /* [1] written to stop the thread */
	atomic_int stop;
	_Atomic(const char *) phase;   /* static string, NULL before the loop */
	_Atomic int64_t since_ns;      /* when that phase began (monotonic) */
	_Atomic int64_t hb_ns;         /* the last heartbeat sent, either thread */
	_Atomic(const char *) hb_workload; /* what it said (wstate_name) */
	atomic_int hb_attempt, hb_pgid;
	atomic_int hb_allowed;         /* the loop would heartbeat now */
	atomic_int talking;            /* the loop is in a call to spotrund
					  (agent__post: bounded, 3 s): no
					  keep-alive beside it */
	atomic_long keepalives;        /* heartbeats the thread sent */
	int64_t every_ns;              /* the node's heartbeat period */
	int64_t fail_ns;               /* the thread's last failure (its own) */
};
enum stop_why { STOP_NONE, STOP_NOTICE, STOP_DIRECTIVE };


struct agent {
	const struct agent_opts *o;
	struct ctlc *cli;
	struct assignment a;
	char node_dir[4096], status_path[4200], wlog_path[4200];
	char notice_path[4200], progress_path[4200];
	const char *python_dir; /* the spotrun package's folder, NULL unknown */
	char path_prefix[64]; /* "/v1/nodes/<id>" */
	int wlog_fd;

	struct notice_watch nw;
	int nw_err_gen;
	struct logbatch *logs;
	struct status_reader st;   /* the workload's status file */
	struct status_reader pg;   /* libspotckpt's progress report */
	struct status_info last_status; /* both merged (read_progress) */
	int64_t ckpt_at_ns;        /* when last_status.ckpt_step was first
				      seen (Unix ns), 0 unknown */
	char ckpt_error_sent[256];     /* last tier-3 failure reported */
	int restored_sent;             /* this attempt's `restored` event */
	struct ckscan_tier3 rp;        /* the engine's recovery point (tier 3) */
	int behind_sent;               /* the lag was reported, not cleared */
	json_t *events; /* pending report events other than workload logs */
	struct gpustat *gpu;
	struct procstat_sample cpu_prev;
	struct stepstat steps;  /* the attempt's steps/s: the idle signal
				   where NVML gives no GPU utilisation */

	struct workload w;
	enum iso_mode iso_mode; /* what the next start uses (isolate.h) */
	int iso_reported;       /* the "isolation" event was sent */
	enum wkind kind;
	int w_attempt;      /* attempt of the current/last RUN */
	int setup_ok;
	int synced;             /* workdir / file_mounts copied (sync.c) */
	int orphan_status;  /* wait status of the last reaped orphan of the
			       workload (its trainer after sh died), -1 none */
	int exit_in_notice; /* its leader was reaped after a notice signal
			       reached the agent (taken as the notice or
			       not yet): that exit is the notice's stop */
	int64_t leader_sig_ns; /* monotonic: when its leader was first seen
				  dead of the notice signal with its group
				  alive and no notice taken; 0 none */
	int want_attempt;   /* a run directive not yet acted on, 0 none */
	int files_failed;   /* attempt whose files could not be put in
			     * place: its file_mounts event went up, the
			     * control plane decides; not fetched again */
	enum stop_why stopping;
	int64_t stop_deadline_ns; /* monotonic */
	int64_t ckpt_before;
	int64_t ckpt_hb;    /* the durable step of the run's last heartbeat
			       (what spotrund last heard), -1 none */

	int notice_handled;
	int notice_acked;       /* the Scheduled Event was acknowledged */
	int64_t notice_kill_ns; /* the cloud's kill, monotonic; 0 no notice */
	/* bucket mounts (mounts.c) */
	struct agent_mount *mounts;    /* [nmounts], one per a.buckets */
	size_t nmounts;
	char sync_request[4200];       /* sync_now's request file */
	char **sync_answer;            /* [nmounts] its answers */
	int mounts_ready;              /* every mount past its restore */
	int64_t mounts_deadline_ns;    /* the final round's, monotonic */
	int64_t mounts_progress_ns;    /* next "N s left" line */
	json_t *held_exit;             /* the run's exit, reported once the
					  final round is over */
	int rebalance_sent;     /* the rebalance recommendation was reported */
	int64_t through_ns;     /* a notice held back while the gang trains
				 * through it (assignment.train_through):
				 * its time (wall), 0 none */
	int64_t through_safe_ns;/* ... and the last safe moment (monotonic):
				 * the workload is stopped then at the
				 * latest */
	int exit_after;     /* exit once the workload is gone and reported */
	int node_gone;      /* spotrund answered 409: stop everything */
	int64_t next_hb_ns, next_report_ns;
	int64_t give_up_ns; /* when quitting on a signal: stop flushing then */
	int64_t last_ok_ns; /* last call spotrund answered (monotonic) */
	int urgent;
	int urgent_now;     /* an urgent event since the last report attempt:
			       that attempt does not wait for the backoff */
	size_t split_left;  /* items of a report refused as malformed still
			       to be sent one to a report (agent.c report) */
	struct agent_watch watch;
	struct sr_backoff retry;      /* paces calls while spotrund fails */
	struct sr_ratelimit fail_log; /* "request failed" lines */
};

/* agent.c */
/* POST to /v1/nodes/<id>/<what>.  Returns 0, or a negative code; sets
 * node_gone on 409 (the node was terminated or declared lost) and on
 * 401/403.  A failure pushes ag->retry back (no call to spotrund before
 * it), a success clears it; repeated failures are logged once per
 * FAIL_LOG_EVERY_NS. */
int agent__post(struct agent *ag, const char *what, json_t *body,
		json_t **reply);
/* agent__post until spotrund answers (a first contact: registration,
 * the bootstrap exchange), pacing retries with ag->retry, for at most
 * REGISTER_GIVE_UP_NS; stops early on a refusal (401/403/400/404/409) or
 * a quit signal. */
int agent__post_first(struct agent *ag, const char *what, json_t *body,
		      json_t **reply);
/* How the agent's client talks to spotrund (short timeouts; the agent
 * paces its own retries). */
extern const struct ctlc_opts agent__client_opts;
/* boot.c: trade the bootstrap secret ag->cli carries for the node token
 * (POST .../bootstrap), retried like the registration; on success ag->cli
 * carries the token.  0 or a negative code (logged). */
int agent__exchange(struct agent *ag);
void agent__line(struct agent *ag, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void agent__push(struct agent *ag, json_t *ev, int urgent);

/* watch.c: the main loop's watchdog.  agent__phase names what the loop
 * does from now on and returns the previous name (a nested phase puts it
 * back); a phase that took WATCH_LOG_NS or more is logged as "main loop
 * stalled" when it ends, and every WATCH_LOG_EVERY_NS while it lasts. */
const char *agent__phase(struct agent *ag, const char *name);
/* What the loop's heartbeat said (workload NULL: only `allowed`
 * changes): the keep-alive repeats it. */
void agent__watch_beat(struct agent *ag, const char *workload, int attempt,
		       int pgid, bool allowed);
/* Start the thread (heartbeats every every_ns while the loop blocks):
 * 0 or a negative code with e.  Stop: joins it; NULL-safe twice. */
int agent__watch_start(struct agent *ag, int64_t every_ns, struct sr_err *e);
void agent__watch_stop(struct agent *ag);

/* workrun.c: the workload's life (see the diagram in agent.c) */
void agent__advance(struct agent *ag);
/* A warm spare or a replacement while the gang trains through a notice
 * (assignment.setup_ahead), just registered: put the job's files in
 * place and run its setup now, so that a `run` later starts the
 * workload at once.
 * Not with bucket mounts (their uploads are rank 0's: they start with
 * the rank, at the first `run`). */
void agent__spare_setup(struct agent *ag);
void agent__begin_stop(struct agent *ag, enum stop_why why, int64_t deadline);
void agent__drain_pipe(struct agent *ag, int *fd, enum logbatch_stream s);
void agent__check_workload(struct agent *ag, int64_t now);
void agent__check_status(struct agent *ag);
/* Newest checkpoint step that survives this node (see workrun.c). */
int64_t agent__durable_step(struct agent *ag);
/* mounts.c: the bucket mounts' syncers (see its diagram) */
struct agent_mount;
/* Start the syncers not running (restore / COPY first): 0 or < 0. */
int agent_mounts_start(struct agent *ag, struct sr_err *e);
/* 1 every mount is past its restore, 0 not yet, -1 one failed. */
int agent_mounts_ready(struct agent *ag);
/* Read the syncers, enforce the final deadline, release the held exit:
 * 1 when the mounts just became ready. */
int agent_mounts_poll(struct agent *ag, int64_t now);
/* A reaped child that is a syncer: 1 (taken), else 0. */
int agent_mounts_note_exit(struct agent *ag, pid_t pid, int status);
/* Ask every watching syncer for its final round, due by deadline_ns. */
void agent_mounts_final(struct agent *ag, int64_t deadline_ns);
/* The final round's deadline: the notice's kill, else a limit. */
int64_t agent_mounts_final_deadline(struct agent *ag);
/* How long the upload of what is left may take (a notice's reserve). */
int64_t agent_mounts_reserve_ns(const struct agent *ag);
int agent_mounts_busy(const struct agent *ag);
/* SPOTRUN_SYNC_ANSWERS for the workload, in buf; NULL none. */
const char *agent_mounts_answers(struct agent *ag, char *buf, size_t n);
/* SPOTRUN_SYNC_PIDS for the workload: the pids of the uploading mounts'
 * syncers, ' '-separated, in buf; NULL none. */
const char *agent_mounts_pids(struct agent *ag, char *buf, size_t n);
void agent_mounts_kill(struct agent *ag);
void agent_mounts_free(struct agent *ag);

/* isolate.c: start the workload as opts.isolation says, falling back
 * (auto) or refusing (strict) when it cannot be isolated. */
int agent__start_isolated(struct agent *ag, const char *script,
			  const char *cwd, char *const *envp, struct sr_err *e);
/* The same for argv with stdin from `in` (-1: /dev/null): what the
 * agent runs in the workload's isolation itself (sync.c). */
int agent__start_isolated_argv(struct agent *ag, char *const *argv, int in,
			       const char *cwd, char *const *envp,
			       struct sr_err *e);
/* The same into w instead of the workload's slot: a process that runs
 * beside the workload (a bucket mount's syncer, mounts.c). */
int agent__start_isolated_w(struct agent *ag, struct workload *w,
			    char *const *argv, int in, const char *cwd,
			    char *const *envp, struct sr_err *e);


#endif
