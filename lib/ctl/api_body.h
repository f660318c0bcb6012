/*
 * api_body.h - strict parsers for the JSON bodies of the REST API.
 *
 * Each parser takes the raw body, rejects malformed JSON (with
 * line:column), unknown fields, wrong types and out-of-range values with
 * an sr_err message naming the field ("request body: events[3].type:
 * unknown event type 'x'"), and fills a plain struct.  Strings in the
 * structs are borrowed from the json_t the parser returns in *root, which
 * the caller json_decref()s when done.  Limits are in docs/api.md.
 */
#ifndef SR_CTL_API_BODY_H
#define SR_CTL_API_BODY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "market/joblimits.h"

#define CTL_BODY_MAX (1024 * 1024)
#define CTL_PATH_MAX 1024
#define CTL_QUERY_MAX 1024 /* bytes after '?' */
/* request header fields, all of them: name + value + 4 each (": ", CRLF);
 * over it the answer is JSON 431.  libmicrohttpd holds a request's head
 * in a per-connection pool of CTL_CONN_MEMORY bytes (each open connection
 * costs that much), so heads up to about that size reach the handler;
 * past it libmicrohttpd answers itself, in HTML (docs/api.md, "Errors"). */
#define CTL_HEADERS_MAX (16 * 1024)
#define CTL_CONN_MEMORY (64 * 1024)
#define CTL_IDEM_KEY_MAX 128 /* Idempotency-Key header, bytes */
#define CTL_YAML_MAX SR_LIMIT_JOB_BYTES /* market/joblimits.h */
#define CTL_LOG_LINES_MAX 1000
#define CTL_LOG_LINE_MAX 4096
#define CTL_EVENTS_MAX 1100

struct api_job_create {
	const char *spec_yaml;
	size_t spec_len;
	const char *spec_name;  /* "job.yaml" if absent */
	const char *workdir;    /* NULL if absent; absolute */
	const char *files;      /* "sha256:<hex>" of an upload, NULL if absent */
	int64_t max_restarts;   /* -1 if absent */
	json_t *envs;           /* borrowed object of strings, or NULL */
};

struct api_register {
	int64_t pid;            /* 0 if absent */
	const char *hostname;   /* "" if absent */
	const char *agent_version;
	const char *addr;       /* the node's own address, "" if absent */
};

enum api_workload { WL_IDLE, WL_SETUP, WL_RUNNING, WL_STOPPING, WL_EXITED };

struct api_heartbeat {
	enum api_workload workload;
	int64_t attempt;
	int64_t step, total_steps, ckpt_step, restored_step; /* -1 absent */
	int64_t ckpt_at_ns;   /* when the agent saw ckpt_step committed
				 (Unix ns), -1 absent */
	/* the recovery point with tier 3: newest step on the node's disk,
	 * and the save time (wall ns) of ckpt_step, the store's newest */
	int64_t ckpt_local_step, ckpt_store_ns;               /* -1 absent */
	double cpu_util, gpu_util;                            /* -1 absent */
	double steps_per_s;   /* the workload's progress (lib/agent/stepstat.h),
				 -1 absent */
	int64_t workload_pgid;                                /* 0 absent */
};

enum api_ev_type { EV_NOTICE, EV_CHECKPOINT, EV_EXIT, EV_UTIL, EV_SETUP_DONE,
		   EV_LOG, EV_CKPT_ERROR, EV_ISOLATION, EV_REBALANCE, EV_SYNC,
		   EV_FILE_MOUNTS, EV_RESTORED };
enum api_exit_cause { CAUSE_COMPLETED, CAUSE_PREEMPTED, CAUSE_STOPPED,
		      CAUSE_CRASHED };

struct api_event {
	enum api_ev_type type;
	int64_t attempt;          /* -1 absent */
	/* notice, rebalance: the cloud's time */
	const char *time;         /* RFC 3339 or NULL */
	int64_t time_ns;
	const char *source;       /* notice: "imds", "signal", ... or NULL */
	/* checkpoint */
	int64_t step;             /* -1 absent */
	double stall_ms;          /* -1 absent */
	bool final, durable;
	/* exit / setup_done */
	int64_t exit_code;        /* INT64_MIN when null/absent */
	int64_t signal;           /* 0 absent */
	enum api_exit_cause cause;
	/* util */
	double cpu_util, gpu_util;
	/* ckpt_error: why checkpoints do not reach the object store;
	 * isolation: how the workload is isolated (mode) and why */
	const char *message;
	const char *mode;
	/* sync (a bucket mount's syncer, issue 30): what happened
	 * ("restored", "copied", "final", "error") and the round (-1 none);
	 * message says where */
	const char *what;
	int64_t round;
	json_t *hidden;           /* isolation: paths, borrowed; NULL absent */
	/* log */
	const char *stream;
	const char *line;
	size_t line_len;          /* <= CTL_LOG_LINE_MAX */
	bool truncated;
	int64_t ts_ns;            /* 0 absent */
};

struct api_report {
	struct api_event *ev;     /* malloc'd [n]; free with api_report_free */
	size_t n;
};

/* "sha256:" and 64 lower-case hex: an upload's id (POST /v1/uploads). */
int api_upload_id_ok(const char *s);
int api_parse_job_create(const char *buf, size_t len, json_t **root,
			 struct api_job_create *out, struct sr_err *e);
int api_parse_register(const char *buf, size_t len, json_t **root,
		       struct api_register *out, struct sr_err *e);
int api_parse_heartbeat(const char *buf, size_t len, json_t **root,
			struct api_heartbeat *out, struct sr_err *e);
int api_parse_report(const char *buf, size_t len, json_t **root,
		     struct api_report *out, struct sr_err *e);
void api_report_free(struct api_report *r); /* NULL-safe */

const char *api_workload_name(enum api_workload w);
const char *api_cause_name(enum api_exit_cause c);

#endif
