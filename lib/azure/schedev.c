/*
 * schedev.c - Azure Scheduled Events: parser, poll and acknowledgement
 * (protocol in schedev.h).
 *
 * Client states:
 *
 *   NO_NAME --compute/name 200--> NAMED --scheduledevents 200-->
 *     incarnation == last ? the last answer : parse, pick, remember
 */
#include <ctype.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azure/schedev.h"
#include "common/http.h"
#include "common/timeutil.h"

#define BODY_MAX (256 * 1024)
#define NAME_API "api-version=2021-02-01&format=text"

struct schedev {
	char *base;                /* without a trailing '/' */
	long timeout_ms;
	char vm[128];              /* "" until asked */
	bool have_last;
	struct schedev_notice last;
};

static const struct {
	const char *name;
	enum schedev_type t;
} types[] = {
	{ "Freeze", SCHEDEV_FREEZE }, { "Reboot", SCHEDEV_REBOOT },
	{ "Redeploy", SCHEDEV_REDEPLOY }, { "Preempt", SCHEDEV_PREEMPT },
	{ "Terminate", SCHEDEV_TERMINATE },
};

const char *schedev_type_name(enum schedev_type t)
{
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (types[i].t == t)
			return types[i].name;
	return "none";
}

/* RFC 1123, as the documentation shows it: "Mon, 19 Sep 2016 18:29:47
 * GMT" (the shape checked here, the value read by curl's date parser). */
static int parse_date(const char *s, int64_t *ns)
{
	static const char shape[] = "Aaa, 00 Aaa 0000 00:00:00 GMT";
	time_t t;

	if (strlen(s) != sizeof shape - 1)
		return -1;
	for (size_t i = 0; shape[i]; i++) {
		char c = shape[i];

		if ((c == '0' && !isdigit((unsigned char)s[i])) ||
		    ((c == 'A' || c == 'a') && !isalpha((unsigned char)s[i])) ||
		    (c != '0' && c != 'A' && c != 'a' && s[i] != c))
			return -1;
	}
	t = curl_getdate(s, NULL);
	/* after 1970 and before 2262 (int64 nanoseconds) */
	if (t < 0 || (int64_t)t > INT64_MAX / SR_NS_PER_SEC)
		return -1;
	*ns = (int64_t)t * SR_NS_PER_SEC;
	return 0;
}

static int parse_event(json_t *ev, size_t i, const char *vm,
		       struct schedev_event *out, struct sr_err *e)
{
	json_t *id = json_object_get(ev, "EventId");
	json_t *ty = json_object_get(ev, "EventType");
	json_t *st = json_object_get(ev, "EventStatus");
	json_t *nb = json_object_get(ev, "NotBefore");
	json_t *res = json_object_get(ev, "Resources");
	const char *tname;
	size_t k;
	json_t *r;

	memset(out, 0, sizeof *out);
	if (!json_is_object(ev))
		return sr_err_set(e, -SR_EPARSE, "scheduled events: Events[%zu]:"
				  " expected an object", i);
	if (!json_is_string(id) || json_string_length(id) == 0 ||
	    json_string_length(id) >= SCHEDEV_ID_MAX)
		return sr_err_set(e, -SR_EPARSE, "scheduled events: Events[%zu]."
				  "EventId: expected a string of 1 to %d bytes",
				  i, SCHEDEV_ID_MAX - 1);
	snprintf(out->id, sizeof out->id, "%s", json_string_value(id));
	tname = json_string_value(ty);
	for (k = 0; tname && k < sizeof types / sizeof types[0]; k++)
		if (strcmp(types[k].name, tname) == 0)
			out->type = types[k].t;
	if (!out->type)
		return sr_err_set(e, -SR_EPARSE, "scheduled events: event %s: "
				  "EventType: expected Freeze, Reboot, Redeploy, "
				  "Preempt or Terminate", out->id);
	if (!json_is_string(st) ||
	    (strcmp(json_string_value(st), "Scheduled") &&
	     strcmp(json_string_value(st), "Started")))
		return sr_err_set(e, -SR_EPARSE, "scheduled events: event %s: "
				  "EventStatus: expected Scheduled or Started",
				  out->id);
	out->started = strcmp(json_string_value(st), "Started") == 0;
	if (!json_is_string(nb))
		return sr_err_set(e, -SR_EPARSE, "scheduled events: event %s: "
				  "NotBefore: expected a string", out->id);
	if (json_string_length(nb) &&
	    parse_date(json_string_value(nb), &out->not_before_ns) < 0)
		return sr_err_set(e, -SR_EPARSE, "scheduled events: event %s: "
				  "NotBefore '%.40s': expected an RFC 1123 date "
				  "('Mon, 19 Sep 2016 18:29:47 GMT')", out->id,
				  json_string_value(nb));
	if (!json_is_array(res))
		return sr_err_set(e, -SR_EPARSE, "scheduled events: event %s: "
				  "Resources: expected an array", out->id);
	json_array_foreach(res, k, r) {
		if (!json_is_string(r))
			return sr_err_set(e, -SR_EPARSE, "scheduled events: event "
					  "%s: Resources[%zu]: expected a string",
					  out->id, k);
		if (vm && vm[0] && strcmp(json_string_value(r), vm) == 0)
			out->ours = true;
	}
	return 0;
}

int schedev_parse(const char *body, size_t len, const char *vm,
		  struct schedev_doc *out, struct sr_err *e)
{
	json_error_t je;
	json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	json_t *inc, *evs, *ev;
	size_t i;
	int rc = 0;

	memset(out, 0, sizeof *out);
	if (!doc)
		return sr_err_set(e, -SR_EPARSE, "scheduled events: line %d: %s",
				  je.line, je.text);
	inc = json_object_get(doc, "DocumentIncarnation");
	evs = json_object_get(doc, "Events");
	if (!json_is_integer(inc) || json_integer_value(inc) < 0) {
		rc = sr_err_set(e, -SR_EPARSE, "scheduled events: "
				"DocumentIncarnation: expected an integer >= 0");
		goto out;
	}
	if (!json_is_array(evs)) {
		rc = sr_err_set(e, -SR_EPARSE, "scheduled events: Events: "
				"expected an array");
		goto out;
	}
	out->incarnation = json_integer_value(inc);
	json_array_foreach(evs, i, ev) {
		struct schedev_event one;

		rc = parse_event(ev, i, vm, &one, e);
		if (rc < 0)
			goto out;
		if (out->n < SCHEDEV_MAX_EVENTS)
			out->ev[out->n++] = one;
	}
out:
	json_decref(doc);
	return rc;
}

int schedev_pick(const struct schedev_doc *doc, int64_t now_ns,
		 struct schedev_notice *out)
{
	memset(out, 0, sizeof *out);
	out->incarnation = doc->incarnation;
	for (size_t i = 0; i < doc->n; i++) {
		const struct schedev_event *v = &doc->ev[i];
		int64_t t = v->not_before_ns ? v->not_before_ns : now_ns;

		if (!v->ours || v->type == SCHEDEV_FREEZE)
			continue;
		if (out->type && t >= out->time_ns)
			continue;
		out->type = v->type;
		out->time_ns = t;
		snprintf(out->event_id, sizeof out->event_id, "%s", v->id);
	}
	return out->type ? 0 : -SR_ENOTFOUND;
}

struct schedev *schedev_create(const char *base_url, long timeout_ms)
{
	struct schedev *c = calloc(1, sizeof *c);
	size_t n;

	if (!c)
		return NULL;
	c->base = strdup(base_url ? base_url : SCHEDEV_DEFAULT_URL);
	if (!c->base) {
		free(c);
		return NULL;
	}
	n = strlen(c->base);
	while (n > 0 && c->base[n - 1] == '/')
		c->base[--n] = '\0';
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
	return c;
}

void schedev_destroy(struct schedev *c)
{
	if (!c)
		return;
	free(c->base);
	free(c);
}

static const char *const meta_hdrs[] = { "Metadata: true", NULL };

static int get(const char *base, const char *path, long timeout_ms,
	       struct sr_http_resp *r, struct sr_err *e)
{
	struct sr_http_opts o;
	char url[1024];
	int rc;

	sr_http_opts_default(&o);
	o.timeout_ms = timeout_ms;
	o.connect_timeout_ms = timeout_ms;
	o.max_retries = 0;     /* the next poll is the retry */
	o.max_body = BODY_MAX;
	snprintf(url, sizeof url, "%s%s", base, path);
	rc = sr_http_request("GET", url, meta_hdrs, NULL, 0, &o, r, e);
	if (rc == 0 && r->status != 200)
		rc = sr_err_set(e, -SR_EHTTP, "GET %s: HTTP %ld", path, r->status);
	return rc;
}

static int ask_name(struct schedev *c, struct sr_err *e)
{
	struct sr_http_resp r = { 0 };
	size_t n;
	int rc = get(c->base, "/metadata/instance/compute/name?" NAME_API,
		     c->timeout_ms, &r, e);

	if (rc < 0)
		goto out;
	n = r.body_len;
	while (n > 0 && isspace((unsigned char)r.body[n - 1]))
		n--;
	if (n == 0 || n >= sizeof c->vm) {
		rc = sr_err_set(e, -SR_EPARSE, "compute/name: expected a VM name "
				"of 1 to %zu bytes", sizeof c->vm - 1);
		goto out;
	}
	memcpy(c->vm, r.body, n);
	c->vm[n] = '\0';
out:
	sr_http_resp_free(&r);
	return rc;
}

int schedev_poll(struct schedev *c, struct schedev_notice *out,
		 struct sr_err *e)
{
	struct sr_http_resp r = { 0 };
	struct schedev_doc doc;
	int rc = 0;

	memset(out, 0, sizeof *out);
	if (!c->vm[0]) {
		rc = ask_name(c, e);
		if (rc < 0)
			return rc;
	}
	rc = get(c->base, "/metadata/scheduledevents?" SCHEDEV_API,
		 c->timeout_ms, &r, e);
	if (rc < 0)
		goto out;
	rc = schedev_parse(r.body, r.body_len, c->vm, &doc, e);
	if (rc < 0)
		goto out;
	if (c->have_last && doc.incarnation == c->last.incarnation) {
		*out = c->last;
		out->changed = false;
		goto out;
	}
	schedev_pick(&doc, sr_time_real_ns(), out);
	out->changed = true;
	c->last = *out;
	c->have_last = true;
out:
	sr_http_resp_free(&r);
	return rc;
}

int schedev_ack(const char *base_url, const char *event_id, long timeout_ms,
		struct sr_err *e)
{
	static const char *const hdrs[] = {
		"Metadata: true", "Content-Type: application/json", NULL
	};
	struct sr_http_resp r = { 0 };
	struct sr_http_opts o;
	json_t *body = json_pack("{s:[{s:s}]}", "StartRequests", "EventId",
				 event_id);
	char *txt = body ? json_dumps(body, JSON_COMPACT) : NULL;
	char url[1024];
	int rc;

	json_decref(body);
	if (!txt)
		return sr_err_set(e, -ENOMEM, "out of memory");
	sr_http_opts_default(&o);
	o.timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
	o.max_retries = 2;
	o.retry_unsafe = 1;    /* starting an event twice is harmless */
	snprintf(url, sizeof url, "%s/metadata/scheduledevents?" SCHEDEV_API,
		 base_url ? base_url : SCHEDEV_DEFAULT_URL);
	rc = sr_http_request("POST", url, hdrs, txt, strlen(txt), &o, &r, e);
	if (rc == 0 && r.status != 200)
		rc = sr_err_set(e, -SR_EHTTP, "scheduled events: StartRequests "
				"%s: HTTP %ld", event_id, r.status);
	sr_http_resp_free(&r);
	free(txt);
	return rc;
}
