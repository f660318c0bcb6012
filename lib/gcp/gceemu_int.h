/*
 * gceemu_int.h - the GCE emulator's state, shared by gceemu.c (Compute
 * calls, VMs, the clock) and gceemu_http.c (HTTP, tokens, metadata).
 */
#ifndef SR_GCP_GCEEMU_INT_H
#define SR_GCP_GCEEMU_INT_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "cloud/localmkt.h"
#include "gcp/gceemu.h"

#define EMU_MAX_VMS 256
#define EMU_MAX_OPS 1024
#define EMU_MAX_TOKENS 64

struct emu_vm {
	char name[64], zone[64], type[64];
	bool spot, gone;
	int pool;
	json_t *labels;            /* owned */
	char status[16];           /* PROVISIONING, RUNNING, ... */
	int64_t created_ns;        /* wall clock */
	int64_t pid, pid_start;    /* the session */
	bool preempted;
	int64_t kill_mono_ns;      /* 0: none due */
	char maint[40];
	uint64_t etag_pre, etag_mnt;
	char dir[640];
};

struct emu_op {
	char name[40], zone[64], target[320], rid[40], kind[16];
	char err_code[64];         /* "" none */
	bool done;
};

struct gceemu {
	pthread_mutex_t mu;
	pthread_cond_t cv;         /* any VM's metadata changed; stop */
	struct emu_vm vms[EMU_MAX_VMS];
	size_t nvms;
	struct emu_op ops[EMU_MAX_OPS];
	size_t nops;
	char tokens[EMU_MAX_TOKENS][48];
	size_t ntokens;
	uint64_t etag_seq;
	struct localmkt *mkt;
	char project[64], region[40], work_dir[512], url[64];
	double time_scale, notice_s;
	char **no_cap;             /* "ZONE=none|plenty" overrides */
	int64_t t0_mono_ns;
	FILE *log;
	json_t *skus;              /* the Billing Catalog's skus array, or
				      NULL (owned) */
	void *daemon;              /* struct MHD_Daemon */
	pthread_t clock;
	bool clock_started, stopping;
};

/* A Compute call (gceemu.c): method, the path after
 * /compute/v1/projects/{p}/, the query string's values, the body.
 * *status and *out (a JSON document, new reference) are the answer. */
struct emu_query {
	const char *request_id, *filter, *page_token, *max_results;
};
void gceemu__compute(struct gceemu *m, const char *method, const char *path,
		     const struct emu_query *q, const char *body, size_t len,
		     int *status, json_t **out);

/* An {"error"} document (new reference). */
json_t *gceemu__error(int code, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The VM called name, NULL when none (or deleted).  Under m->mu. */
struct emu_vm *gceemu__vm(struct gceemu *m, const char *name);
/* Mark a VM preempted now (under m->mu): the ETag moves, waiters wake. */
void gceemu__preempt_vm(struct gceemu *m, struct emu_vm *v);

/* gceemu_preempt; reclaim: the zone keeps no spot capacity after. */
int gceemu__preempt(struct gceemu *m, const char *name, bool reclaim);
/* The zone's spot capacity from now on: val "none" (its spot VMs are
 * preempted at the next tick) or "plenty", whatever the trace says.  0,
 * -EINVAL for another val, -ENOMEM. */
int gceemu__set_capacity(struct gceemu *m, const char *zone, const char *val);

/* The clock thread (pthread start routine; arg: m).  Ends when
 * m->stopping is set (under m->mu, cv signalled), deleting every VM. */
void *gceemu__clock(void *arg);

#endif
