/*
 * schedev.h - Azure Scheduled Events: the notice source of an Azure VM
 * (the agent's `--notice scheduled-events`), and its parser.
 *
 * Protocol (learn.microsoft.com, "Azure Metadata Service: Scheduled
 * Events for Linux VMs"; api-version 2020-07-01), every request with the
 * header `Metadata: true`:
 *
 *   GET /metadata/instance/compute/name?api-version=2021-02-01&format=text
 *     -> 200, the VM's name (the name Resources lists)
 *   GET /metadata/scheduledevents?api-version=2020-07-01
 *     -> 200 {"DocumentIncarnation": N,
 *             "Events": [{"EventId": "602d9444-...",
 *                         "EventType": "Preempt",
 *                         "ResourceType": "VirtualMachine",
 *                         "Resources": ["vmname"],
 *                         "EventStatus": "Scheduled",
 *                         "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT",
 *                         "Description": "...", "EventSource": "Platform",
 *                         "DurationInSeconds": -1}, ...]}
 *     The first call enables the service and may take up to two minutes
 *     (each poll's timeout bounds it; the next poll asks again).
 *   POST /metadata/scheduledevents?api-version=2020-07-01
 *        {"StartRequests": [{"EventId": "602d9444-..."}]}
 *     -> 200: the platform may start the event now (the VM goes early).
 *
 * DocumentIncarnation changes whenever the event list does; a poll that
 * sees the same incarnation answers what it answered last (no re-parse).
 *
 * Which events are a notice, for this VM only (an event whose Resources
 * do not name it is another VM's and is ignored):
 *   Preempt    the spot VM is evicted at NotBefore (>= 30 s ahead)
 *   Terminate  the VM is deleted at NotBefore
 *   Reboot     the VM restarts: processes and their memory are lost
 *   Redeploy   the VM moves to another host: its local disk is lost
 * Freeze (a pause of seconds, memory kept) is not a notice.  A Started
 * event has an empty NotBefore: its time is now.
 *
 * A 200 whose body is not that document (bad JSON, a missing or mistyped
 * field, an unknown EventType, a NotBefore that is not an RFC 1123 date)
 * is an error (-SR_EPARSE) naming the field and the event; the caller
 * keeps polling.
 *
 * Not thread-safe: one client per polling thread.  schedev_ack is
 * stateless.
 */
#ifndef SR_AZURE_SCHEDEV_H
#define SR_AZURE_SCHEDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define SCHEDEV_DEFAULT_URL "http://169.254.169.254"
#define SCHEDEV_API "api-version=2020-07-01"
#define SCHEDEV_MAX_EVENTS 32
#define SCHEDEV_ID_MAX 64

enum schedev_type {
	SCHEDEV_FREEZE = 1,
	SCHEDEV_REBOOT,
	SCHEDEV_REDEPLOY,
	SCHEDEV_PREEMPT,
	SCHEDEV_TERMINATE,
};

struct schedev_event {
	char id[SCHEDEV_ID_MAX];
	enum schedev_type type;
	bool started;              /* EventStatus "Started" */
	bool ours;                 /* Resources names this VM */
	int64_t not_before_ns;     /* epoch ns; 0: empty (Started) */
};

struct schedev_doc {
	int64_t incarnation;
	struct schedev_event ev[SCHEDEV_MAX_EVENTS];
	size_t n;                  /* events kept (the first MAX) */
};

/* What one poll found for this VM. */
struct schedev_notice {
	int64_t incarnation;
	enum schedev_type type;    /* 0: no notice for this VM */
	int64_t time_ns;           /* NotBefore (epoch ns); now if Started */
	char event_id[SCHEDEV_ID_MAX];
	bool changed;              /* the incarnation differs from the last */
};

/* Parse a scheduled-events document; vm: this VM's name (NULL: none is
 * ours).  0, or -SR_EPARSE with *e naming the field. */
int schedev_parse(const char *body, size_t len, const char *vm,
		  struct schedev_doc *out, struct sr_err *e);

/* The notice among doc's events: the earliest of this VM's Preempt,
 * Terminate, Reboot and Redeploy (now_ns for a Started one).  0 when
 * there is one, -SR_ENOTFOUND when none. */
int schedev_pick(const struct schedev_doc *doc, int64_t now_ns,
		 struct schedev_notice *out);

/* "Preempt", ... ; "none" for 0. */
const char *schedev_type_name(enum schedev_type t);

struct schedev;

/* A client of the IMDS at base_url (NULL: SCHEDEV_DEFAULT_URL); each
 * request bounded by timeout_ms.  NULL on out of memory.  Caller owns;
 * schedev_destroy. */
struct schedev *schedev_create(const char *base_url, long timeout_ms);
void schedev_destroy(struct schedev *c); /* NULL-safe */

/* One poll: this VM's name first (once), then the document.  0 with
 * *out filled (type 0: no notice), or a negative code with *e. */
int schedev_poll(struct schedev *c, struct schedev_notice *out,
		 struct sr_err *e);

/* Acknowledge event_id (StartRequests) at base_url: 0 or a negative
 * code with *e. */
int schedev_ack(const char *base_url, const char *event_id, long timeout_ms,
		struct sr_err *e);

#endif
