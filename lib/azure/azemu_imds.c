/*
 * azemu_imds.c - the Azure emulator's Scheduled Events (azemu.h): the
 * Preempt notice of a spot VM (and another VM's Freeze beside it), the
 * document each VM's IMDS answers, its acknowledgement, and the eviction
 * at the acknowledgement or at NotBefore.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/random.h"
#include "common/timeutil.h"
#include "azemu_int.h"

static void guid(char out[64])
{
	char h[33];

	sr_random_hex(h, 16);
	snprintf(out, 64, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16,
		 h + 20);
}

static struct az_event *event_add(struct azemu *m, const char *type,
				  const char *vm, const char *owner,
				  time_t nb)
{
	struct az_event *ev;
	struct tm tm;

	if (m->nevents >= AZ_MAX_EVENTS)
		return NULL;
	ev = &m->events[m->nevents++];
	memset(ev, 0, sizeof *ev);
	guid(ev->id);
	snprintf(ev->type, sizeof ev->type, "%s", type);
	snprintf(ev->vm, sizeof ev->vm, "%s", vm);
	snprintf(ev->owner, sizeof ev->owner, "%s", owner);
	gmtime_r(&nb, &tm);
	strftime(ev->not_before, sizeof ev->not_before,
		 "%a, %d %b %Y %H:%M:%S GMT", &tm);
	return ev;
}

void azemu__notice(struct azemu *m, struct az_vm *v)
{
	if (!v->noticed && !v->gone && azemu__event(m, v, "Preempt") == 0)
		v->noticed = true;
}

int azemu__event(struct azemu *m, struct az_vm *v, const char *type)
{
	double real_s = m->notice_s / m->time_scale;
	int64_t now_ns = sr_time_real_ns();
	time_t nb = (time_t)((now_ns + (int64_t)(real_s * 1e9)) /
			     SR_NS_PER_SEC);
	bool ends = !strcmp(type, "Preempt") || !strcmp(type, "Terminate");
	struct az_event *ev;

	if (v->gone || (!ends && strcmp(type, "Reboot") &&
			strcmp(type, "Redeploy") && strcmp(type, "Freeze")))
		return -EINVAL;
	/* another VM's event first: the agent must pick its own */
	event_add(m, "Freeze", "another-vm", v->name, nb);
	ev = event_add(m, type, v->name, v->name, nb);
	if (!ev)
		return -ENOSPC;
	/* whole seconds, as NotBefore says: never before it */
	ev->at_mono_ns = sr_time_mono_ns() + ((int64_t)nb * SR_NS_PER_SEC -
					      now_ns);
	ev->ends = ends;
	json_object_set_new(m->noticed, v->name, json_pack(
		"{sf ss ss}", "at", (double)now_ns / 1e9, "event", ev->id,
		"type", type));
	m->incarnation++;
	return 0;
}

void azemu__events_drop(struct azemu *m, const char *name)
{
	size_t k = 0;

	for (size_t i = 0; i < m->nevents; i++) {
		if (strcmp(m->events[i].owner, name))
			m->events[k++] = m->events[i];
	}
	if (k != m->nevents)
		m->incarnation++;
	m->nevents = k;
}

void azemu__evictions(struct azemu *m, int64_t now_mono_ns)
{
	for (size_t i = 0; i < m->nevents; i++) {
		struct az_event *ev = &m->events[i];
		struct az_vm *v;

		if (!ev->at_mono_ns || (!ev->acked && now_mono_ns < ev->at_mono_ns))
			continue;
		if (!ev->ends) { /* a Reboot, Redeploy, Freeze: it happened */
			m->events[i] = m->events[--m->nevents];
			m->incarnation++;
			i = (size_t)-1;
			continue;
		}
		v = azemu__vm(m, ev->vm);
		json_array_append_new(m->evicted, json_pack(
			"{ss ss ss}", "name", ev->vm, "how",
			ev->acked ? "ack" : "notbefore", "type", ev->type));
		if (v)
			azemu__vm_delete(m, v, false); /* drops its events */
		else
			azemu__events_drop(m, ev->vm);
		i = (size_t)-1; /* the list moved: from the start */
	}
}

static json_t *document(struct azemu *m)
{
	json_t *evs = json_array();

	for (size_t i = 0; i < m->nevents; i++) {
		const struct az_event *ev = &m->events[i];

		json_array_append_new(evs, json_pack(
			"{ss ss ss s[s] ss ss ss ss si}", "EventId", ev->id,
			"EventType", ev->type, "ResourceType", "VirtualMachine",
			"Resources", ev->vm, "EventStatus", "Scheduled",
			"NotBefore", ev->not_before, "Description",
			!strcmp(ev->type, "Preempt") ? "Virtual machine is being "
			"evicted from Azure Spot." : "Host server is undergoing "
			"maintenance.", "EventSource", "Platform",
			"DurationInSeconds", ev->ends ? -1 : 5));
	}
	return json_pack("{si so}", "DocumentIncarnation", (int)m->incarnation,
			 "Events", evs);
}

void azemu__schedev(struct azemu *m, const char *name, const char *method,
		    const char *body, int *status, json_t **out)
{
	json_t *doc, *reqs, *r;
	size_t i;

	*status = 200;
	*out = NULL;
	if (strcmp(method, "POST")) {
		*out = document(m);
		return;
	}
	doc = json_loads(body ? body : "", 0, NULL);
	reqs = json_object_get(doc, "StartRequests");
	if (!json_is_array(reqs)) {
		*status = 400;
		*out = json_pack("{ss ss}", "error", "invalid_request",
				 "error_description", "expected {\"StartRequests\":"
				 " [{\"EventId\": ...}]}");
		json_decref(doc);
		return;
	}
	json_array_foreach(reqs, i, r) {
		const char *id = json_string_value(json_object_get(r, "EventId"));

		for (size_t k = 0; id && k < m->nevents; k++) {
			if (strcmp(m->events[k].id, id))
				continue;
			m->events[k].acked = true;
			json_array_append_new(m->acks, json_pack(
				"{ss ss}", "event", id, "by", name));
		}
	}
	json_decref(doc);
	pthread_cond_broadcast(&m->cv); /* the clock evicts at once */
}
