/* Unit tests: the azure driver against the Azure emulator (lib/azure/
 * azemu.h, in process): VMs made with their NIC, OS disk and public IP
 * and deleted with them; the leak sweep of the driver's list() deletes
 * the NIC, disk and IP a VM of this cluster left behind (NIC first, then
 * the IP that was on it), leaves another cluster's alone and those of a
 * VM still listed; a spot size without capacity is a capacity error whose
 * Failed VM goes at once; a size the location does not sell is
 * SkuNotAvailable; the VM quota is a quota error.  The emulator's
 * Scheduled Events as a VM's IMDS answers them: DocumentIncarnation moves
 * with the list, another VM's Freeze beside this VM's event, a Reboot
 * acknowledged ends and the VM stays, a Terminate acknowledged (StartRequests)
 * deletes the VM at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "azure/arm.h"
#include "azure/azemu.h"
#include "common/fsutil.h"
#include "common/http.h"

#define SIZE "Standard_NC6s_v3"
#define SUBNET "/subscriptions/sub/resourceGroups/rg/providers/" \
	"Microsoft.Network/virtualNetworks/v/subnets/default"

struct fx {
	char dir[64];
	struct azemu *m;
	struct arm *a;
	struct cloud_driver d;
};

static int setup(void **state)
{
	static const char *const caps[] = { SIZE "=plenty",
					    "Standard_ND96asr_v4=none", NULL };
	struct fx *f = calloc(1, sizeof *f);
	struct azemu_opts eo = { .conf = { .data_dir = "data", .capacity = caps },
				 .boot_s = 1e-6, .quota_vms = 4 };
	struct arm_opts o = { .subscription = "sub", .resource_group = "rg",
			      .location = "eastus", .subnet = SUBNET,
			      .public_ip = true, .timeout_ms = 10000,
			      .sweep_every_ms = -1 };
	struct sr_err e = { 0 };

	if (!f)
		return -1;
	snprintf(f->dir, sizeof f->dir, "/tmp/azsweep-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	eo.conf.work_dir = f->dir;
	if (azemu_start(&eo, &f->m, &e)) {
		print_error("%s\n", e.msg);
		return -1;
	}
	setenv("AZURE_TENANT_ID", "tenant-1", 1);
	setenv("AZURE_CLIENT_ID", "client-1", 1);
	setenv("AZURE_CLIENT_SECRET", "s3cret", 1);
	unsetenv("AZURE_CLIENT_CERTIFICATE_PATH");
	o.endpoint = o.login = azemu_url(f->m);
	if (arm_open(&o, &f->a, &e)) {
		print_error("%s\n", e.msg);
		return -1;
	}
	arm_driver_init(f->a, &f->d);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	f->d.ops->destroy(f->d.st);
	azemu_stop(f->m);
	sr_fs_rm_tree(f->dir);
	free(f);
	return 0;
}

static int create(struct fx *f, const char *cluster, int64_t node,
		  const char *size, char id[80], struct cloud_error *err)
{
	struct cloud_launch l = { .instance_type = size, .spot = true,
				  .bootstrap = "#!/bin/sh\nexit 0\n",
				  .tags = { .cluster = cluster, .job_id = 1,
					    .node_id = node, .attempt = 1 } };
	struct cloud_instance in;
	char key[CLOUD_IDEM_MAX];
	int rc;

	cloud_idem_key(&l.tags, key);
	l.idem_key = key;
	rc = arm_vm_create(f->a, &l, &in, err);
	if (id)
		snprintf(id, 80, "%s", rc ? "" : in.id);
	cloud_instance_clear(&in);
	return rc;
}

/* The names of the emulator's resources of kind k ("nics", "disks",
 * "ips", "vms"), joined by spaces, sorted as made. */
static void names(struct fx *f, const char *k, char *out, size_t n)
{
	json_t *st = azemu_state(f->m), *r;
	size_t i;

	out[0] = '\0';
	json_array_foreach(json_object_get(st, k), i, r) {
		strncat(out, json_string_value(json_object_get(r, "name")),
			n - strlen(out) - 1);
		strncat(out, " ", n - strlen(out) - 1);
	}
	json_decref(st);
}

static size_t list(struct fx *f, const char *cluster)
{
	struct cloud_instance *v = NULL;
	struct cloud_error err = { 0 };
	size_t n = 0;

	assert_int_equal(f->d.ops->list(f->d.st, cluster, &v, &n, &err), 0);
	cloud_instances_free(v, n);
	return n;
}

static void test_sweep_deletes_what_a_gone_vm_left(void **state)
{
	struct fx *f = *state;
	struct cloud_error err = { 0 };
	char a[80], b[80], c[80], buf[1024];

	assert_int_equal(create(f, "c1", 1, SIZE, a, &err), 0);
	assert_int_equal(create(f, "c1", 2, SIZE, b, &err), 0);
	assert_int_equal(create(f, "c2", 1, SIZE, c, &err), 0);
	assert_string_equal(a, "sr-c1-1-1");
	names(f, "nics", buf, sizeof buf);
	assert_string_equal(buf, "sr-c1-1-1-nic sr-c1-2-1-nic sr-c2-1-1-nic ");
	/* deleting a VM deletes its NIC, disk, IP (deleteOption Delete) */
	{
		const char *ids[] = { b };

		assert_int_equal(f->d.ops->terminate(f->d.st, ids, 1, &err), 0);
	}
	names(f, "disks", buf, sizeof buf);
	assert_string_equal(buf, "sr-c1-1-1-osdisk sr-c2-1-1-osdisk ");
	/* VMs gone with their resources left: c1's and c2's */
	assert_int_equal(azemu_leak(f->m, a), 1);
	assert_int_equal(azemu_leak(f->m, c), 1);
	assert_int_equal(list(f, "c1"), 0);
	names(f, "nics", buf, sizeof buf);
	assert_string_equal(buf, "sr-c2-1-1-nic ");
	names(f, "disks", buf, sizeof buf);
	assert_string_equal(buf, "sr-c2-1-1-osdisk ");
	/* the IP was on the swept NIC: it went after it */
	names(f, "ips", buf, sizeof buf);
	assert_string_equal(buf, "sr-c2-1-1-ip ");
	/* a listed VM's resources are never swept */
	assert_int_equal(create(f, "c1", 3, SIZE, a, &err), 0);
	assert_int_equal(list(f, "c1"), 1);
	names(f, "nics", buf, sizeof buf);
	assert_string_equal(buf, "sr-c2-1-1-nic sr-c1-3-1-nic ");
	assert_int_equal(list(f, "c2"), 0);
	names(f, "ips", buf, sizeof buf);
	assert_string_equal(buf, "sr-c1-3-1-ip ");
}

static void test_name_of_a_cluster_vm(void **state)
{
	(void)state;
	assert_true(arm_vm_name_of("c1", "sr-c1-12-3"));
	assert_true(arm_vm_name_of("My_Cluster", "sr-my-cluster-1-1"));
	assert_false(arm_vm_name_of("c1", "sr-c12-1-1"));
	assert_false(arm_vm_name_of("c1", "sr-c1-1"));
	assert_false(arm_vm_name_of("c1", "sr-c1-x-1"));
	assert_false(arm_vm_name_of("c1", "sr-c1-1-"));
	assert_false(arm_vm_name_of("c1", "-1-1"));
	assert_false(arm_vm_name_of("c1", ""));
}

static void test_errors_from_the_emulator(void **state)
{
	struct fx *f = *state;
	struct cloud_error err = { 0 };
	char buf[1024];

	/* spot without capacity: the operation fails, the VM goes */
	assert_true(create(f, "c1", 5, "Standard_ND96asr_v4", NULL, &err) < 0);
	assert_int_equal(err.cls, CLOUD_ECAPACITY);
	assert_string_equal(err.code, "AllocationFailed");
	names(f, "vms", buf, sizeof buf);
	assert_string_equal(buf, "");
	/* a size eastus does not sell */
	memset(&err, 0, sizeof err);
	assert_true(create(f, "c1", 6, "Standard_Nope", NULL, &err) < 0);
	assert_int_equal(err.cls, CLOUD_ECAPACITY);
	assert_string_equal(err.code, "SkuNotAvailable");
	/* the quota (4 VMs) */
	for (int64_t n = 1; n <= 4; n++)
		assert_int_equal(create(f, "c1", n, SIZE, NULL, &err), 0);
	memset(&err, 0, sizeof err);
	assert_true(create(f, "c1", 9, SIZE, NULL, &err) < 0);
	assert_int_equal(err.cls, CLOUD_EQUOTA);
	assert_string_equal(err.code, "OperationNotAllowed");
}

/* A call to VM vm's IMDS (Metadata: true): the JSON answer. */
static json_t *imds(struct fx *f, const char *vm, const char *method,
		    const char *body)
{
	static const char *const hdrs[] = { "Metadata: true",
					    "Content-Type: application/json",
					    NULL };
	char url[256];
	struct sr_http_req rq = { .method = method, .url = url,
				  .headers = hdrs, .body = body,
				  .body_len = body ? strlen(body) : 0 };
	struct sr_http_opts o;
	struct sr_http_resp r = { 0 };
	struct sr_err e = { 0 };
	json_t *doc;

	snprintf(url, sizeof url, "%s/imds/%s/metadata/scheduledevents?"
		 "api-version=2020-07-01", azemu_url(f->m), vm);
	sr_http_opts_default(&o);
	assert_int_equal(sr_http_do(&rq, &o, &r, &e), 0);
	assert_int_equal(r.status, 200);
	doc = body ? json_object() : json_loadb(r.body, r.body_len, 0, NULL);
	sr_http_resp_free(&r);
	assert_non_null(doc);
	return doc;
}

/* The id of vm's event of type in doc, or NULL. */
static const char *event_of(json_t *doc, const char *vm, const char *type)
{
	json_t *ev;
	size_t i;

	json_array_foreach(json_object_get(doc, "Events"), i, ev) {
		if (!strcmp(json_string_value(json_object_get(ev, "EventType")),
			    type) &&
		    !strcmp(json_string_value(json_array_get(json_object_get(
			    ev, "Resources"), 0)), vm))
			return json_string_value(json_object_get(ev, "EventId"));
	}
	return NULL;
}

static bool vm_listed(struct fx *f, const char *vm)
{
	char buf[1024], want[96];

	names(f, "vms", buf, sizeof buf);
	snprintf(want, sizeof want, "%s ", vm);
	return strstr(buf, want) != NULL;
}

static void test_scheduled_events(void **state)
{
	struct fx *f = *state;
	struct cloud_error err = { 0 };
	json_t *d0, *d1, *d2, *st;
	char a[80], ack[160];
	const char *id;

	assert_int_equal(create(f, "c1", 1, SIZE, a, &err), 0);
	d0 = imds(f, a, "GET", NULL);
	assert_int_equal(json_array_size(json_object_get(d0, "Events")), 0);
	assert_int_equal(azemu_event(f->m, a, "Reboot"), 0);
	assert_int_equal(azemu_event(f->m, a, "Bogus"), -EINVAL);
	assert_int_equal(azemu_event(f->m, "nope", "Reboot"), -SR_ENOTFOUND);
	d1 = imds(f, a, "GET", NULL);
	assert_true(json_integer_value(json_object_get(d1, "DocumentIncarnation"))
		    > json_integer_value(json_object_get(d0, "DocumentIncarnation")));
	assert_non_null(event_of(d1, "another-vm", "Freeze"));
	id = event_of(d1, a, "Reboot");
	assert_non_null(id);
	/* acknowledged: the Reboot happens, the VM stays */
	snprintf(ack, sizeof ack, "{\"StartRequests\":[{\"EventId\":\"%s\"}]}",
		 id);
	json_decref(imds(f, a, "POST", ack));
	for (int i = 0; i < 400; i++) { /* the clock's next tick, 50 ms */
		d2 = imds(f, a, "GET", NULL);
		if (!event_of(d2, a, "Reboot"))
			break;
		json_decref(d2);
		d2 = NULL;
		usleep(25000);
	}
	assert_non_null(d2);
	assert_true(vm_listed(f, a));
	json_decref(d2);
	/* a Terminate acknowledged: the VM goes at once, not at NotBefore */
	assert_int_equal(azemu_event(f->m, a, "Terminate"), 0);
	d2 = imds(f, a, "GET", NULL);
	id = event_of(d2, a, "Terminate");
	assert_non_null(id);
	snprintf(ack, sizeof ack, "{\"StartRequests\":[{\"EventId\":\"%s\"}]}",
		 id);
	json_decref(imds(f, a, "POST", ack));
	for (int i = 0; i < 400 && vm_listed(f, a); i++)
		usleep(25000);
	assert_false(vm_listed(f, a));
	st = azemu_state(f->m);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
		json_object_get(st, "evicted"), 0), "how")), "ack");
	assert_string_equal(json_string_value(json_object_get(json_array_get(
		json_object_get(st, "evicted"), 0), "type")), "Terminate");
	json_decref(st);
	json_decref(d0);
	json_decref(d1);
	json_decref(d2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_of_a_cluster_vm),
		cmocka_unit_test_setup_teardown(
			test_sweep_deletes_what_a_gone_vm_left, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors_from_the_emulator,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_scheduled_events, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
