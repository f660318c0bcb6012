/*
 * gceemu.c - the GCE emulator's Compute calls and VMs (gceemu.h).  HTTP,
 * tokens and the metadata server: gceemu_http.c.
 *
 * VM states and what moves them (the clock thread, gceemu_http.c):
 *
 *   insert --> RUNNING (its startup-script's session started)
 *   RUNNING (spot) --(pool loses capacity | preempt)--> STOPPING,
 *       preempted TRUE (GCE's preemption is an ACPI soft off: the
 *       instance lists STOPPING while its guest shuts down, its
 *       session still runs)
 *   STOPPING --(notice_s cloud seconds)--> session killed, deleted (the
 *       driver's instanceTerminationAction DELETE; TERMINATED first on
 *       GCE, never listed here)
 *   RUNNING | STOPPING --delete--> session killed, deleted
 *
 * A deleted VM's directory keeps its console.log and the agent's log
 * (for debugging); its root directory goes with it, as a boot disk with
 * autoDelete.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cloud/emuhttp.h"
#include "common/proc.h"
#include "common/timeutil.h"
#include "gcp/gce.h"
#include "gceemu_int.h"

json_t *gceemu__error(int code, const char *reason, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return json_pack("{s{si ss s[{ss ss ss}]}}", "error", "code", code,
			 "message", msg, "errors", "message", msg, "domain",
			 "global", "reason", reason);
}

struct emu_vm *gceemu__vm(struct gceemu *m, const char *name)
{
	for (size_t i = 0; i < m->nvms; i++) {
		if (!m->vms[i].gone && strcmp(m->vms[i].name, name) == 0)
			return &m->vms[i];
	}
	return NULL;
}

void gceemu__preempt_vm(struct gceemu *m, struct emu_vm *v)
{
	double real_s = m->notice_s / m->time_scale;

	if (v->preempted || v->gone)
		return;
	v->preempted = true;
	snprintf(v->status, sizeof v->status, "STOPPING");
	v->etag_pre = ++m->etag_seq;
	v->kill_mono_ns = sr_time_mono_ns() + (int64_t)(real_s * 1e9);
	pthread_cond_broadcast(&m->cv);
}

static json_t *op_doc(struct gceemu *m, const struct emu_op *op)
{
	json_t *d = json_pack("{ss ss ss ss ss ss}", "kind", "compute#operation",
			      "name", op->name, "operationType", op->kind,
			      "status", op->done ? "DONE" : "RUNNING",
			      "zone", op->zone, "targetLink", op->target);

	(void)m;
	if (d && op->err_code[0])
		json_object_set_new(d, "error", json_pack(
			"{s[{ss ss}]}", "errors", "code", op->err_code,
			"message", "The zone does not have enough resources "
			"available to fulfill the request."));
	return d;
}

static struct emu_op *op_new(struct gceemu *m, const char *kind,
			     const char *zone, const char *target,
			     const char *rid)
{
	struct emu_op *op;

	if (m->nops >= EMU_MAX_OPS)
		return NULL;
	op = &m->ops[m->nops];
	memset(op, 0, sizeof *op);
	snprintf(op->name, sizeof op->name, "operation-%zu-%08x", m->nops + 1,
		 (unsigned)(m->t0_mono_ns & 0xffffffff));
	snprintf(op->kind, sizeof op->kind, "%s", kind);
	snprintf(op->zone, sizeof op->zone, "%s", zone);
	snprintf(op->target, sizeof op->target, "%s", target);
	snprintf(op->rid, sizeof op->rid, "%s", rid ? rid : "");
	m->nops++;
	return op;
}

static struct emu_op *op_by_rid(struct gceemu *m, const char *rid)
{
	for (size_t i = 0; rid && *rid && i < m->nops; i++) {
		if (strcmp(m->ops[i].rid, rid) == 0)
			return &m->ops[i];
	}
	return NULL;
}

static json_t *vm_doc(struct gceemu *m, const struct emu_vm *v)
{
	char ts[40], zl[160], mt[256];

	sr_time_format_rfc3339(v->created_ns, 3, ts, sizeof ts);
	snprintf(zl, sizeof zl, "projects/%s/zones/%s", m->project, v->zone);
	snprintf(mt, sizeof mt, "%s/machineTypes/%s", zl, v->type);
	return json_pack("{ss ss ss ss ss ss sO s{ss}}", "kind", "compute#instance",
			 "name", v->name, "zone", zl, "machineType", mt,
			 "status", v->status, "creationTimestamp", ts,
			 "labels", v->labels, "scheduling", "provisioningModel",
			 v->spot ? "SPOT" : "STANDARD");
}

/* The pool selling type in zone of our region, or -1. */
static int pool_of(struct gceemu *m, const char *zone, const char *type)
{
	struct cloud_offering o;

	for (size_t p = 0; p < localmkt_npools(m->mkt); p++) {
		if (localmkt_describe(m->mkt, (int)p, 0, &o) == 0 &&
		    strcmp(o.cloud, "gcp") == 0 && strcmp(o.region, m->region) == 0
		    && strcmp(o.zone, zone) == 0 &&
		    strcmp(o.instance_type, type) == 0)
			return (int)p;
	}
	return -1;
}

static double sim_now(const struct gceemu *m)
{
	return (double)(sr_time_mono_ns() - m->t0_mono_ns) / 1e9 * m->time_scale;
}

/* Spot capacity in zone now: an override, else the pool's trace. */
static bool capacity(struct gceemu *m, const char *zone, int pool)
{
	int ov = emuhttp_cap_get(m->no_cap, zone);

	return ov >= 0 ? ov == 1 : localmkt_available(m->mkt, pool, sim_now(m));
}

/* Start the VM's startup-script as its session. */
static int vm_boot(struct gceemu *m, struct emu_vm *v, const char *script,
		   struct sr_err *e)
{
	char meta[160];

	snprintf(meta, sizeof meta, "%s/meta/%s", m->url, v->name);
	return emuhttp_vm_spawn(m->work_dir, v->name, "startup-script",
				"console.log", script, meta, v->dir, &v->pid,
				&v->pid_start, e);
}

static const char *meta_script(json_t *body)
{
	json_t *items = json_object_get(json_object_get(body, "metadata"),
					"items"), *it;
	size_t i;

	json_array_foreach(items, i, it) {
		const char *k = json_string_value(json_object_get(it, "key"));

		if (k && strcmp(k, "startup-script") == 0)
			return json_string_value(json_object_get(it, "value"));
	}
	return NULL;
}

static void insert(struct gceemu *m, const char *zone, const struct emu_query *q,
		   json_t *body, int *status, json_t **out)
{
	const char *name = json_string_value(json_object_get(body, "name"));
	const char *mt = json_string_value(json_object_get(body, "machineType"));
	json_t *sch = json_object_get(body, "scheduling");
	const char *pm = json_string_value(json_object_get(sch,
							   "provisioningModel"));
	const char *script = meta_script(body);
	const char *type = mt ? strrchr(mt, '/') : NULL;
	struct emu_op *op = op_by_rid(m, q->request_id);
	struct emu_vm *v;
	struct sr_err e = { 0 };
	char target[320];
	int pool;

	*status = 200;
	if (op) { /* the same requestId: the same operation */
		*out = op_doc(m, op);
		return;
	}
	type = type ? type + 1 : mt;
	if (!name || !type || !pm || (strcmp(pm, "SPOT") && strcmp(pm, "STANDARD"))) {
		*status = 400;
		*out = gceemu__error(400, "invalid", "Invalid value for field "
				     "'resource.%s'", !name ? "name" : !type ?
				     "machineType" : "scheduling."
				     "provisioningModel");
		return;
	}
	if (gceemu__vm(m, name)) {
		*status = 409;
		*out = gceemu__error(409, "alreadyExists", "The resource "
				     "'projects/%s/zones/%s/instances/%s' already "
				     "exists", m->project, zone, name);
		return;
	}
	pool = pool_of(m, zone, type);
	if (pool < 0) {
		*status = 400;
		*out = gceemu__error(400, "invalid", "Invalid value for field "
				     "'resource.machineType': '%s'. Machine type "
				     "does not exist in zone %s", type, zone);
		return;
	}
	snprintf(target, sizeof target, "projects/%s/zones/%s/instances/%s",
		 m->project, zone, name);
	op = op_new(m, "insert", zone, target, q->request_id);
	if (!op || m->nvms >= EMU_MAX_VMS) {
		*status = 503;
		*out = gceemu__error(503, "backendError", "emulator full");
		return;
	}
	if (!strcmp(pm, "SPOT") && !capacity(m, zone, pool)) {
		snprintf(op->err_code, sizeof op->err_code,
			 "ZONE_RESOURCE_POOL_EXHAUSTED");
		*out = op_doc(m, op);
		return;
	}
	v = &m->vms[m->nvms];
	memset(v, 0, sizeof *v);
	snprintf(v->name, sizeof v->name, "%s", name);
	snprintf(v->zone, sizeof v->zone, "%s", zone);
	snprintf(v->type, sizeof v->type, "%s", type);
	snprintf(v->status, sizeof v->status, "RUNNING");
	snprintf(v->maint, sizeof v->maint, "NONE");
	v->spot = !strcmp(pm, "SPOT");
	v->pool = pool;
	v->labels = json_incref(json_object_get(body, "labels") ?
				json_object_get(body, "labels") : json_object());
	v->created_ns = sr_time_real_ns();
	v->etag_pre = ++m->etag_seq;
	v->etag_mnt = ++m->etag_seq;
	m->nvms++;
	if (vm_boot(m, v, script ? script : "#!/bin/sh\nexec sleep 1000000\n",
		    &e)) {
		fprintf(stderr, "gce emulator: %s: %s\n", name, e.msg);
		snprintf(v->status, sizeof v->status, "TERMINATED");
	}
	*out = op_doc(m, op);
}

/* Kill the VM's session and forget it (under m->mu). */
static void vm_delete(struct gceemu *m, struct emu_vm *v)
{
	emuhttp_vm_end(v->pid, v->pid_start, v->dir);
	v->gone = true;
	json_decref(v->labels);
	v->labels = NULL;
	pthread_cond_broadcast(&m->cv);
}

/* The clock: every TICK_MS, spot VMs whose pool lost capacity are
 * preempted, and preempted VMs whose notice ran out are deleted. */
#define TICK_MS 50

void *gceemu__clock(void *arg)
{
	struct gceemu *m = arg;

	pthread_mutex_lock(&m->mu);
	while (!m->stopping) {
		int64_t now = sr_time_mono_ns();

		for (size_t i = 0; i < m->nvms; i++) {
			struct emu_vm *v = &m->vms[i];

			if (v->gone)
				continue;
			if (v->spot && !v->preempted &&
			    !capacity(m, v->zone, v->pool))
				gceemu__preempt_vm(m, v);
			if (v->preempted && now >= v->kill_mono_ns)
				vm_delete(m, v);
		}
		sr_proc_reap();
		emuhttp_tick_wait(&m->cv, &m->mu, TICK_MS);
	}
	for (size_t i = 0; i < m->nvms; i++) {
		if (!m->vms[i].gone)
			vm_delete(m, &m->vms[i]);
	}
	pthread_mutex_unlock(&m->mu);
	sr_proc_reap();
	return NULL;
}

/* labels.K="V" (the only filter the driver sends). */
static bool filter_ok(const struct emu_vm *v, const char *f)
{
	char key[64], val[64];

	if (!f || !*f)
		return true;
	if (sscanf(f, "labels.%63[^=]=\"%63[^\"]\"", key, val) != 2)
		return false;
	return json_string_value(json_object_get(v->labels, key)) &&
	       strcmp(json_string_value(json_object_get(v->labels, key)), val)
	       == 0;
}

static void aggregated(struct gceemu *m, const struct emu_query *q,
		       int *status, json_t **out)
{
	size_t start = q->page_token ? strtoul(q->page_token, NULL, 10) : 0;
	size_t max = q->max_results ? strtoul(q->max_results, NULL, 10) : 500;
	json_t *items = json_object();
	size_t i, shown = 0;
	char key[96];

	if (max == 0 || max > 500)
		max = 500;
	for (i = start; i < m->nvms && shown < max; i++) {
		struct emu_vm *v = &m->vms[i];
		json_t *scope;

		if (v->gone || !filter_ok(v, q->filter))
			continue;
		snprintf(key, sizeof key, "zones/%s", v->zone);
		scope = json_object_get(items, key);
		if (!scope) {
			scope = json_pack("{s[]}", "instances");
			json_object_set_new(items, key, scope);
		}
		json_array_append_new(json_object_get(scope, "instances"),
				      vm_doc(m, v));
		shown++;
	}
	*status = 200;
	*out = json_pack("{ss so}", "kind", "compute#instanceAggregatedList",
			 "items", items);
	for (; i < m->nvms; i++) { /* a next page only when one is there */
		if (!m->vms[i].gone && filter_ok(&m->vms[i], q->filter)) {
			snprintf(key, sizeof key, "%zu", i);
			json_object_set_new(*out, "nextPageToken", json_string(key));
			break;
		}
	}
}

static void region_get(struct gceemu *m, const char *region, int *status,
		       json_t **out)
{
	struct cloud_offering o;
	json_t *zones = json_array();
	char link[160];

	if (strcmp(region, m->region)) {
		*status = 404;
		*out = gceemu__error(404, "notFound", "The resource 'projects/%s/"
				     "regions/%s' was not found", m->project,
				     region);
		json_decref(zones);
		return;
	}
	for (size_t p = 0; p < localmkt_npools(m->mkt); p++) {
		bool have = false;
		size_t i;
		json_t *z;

		if (localmkt_describe(m->mkt, (int)p, 0, &o) ||
		    strcmp(o.cloud, "gcp") || strcmp(o.region, m->region))
			continue;
		snprintf(link, sizeof link, "projects/%s/zones/%s", m->project,
			 o.zone);
		json_array_foreach(zones, i, z)
			have |= strcmp(json_string_value(z), link) == 0;
		if (!have)
			json_array_append_new(zones, json_string(link));
	}
	*status = 200;
	*out = json_pack("{ss ss so}", "kind", "compute#region", "name", region,
			 "zones", zones);
}

void gceemu__compute(struct gceemu *m, const char *method, const char *path,
		     const struct emu_query *q, const char *body, size_t len,
		     int *status, json_t **out)
{
	char a[64], b[64], c[64], d[64];
	json_t *doc = NULL;

	*out = NULL;
	pthread_mutex_lock(&m->mu);
	if (!strcmp(method, "GET") && sscanf(path, "regions/%63[^/]", a) == 1 &&
	    !strchr(path + 8, '/')) {
		region_get(m, a, status, out);
	} else if (!strcmp(method, "GET") && !strcmp(path, "aggregated/instances")) {
		aggregated(m, q, status, out);
	} else if (sscanf(path, "zones/%63[^/]/%63[^/]/%63[^/]/%63[^/]", a, b, c,
			  d) == 4 && !strcmp(b, "operations") && !strcmp(d, "wait")) {
		for (size_t i = 0; i < m->nops; i++) {
			if (!strcmp(m->ops[i].name, c)) {
				m->ops[i].done = true;
				*out = op_doc(m, &m->ops[i]);
			}
		}
		*status = *out ? 200 : 404;
		if (!*out)
			*out = gceemu__error(404, "notFound", "The resource "
					     "'%s' was not found", path);
	} else if (sscanf(path, "zones/%63[^/]/%63[^/]/%63[^/]", a, b, c) == 3) {
		if (!strcmp(b, "operations")) {
			for (size_t i = 0; i < m->nops; i++) {
				if (!strcmp(m->ops[i].name, c))
					*out = op_doc(m, &m->ops[i]);
			}
		} else if (!strcmp(b, "instances")) {
			struct emu_vm *v = gceemu__vm(m, c);

			if (v && !strcmp(method, "DELETE")) {
				char target[320];
				struct emu_op *op;

				snprintf(target, sizeof target, "projects/%s/"
					 "zones/%s/instances/%s", m->project, a, c);
				vm_delete(m, v);
				op = op_new(m, "delete", a, target, q->request_id);
				if (op) {
					op->done = true;
					*out = op_doc(m, op);
				}
			} else if (v) {
				*out = vm_doc(m, v);
			}
		}
		*status = 200;
		if (!*out) {
			*status = 404;
			*out = gceemu__error(404, "notFound", "The resource "
					     "'%s' was not found", path);
		}
	} else if (!strcmp(method, "POST") && sscanf(path, "zones/%63[^/]/"
						     "instances", a) == 1) {
		doc = json_loadb(body ? body : "", len, 0, NULL);
		if (!json_is_object(doc)) {
			*status = 400;
			*out = gceemu__error(400, "parseError", "This API does "
					     "not support parsing form-encoded "
					     "input");
		} else {
			insert(m, a, q, doc, status, out);
		}
	} else {
		*status = 404;
		*out = gceemu__error(404, "notFound", "no such call: %s %s",
				     method, path);
	}
	pthread_mutex_unlock(&m->mu);
	json_decref(doc);
}
