/*
 * ec2emu_int.h - internals of the EC2 emulator (ec2emu.c, ec2emu_http.c).
 */
#ifndef SR_AWS_EC2EMU_INT_H
#define SR_AWS_EC2EMU_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/money.h"

#include "cloud/localmkt.h"
#include "ec2emu.h"

#define EMU_MAX_TAGS 16
#define EMU_MAX_NOCAP 32
#define EMU_DIGEST_LEN 32

enum { EMU_PENDING, EMU_RUNNING, EMU_SHUTTING_DOWN, EMU_TERMINATED };

struct emu_pool {
	int index;          /* localmkt pool */
	char zone[40];
	char type[48];
};

struct emu_inst {
	char id[32];
	unsigned seq;
	char token[65];
	unsigned char params[EMU_DIGEST_LEN]; /* what RunInstances asked */
	char image[64], type[48], zone[40], subnet[64];
	bool spot;
	const struct emu_pool *pool;
	int state;
	double launch_sim;
	double notice_sim;  /* < 0: no notice */
	char reason[64];
	int64_t pid, pid_start;
	char dir[600];
	unsigned imds_salt;
	char *tag_k[EMU_MAX_TAGS], *tag_v[EMU_MAX_TAGS];
	size_t ntags;
	int64_t visible_ns;  /* monotonic: DescribeInstances sees it from */
};

enum { EMU_B_MUTATING, EMU_B_READ, EMU_B_UNFILTERED, EMU_B_RUN_RES,
       EMU_B_TERM_RES, EMU_NBUCKETS };

struct emu_bucket {
	double tokens, cap, rate;   /* rate: tokens per real second */
	int64_t at_ns;              /* monotonic time of the last refill */
};

struct ec2emu {
	pthread_mutex_t mu;          /* guards everything below but the server */
	struct localmkt *mkt;
	char region[40];
	struct emu_pool *pools;
	size_t npools;
	struct emu_inst **inst;
	size_t ninst, capinst;
	struct { char zone[40], type[48]; int cap; } capov[EMU_MAX_NOCAP];
	size_t ncapov;
	unsigned seq, id_salt;
	int64_t t0_ns;               /* monotonic start */
	int64_t epoch0;              /* wall clock at start, s */
	int64_t epoch0_ns;           /* the same, ns */
	double time_scale, trace_start, boot_s, notice_s;
	char work_dir[512];
	char url[64];
	void *daemon;                /* struct MHD_Daemon */
	pthread_t clock;
	bool clock_started;
	bool stopping;
	pthread_cond_t cv;
	/* EC2 where it hurts (ec2emu_limits.c) */
	bool throttle;
	struct emu_bucket bucket[EMU_NBUCKETS];
	double background_rps, consistency_s, capacity_fail;
	int spot_quota, ondemand_quota;
	uint64_t rng;
	struct ec2emu_stats stats;
	FILE *log;
	int run_latency_ms;
};

struct emu_params {
	char **kv;                   /* 2*n decoded strings */
	size_t n;
	int64_t epoch;               /* the caller's lease epoch, from its
					User-Agent ("lease-epoch N"); 0 */
};

struct emu_answer {
	int status;
	char *body;                  /* malloc'd */
	size_t len;
	char code[64];               /* the error's code, "" on success */
};

int ec2emu__params_parse(const char *body, size_t len, struct emu_params *p);
const char *ec2emu__param(const struct emu_params *p, const char *name);
void ec2emu__params_free(struct emu_params *p);

/* ec2emu_xml.c: printf-style parameter lookup ("Filter.%d.Name"). */
const char *ec2emu__paramf(const struct emu_params *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Clock: epoch seconds of cloud time sim; "2026-...Z" into out[40]. */
int64_t ec2emu__epoch(const struct ec2emu *m, double sim);
/* Wall-clock ns at which the emulator's clock reads sim: what an
 * instance sees on its own clock (IMDS notice time, launch time). */
int64_t ec2emu__real_ns(const struct ec2emu *m, double sim);
void ec2emu__ts(const struct ec2emu *m, double sim, char out[40]);
/* Answers: an error document with `status`; a document opened with its
 * root element (NULL on out-of-memory), closed by ec2emu__end. */
void ec2emu__fail(struct emu_answer *a, int status, const char *code,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
FILE *ec2emu__begin(struct emu_answer *a, const char *root);
void ec2emu__end(struct emu_answer *a, FILE *f, const char *root);
void ec2emu__xml_esc(FILE *f, const char *s);
const char *ec2emu__state_name(int s);
int ec2emu__state_code(int s);
void ec2emu__put_instance(const struct ec2emu *m, FILE *f,
			  const struct emu_inst *i);
/* ec2emu.c: the pool's spot price at sim (-1 unknown). */
sr_micros ec2emu__spot_price(const struct ec2emu *m, const struct emu_pool *p,
			     double sim);
/* ec2emu_read.c: the read-only actions, called with m->mu held. */
void ec2emu__describe_instances(struct ec2emu *m, const struct emu_params *p,
				struct emu_answer *a);
void ec2emu__spot_price_history(struct ec2emu *m, const struct emu_params *p,
				struct emu_answer *a);
void ec2emu__type_offerings(struct ec2emu *m, const struct emu_params *p,
			    struct emu_answer *a);

/* One Query API call; fills *a (caller frees a->body). */
void ec2emu__action(struct ec2emu *m, const struct emu_params *p,
		    struct emu_answer *a);
double ec2emu__now(const struct ec2emu *m);
bool ec2emu__spot_capacity(const struct ec2emu *m, const struct emu_pool *p,
			   double sim);
void ec2emu__tick(struct ec2emu *m);
/* The instance-action document of instance id: 0, or -SR_ENOTFOUND. */
int ec2emu__imds_notice(struct ec2emu *m, const char *id, char *json,
			size_t len);
/* Token check of instance id's IMDS; with issue != NULL, writes the
 * token to issue and returns whether the instance exists. */
bool ec2emu__imds_token_ok(struct ec2emu *m, const char *id, const char *tok,
			   char *issue, size_t len);
void ec2emu__free_state(struct ec2emu *m);

/* ec2emu_limits.c, called with m->mu held. */
void ec2emu__limits_init(struct ec2emu *m, const struct ec2emu_opts *o);
enum ec2emu_action ec2emu__action_of(const char *name);
/* Whether the call is refused for want of tokens (it then costs none). */
bool ec2emu__throttled(struct ec2emu *m, enum ec2emu_action act,
		       const struct emu_params *p);
double ec2emu__rand(struct ec2emu *m);         /* [0, 1) */
void ec2emu__visible_from(struct ec2emu *m, struct emu_inst *in);
bool ec2emu__visible(const struct emu_inst *in);
bool ec2emu__capacity_fails(struct ec2emu *m);
bool ec2emu__over_quota(const struct ec2emu *m, bool spot);
/* SHA-256 of a call's parameters but ClientToken, in name order: what
 * EC2 compares when a ClientToken comes back. */
void ec2emu__params_digest(const struct emu_params *p,
			   unsigned char out[EMU_DIGEST_LEN]);
void ec2emu__count(struct ec2emu *m, enum ec2emu_action act,
		   const struct emu_params *p, const struct emu_answer *a);

#endif
