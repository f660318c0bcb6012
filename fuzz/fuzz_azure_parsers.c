/*
 * fuzz_azure_parsers - libFuzzer target for what the Azure and Lambda
 * providers and the agent read from outside: the Scheduled Events
 * document (IMDS), an ARM VM list page, an ARM error and an operation's
 * status, a Retail Prices page; Lambda's instances, instance types and
 * errors.  Invariants: a parsed document keeps at most
 * SCHEDEV_MAX_EVENTS events, each with a known type and an id, and a
 * picked notice is one of this VM's non-Freeze events; listed VMs carry
 * the asked cluster; an error always has a class; prices are -1 or >= 0.
 * Also the leak sweep's resource list pages (at most cap kept, each named,
 * an IP's NIC only for IPs) and VM names, and what the emulators read from
 * a client (lib/cloud/emuhttp.h: a form body, a JWT's parts: objects or
 * nothing; the Azure emulator's ARM routing of "PATH\nBODY" for GET and
 * DELETE and its StartRequests body: an HTTP status, an operation id that
 * fits).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "azure/arm.h"
#include "azure/azprices.h"
#include "azure/schedev.h"
#include "azure/azemu_int.h"
#include "cloud/emuhttp.h"
#include "lambda/lambda.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An Azure emulator's state without a market or a server: what ARM's GET
 * and DELETE routing and Scheduled Events read (never freed). */
static struct azemu *emu(void)
{
	static struct azemu *m;

	if (!m && (m = calloc(1, sizeof *m))) {
		pthread_mutex_init(&m->mu, NULL);
		m->page = 2;
		m->time_scale = m->notice_s = 1;
		m->incarnation = 1;
		m->acks = json_array();
		m->evicted = json_array();
		m->noticed = json_object();
		snprintf(m->url, sizeof m->url, "http://127.0.0.1:1");
		snprintf(m->location, sizeof m->location, "eastus");
	}
	return m;
}

static void emu_calls(const char *z)
{
	static const char *const methods[] = { "GET", "DELETE" };
	struct azemu *m = emu();
	const char *nl = strchr(z, '\n');
	char *path = strndup(z, nl ? (size_t)(nl - z) : strlen(z));
	const char *body = nl ? nl + 1 : "";
	json_t *out;
	char op[40];
	int st;

	if (!m || !path) {
		free(path);
		return;
	}
	for (int i = 0; i < 2; i++) {
		out = NULL;
		azemu__arm(m, methods[i], path, "2024-03-01", body, body,
			   strlen(body), &st, &out, op);
		if (st < 200 || st > 599 || strnlen(op, sizeof op) >= sizeof op)
			abort();
		json_decref(out);
	}
	azemu__schedev(m, "vm-a", "POST", body, &st, &out);
	if (st != 200 && st != 400)
		abort();
	json_decref(out);
	free(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct schedev_doc d;
	struct schedev_notice n;
	struct cloud_instance *v = NULL;
	struct cloud_error err = { 0 };
	struct azprice *p = NULL;
	size_t nv = 0, cap = 0, np = 0, pcap = 0;
	char *next = NULL;

	if (schedev_parse(s, size, "vm-a", &d, NULL) == 0) {
		if (d.n > SCHEDEV_MAX_EVENTS)
			abort();
		for (size_t i = 0; i < d.n; i++)
			if (!d.ev[i].id[0] || d.ev[i].type < SCHEDEV_FREEZE ||
			    d.ev[i].type > SCHEDEV_TERMINATE)
				abort();
		if (schedev_pick(&d, 1, &n) == 0 &&
		    (n.type == SCHEDEV_FREEZE || !n.event_id[0]))
			abort();
	}
	if (arm_parse_vm_page(s, size, "c1", &v, &nv, &cap, &next, NULL) == 0) {
		for (size_t i = 0; i < nv; i++)
			if (strcmp(v[i].cluster, "c1") || !v[i].id[0])
				abort();
	}
	cloud_instances_free(v, nv);
	free(next);
	next = NULL;
	if (arm_parse_error(409, s, size, "fuzz", &err) >= 0 ||
	    err.cls == CLOUD_EOK)
		abort();
	arm_parse_operation(s, size, &err);
	if (azprices_parse_page(s, size, "eastus", &p, &np, &pcap, &next,
				NULL) == 0) {
		for (size_t i = 0; i < np; i++)
			if (p[i].spot_per_h < -1 || p[i].ondemand_per_h < -1)
				abort();
	}
	free(p);
	free(next);
	v = NULL;
	nv = 0;
	if (lambda_parse_instances(s, size, "c1", &v, &nv, NULL) == 0)
		for (size_t i = 0; i < nv; i++)
			if (!v[i].id[0] || v[i].node_id < 0)
				abort();
	cloud_instances_free(v, nv);
	{
		struct lambda_type *t = NULL;
		size_t nt = 0;

		if (lambda_parse_types(s, size, &t, &nt, NULL) == 0)
			for (size_t i = 0; i < nt; i++)
				if (t[i].price_per_h < 0)
					abort();
		lambda_types_free(t, nt);
	}
	if (lambda_parse_error(400, s, size, "fuzz", &err) >= 0)
		abort();
	for (int k = 0; k < ARM_RES_KINDS; k++) {
		struct arm_leak lv[4];
		size_t nl = 0;

		next = NULL;
		if (arm_parse_res_page(s, size, "c1", (enum arm_res_kind)k, lv, &nl,
				       4, &next, NULL) == 0) {
			if (nl > 4)
				abort();
			for (size_t i = 0; i < nl; i++)
				if (!lv[i].name[0] || (int)lv[i].kind != k ||
				    (k != ARM_RES_IP && lv[i].on_nic[0]))
					abort();
		}
		free(next);
	}
	{
		char *z = malloc(size + 1), *f;
		json_t *h, *c;

		if (!z)
			return 0;
		memcpy(z, data, size);
		z[size] = '\0';
		arm_vm_name_of("c1", z);
		emu_calls(z);
		free(emuhttp_form_get(z, "client_assertion"));
		if ((f = emuhttp_form_get(z, "grant_type")) && strlen(f) > size)
			abort();
		free(f);
		if (emuhttp_jwt(z, &h, &c) == 0) {
			if (!json_is_object(h) || !json_is_object(c))
				abort();
			json_decref(h);
			json_decref(c);
		} else if (h || c) {
			abort();
		}
		free(z);
	}
	return 0;
}
