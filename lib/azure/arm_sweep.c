/*
 * arm_sweep.c - the leak sweep of the NICs, OS disks and public IPs a VM
 * brings (arm.h "THE LEAK SWEEP"), run by the driver's list().
 *
 *   begin: due (sweep_every_ms) and not already running?  GET the
 *          resource group's networkInterfaces, disks, publicIPAddresses
 *          (paged); keep ours (tag or name) that no VM holds
 *   (list() reads the VMs)
 *   end:   for each kept one whose VM is not listed: DELETE (fenced),
 *          NICs first (an IP on a swept NIC goes after it)
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arm_int.h"
#include "common/log.h"
#include "common/timeutil.h"

#define API_NETWORK "2023-09-01"
#define API_DISKS "2023-04-02"
#define SWEEP_MAX 64

static const struct {
	const char *type, *api, *suffix, *what;
} kinds[ARM_RES_KINDS] = {
	{ "Microsoft.Network/networkInterfaces", API_NETWORK, "-nic", "nic" },
	{ "Microsoft.Compute/disks", API_DISKS, "-osdisk", "disk" },
	{ "Microsoft.Network/publicIPAddresses", API_NETWORK, "-ip", "ip" },
};

struct arm_sweep {
	const char *cluster;
	enum arm_res_kind kind;    /* the list being read */
	struct arm_leak v[SWEEP_MAX];
	size_t n;
};

bool arm_vm_name_of(const char *cluster, const char *name)
{
	const char *p = name ? strrchr(name, '-') : NULL, *q;
	char key[CLOUD_IDEM_MAX], want[65];
	struct cloud_tags t = { .cluster = cluster };

	/* sr-<cluster>-<node>-<attempt>: the two numbers from the end */
	if (!p || !p[1] || p[strspn(p + 1, "0123456789") + 1])
		return false;
	for (q = p - 1; q > name && *q != '-'; q--)
		;
	if (q <= name || q + 1 == p || strspn(q + 1, "0123456789") !=
	    (size_t)(p - q - 1))
		return false;
	t.node_id = strtoll(q + 1, NULL, 10);
	t.attempt = (int)strtol(p + 1, NULL, 10);
	cloud_idem_key(&t, key);
	arm_vm_name(key, want);
	return strcmp(want, name) == 0;
}

/* The VM a resource of kind k called name belongs to (its name without
 * the suffix) into vm: true when it is cluster's (name or tag). */
static bool ours(const char *cluster, size_t k, const char *name,
		 json_t *tags, char vm[80])
{
	size_t nl = strlen(name), sl = strlen(kinds[k].suffix);
	const char *tc = json_string_value(json_object_get(tags,
							   CLOUD_TAG_CLUSTER));

	vm[0] = '\0';
	if (nl > sl && nl - sl < 80 && !strcmp(name + nl - sl, kinds[k].suffix))
		snprintf(vm, 80, "%.*s", (int)(nl - sl), name);
	if (tc && cluster && !strcmp(tc, cluster))
		return true;
	return vm[0] && arm_vm_name_of(cluster, vm);
}

/* The NIC an IP's ipConfiguration id names ("" none). */
static void nic_of(const char *ipc, char out[96])
{
	const char *p = ipc ? strstr(ipc, "/networkInterfaces/") : NULL;

	out[0] = '\0';
	if (p) {
		p += strlen("/networkInterfaces/");
		snprintf(out, 96, "%.*s", (int)strcspn(p, "/"), p);
	}
}

int arm_parse_res_page(const char *body, size_t len, const char *cluster,
		       enum arm_res_kind kind, struct arm_leak *v, size_t *n,
		       size_t cap, char **next, struct sr_err *e)
{
	json_t *doc = json_loadb(body ? body : "", len, 0, NULL), *r;
	json_t *val = json_object_get(doc, "value");
	const char *nl = json_string_value(json_object_get(doc, "nextLink"));
	size_t i;

	*next = NULL;
	if (!json_is_array(val) || kind >= ARM_RES_KINDS) {
		json_decref(doc);
		return sr_err_set(e, -SR_EPARSE, "azure resource list: expected "
				  "{\"value\": [...]}");
	}
	json_array_foreach(val, i, r) {
		json_t *p = json_object_get(r, "properties");
		const char *name = json_string_value(json_object_get(r, "name"));
		struct arm_leak o = { .kind = kind };
		bool held;

		if (*n >= cap || !name || !*name || strlen(name) >= sizeof o.name ||
		    !ours(cluster, kind, name, json_object_get(r, "tags"), o.vm))
			continue;
		snprintf(o.name, sizeof o.name, "%s", name);
		if (kind == ARM_RES_NIC)
			held = json_object_get(p, "virtualMachine") != NULL;
		else if (kind == ARM_RES_DISK)
			held = json_string_value(json_object_get(r, "managedBy"))
			       != NULL;
		else
			held = json_object_get(p, "ipConfiguration") != NULL;
		if (held && kind == ARM_RES_IP) /* on a NIC: swept if it is */
			nic_of(json_string_value(json_object_get(json_object_get(
				p, "ipConfiguration"), "id")), o.on_nic);
		if (!held || o.on_nic[0])
			v[(*n)++] = o;
	}
	if (nl && *nl && !(*next = strdup(nl))) {
		json_decref(doc);
		return sr_err_set(e, -ENOMEM, "out of memory");
	}
	json_decref(doc);
	return 0;
}

static int res_page(void *ud, const char *body, size_t len, char **next,
		    struct sr_err *e)
{
	struct arm_sweep *sw = ud;

	return arm_parse_res_page(body, len, sw->cluster, sw->kind, sw->v,
				  &sw->n, SWEEP_MAX, next, e);
}

static void res_url(const struct arm *a, size_t k, const char *name,
		    char *buf, size_t n)
{
	snprintf(buf, n, "%s/subscriptions/%s/resourceGroups/%s/providers/%s%s%s"
		 "?api-version=%s", a->endpoint, a->sub, a->rg, kinds[k].type,
		 name ? "/" : "", name ? name : "", kinds[k].api);
}

struct arm_sweep *arm__sweep_begin(struct arm *a, const char *cluster)
{
	struct arm_sweep *sw;
	struct cloud_error err = { 0 };
	int64_t now = sr_time_mono_ns();
	char url[2048];

	if (!cluster || pthread_mutex_trylock(&a->sweep_mu))
		return NULL; /* another list() sweeps now */
	if (now < a->sweep_next_ns || !(sw = calloc(1, sizeof *sw))) {
		pthread_mutex_unlock(&a->sweep_mu);
		return NULL;
	}
	a->sweep_next_ns = now + (int64_t)a->sweep_every_ms * 1000000;
	sw->cluster = cluster;
	for (sw->kind = 0; sw->kind < ARM_RES_KINDS; sw->kind++) {
		res_url(a, sw->kind, NULL, url, sizeof url);
		if (arm__list_pages(a, url, "list resources", res_page, sw, &err)) {
			sr_warn("azure", "leak sweep skipped", "err=\"%s\"",
				err.msg);
			free(sw);
			pthread_mutex_unlock(&a->sweep_mu);
			return NULL;
		}
	}
	return sw; /* sweep_mu held until end */
}

static bool vm_listed(const struct cloud_instance *vms, size_t n,
		      const char *vm)
{
	for (size_t i = 0; vm[0] && i < n; i++) {
		if (!strcmp(vms[i].id, vm))
			return true;
	}
	return false;
}

static bool deleted(const struct arm_sweep *sw, const bool *gone,
		    const char *nic)
{
	for (size_t i = 0; i < sw->n; i++) {
		if (gone[i] && sw->v[i].kind == ARM_RES_NIC &&
		    !strcmp(sw->v[i].name, nic))
			return true;
	}
	return false;
}

void arm__sweep_end(struct arm *a, struct arm_sweep *sw, bool listed,
		    const struct cloud_instance *vms, size_t n)
{
	bool gone[SWEEP_MAX] = { false };
	int64_t epoch;

	if (!sw)
		return;
	epoch = a->epoch ? a->epoch(a->fence_ud) : 0;
	for (size_t k = 0; listed && k < ARM_RES_KINDS; k++) {
		for (size_t i = 0; i < sw->n; i++) {
			struct arm_leak *o = &sw->v[i];
			struct sr_http_resp r = { 0 };
			struct cloud_error err = { 0 };
			char url[2048];
			int rc;

			if (o->kind != k || vm_listed(vms, n, o->vm) ||
			    (o->on_nic[0] && !deleted(sw, gone, o->on_nic)))
				continue;
			if (a->fence && !a->fence(a->fence_ud, epoch))
				goto out; /* the lease is gone: nothing sent */
			sr_warn("azure", "leaked resource: deleting", "%s=%s vm=%s",
				kinds[k].what, o->name, o->vm[0] ? o->vm : "-");
			res_url(a, k, o->name, url, sizeof url);
			rc = arm__call(a, "DELETE", url, NULL, "delete resource",
				       &r, &err);
			if (rc == 0 && r.status != 200 && r.status != 202 &&
			    r.status != 204 && r.status != 404)
				rc = arm_parse_error(r.status, r.body, r.body_len,
						     "delete resource", &err);
			sr_http_resp_free(&r);
			if (rc)
				sr_warn("azure", "leaked resource not deleted",
					"%s=%s err=\"%s\" (the next sweep "
					"retries)", kinds[k].what, o->name, err.msg);
			else
				gone[i] = true;
		}
	}
out:
	free(sw);
	pthread_mutex_unlock(&a->sweep_mu);
}
