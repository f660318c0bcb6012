/*
 * azemu_int.h - the Azure emulator's state, shared by azemu.c (ARM
 * resources, operations, the clock), azemu_imds.c (Scheduled Events,
 * eviction) and azemu_http.c (HTTP, tokens, prices, controls).
 */
#ifndef SR_AZURE_AZEMU_INT_H
#define SR_AZURE_AZEMU_INT_H

#include <pthread.h>
#include <stdint.h>

#include <jansson.h>

#include "azure/azemu.h"
#include "cloud/localmkt.h"

#define AZ_MAX_VMS 256
#define AZ_MAX_RES 768
#define AZ_MAX_OPS 1024
#define AZ_MAX_EVENTS 64
#define AZ_MAX_TOKENS 64
#define AZ_MAX_LOG 512

enum az_kind { AZ_NIC, AZ_DISK, AZ_IP };

/* A NIC, an OS disk or a public IP. */
struct az_res {
	enum az_kind kind;
	char name[80];
	char vm[64];               /* attached to (NIC, disk); "" none */
	char nic[80];              /* an IP's NIC; "" none */
	bool gone;
};

struct az_vm {
	char name[64], size[48], zone[8];
	char state[16];            /* Creating, Succeeded, Failed */
	bool spot, gone;
	int pool;
	json_t *tags;              /* owned */
	json_t *hw;                /* hardwareProfile (owned) */
	int64_t created_ns;        /* wall clock */
	int64_t ready_mono_ns;     /* its create operation ends */
	char fail_code[40];        /* "" succeeds */
	char *script;              /* the decoded customData until it boots */
	char nic[80], disk[80], ip[80];       /* "" none */
	bool del_nic, del_disk, del_ip;       /* deleteOption Delete */
	int64_t pid, pid_start;
	char dir[640];
	bool noticed;
};

struct az_op {
	char id[40], vm[64];
	bool del;                  /* a delete: Succeeded at once */
};

struct az_event {
	char id[64], type[16], vm[64];
	char owner[64];            /* the VM whose notice posted it */
	char not_before[40];       /* RFC 1123 */
	int64_t at_mono_ns;        /* NotBefore; 0: another VM's event */
	bool ends;                 /* Preempt, Terminate: the VM goes then */
	bool acked;
};

struct azemu {
	pthread_mutex_t mu;
	pthread_cond_t cv;         /* stop */
	struct az_vm vms[AZ_MAX_VMS];
	size_t nvms;
	struct az_res res[AZ_MAX_RES];
	size_t nres;
	struct az_op ops[AZ_MAX_OPS];
	size_t nops;
	struct az_event events[AZ_MAX_EVENTS];
	size_t nevents;
	long incarnation;
	char tokens[AZ_MAX_TOKENS][48];
	size_t ntokens;
	int throttle;              /* the next calls answered 429 */
	json_t *acks, *evicted, *noticed, *log;  /* for /emu/state, owned */
	struct localmkt *mkt;
	char location[40], work_dir[512], url[64];
	double time_scale, notice_s, boot_s;
	int page, quota_vms;
	char **cap;                /* "SIZE=none|plenty" overrides */
	int64_t t0_mono_ns;
	void *daemon;              /* struct MHD_Daemon */
	pthread_t clock;
	bool clock_started, stopping;
};

/* An ARM call (azemu.c): method, the path after /subscriptions/{s}/, its
 * api-version, $skiptoken and body.  *status, *out (new reference, NULL
 * for no body) and *op (an operation id for Azure-AsyncOperation, ""
 * none) answer it.  Under m->mu. */
void azemu__arm(struct azemu *m, const char *method, const char *path,
		const char *api, const char *skiptoken, const char *body,
		size_t len, int *status, json_t **out, char op[40]);
/* ARM's {"error":{"code","message"}} (new reference). */
json_t *azemu__error(const char *code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The VM called name (not gone), or NULL.  Under m->mu. */
struct az_vm *azemu__vm(struct azemu *m, const char *name);
/* The size's spot capacity now: an override, else the pool's trace. */
bool azemu__capacity(struct azemu *m, const char *size, int pool);
/* The size's spot capacity from now on: "none" or "plenty" (under
 * m->mu).  0, -EINVAL, -ENOMEM. */
int azemu__set_capacity(struct azemu *m, const char *size, const char *val);
/* Delete VM v (under m->mu): its session killed, its resources with
 * deleteOption Delete deleted (all kept, detached, when keep_res). */
void azemu__vm_delete(struct azemu *m, struct az_vm *v, bool keep_res);
/* The market's pools of our location selling size, or -1. */
int azemu__pool(struct azemu *m, const char *size);

/* Scheduled Events (azemu_imds.c), under m->mu. */
/* Post VM v's Preempt (and another VM's Freeze); NotBefore notice_s
 * cloud seconds ahead; once per VM. */
void azemu__notice(struct azemu *m, struct az_vm *v);
/* Post an event of type (Preempt, Terminate: the VM is deleted at its
 * acknowledgement or NotBefore; Reboot, Redeploy, Freeze: the event ends
 * then, the VM stays) for v, and another VM's Freeze.  0, -EINVAL for
 * another type, -ENOSPC. */
int azemu__event(struct azemu *m, struct az_vm *v, const char *type);
/* The Scheduled Events call of VM name (GET, or POST body): *status and
 * *out (new reference; NULL: an empty body). */
void azemu__schedev(struct azemu *m, const char *name, const char *method,
		    const char *body, int *status, json_t **out);
/* A new access token (under m->mu): tok gets it. */
void azemu__token_new(struct azemu *m, char tok[48]);
/* Evict the VMs whose event was acknowledged or reached NotBefore. */
void azemu__evictions(struct azemu *m, int64_t now_mono_ns);
/* Forget VM name's events (it is gone). */
void azemu__events_drop(struct azemu *m, const char *name);

/* The clock thread (pthread start routine; arg: m): creates end, VMs
 * boot, pools that lose capacity notice their spot VMs, evictions
 * happen.  Ends when m->stopping is set, deleting every VM. */
void *azemu__clock(void *arg);

#endif
