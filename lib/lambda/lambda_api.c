/*
 * lambda_api.c - the Lambda Cloud REST client (lambda.h): options,
 * requests, errors, and the parsers of its answers.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http.h"
#include "common/log.h"
#include "common/url.h"
#include "lambda_int.h"

static char *dup_or(const char *s, const char *dflt)
{
	const char *v = s && *s ? s : dflt;

	return v ? strdup(v) : NULL;
}

void lambda_close(struct lambda *l)
{
	if (!l)
		return;
	if (l->key) {
		sr_log_secret_forget(l->key);
		explicit_bzero(l->key, strlen(l->key));
	}
	free(l->endpoint); free(l->key); free(l->key_name); free(l->key_file);
	free(l->user); free(l->ssh); free(l->region);
	free(l);
}

int lambda_open(const struct lambda_opts *o, struct lambda **out,
		struct sr_err *e)
{
	struct lambda *l = calloc(1, sizeof *l);
	struct sr_url u;
	size_t n;
	int rc = 0;

	*out = NULL;
	if (!l)
		return sr_err_set(e, -ENOMEM, "out of memory");
	l->endpoint = dup_or(o->endpoint, LAMBDA_DEFAULT_ENDPOINT);
	l->key = dup_or(o->api_key, getenv("LAMBDA_API_KEY"));
	l->key_name = dup_or(o->ssh_key_name, NULL);
	l->key_file = dup_or(o->ssh_key_file, NULL);
	l->user = dup_or(o->ssh_user, "ubuntu");
	l->ssh = dup_or(o->ssh, "/usr/bin/ssh");
	l->region = dup_or(o->region, NULL);
	l->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
	l->boot_timeout_ms = o->boot_timeout_ms > 0 ? o->boot_timeout_ms
						    : 20 * 60000;
	l->poll_ms = o->poll_ms > 0 ? o->poll_ms : 5000;
	if (!l->endpoint || !l->user || !l->ssh) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto fail;
	}
	n = strlen(l->endpoint);
	while (n > 0 && l->endpoint[n - 1] == '/')
		l->endpoint[--n] = '\0';
	if (!l->key) {
		rc = sr_err_set(e, -SR_ENOTFOUND, "no Lambda API key: set "
				"LAMBDA_API_KEY or providers.lambda.api_key_file");
		goto fail;
	}
	sr_log_secret(l->key);
	if (sr_url_parse_http(l->endpoint, "providers.lambda.endpoint", &u, e) < 0) {
		rc = -EINVAL;
		goto fail;
	}
	sr_url_free(&u);
	if ((!o->allow_remote && !sr_url_is_loopback(l->endpoint)) ||
	    !sr_url_tls_or_loopback(l->endpoint)) {
		rc = sr_err_set(e, -EINVAL, "providers.lambda.endpoint %s: https:// "
				"expected (and allowed only once the provider "
				"is enabled)", l->endpoint);
		goto fail;
	}
	if (l->ssh[0] != '/') {
		rc = sr_err_set(e, -EINVAL, "providers.lambda.ssh '%s': expected "
				"an absolute path", l->ssh);
		goto fail;
	}
	*out = l;
	return 0;
fail:
	lambda_close(l);
	return rc;
}

const char *lambda_endpoint(const struct lambda *l)
{
	return l->endpoint;
}

int lambda_parse_error(long status, const char *body, size_t len,
		       const char *op, struct cloud_error *err)
{
	json_t *doc = body ? json_loadb(body, len, 0, NULL) : NULL;
	json_t *ej = json_object_get(doc, "error");
	const char *code = json_string_value(json_object_get(ej, "code"));
	const char *msg = json_string_value(json_object_get(ej, "message"));
	enum cloud_err_class cls;
	int rc;

	if (code && strstr(code, "insufficient-capacity"))
		cls = CLOUD_ECAPACITY;
	else if (code && strstr(code, "quota-exceeded"))
		cls = CLOUD_EQUOTA;
	else if (status == 429)
		cls = CLOUD_ETHROTTLE;
	else if (status == 401 || status == 403 ||
		 (code && strstr(code, "invalid-api-key")))
		cls = CLOUD_EAUTH;
	else if (status >= 500 || status == 0)
		cls = CLOUD_ETRANSIENT;
	else
		cls = CLOUD_EINVALID;
	rc = cloud_err_set(err, cls, code, "lambda %s: HTTP %ld %s%s%.300s", op,
			   status, code ? code : "", msg ? ": " : "",
			   msg ? msg : "");
	json_decref(doc);
	return rc;
}

static int sign(void *ud, const struct sr_http_req *rq, struct sr_http_hdrs *h,
		struct sr_err *e)
{
	struct lambda *l = ud;

	(void)rq;
	(void)e;
	return sr_http_hdrs_add(h, "Authorization: Bearer %s", l->key);
}

int lambda__call(struct lambda *l, const char *method, const char *path,
		 const char *body, const char *op, struct sr_http_resp *r,
		 struct cloud_error *err)
{
	static const char *const json_hdrs[] = {
		"Content-Type: application/json", NULL
	};
	char url[1024];
	struct sr_http_req rq = {
		.method = method, .url = url, .what = op,
		.headers = body ? json_hdrs : NULL, .sign = sign, .sign_ud = l,
		.body = body, .body_len = body ? strlen(body) : 0,
	};
	struct sr_http_opts o;
	struct sr_err e;
	int rc;

	snprintf(url, sizeof url, "%s%s", l->endpoint, path);
	sr_err_clear(&e);
	sr_http_opts_default(&o);
	o.timeout_ms = l->timeout_ms;
	rc = sr_http_do(&rq, &o, r, &e);
	if (rc < 0)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "lambda %s: %s",
				     op, sr_err_str(&e, rc));
	if (r->status != 200)
		return lambda_parse_error(r->status, r->body, r->body_len, op, err);
	return 0;
}

/* "sr-<cluster>-<node>-<attempt>": node and attempt, 0 when not ours. */
static int name_parse(const char *name, const char *cluster, int64_t *node,
		      int *attempt)
{
	char pfx[96], back[48];
	long long nd = 0;
	int at = 0, used = 0;

	snprintf(pfx, sizeof pfx, "sr-%s-", cluster ? cluster : "");
	if (cluster && strncmp(name, pfx, strlen(pfx)))
		return -1;
	/* the tail exactly as cloud_idem_key writes it: no sign, no space,
	 * no leading zero (fuzz_azure_parsers found "sr-c1--7-2": node -7) */
	if (cluster &&
	    (sscanf(name + strlen(pfx), "%lld-%d%n", &nd, &at, &used) != 2 ||
	     name[strlen(pfx) + (size_t)used] != '\0' ||
	     snprintf(back, sizeof back, "%lld-%d", nd, at) < 0 ||
	     strcmp(back, name + strlen(pfx)) || nd < 0 || at < 0))
		nd = at = 0;
	*node = nd;
	*attempt = at;
	return 0;
}

int lambda_parse_instances(const char *body, size_t len, const char *cluster,
			   struct cloud_instance **out, size_t *n,
			   struct sr_err *e)
{
	json_t *doc = json_loadb(body ? body : "", len, 0, NULL);
	json_t *data = json_object_get(doc, "data"), *it;
	struct cloud_instance *v = NULL;
	size_t i, k = 0;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (!json_is_array(data)) {
		json_decref(doc);
		return sr_err_set(e, -SR_EPARSE, "lambda instances: expected "
				  "{\"data\": [...]}");
	}
	v = calloc(json_array_size(data) + 1, sizeof *v);
	if (!v) {
		json_decref(doc);
		return sr_err_set(e, -ENOMEM, "out of memory");
	}
	json_array_foreach(data, i, it) {
		const char *id = json_string_value(json_object_get(it, "id"));
		const char *name = json_string_value(json_object_get(it, "name"));
		const char *st = json_string_value(json_object_get(it, "status"));
		const char *reg = json_string_value(json_object_get(
			json_object_get(it, "region"), "name"));
		const char *type = json_string_value(json_object_get(
			json_object_get(it, "instance_type"), "name"));
		const char *ip = json_string_value(json_object_get(it, "ip"));
		struct cloud_instance *x = &v[k];

		if (!id || !*id || strlen(id) >= sizeof x->id || !st) {
			rc = sr_err_set(e, -SR_EPARSE, "lambda instances: data[%zu]:"
					" expected id and status", i);
			break;
		}
		if (!name || name_parse(name, cluster, &x->node_id, &x->attempt))
			continue;
		snprintf(x->id, sizeof x->id, "%s", id);
		x->state = !strcmp(st, "booting") ? CLOUD_INST_PENDING :
			   !strcmp(st, "active") || !strcmp(st, "unhealthy") ?
			   CLOUD_INST_RUNNING : !strcmp(st, "terminated") ?
			   CLOUD_INST_GONE : CLOUD_INST_STOPPING;
		snprintf(x->reason, sizeof x->reason, "%s", st);
		snprintf(x->zone, sizeof x->zone, "%s", reg ? reg : "");
		snprintf(x->instance_type, sizeof x->instance_type, "%s",
			 type ? type : "");
		snprintf(x->cluster, sizeof x->cluster, "%s", cluster ? cluster : "");
		if (ip) {
			json_t *b = json_pack("{s:s, s:s}", "ip", ip, "name", name);

			x->blob = b ? json_dumps(b, JSON_COMPACT) : NULL;
			json_decref(b);
		}
		k++;
	}
	json_decref(doc);
	if (rc) {
		cloud_instances_free(v, k);
		return rc;
	}
	*out = v;
	*n = k;
	return 0;
}

void lambda_types_free(struct lambda_type *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		for (size_t k = 0; k < v[i].nregions; k++)
			free(v[i].regions[k]);
		free(v[i].regions);
	}
	free(v);
}

int lambda_parse_types(const char *body, size_t len, struct lambda_type **out,
		       size_t *n, struct sr_err *e)
{
	json_t *doc = json_loadb(body ? body : "", len, 0, NULL);
	json_t *data = json_object_get(doc, "data"), *it;
	struct lambda_type *v = NULL;
	const char *key;
	size_t k = 0;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (!json_is_object(data)) {
		json_decref(doc);
		return sr_err_set(e, -SR_EPARSE, "lambda instance types: expected "
				  "{\"data\": {...}}");
	}
	v = calloc(json_object_size(data) + 1, sizeof *v);
	json_object_foreach(data, key, it) {
		json_t *cents = json_object_get(json_object_get(it, "instance_type"),
						"price_cents_per_hour");
		json_t *regs = json_object_get(it, "regions_with_capacity_available");
		struct lambda_type *t = &v[k];
		json_t *r;
		size_t i;

		if (!v) {
			rc = sr_err_set(e, -ENOMEM, "out of memory");
			break;
		}
		if (strlen(key) >= sizeof t->name || !json_is_integer(cents) ||
		    json_integer_value(cents) < 0 || !json_is_array(regs)) {
			rc = sr_err_set(e, -SR_EPARSE, "lambda instance types: %.48s:"
					" expected instance_type.price_cents_per_"
					"hour and regions_with_capacity_available",
					key);
			break;
		}
		snprintf(t->name, sizeof t->name, "%s", key);
		t->price_per_h = (sr_micros)json_integer_value(cents) * 10000;
		t->regions = calloc(json_array_size(regs) + 1, sizeof *t->regions);
		k++;
		json_array_foreach(regs, i, r) {
			const char *rn = json_string_value(json_object_get(r, "name"));

			if (t->regions && rn)
				t->regions[t->nregions++] = strdup(rn);
		}
	}
	json_decref(doc);
	if (rc) {
		lambda_types_free(v, k);
		return rc;
	}
	*out = v;
	*n = k;
	return 0;
}

int lambda_types(struct lambda *l, struct lambda_type **out, size_t *n,
		 struct cloud_error *err)
{
	struct sr_http_resp r = { 0 };
	struct sr_err e;
	int rc = lambda__call(l, "GET", "/instance-types", NULL,
			      "instance types", &r, err);

	sr_err_clear(&e);
	if (rc == 0) {
		rc = lambda_parse_types(r.body, r.body_len, out, n, &e);
		if (rc)
			cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "%s", e.msg);
	}
	sr_http_resp_free(&r);
	return rc;
}

int lambda_list(struct lambda *l, const char *cluster,
		struct cloud_instance **out, size_t *n, struct cloud_error *err)
{
	struct sr_http_resp r = { 0 };
	struct cloud_instance *v = NULL;
	struct sr_err e;
	size_t nv = 0, k = 0;
	int rc = lambda__call(l, "GET", "/instances", NULL, "list", &r, err);

	*out = NULL;
	*n = 0;
	sr_err_clear(&e);
	if (rc == 0) {
		rc = lambda_parse_instances(r.body, r.body_len, cluster, &v, &nv, &e);
		if (rc)
			cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "%s", e.msg);
	}
	sr_http_resp_free(&r);
	if (rc)
		return rc;
	/* terminated instances are gone: not listed */
	for (size_t i = 0; i < nv; i++) {
		if (v[i].state == CLOUD_INST_GONE) {
			cloud_instance_clear(&v[i]);
			continue;
		}
		v[k++] = v[i];
	}
	*out = v;
	*n = k;
	return 0;
}

int lambda_terminate(struct lambda *l, const char *const *ids, size_t n,
		     struct cloud_error *err)
{
	struct sr_http_resp r = { 0 };
	json_t *arr = json_array(), *doc;
	char *body;
	int rc;

	if (n == 0) {
		json_decref(arr);
		return 0;
	}
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, json_string(ids[i]));
	doc = json_pack("{s:o}", "instance_ids", arr);
	body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (!body)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	rc = lambda__call(l, "POST", "/instance-operations/terminate", body,
			  "terminate", &r, err);
	/* already gone is not an error */
	if (rc && r.status == 404)
		rc = 0;
	sr_http_resp_free(&r);
	free(body);
	return rc;
}
