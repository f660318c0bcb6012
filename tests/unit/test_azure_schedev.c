/* Unit tests: lib/azure/schedev.c (Azure Scheduled Events, the agent's
 * scheduled-events notice source): the documented payloads, several
 * events, other VMs' events, Started events, bad documents, and the
 * client against sr_testsrv playing IMDS (DocumentIncarnation tracked,
 * the Metadata header, the StartRequests acknowledgement). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azure/schedev.h"
#include "common/testsrv.h"
#include "common/timeutil.h"

#define SE_PATH "/metadata/scheduledevents"
#define NAME_PATH "/metadata/instance/compute/name"

/* The documentation's example, with a Preempt for vm-a and a Freeze for
 * another VM. */
static const char doc_two[] =
	"{\"DocumentIncarnation\": 2, \"Events\": ["
	"{\"EventId\": \"C7061BAC-AFDC-4513-B24B-AA5F13A16123\","
	" \"EventStatus\": \"Scheduled\", \"EventType\": \"Freeze\","
	" \"ResourceType\": \"VirtualMachine\", \"Resources\": [\"vm-b\"],"
	" \"NotBefore\": \"Mon, 11 Apr 2022 22:26:58 GMT\","
	" \"Description\": \"Virtual machine is being paused\","
	" \"EventSource\": \"Platform\", \"DurationInSeconds\": 5},"
	"{\"EventId\": \"602d9444-d2cd-49c7-8624-8643e7171297\","
	" \"EventStatus\": \"Scheduled\", \"EventType\": \"Preempt\","
	" \"ResourceType\": \"VirtualMachine\", \"Resources\": [\"vm-a\"],"
	" \"NotBefore\": \"Mon, 19 Sep 2016 18:29:47 GMT\","
	" \"Description\": \"\", \"EventSource\": \"Platform\","
	" \"DurationInSeconds\": -1}]}";

static void parse_doc_example(void **state)
{
	struct schedev_doc d;
	struct schedev_notice n;
	struct sr_err e;

	(void)state;
	sr_err_clear(&e);
	assert_int_equal(schedev_parse(doc_two, strlen(doc_two), "vm-a", &d, &e), 0);
	assert_int_equal(d.incarnation, 2);
	assert_int_equal(d.n, 2);
	assert_false(d.ev[0].ours);
	assert_int_equal(d.ev[0].type, SCHEDEV_FREEZE);
	assert_true(d.ev[1].ours);
	assert_int_equal(d.ev[1].type, SCHEDEV_PREEMPT);
	/* Mon, 19 Sep 2016 18:29:47 GMT */
	assert_int_equal(d.ev[1].not_before_ns, INT64_C(1474309787) * SR_NS_PER_SEC);
	assert_int_equal(schedev_pick(&d, 1, &n), 0);
	assert_int_equal(n.type, SCHEDEV_PREEMPT);
	assert_string_equal(n.event_id, "602d9444-d2cd-49c7-8624-8643e7171297");
	/* vm-b's only event is a Freeze: no notice; vm-c has none at all */
	assert_int_equal(schedev_parse(doc_two, strlen(doc_two), "vm-b", &d, &e), 0);
	assert_int_equal(schedev_pick(&d, 1, &n), -SR_ENOTFOUND);
	assert_int_equal(schedev_parse(doc_two, strlen(doc_two), "vm-c", &d, &e), 0);
	assert_int_equal(schedev_pick(&d, 1, &n), -SR_ENOTFOUND);
}

/* Several of this VM's events: the earliest wins; Started means now. */
static void pick_earliest_and_started(void **state)
{
	static const char body[] =
		"{\"DocumentIncarnation\": 7, \"Events\": ["
		"{\"EventId\": \"r\", \"EventStatus\": \"Scheduled\","
		" \"EventType\": \"Reboot\", \"ResourceType\": \"VirtualMachine\","
		" \"Resources\": [\"x\", \"me\"],"
		" \"NotBefore\": \"Tue, 01 Dec 2026 10:00:00 GMT\"},"
		"{\"EventId\": \"t\", \"EventStatus\": \"Started\","
		" \"EventType\": \"Terminate\", \"ResourceType\": \"VirtualMachine\","
		" \"Resources\": [\"me\"], \"NotBefore\": \"\"},"
		"{\"EventId\": \"d\", \"EventStatus\": \"Scheduled\","
		" \"EventType\": \"Redeploy\", \"ResourceType\": \"VirtualMachine\","
		" \"Resources\": [\"me\"],"
		" \"NotBefore\": \"Tue, 01 Dec 2026 09:00:00 GMT\"}]}";
	struct schedev_doc d;
	struct schedev_notice n;
	struct sr_err e;
	int64_t now = INT64_C(1796000000) * SR_NS_PER_SEC;

	(void)state;
	assert_int_equal(schedev_parse(body, strlen(body), "me", &d, &e), 0);
	assert_int_equal(d.n, 3);
	assert_true(d.ev[1].started);
	assert_int_equal(schedev_pick(&d, now, &n), 0);
	/* Started (now) is before both scheduled times of 2026-12-01 */
	assert_true(now < d.ev[2].not_before_ns);
	assert_string_equal(n.event_id, "t");
	assert_int_equal(n.time_ns, now);
	assert_string_equal(schedev_type_name(n.type), "Terminate");
	/* without the Started one, the Redeploy at 09:00 beats the Reboot */
	d.ev[1].ours = false;
	assert_int_equal(schedev_pick(&d, now, &n), 0);
	assert_string_equal(n.event_id, "d");
}

static void bad_documents(void **state)
{
	static const struct {
		const char *body, *says;
	} cases[] = {
		{ "{", "line 1" },
		{ "[]", "DocumentIncarnation" },
		{ "{\"DocumentIncarnation\": 1}", "Events: expected an array" },
		{ "{\"DocumentIncarnation\": 1, \"Events\": [1]}",
		  "Events[0]: expected an object" },
		{ "{\"DocumentIncarnation\": 1, \"Events\": [{\"EventId\": \"a\","
		  " \"EventType\": \"Explode\"}]}", "event a: EventType" },
		{ "{\"DocumentIncarnation\": 1, \"Events\": [{\"EventId\": \"a\","
		  " \"EventType\": \"Preempt\", \"EventStatus\": \"Done\"}]}",
		  "event a: EventStatus" },
		{ "{\"DocumentIncarnation\": 1, \"Events\": [{\"EventId\": \"a\","
		  " \"EventType\": \"Preempt\", \"EventStatus\": \"Scheduled\","
		  " \"NotBefore\": \"2016-09-19T18:29:47Z\", \"Resources\": []}]}",
		  "NotBefore '2016-09-19T18:29:47Z': expected an RFC 1123 date" },
		{ "{\"DocumentIncarnation\": 1, \"Events\": [{\"EventId\": \"a\","
		  " \"EventType\": \"Preempt\", \"EventStatus\": \"Scheduled\","
		  " \"NotBefore\": \"\", \"Resources\": [3]}]}",
		  "event a: Resources[0]" },
	};
	struct schedev_doc d;
	struct sr_err e;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sr_err_clear(&e);
		assert_int_equal(schedev_parse(cases[i].body, strlen(cases[i].body),
					       "me", &d, &e), -SR_EPARSE);
		if (!strstr(e.msg, cases[i].says))
			fail_msg("case %zu: '%s' does not say '%s'", i, e.msg,
				 cases[i].says);
	}
}

/* The client: name once, Metadata: true on every call, the incarnation
 * tracked (same document: not "changed"), the acknowledgement's body. */
static void client_polls_and_acks(void **state)
{
	struct sr_testsrv *s = sr_testsrv_start(0);
	struct schedev *c;
	struct schedev_notice n;
	struct sr_err e;
	char h[64];

	(void)state;
	assert_non_null(s);
	c = schedev_create(sr_testsrv_url(s), 1000);
	assert_non_null(c);
	sr_testsrv_reply(s, "GET", NAME_PATH, 200, "text/plain", "vm-a\n", 0);
	sr_testsrv_reply(s, "GET", SE_PATH, 200, "application/json",
			 "{\"DocumentIncarnation\": 1, \"Events\": []}", 0);
	sr_testsrv_reply(s, "GET", SE_PATH, 200, "application/json", doc_two, 0);
	sr_testsrv_reply(s, "POST", SE_PATH, 200, "application/json", "", 0);
	sr_err_clear(&e);
	assert_int_equal(schedev_poll(c, &n, &e), 0);
	assert_int_equal(n.type, 0);
	assert_true(n.changed);
	assert_int_equal(schedev_poll(c, &n, &e), 0);
	assert_int_equal(n.type, SCHEDEV_PREEMPT);
	assert_true(n.changed);
	assert_int_equal(schedev_poll(c, &n, &e), 0); /* same incarnation */
	assert_int_equal(n.type, SCHEDEV_PREEMPT);
	assert_false(n.changed);
	assert_int_equal(sr_testsrv_count(s, "GET", NAME_PATH), 1);
	assert_int_equal(sr_testsrv_count(s, "GET", SE_PATH), 3);
	for (size_t i = 0; i < sr_testsrv_nreq(s); i++) {
		const struct sr_testsrv_req *r = sr_testsrv_req(s, i);

		assert_int_equal(sr_testsrv_req_header(r, "Metadata", h, sizeof h), 0);
		assert_string_equal(h, "true");
		if (!strcmp(r->path, SE_PATH))
			assert_string_equal(r->query, "api-version=2020-07-01");
	}
	assert_int_equal(schedev_ack(sr_testsrv_url(s), n.event_id, 1000, &e), 0);
	{
		const struct sr_testsrv_req *r = sr_testsrv_req(s, sr_testsrv_nreq(s) - 1);

		assert_string_equal(r->method, "POST");
		assert_string_equal(r->body, "{\"StartRequests\":[{\"EventId\":"
				    "\"602d9444-d2cd-49c7-8624-8643e7171297\"}]}");
	}
	/* an IMDS that refuses: an error naming the status, no notice */
	sr_testsrv_reply(s, "GET", SE_PATH, 500, "text/plain", "no", 0);
	assert_int_equal(schedev_poll(c, &n, &e), 0); /* the queued one */
	assert_int_equal(schedev_poll(c, &n, &e), -SR_EHTTP);
	assert_non_null(strstr(e.msg, "HTTP 500"));
	assert_int_equal(n.type, 0);
	schedev_destroy(c);
	sr_testsrv_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_doc_example),
		cmocka_unit_test(pick_earliest_and_started),
		cmocka_unit_test(bad_documents),
		cmocka_unit_test(client_polls_and_acks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
