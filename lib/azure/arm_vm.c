/*
 * arm_vm.c - a VM as ARM sees it (arm.h): the PUT body spotrun sends and
 * the VM list it reads back.
 *
 * The body (api-version 2024-03-01; values from the launch and the
 * client's settings):
 *
 *   {"location": L, "zones": ["1"]?,            launch zone "L-1"
 *    "tags": {"spotrun:cluster": C, "spotrun:job": "J",
 *             "spotrun:node": "N", "spotrun:attempt": "A"},
 *    "properties": {
 *      "hardwareProfile": {"vmSize": T},
 *      "priority": "Spot", "evictionPolicy": "Delete",
 *      "billingProfile": {"maxPrice": -1},     (spot only; else Regular)
 *      "storageProfile": {"imageReference": {publisher, offer, sku,
 *                           version} | {"id": ...},
 *        "osDisk": {"name": NAME-osdisk, "createOption": "FromImage",
 *                   "deleteOption": "Delete"}},
 *      "osProfile": {"computerName": NAME, "adminUsername": U,
 *        "customData": base64(bootstrap),
 *        "linuxConfiguration": {"disablePasswordAuthentication": true,
 *          "ssh": {"publicKeys": [{"path": ".../authorized_keys",
 *                                  "keyData": K}]}}},
 *      "networkProfile": {"networkApiVersion": "2020-11-01",
 *        "networkInterfaceConfigurations": [{"name": NAME-nic,
 *          "properties": {"primary": true, "deleteOption": "Delete",
 *            "ipConfigurations": [{"name": "ipconfig1", "properties": {
 *              "subnet": {"id": S},
 *              "publicIPAddressConfiguration": {"name": NAME-ip,
 *                "properties": {"deleteOption": "Delete"}}?}}]}}]}}}
 *
 * The NIC, the OS disk and the public IP are made with the VM and carry
 * deleteOption Delete: deleting the VM deletes them (no explicit delete
 * is left to do).  The bootstrap travels in customData only (the node's
 * one-time secret, traded for its token at first contact).
 *
 * A listed VM: provisioningState Creating/Updating -> pending,
 * Succeeded -> running, Deleting -> stopping; Failed -> running with
 * reason "ProvisioningFailed" (it exists and bills: the sweep deletes it
 * when no node holds it).  An evicted spot VM (evictionPolicy Delete)
 * is no longer listed: gone.
 */
#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arm_int.h"
#include "common/timeutil.h"

#define DEFAULT_IMAGE "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:latest"

void arm_vm_name(const char *key, char out[65])
{
	size_t k = 0;

	for (const char *p = key; p && *p && k < 64; p++) {
		char c = (char)tolower((unsigned char)*p);

		out[k++] = isalnum((unsigned char)c) ? c : '-';
	}
	while (k > 0 && out[k - 1] == '-')
		k--;
	out[k] = '\0';
}

static json_t *image_ref(const char *img, struct sr_err *e)
{
	char part[4][128];
	const char *p = img;

	if (img[0] == '/')
		return json_pack("{s:s}", "id", img);
	for (int i = 0; i < 4; i++) {
		size_t n = strcspn(p, ":");

		if (n == 0 || n >= sizeof part[i] || (i < 3 && p[n] != ':') ||
		    (i == 3 && p[n] != '\0')) {
			sr_err_set(e, -EINVAL, "providers.azure.image '%s': expected"
				   " Publisher:Offer:Sku:Version or an image "
				   "resource id", img);
			return NULL;
		}
		memcpy(part[i], p, n);
		part[i][n] = '\0';
		p += n + (p[n] == ':');
	}
	return json_pack("{s:s, s:s, s:s, s:s}", "publisher", part[0], "offer",
			 part[1], "sku", part[2], "version", part[3]);
}

static char *base64(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(4 * ((n + 2) / 3) + 1);

	if (out)
		EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s,
				(int)n);
	return out;
}

static json_t *tags_of(const struct cloud_tags *t)
{
	char job[24], node[24], att[16];

	snprintf(job, sizeof job, "%" PRId64, t->job_id);
	snprintf(node, sizeof node, "%" PRId64, t->node_id);
	snprintf(att, sizeof att, "%d", t->attempt);
	return json_pack("{s:s, s:s, s:s, s:s}", CLOUD_TAG_CLUSTER, t->cluster,
			 CLOUD_TAG_JOB, job, CLOUD_TAG_NODE, node,
			 CLOUD_TAG_ATTEMPT, att);
}

static json_t *network(const struct arm *a, const char *name, const char *subnet)
{
	char nic[80], ip[80];
	json_t *ipc = json_pack("{s:{s:s}}", "subnet", "id", subnet);

	snprintf(nic, sizeof nic, "%s-nic", name);
	snprintf(ip, sizeof ip, "%s-ip", name);
	if (ipc && a->public_ip)
		json_object_set_new(ipc, "publicIPAddressConfiguration",
				    json_pack("{s:s, s:{s:s}}", "name", ip,
					      "properties", "deleteOption",
					      "Delete"));
	return json_pack("{s:s, s:[{s:s, s:{s:b, s:s, s:[{s:s, s:o}]}}]}",
			 "networkApiVersion", "2020-11-01",
			 "networkInterfaceConfigurations", "name", nic,
			 "properties", "primary", 1, "deleteOption", "Delete",
			 "ipConfigurations", "name", "ipconfig1", "properties",
			 ipc);
}

char *arm_vm_body(const struct arm *a, const struct cloud_launch *l,
		  struct sr_err *e)
{
	const char *img = l->image ? l->image : a->image ? a->image : DEFAULT_IMAGE;
	const char *subnet = l->subnet ? l->subnet : a->subnet;
	char name[65], disk[80], keypath[160];
	json_t *doc = NULL, *props, *osp, *imgj;
	char *cd = NULL, *txt = NULL;
	size_t loclen = strlen(a->loc);

	arm_vm_name(l->idem_key, name);
	if (!name[0] || !l->instance_type || !l->tags.cluster) {
		sr_err_set(e, -EINVAL, "azure vm: a name, a size and a cluster "
			   "are required");
		return NULL;
	}
	if (!subnet) {
		sr_err_set(e, -EINVAL, "providers.azure.subnet: required (the "
			   "subnet resource id the VMs' NICs join)");
		return NULL;
	}
	imgj = image_ref(img, e);
	if (!imgj)
		return NULL;
	cd = l->bootstrap ? base64(l->bootstrap) : NULL;
	snprintf(disk, sizeof disk, "%s-osdisk", name);
	snprintf(keypath, sizeof keypath, "/home/%s/.ssh/authorized_keys",
		 a->admin);
	osp = json_pack("{s:s, s:s, s:{s:b}}", "computerName", name,
			"adminUsername", a->admin, "linuxConfiguration",
			"disablePasswordAuthentication", 1);
	if (osp && cd)
		json_object_set_new(osp, "customData", json_string(cd));
	if (osp && a->ssh_key)
		json_object_set_new(json_object_get(osp, "linuxConfiguration"),
				    "ssh", json_pack("{s:[{s:s, s:s}]}",
						     "publicKeys", "path", keypath,
						     "keyData", a->ssh_key));
	props = json_pack("{s:{s:s}, s:s, s:{s:o, s:{s:s, s:s, s:s}}, s:o, s:o}",
			  "hardwareProfile", "vmSize", l->instance_type,
			  "priority", l->spot ? "Spot" : "Regular",
			  "storageProfile", "imageReference", imgj, "osDisk",
			  "name", disk, "createOption", "FromImage",
			  "deleteOption", "Delete", "osProfile", osp,
			  "networkProfile", network(a, name, subnet));
	if (props && l->spot) {
		json_object_set_new(props, "evictionPolicy", json_string("Delete"));
		json_object_set_new(props, "billingProfile",
				    json_pack("{s:i}", "maxPrice", -1));
	}
	doc = json_pack("{s:s, s:o, s:o}", "location", a->loc, "tags",
			tags_of(&l->tags), "properties", props);
	/* a launch zone "eastus-1": zones ["1"] */
	if (doc && l->zone && l->zone[0] && !strncmp(l->zone, a->loc, loclen) &&
	    l->zone[loclen] == '-')
		json_object_set_new(doc, "zones",
				    json_pack("[s]", l->zone + loclen + 1));
	txt = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (!txt)
		sr_err_set(e, -ENOMEM, "azure vm body: out of memory");
	if (cd) {
		explicit_bzero(cd, strlen(cd));
		free(cd);
	}
	/* the document holds customData: wipe it before it is freed */
	if (osp && json_is_string(json_object_get(osp, "customData"))) {
		json_t *v = json_object_get(osp, "customData");

		explicit_bzero((char *)json_string_value(v), json_string_length(v));
	}
	json_decref(doc);
	return txt;
}

static int64_t tag_int(json_t *tags, const char *k)
{
	const char *v = json_string_value(json_object_get(tags, k));

	return v ? strtoll(v, NULL, 10) : 0;
}

static int parse_vm(json_t *vm, size_t i, struct cloud_instance *out,
		    struct sr_err *e)
{
	json_t *props = json_object_get(vm, "properties");
	json_t *tags = json_object_get(vm, "tags");
	const char *name = json_string_value(json_object_get(vm, "name"));
	const char *loc = json_string_value(json_object_get(vm, "location"));
	const char *ps = json_string_value(json_object_get(props,
							 "provisioningState"));
	const char *size = json_string_value(json_object_get(
		json_object_get(props, "hardwareProfile"), "vmSize"));
	const char *prio = json_string_value(json_object_get(props, "priority"));
	const char *zone = json_string_value(json_array_get(
		json_object_get(vm, "zones"), 0));
	const char *created = json_string_value(json_object_get(props,
							      "timeCreated"));
	int64_t t = 0;

	memset(out, 0, sizeof *out);
	if (!name || !*name || strlen(name) >= sizeof out->id || !ps)
		return sr_err_set(e, -SR_EPARSE, "azure vm list: value[%zu]: "
				  "expected name and properties."
				  "provisioningState", i);
	snprintf(out->id, sizeof out->id, "%s", name);
	if (!strcmp(ps, "Creating") || !strcmp(ps, "Updating") ||
	    !strcmp(ps, "Migrating"))
		out->state = CLOUD_INST_PENDING;
	else if (!strcmp(ps, "Deleting"))
		out->state = CLOUD_INST_STOPPING;
	else
		out->state = CLOUD_INST_RUNNING;
	if (!strcmp(ps, "Failed"))
		snprintf(out->reason, sizeof out->reason, "ProvisioningFailed");
	if (zone && loc)
		snprintf(out->zone, sizeof out->zone, "%s-%s", loc, zone);
	snprintf(out->instance_type, sizeof out->instance_type, "%s",
		 size ? size : "");
	out->spot = prio && !strcmp(prio, "Spot");
	snprintf(out->cluster, sizeof out->cluster, "%s",
		 json_string_value(json_object_get(tags, CLOUD_TAG_CLUSTER)) ?
		 json_string_value(json_object_get(tags, CLOUD_TAG_CLUSTER)) : "");
	out->job_id = tag_int(tags, CLOUD_TAG_JOB);
	out->node_id = tag_int(tags, CLOUD_TAG_NODE);
	out->attempt = (int)tag_int(tags, CLOUD_TAG_ATTEMPT);
	if (created && sr_time_parse_rfc3339(created, &t, NULL) == 0)
		out->launched_s = t / SR_NS_PER_SEC;
	return 0;
}

int arm_parse_vm_page(const char *body, size_t len, const char *cluster,
		      struct cloud_instance **v, size_t *n, size_t *cap,
		      char **next, struct sr_err *e)
{
	json_t *doc = json_loadb(body ? body : "", len, 0, NULL);
	json_t *val = json_object_get(doc, "value"), *vm;
	const char *nl = json_string_value(json_object_get(doc, "nextLink"));
	size_t i;
	int rc = 0;

	if (next)
		*next = NULL;
	if (!json_is_array(val)) {
		json_decref(doc);
		return sr_err_set(e, -SR_EPARSE, "azure vm list: expected "
				  "{\"value\": [...]}");
	}
	json_array_foreach(val, i, vm) {
		struct cloud_instance x;

		rc = parse_vm(vm, i, &x, e);
		if (rc)
			break;
		if (strcmp(x.cluster, cluster ? cluster : ""))
			continue;
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 16;
			struct cloud_instance *g = realloc(*v, nc * sizeof *g);

			if (!g) {
				rc = sr_err_set(e, -ENOMEM, "out of memory");
				break;
			}
			*v = g;
			*cap = nc;
		}
		(*v)[(*n)++] = x;
	}
	if (rc == 0 && next && nl && *nl && !(*next = strdup(nl)))
		rc = sr_err_set(e, -ENOMEM, "out of memory");
	json_decref(doc);
	return rc;
}
