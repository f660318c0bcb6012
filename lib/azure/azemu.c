/*
 * azemu.c - the Azure emulator's ARM calls, resources and clock
 * (azemu.h).  Scheduled Events: azemu_imds.c; HTTP: azemu_http.c.
 *
 * A VM's life:
 *
 *   PUT --> Creating (its create operation InProgress for boot_s)
 *   Creating --(spot, no capacity at the PUT)--> Failed (stays; billed
 *             nothing here, deleted by the driver)
 *   Creating --(boot_s)--> Succeeded (its customData's session started)
 *   Succeeded (spot) --(pool loses capacity | preempt)--> Preempt event
 *   Preempt --(acknowledged | NotBefore)--> evicted: deleted
 *   any --DELETE--> deleted
 *
 * Deleting a VM deletes its NIC, OS disk and public IP whose deleteOption
 * is Delete; the others stay, detached (a NIC whose VM is gone, a disk
 * with no managedBy, an IP whose NIC is gone), as in ARM.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "cloud/emuhttp.h"
#include "common/proc.h"
#include "common/timeutil.h"
#include "azemu_int.h"

json_t *azemu__error(const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return json_pack("{s{ss ss}}", "error", "code", code, "message", msg);
}

struct az_vm *azemu__vm(struct azemu *m, const char *name)
{
	for (size_t i = 0; i < m->nvms; i++) {
		if (!m->vms[i].gone && strcmp(m->vms[i].name, name) == 0)
			return &m->vms[i];
	}
	return NULL;
}

static struct az_res *res_find(struct azemu *m, enum az_kind k,
			       const char *name)
{
	for (size_t i = 0; name && *name && i < m->nres; i++) {
		if (!m->res[i].gone && m->res[i].kind == k &&
		    strcmp(m->res[i].name, name) == 0)
			return &m->res[i];
	}
	return NULL;
}

int azemu__pool(struct azemu *m, const char *size)
{
	struct cloud_offering o;

	for (size_t p = 0; p < localmkt_npools(m->mkt); p++) {
		if (localmkt_describe(m->mkt, (int)p, 0, &o) == 0 &&
		    strcmp(o.cloud, "azure") == 0 &&
		    strcmp(o.region, m->location) == 0 &&
		    strcmp(o.instance_type, size) == 0)
			return (int)p;
	}
	return -1;
}

static double sim_now(const struct azemu *m)
{
	return (double)(sr_time_mono_ns() - m->t0_mono_ns) / 1e9 * m->time_scale;
}

bool azemu__capacity(struct azemu *m, const char *size, int pool)
{
	int ov = emuhttp_cap_get(m->cap, size);

	return ov >= 0 ? ov == 1 : localmkt_available(m->mkt, pool, sim_now(m));
}

int azemu__set_capacity(struct azemu *m, const char *size, const char *val)
{
	return emuhttp_cap_set(&m->cap, size, val);
}

static const char *op_new(struct azemu *m, const char *vm, bool del)
{
	struct az_op *op;

	if (m->nops >= AZ_MAX_OPS)
		return NULL;
	op = &m->ops[m->nops];
	memset(op, 0, sizeof *op);
	snprintf(op->id, sizeof op->id, "%08x-op-%zu",
		 (unsigned)(m->t0_mono_ns & 0xffffffff), m->nops + 1);
	snprintf(op->vm, sizeof op->vm, "%s", vm);
	op->del = del;
	m->nops++;
	return op->id;
}

/* ---- views ------------------------------------------------------------- */

static void rid(const struct azemu *m, const char *type, const char *name,
		char *buf, size_t n)
{
	(void)m;
	snprintf(buf, n, "/subscriptions/sub/resourceGroups/rg/providers/%s/%s",
		 type, name);
}

static json_t *vm_doc(struct azemu *m, const struct az_vm *v)
{
	char id[200], ts[40];
	json_t *d;

	rid(m, "Microsoft.Compute/virtualMachines", v->name, id, sizeof id);
	sr_time_format_rfc3339(v->created_ns, 0, ts, sizeof ts);
	d = json_pack("{ss ss ss sO s{ss sO ss ss}}", "name", v->name, "id", id,
		      "location", m->location, "tags", v->tags, "properties",
		      "provisioningState", v->state, "hardwareProfile", v->hw,
		      "priority", v->spot ? "Spot" : "Regular", "timeCreated", ts);
	if (d && v->zone[0])
		json_object_set_new(d, "zones", json_pack("[s]", v->zone));
	return d;
}

static json_t *res_doc(struct azemu *m, const struct az_res *r)
{
	static const char *const type[] = {
		"Microsoft.Network/networkInterfaces", "Microsoft.Compute/disks",
		"Microsoft.Network/publicIPAddresses" };
	char id[200], vid[200];
	json_t *d, *p;

	rid(m, type[r->kind], r->name, id, sizeof id);
	d = json_pack("{ss ss ss s{ss}}", "name", r->name, "id", id, "location",
		      m->location, "properties", "provisioningState", "Succeeded");
	p = json_object_get(d, "properties");
	if (!d)
		return NULL;
	if (r->kind == AZ_NIC && r->vm[0]) {
		rid(m, "Microsoft.Compute/virtualMachines", r->vm, vid, sizeof vid);
		json_object_set_new(p, "virtualMachine", json_pack("{ss}", "id",
								   vid));
	} else if (r->kind == AZ_DISK) {
		json_object_set_new(p, "diskState", json_string(
			r->vm[0] ? "Attached" : "Unattached"));
		if (r->vm[0]) {
			rid(m, "Microsoft.Compute/virtualMachines", r->vm, vid,
			    sizeof vid);
			json_object_set_new(d, "managedBy", json_string(vid));
		}
	} else if (r->kind == AZ_IP && r->nic[0]) {
		rid(m, "Microsoft.Network/networkInterfaces", r->nic, vid,
		    sizeof vid);
		strncat(vid, "/ipConfigurations/ipconfig1",
			sizeof vid - strlen(vid) - 1);
		json_object_set_new(p, "ipConfiguration", json_pack("{ss}", "id",
								    vid));
	}
	return d;
}

/* A page of a list from skiptoken (an index), nextLink when more. */
static json_t *page(struct azemu *m, const char *path, const char *api,
		    const char *skiptoken, json_t *all)
{
	size_t from = skiptoken ? strtoul(skiptoken, NULL, 10) : 0;
	size_t n = json_array_size(all), per = (size_t)m->page;
	json_t *val = json_array(), *out;
	char next[400];

	for (size_t i = from; i < n && i < from + per; i++)
		json_array_append(val, json_array_get(all, i));
	out = json_pack("{so}", "value", val);
	if (out && from + per < n) {
		snprintf(next, sizeof next, "%s/subscriptions/%s?api-version=%s"
			 "&$skiptoken=%zu", m->url, path, api,
			 from + per);
		json_object_set_new(out, "nextLink", json_string(next));
	}
	json_decref(all);
	return out;
}

/* ---- VMs ----------------------------------------------------------------- */

static char *b64_decode(const char *s)
{
	size_t n = strlen(s);
	unsigned char *out = malloc(n + 4);
	int w;

	if (!out)
		return NULL;
	w = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
	if (w < 0) {
		free(out);
		return NULL;
	}
	while (n > 0 && s[n - 1] == '=') {
		n--;
		w--;
	}
	out[w] = '\0';
	return (char *)out;
}

static bool del_opt(json_t *props)
{
	const char *d = json_string_value(json_object_get(props, "deleteOption"));

	return d && !strcmp(d, "Delete");
}

static void res_add(struct azemu *m, enum az_kind k, const char *name,
		    const char *vm, const char *nic)
{
	struct az_res *r;

	if (!name || !*name || m->nres >= AZ_MAX_RES || res_find(m, k, name))
		return;
	r = &m->res[m->nres++];
	memset(r, 0, sizeof *r);
	r->kind = k;
	snprintf(r->name, sizeof r->name, "%s", name);
	snprintf(r->vm, sizeof r->vm, "%s", vm ? vm : "");
	snprintf(r->nic, sizeof r->nic, "%s", nic ? nic : "");
}

/* The NIC, disk and IP named in the body, made and attached. */
static void vm_resources(struct azemu *m, struct az_vm *v, json_t *props)
{
	json_t *osd = json_object_get(json_object_get(props, "storageProfile"),
				      "osDisk");
	json_t *nicc = json_array_get(json_object_get(json_object_get(
		props, "networkProfile"), "networkInterfaceConfigurations"), 0);
	json_t *ipc = json_object_get(json_array_get(json_object_get(
		json_object_get(nicc, "properties"), "ipConfigurations"), 0),
				      "properties");
	json_t *pip = json_object_get(ipc, "publicIPAddressConfiguration");
	const char *s;

	if ((s = json_string_value(json_object_get(osd, "name")))) {
		snprintf(v->disk, sizeof v->disk, "%s", s);
		v->del_disk = del_opt(osd);
	}
	if ((s = json_string_value(json_object_get(nicc, "name")))) {
		snprintf(v->nic, sizeof v->nic, "%s", s);
		v->del_nic = del_opt(json_object_get(nicc, "properties"));
	}
	if ((s = json_string_value(json_object_get(pip, "name")))) {
		snprintf(v->ip, sizeof v->ip, "%s", s);
		v->del_ip = del_opt(json_object_get(pip, "properties"));
	}
	res_add(m, AZ_DISK, v->disk, v->name, NULL);
	res_add(m, AZ_NIC, v->nic, v->name, NULL);
	res_add(m, AZ_IP, v->ip, NULL, v->nic);
}

static size_t live_vms(const struct azemu *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->nvms; i++)
		n += !m->vms[i].gone;
	return n;
}

static void vm_put(struct azemu *m, const char *name, const char *body,
		   size_t len, int *status, json_t **out, char op[40])
{
	json_t *doc = json_loadb(body ? body : "", len, 0, NULL);
	json_t *props = json_object_get(doc, "properties");
	json_t *hw = json_object_get(props, "hardwareProfile");
	const char *size = json_string_value(json_object_get(hw, "vmSize"));
	const char *prio = json_string_value(json_object_get(props, "priority"));
	const char *loc = json_string_value(json_object_get(doc, "location"));
	const char *cd = json_string_value(json_object_get(json_object_get(
		props, "osProfile"), "customData"));
	const char *zone = json_string_value(json_array_get(
		json_object_get(doc, "zones"), 0));
	const char *opid;
	struct az_vm *v = azemu__vm(m, name);
	int pool;

	if (v) { /* the name is the idempotency key: the VM it has */
		*status = 200;
		*out = vm_doc(m, v);
		goto out;
	}
	*status = 400;
	if (strlen(name) >= sizeof v->name) {
		*out = azemu__error("InvalidResourceName", "The resource name "
				    "'%s' is invalid: at most 64 characters.",
				    name);
		goto out;
	}
	if (!json_is_object(props) || !size || !loc) {
		*out = azemu__error("InvalidRequestContent", "The request content "
				    "was invalid: location and properties."
				    "hardwareProfile.vmSize are required.");
		goto out;
	}
	if (strcmp(loc, m->location)) {
		*out = azemu__error("LocationNotAvailableForResourceType",
				    "The provided location '%s' is not "
				    "available here (%s).", loc, m->location);
		goto out;
	}
	pool = azemu__pool(m, size);
	*status = 409;
	if (pool < 0) {
		*out = azemu__error("SkuNotAvailable", "The requested VM size for "
				    "resource 'Following SKUs have failed for "
				    "Capacity Restrictions: %s' is currently not "
				    "available in location '%s'. Please try "
				    "another size or deploy to a different "
				    "location or different zone.", size, loc);
		goto out;
	}
	if (m->quota_vms > 0 && live_vms(m) >= (size_t)m->quota_vms) {
		*out = azemu__error("OperationNotAllowed", "Operation could not "
				    "be completed as it results in exceeding "
				    "approved Total Regional Cores quota. "
				    "Location: %s, Current Limit: %d VMs.",
				    loc, m->quota_vms);
		goto out;
	}
	opid = op_new(m, name, false);
	if (!opid || m->nvms >= AZ_MAX_VMS) {
		*status = 503;
		*out = azemu__error("ServiceUnavailable", "emulator full");
		goto out;
	}
	v = &m->vms[m->nvms++];
	memset(v, 0, sizeof *v);
	snprintf(v->name, sizeof v->name, "%.63s", name);
	snprintf(v->size, sizeof v->size, "%.47s", size);
	snprintf(v->zone, sizeof v->zone, "%.7s", zone ? zone : "");
	snprintf(v->state, sizeof v->state, "Creating");
	v->spot = prio && !strcmp(prio, "Spot");
	v->pool = pool;
	v->tags = json_incref(json_is_object(json_object_get(doc, "tags")) ?
			      json_object_get(doc, "tags") : json_object());
	v->hw = json_incref(hw);
	v->created_ns = sr_time_real_ns();
	v->ready_mono_ns = sr_time_mono_ns() + (int64_t)(m->boot_s * 1e9);
	v->script = cd ? b64_decode(cd) : NULL;
	if (v->spot && !azemu__capacity(m, size, pool))
		snprintf(v->fail_code, sizeof v->fail_code, "%s", v->zone[0] ?
			 "ZonalAllocationFailed" : "AllocationFailed");
	vm_resources(m, v, props);
	snprintf(op, 40, "%s", opid);
	*status = 201;
	*out = vm_doc(m, v);
out:
	json_decref(doc);
}

void azemu__vm_delete(struct azemu *m, struct az_vm *v, bool keep_res)
{
	struct az_res *nic = res_find(m, AZ_NIC, v->nic);
	struct az_res *disk = res_find(m, AZ_DISK, v->disk);
	struct az_res *ip = res_find(m, AZ_IP, v->ip);

	emuhttp_vm_end(v->pid, v->pid_start, v->dir);
	v->gone = true;
	if (nic) {
		nic->vm[0] = '\0';
		nic->gone = v->del_nic && !keep_res;
	}
	if (disk) {
		disk->vm[0] = '\0';
		disk->gone = v->del_disk && !keep_res;
	}
	if (ip && (v->del_ip || (nic && nic->gone)) && !keep_res) {
		ip->nic[0] = '\0';
		ip->gone = v->del_ip;
	}
	free(v->script);
	v->script = NULL;
	azemu__events_drop(m, v->name);
}

/* ---- resources: list and delete --------------------------------------- */

static const struct {
	const char *type;
	enum az_kind kind;
	const char *in_use;
} kinds[] = {
	{ "Microsoft.Network/networkInterfaces", AZ_NIC, "NicInUse" },
	{ "Microsoft.Compute/disks", AZ_DISK, "OperationNotAllowed" },
	{ "Microsoft.Network/publicIPAddresses", AZ_IP, "PublicIPAddressInUse" },
};

static void res_call(struct azemu *m, const char *method, size_t k,
		     const char *name, const char *path, const char *api,
		     const char *skiptoken, int *status, json_t **out,
		     char op[40])
{
	struct az_res *r = name ? res_find(m, kinds[k].kind, name) : NULL;
	const char *o;

	*status = 200;
	if (!name && !strcmp(method, "GET")) {
		json_t *all = json_array();

		for (size_t i = 0; i < m->nres; i++) {
			if (!m->res[i].gone && m->res[i].kind == kinds[k].kind)
				json_array_append_new(all, res_doc(m, &m->res[i]));
		}
		*out = page(m, path, api, skiptoken, all);
	} else if (name && !strcmp(method, "GET") && r) {
		*out = res_doc(m, r);
	} else if (name && !strcmp(method, "DELETE")) {
		if (!r) {
			*status = 204;
			return;
		}
		if (r->vm[0] || r->nic[0]) {
			*status = 400;
			*out = azemu__error(kinds[k].in_use, "%s %s is in use by "
					    "%s and cannot be deleted.",
					    kinds[k].type, name,
					    r->vm[0] ? r->vm : r->nic);
			return;
		}
		r->gone = true;
		for (size_t i = 0; r->kind == AZ_NIC && i < m->nres; i++) {
			if (m->res[i].kind == AZ_IP &&
			    !strcmp(m->res[i].nic, r->name))
				m->res[i].nic[0] = '\0';
		}
		o = op_new(m, "", true);
		*status = 202;
		snprintf(op, 40, "%s", o ? o : "");
	} else {
		*status = 404;
		*out = azemu__error(name ? "ResourceNotFound" : "NotFound",
				    "The Resource '%s/%s' under resource group "
				    "was not found.", kinds[k].type,
				    name ? name : "");
	}
}

/* ---- operations ---------------------------------------------------------- */

static void settle(struct azemu *m, struct az_vm *v, int64_t now);

static void op_get(struct azemu *m, const char *id, int *status, json_t **out)
{
	for (size_t i = 0; i < m->nops; i++) {
		struct az_op *op = &m->ops[i];
		struct az_vm *v = NULL;

		if (strcmp(op->id, id))
			continue;
		*status = 200;
		for (size_t j = 0; j < m->nvms && !op->del; j++) {
			if (!strcmp(m->vms[j].name, op->vm))
				v = &m->vms[j]; /* the latest of that name */
		}
		if (v && !v->gone)
			settle(m, v, sr_time_mono_ns());
		if (op->del || (v && !strcmp(v->state, "Succeeded")) ||
		    (v && v->gone && !v->fail_code[0]))
			*out = json_pack("{ss ss}", "name", id, "status",
					 "Succeeded");
		else if (v && (!strcmp(v->state, "Failed") || v->gone))
			*out = json_pack("{ss ss s{ss ss}}", "name", id, "status",
					 "Failed", "error", "code", v->fail_code,
					 "message", "Allocation failed. We do "
					 "not have sufficient capacity for the "
					 "requested VM size in this region.");
		else
			*out = json_pack("{ss ss}", "name", id, "status",
					 "InProgress");
		return;
	}
	*status = 404;
	*out = azemu__error("NotFound", "operation %s not found", id);
}

void azemu__arm(struct azemu *m, const char *method, const char *path,
		const char *api, const char *skiptoken, const char *body,
		size_t len, int *status, json_t **out, char op[40])
{
	char loc[48], id[48], name[80], type[80], prov[40], rt[128];
	int n = 0;

	*out = NULL;
	op[0] = '\0';
	if (sscanf(path, "%*[^/]/providers/Microsoft.Compute/locations/%47[^/]/"
		   "operations/%47[^/]%n", loc, id, &n) == 2 && !path[n] &&
	    !strcmp(method, "GET")) {
		op_get(m, id, status, out);
		return;
	}
	name[0] = '\0';
	if (sscanf(path, "%*[^/]/resourceGroups/%*[^/]/providers/%39[^/]/"
		   "%79[^/]%n", prov, type, &n) != 2 ||
	    (path[n] && (path[n] != '/' || sscanf(path + n + 1, "%79[^/]",
						  name) != 1 ||
			 strchr(path + n + 1, '/')))) {
		*status = 404;
		*out = azemu__error("InvalidResourceType", "no such call: %s %s",
				    method, path);
		return;
	}
	snprintf(rt, sizeof rt, "%s/%s", prov, type);
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		if (!strcmp(rt, kinds[k].type)) {
			res_call(m, method, k, name[0] ? name : NULL, path,
				 api, skiptoken, status, out, op);
			return;
		}
	}
	if (strcmp(rt, "Microsoft.Compute/virtualMachines")) {
		*status = 404;
		*out = azemu__error("InvalidResourceType", "The resource type "
				    "'%s' could not be found.", rt);
		return;
	}
	if (!name[0] && !strcmp(method, "GET")) {
		json_t *all = json_array();

		for (size_t i = 0; i < m->nvms; i++) {
			if (!m->vms[i].gone)
				json_array_append_new(all, vm_doc(m, &m->vms[i]));
		}
		*status = 200;
		*out = page(m, path, api, skiptoken, all);
	} else if (name[0] && !strcmp(method, "PUT")) {
		vm_put(m, name, body, len, status, out, op);
	} else if (name[0] && !strcmp(method, "GET") && azemu__vm(m, name)) {
		*status = 200;
		*out = vm_doc(m, azemu__vm(m, name));
	} else if (name[0] && !strcmp(method, "DELETE")) {
		struct az_vm *v = azemu__vm(m, name);
		const char *o;

		*status = 204;
		if (!v)
			return;
		azemu__vm_delete(m, v, false);
		o = op_new(m, name, true);
		*status = 202;
		snprintf(op, 40, "%s", o ? o : "");
	} else {
		*status = 404;
		*out = azemu__error("ResourceNotFound", "The Resource "
				    "'Microsoft.Compute/virtualMachines/%s' "
				    "under resource group was not found.", name);
	}
}

/* ---- the clock ----------------------------------------------------------- */

#define TICK_MS 50

static void boot(struct azemu *m, struct az_vm *v)
{
	char imds[160];
	struct sr_err e = { 0 };

	snprintf(imds, sizeof imds, "%s/imds/%s", m->url, v->name);
	if (emuhttp_vm_spawn(m->work_dir, v->name, "custom-data.sh", "boot.log",
			     v->script ? v->script : "#!/bin/sh\nexec sleep "
			     "1000000\n", imds, v->dir, &v->pid, &v->pid_start,
			     &e))
		fprintf(stderr, "azure emulator: %s: %s\n", v->name, e.msg);
	if (v->script) {
		explicit_bzero(v->script, strlen(v->script));
		free(v->script);
		v->script = NULL;
	}
}

/* A create whose operation is due ends (the clock, or a poll of it that
 * comes first). */
static void settle(struct azemu *m, struct az_vm *v, int64_t now)
{
	if (strcmp(v->state, "Creating") || now < v->ready_mono_ns)
		return;
	snprintf(v->state, sizeof v->state, "%s", v->fail_code[0] ? "Failed" :
		 "Succeeded");
	if (!v->fail_code[0])
		boot(m, v);
}

void *azemu__clock(void *arg)
{
	struct azemu *m = arg;

	pthread_mutex_lock(&m->mu);
	while (!m->stopping) {
		int64_t now = sr_time_mono_ns();

		for (size_t i = 0; i < m->nvms; i++) {
			struct az_vm *v = &m->vms[i];

			if (v->gone)
				continue;
			settle(m, v, now);
			if (v->spot && !v->noticed &&
			    !strcmp(v->state, "Succeeded") &&
			    !azemu__capacity(m, v->size, v->pool))
				azemu__notice(m, v);
		}
		azemu__evictions(m, now);
		sr_proc_reap();
		emuhttp_tick_wait(&m->cv, &m->mu, TICK_MS);
	}
	for (size_t i = 0; i < m->nvms; i++) {
		if (!m->vms[i].gone)
			azemu__vm_delete(m, &m->vms[i], false);
	}
	pthread_mutex_unlock(&m->mu);
	sr_proc_reap();
	return NULL;
}
