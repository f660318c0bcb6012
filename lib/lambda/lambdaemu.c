/*
 * lambdaemu.c - the Lambda Cloud emulator (lambdaemu.h): its API over the
 * market's Lambda pools, its instances, the ssh stand-in's runs, the
 * tests' controls, start and stop.
 *
 * An instance: launch -> booting --(boot_s)--> active --(terminate |
 * /emu/fail)--> terminated (its sessions killed; still listed).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cloud/emuhttp.h"
#include "cloud/localmkt.h"
#include "common/fsutil.h"
#include "common/proc.h"
#include "common/random.h"
#include "common/timeutil.h"
#include "lambda/lambdaemu.h"

#define LE_MAX_INST 256
#define LE_MAX_RUNS 4
#define LE_MAX_LOG 512
#define API "/api/v1"

struct le_inst {
	char id[40], name[96], ip[20], type[48], region[40], key[64];
	bool terminated;
	int64_t active_mono_ns;
	int64_t pid[LE_MAX_RUNS], start[LE_MAX_RUNS];
	size_t nruns;
	char dir[640];
};

struct lambdaemu {
	pthread_mutex_t mu;
	struct le_inst inst[LE_MAX_INST];
	size_t ninst;
	struct localmkt *mkt;
	char **cap;
	json_t *log;
	char work_dir[512], url[64], key[128];
	double time_scale, boot_s;
	int quota, throttle;
	int64_t t0_mono_ns;
	void *daemon;
};

static json_t *err_doc(const char *code, const char *msg)
{
	return json_pack("{s{ss ss}}", "error", "code", code, "message", msg);
}

static double sim_now(const struct lambdaemu *m)
{
	return (double)(sr_time_mono_ns() - m->t0_mono_ns) / 1e9 * m->time_scale;
}

/* Has type capacity in region now?  An override, else the pool's trace. */
static bool capacity(struct lambdaemu *m, int pool, const char *type)
{
	int ov = emuhttp_cap_get(m->cap, type);

	return ov >= 0 ? ov == 1 : localmkt_available(m->mkt, pool, sim_now(m));
}

static json_t *types(struct lambdaemu *m)
{
	json_t *data = json_object();
	struct cloud_offering o;

	for (size_t p = 0; p < localmkt_npools(m->mkt); p++) {
		json_t *t;

		if (localmkt_describe(m->mkt, (int)p, 0, &o) ||
		    strcmp(o.cloud, "lambda") || o.ondemand_per_h < 0)
			continue;
		t = json_object_get(data, o.instance_type);
		if (!t) {
			t = json_pack("{s{ss si ss} s[]}", "instance_type", "name",
				      o.instance_type, "price_cents_per_hour",
				      (int)(o.ondemand_per_h / 10000),
				      "description", o.instance_type,
				      "regions_with_capacity_available");
			json_object_set_new(data, o.instance_type, t);
		}
		if (capacity(m, (int)p, o.instance_type))
			json_array_append_new(json_object_get(
				t, "regions_with_capacity_available"),
				json_pack("{ss}", "name", o.region));
	}
	return json_pack("{so}", "data", data);
}

static const char *status(const struct le_inst *i)
{
	return i->terminated ? "terminated" : sr_time_mono_ns() <
	       i->active_mono_ns ? "booting" : "active";
}

static json_t *inst_doc(const struct le_inst *i)
{
	return json_pack("{ss ss ss ss s{ss} s{ss} s[s] s[]}", "id", i->id,
			 "name", i->name, "ip", i->ip, "status", status(i),
			 "region", "name", i->region, "instance_type", "name",
			 i->type, "ssh_key_names", i->key, "file_system_names");
}

static void inst_end(struct le_inst *i)
{
	i->terminated = true;
	for (size_t k = 0; k < i->nruns; k++)
		emuhttp_vm_end(i->pid[k], i->start[k], NULL);
	i->nruns = 0;
}

static size_t live(const struct lambdaemu *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->ninst; i++)
		n += !m->inst[i].terminated;
	return n;
}

static void launch(struct lambdaemu *m, json_t *b, int *st, json_t **out)
{
	const char *type = json_string_value(json_object_get(b,
						"instance_type_name"));
	const char *region = json_string_value(json_object_get(b, "region_name"));
	const char *key = json_string_value(json_array_get(json_object_get(
		b, "ssh_key_names"), 0));
	const char *name = json_string_value(json_object_get(b, "name"));
	struct cloud_offering o;
	struct le_inst *in;
	char hex[33], dir[sizeof in->dir];
	int pool = -1;

	*st = 400;
	for (size_t p = 0; type && region && p < localmkt_npools(m->mkt); p++) {
		if (localmkt_describe(m->mkt, (int)p, 0, &o) == 0 &&
		    !strcmp(o.cloud, "lambda") && !strcmp(o.region, region) &&
		    !strcmp(o.instance_type, type))
			pool = (int)p;
	}
	if (!type || !region || !key || json_integer_value(json_object_get(
		    b, "quantity")) != 1 || (name && strlen(name) >= sizeof in->name)) {
		*out = err_doc("global/invalid-parameters", "instance_type_name, "
			       "region_name, one ssh_key_names and quantity 1 "
			       "are required; name at most 95 characters");
		return;
	}
	if (pool < 0 || !capacity(m, pool, type)) {
		*out = err_doc("instance-operations/launch/insufficient-capacity",
			       "Not enough capacity to fulfill launch request.");
		return;
	}
	if ((m->quota > 0 && live(m) >= (size_t)m->quota) ||
	    m->ninst >= LE_MAX_INST) {
		*out = err_doc("global/quota-exceeded", "Quota exceeded: too many "
			       "instances.");
		return;
	}
	in = &m->inst[m->ninst];
	memset(in, 0, sizeof *in);
	sr_random_hex(hex, 16);
	snprintf(in->id, sizeof in->id, "%s", hex);
	snprintf(in->name, sizeof in->name, "%s", name ? name : "");
	snprintf(in->ip, sizeof in->ip, "127.0.%u.%u",
		 (unsigned)((m->ninst + 1) / 250 % 256),
		 (unsigned)((m->ninst + 1) % 250 + 1));
	snprintf(in->type, sizeof in->type, "%.47s", type);
	snprintf(in->region, sizeof in->region, "%.39s", region);
	snprintf(in->key, sizeof in->key, "%.63s", key);
	in->active_mono_ns = sr_time_mono_ns() + (int64_t)(m->boot_s * 1e9);
	snprintf(dir, sizeof dir, "%s/%s", m->work_dir, in->ip);
	memcpy(in->dir, dir, sizeof in->dir);
	if (mkdir(in->dir, 0700) && errno != EEXIST) {
		*st = 500;
		*out = err_doc("global/internal", strerror(errno));
		return;
	}
	m->ninst++;
	*st = 200;
	*out = json_pack("{s{s[s]}}", "data", "instance_ids", in->id);
}

static void terminate(struct lambdaemu *m, json_t *b, int *st, json_t **out)
{
	json_t *ids = json_object_get(b, "instance_ids"), *done = json_array();
	json_t *id;
	size_t k;

	json_array_foreach(ids, k, id) {
		for (size_t i = 0; i < m->ninst; i++) {
			if (!json_string_value(id) ||
			    strcmp(m->inst[i].id, json_string_value(id)))
				continue;
			inst_end(&m->inst[i]);
			json_array_append_new(done, inst_doc(&m->inst[i]));
		}
	}
	*st = 200;
	*out = json_pack("{s{so}}", "data", "terminated_instances", done);
}

static void api(struct lambdaemu *m, const char *method, const char *path,
		const char *body, size_t len, int *st, json_t **out)
{
	json_t *b = NULL;

	if (!strcmp(method, "POST")) {
		b = json_loadb(body ? body : "", len, 0, NULL);
		if (!json_is_object(b)) {
			*st = 400;
			*out = err_doc("global/invalid-parameters", "expected a "
				       "JSON object");
			json_decref(b);
			return;
		}
	}
	if (!strcmp(method, "GET") && !strcmp(path, "/instance-types")) {
		*st = 200;
		*out = types(m);
	} else if (!strcmp(method, "GET") && !strcmp(path, "/instances")) {
		json_t *data = json_array();

		for (size_t i = 0; i < m->ninst; i++)
			json_array_append_new(data, inst_doc(&m->inst[i]));
		*st = 200;
		*out = json_pack("{so}", "data", data);
	} else if (b && !strcmp(path, "/instance-operations/launch")) {
		launch(m, b, st, out);
	} else if (b && !strcmp(path, "/instance-operations/terminate")) {
		terminate(m, b, st, out);
	} else {
		*st = 404;
		*out = err_doc("global/object-does-not-exist", path);
	}
	json_decref(b);
}

/* ---- the ssh stand-in ------------------------------------------------- */

static const char ssh_script[] =
	"#!/bin/sh\n"
	"# the Lambda emulator's ssh (lib/lambda/lambdaemu.h): the driver's\n"
	"# arguments, the script on stdin run on the instance by the emulator\n"
	"w=$(cd \"$(dirname \"$0\")\" && pwd) || exit 255\n"
	"while [ $# -gt 0 ] && [ \"$1\" != -- ]; do shift; done\n"
	"[ $# -eq 3 ] && [ \"$3\" = 'sudo -n sh -s' ] || exit 2\n"
	"ip=${2#*@}\n"
	"case $ip in *[!0-9.]*|'') exit 255 ;; esac\n"
	"echo \"$ip\" >> \"$w/ssh-calls\"\n"
	"[ -d \"$w/$ip\" ] && [ ! -e \"$w/ssh-down\" ] || exit 255\n"
	"# curl is no sanitizer build: a sanitizer pass's preload hangs it\n"
	"env -u LD_PRELOAD curl -sf --max-time 60 --data-binary @- "
	"\"$(cat \"$w/ssh-url\")/emu/ssh?ip=$ip\" > /dev/null || exit 255\n";

static int ssh_run(struct lambdaemu *m, const char *ip, const char *script)
{
	struct sr_err e = { 0 };
	char runs[700];
	FILE *f;

	for (size_t i = 0; i < m->ninst; i++) {
		struct le_inst *in = &m->inst[i];
		char name[24];

		if (strcmp(in->ip, ip) || strcmp(status(in), "active"))
			continue;
		if (in->nruns >= LE_MAX_RUNS)
			return 429;
		snprintf(name, sizeof name, "%s", in->ip);
		if (emuhttp_vm_spawn(m->work_dir, name, "bootstrap.sh",
				     "boot.log", script ? script : "", NULL,
				     in->dir, &in->pid[in->nruns],
				     &in->start[in->nruns], &e)) {
			fprintf(stderr, "lambda emulator: %s: %s\n", ip, e.msg);
			return 500;
		}
		snprintf(runs, sizeof runs, "%s/runs", in->dir);
		f = fopen(runs, "ae");
		if (f) { /* a test's record, not state: no fsync */
			fprintf(f, "%lld\n", (long long)in->pid[in->nruns]);
			fclose(f);
		}
		in->nruns++;
		return 200;
	}
	return 503; /* no such instance, or not up yet */
}

/* ---- HTTP --------------------------------------------------------------- */

static const char *arg(struct MHD_Connection *c, const char *k)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

static enum MHD_Result control(struct lambdaemu *m, struct MHD_Connection *c,
			       const char *url, const char *method,
			       const struct emuhttp_body *k)
{
	const char *id = arg(c, "id"), *n = arg(c, "n"), *ip = arg(c, "ip");
	json_t *out = NULL;
	int st = 200, affected = 0;

	sr_proc_reap(); /* the instances' ended sessions */
	pthread_mutex_lock(&m->mu);
	if (!strcmp(method, "GET") && !strcmp(url, "/emu/state")) {
		json_t *v = json_array();

		for (size_t i = 0; i < m->ninst; i++)
			json_array_append_new(v, inst_doc(&m->inst[i]));
		out = json_pack("{so}", "instances", v);
	} else if (!strcmp(method, "GET") && !strcmp(url, "/emu/requests")) {
		out = json_deep_copy(m->log);
	} else if (!strcmp(url, "/emu/ssh") && ip) {
		st = ssh_run(m, ip, k->buf);
		out = json_pack("{si}", "status", st);
	} else if (!strcmp(url, "/emu/throttle") && n) {
		m->throttle = atoi(n) > 0 ? atoi(n) : 0;
		out = json_pack("{si}", "affected", m->throttle);
	} else if (!strcmp(url, "/emu/fail") && id) {
		for (size_t i = 0; i < m->ninst; i++) {
			if (!strcmp(m->inst[i].id, id) && !m->inst[i].terminated) {
				inst_end(&m->inst[i]);
				affected++;
			}
		}
		out = json_pack("{si}", "affected", affected);
	} else {
		st = 400;
		out = err_doc("emu/invalid", "see lambdaemu.h for the controls");
	}
	pthread_mutex_unlock(&m->mu);
	return emuhttp_json(c, st, out, NULL);
}

static void record(struct lambdaemu *m, const char *method, const char *path,
		   const struct emuhttp_body *k)
{
	if (json_array_size(m->log) >= LE_MAX_LOG)
		json_array_remove(m->log, 0);
	json_array_append_new(m->log, json_pack(
		"{ss ss ss#}", "method", method, "path", path, "body",
		k->buf ? k->buf : "", k->len));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	static const char *const retry[] = { "Retry-After", "1", NULL };
	struct lambdaemu *m = cls;
	struct emuhttp_body *k = NULL;
	const char *auth;
	json_t *out = NULL;
	int g = emuhttp_gather(con_cls, upload, upload_size, &k), st = 500;
	char want[160];

	(void)version;
	if (g <= 0)
		return g < 0 ? MHD_NO : MHD_YES;
	if (k->too_big)
		return emuhttp_respond(c, 413, "text/plain", "body too large\n",
				       15, NULL);
	if (!strncmp(url, "/emu/", 5))
		return control(m, c, url, method, k);
	if (strncmp(url, API "/", strlen(API) + 1))
		return emuhttp_json(c, 404, err_doc("global/object-does-not-"
						    "exist", url), NULL);
	auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	snprintf(want, sizeof want, "Bearer %s", m->key);
	pthread_mutex_lock(&m->mu);
	if (!strcmp(method, "POST")) /* GETs are polled: not recorded */
		record(m, method, url + strlen(API), k);
	if (!auth || strcmp(auth, want)) {
		st = 401;
		out = err_doc("global/invalid-api-key", "API key was invalid, "
			      "expired, or deleted.");
	} else if (m->throttle > 0) {
		m->throttle--;
		pthread_mutex_unlock(&m->mu);
		return emuhttp_json(c, 429, err_doc("global/too-many-requests",
						    "Too many requests."), retry);
	} else {
		api(m, method, url + strlen(API), k->buf, k->len, &st, &out);
	}
	pthread_mutex_unlock(&m->mu);
	return emuhttp_json(c, st, out, NULL);
}

/* ---- start and stop ---------------------------------------------------- */

int lambdaemu_fail_all(struct lambdaemu *m)
{
	int n = 0;

	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->ninst; i++) {
		if (!m->inst[i].terminated) {
			inst_end(&m->inst[i]);
			n++;
		}
	}
	pthread_mutex_unlock(&m->mu);
	return n;
}

const char *lambdaemu_url(const struct lambdaemu *m)
{
	return m->url;
}

int lambdaemu_start(const struct lambdaemu_opts *o, struct lambdaemu **out,
		    struct sr_err *e)
{
	struct lambdaemu *m = calloc(1, sizeof *m);
	char path[600];
	int rc;

	*out = NULL;
	if (!m)
		return sr_err_set(e, -ENOMEM, "out of memory");
	pthread_mutex_init(&m->mu, NULL);
	snprintf(m->key, sizeof m->key, "%s", o->api_key ? o->api_key :
		 LAMBDAEMU_KEY);
	m->time_scale = o->conf.time_scale > 0 ? o->conf.time_scale : 1;
	m->boot_s = o->boot_s > 0 ? o->boot_s : 0.3;
	m->quota = o->quota;
	m->t0_mono_ns = sr_time_mono_ns();
	m->log = json_array();
	rc = emuhttp_open("lambda emulator", &o->conf, &m->cap, on_request, m,
			  m->work_dir, &m->mkt, &m->daemon, m->url, e);
	if (rc)
		goto fail;
	snprintf(path, sizeof path, "%s/ssh-url", m->work_dir);
	rc = sr_fs_write_atomic(path, m->url, strlen(m->url), 0600, e);
	snprintf(path, sizeof path, "%s/ssh", m->work_dir);
	if (rc == 0)
		rc = sr_fs_write_atomic(path, ssh_script, sizeof ssh_script - 1,
					0700, e);
	if (rc)
		goto fail;
	*out = m;
	return 0;
fail:
	lambdaemu_stop(m);
	return rc;
}

void lambdaemu_stop(struct lambdaemu *m)
{
	if (!m)
		return;
	if (m->daemon)
		MHD_stop_daemon(m->daemon);
	for (size_t i = 0; i < m->ninst; i++)
		inst_end(&m->inst[i]);
	sr_proc_reap();
	emuhttp_cap_free(m->cap);
	json_decref(m->log);
	localmkt_free(m->mkt);
	pthread_mutex_destroy(&m->mu);
	free(m);
}
