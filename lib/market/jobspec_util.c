/*
 * jobspec_util.c - struct jobspec lifetime, checks, units and names.
 */
#include <ctype.h>
#include <signal.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog_csv.h"
#include "common/text.h"
#include "jobspec.h"

void jobspec_init(struct jobspec *js)
{
	memset(js, 0, sizeof *js);
	js->use_spot = -1;
	js->num_nodes = 1;
	js->criticality = JOBSPEC_CRIT_STANDARD;
	js->ckpt_stall_ns = -1;
	js->ckpt_alert_intervals = JOBSPEC_DEFAULT_ALERT_INTERVALS;
	js->restore_bps = JOBSPEC_DEFAULT_RESTORE_BPS;
	js->provision_ns = (int64_t)JOBSPEC_DEFAULT_PROVISION_S * 1000000000;
	js->image_pull_ns = (int64_t)JOBSPEC_DEFAULT_IMAGE_PULL_S * 1000000000;
	js->max_hourly_cost = -1;
	js->max_cost = -1;
	js->spares = -1;
	js->delay_cost_per_h = -1;
	js->max_restarts = -1;
	js->max_restarts_on_errors = -1;
	js->network = CATALOG_NET_UNKNOWN;
	js->p_target = JOBSPEC_DEFAULT_P_TARGET;
	js->preempt_signal = SIGTERM;
	js->sync_quiet_ns = (int64_t)JOBSPEC_DEFAULT_SYNC_QUIET_MS * 1000000;
}

const char *jobspec_label_bad(const char *s)
{
	size_t n = strlen(s);

	if (n == 0)
		return "empty";
	if (n >= JOBSPEC_LABEL_MAX)
		return "longer than 63 bytes";
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) || !isascii((unsigned char)*s)) {
			if (!strchr("._-:/@+", *s))
				return "only letters, digits and . _ - : / @ + are allowed";
		}
	}
	return NULL;
}

void jobspec_free(struct jobspec *js)
{
	if (!js)
		return;
	free(js->name);
	free(js->ckpt_uri);
	free(js->infra);
	for (size_t i = 0; i < js->n_envs; i++) {
		free(js->envs[i].key);
		free(js->envs[i].value);
	}
	free(js->envs);
	free(js->setup);
	free(js->run);
	free(js->accels);
	free(js->image_id);
	for (size_t i = 0; i < js->n_images; i++)
		free(js->images[i].image);
	free(js->images);
	for (size_t i = 0; i < js->n_ports; i++)
		free(js->ports[i]);
	free(js->ports);
	free(js->recovery);
	for (size_t i = 0; i < js->n_secrets; i++) {
		free(js->secrets[i].key);
		free(js->secrets[i].value);
	}
	free(js->secrets);
	free(js->workdir);
	for (size_t i = 0; i < js->n_mounts; i++) {
		free(js->mounts[i].dst);
		free(js->mounts[i].src);
	}
	free(js->mounts);
	for (size_t i = 0; i < js->n_buckets; i++) {
		free(js->buckets[i].dst);
		free(js->buckets[i].uri);
		free(js->buckets[i].name);
		free(js->buckets[i].source);
	}
	free(js->buckets);
	jobspec_init(js);
}

int jobspec_validate(const struct jobspec *js, const char *name,
		     struct sr_err *e)
{
	size_t off;
	unsigned cp;

	if (js->name && sr_text_unsafe(js->name, &off, &cp))
		return sr_err_set(e, -SR_EPARSE, "%s: name: control, "
				  "bidirectional-text or invisible character U+%04X at byte "
				  "%zu (not allowed in a job name)", name, cp, off);
	if (js->num_nodes < 1)
		return sr_err_set(e, -SR_EPARSE, "%s: num_nodes: must be at least 1", name);
	if (js->accel[0] && js->accel_count < 1)
		return sr_err_set(e, -SR_EPARSE, "%s: resources.accelerators: count must be at least 1",
				  name);
	if (js->criticality == JOBSPEC_CRIT_CRITICAL && js->use_spot == 1)
		return sr_err_set(e, -SR_EPARSE,
				  "%s: resources.use_spot: spot is not allowed for criticality critical",
				  name);
	if (js->criticality == JOBSPEC_CRIT_BEST_EFFORT && js->use_spot == 0)
		return sr_err_set(e, -SR_EPARSE,
				  "%s: resources.use_spot: best-effort jobs run on spot only", name);
	if (!(js->p_target > 0 && js->p_target <= 1))
		return sr_err_set(e, -SR_EPARSE, "%s: spotrun.p_target: must be in (0, 1]", name);
	if (js->work_h < 0 || !isfinite(js->work_h))
		return sr_err_set(e, -SR_EPARSE, "%s: spotrun.work: must be positive", name);
	if (js->ckpt_interval_ns < 0 || js->provision_ns < 0 ||
	    js->image_pull_ns < 0 || js->autostop_ns < 0 ||
	    js->ckpt_stall_ns < -1 || !(js->restore_bps > 0))
		return sr_err_set(e, -SR_EPARSE, "%s: spotrun: durations and bandwidths must be positive",
				  name);
	return 0;
}

static int accel_ok(const char *name, int count,
		    const struct catalog_offering *o)
{
	return !strcasecmp(o->accelerator, name) &&
	       fabs(o->accel_count - count) <= 1e-9;
}

static int amount_ok(double want, int plus, double have)
{
	if (!(want > 0) || !(have > 0)) /* not asked, or not known */
		return 1;
	return plus ? have + 1e-9 >= want : fabs(have - want) <= 1e-9;
}

int jobspec_offer_ok(const struct jobspec *js, const struct catalog_offering *o)
{
	int acc = 0;

	if (o->net < js->network || !amount_ok(js->cpus, js->cpus_plus, o->vcpus) ||
	    !amount_ok(js->memory_gib, js->memory_plus, o->memory_gib))
		return 0;
	if (js->n_accels == 0)
		acc = !js->accel[0] || accel_ok(js->accel, js->accel_count, o);
	for (size_t i = 0; i < js->n_accels && !acc; i++)
		acc = accel_ok(js->accels[i].name, js->accels[i].count, o);
	if (js->n_infra == 0)
		return acc;
	for (size_t i = 0; i < js->n_infra; i++) {
		const struct jobspec_infra *in = &js->infra[i];

		if ((in->cloud[0] && strcasecmp(in->cloud, o->cloud)) ||
		    (in->region[0] && strcmp(in->region, o->region)) ||
		    (in->zone[0] && strcmp(in->zone, o->zone)))
			continue;
		if (in->accel[0] ? accel_ok(in->accel, in->accel_count, o) : acc)
			return 1;
	}
	return 0;
}

double jobspec_deadline_h(const struct jobspec *js, int64_t submit_ns)
{
	switch (js->deadline_kind) {
	case JOBSPEC_DEADLINE_RELATIVE:
		return (double)js->deadline_ns / 3600e9;
	case JOBSPEC_DEADLINE_ABSOLUTE:
		return (double)(js->deadline_ns - submit_ns) / 3600e9;
	case JOBSPEC_DEADLINE_NONE:
		break;
	}
	return INFINITY;
}

double jobspec_stall_h(const struct jobspec *js)
{
	if (js->ckpt_stall_ns >= 0)
		return (double)js->ckpt_stall_ns / 3600e9;
	return (double)js->ckpt_bytes / JOBSPEC_DEFAULT_STALL_BPS / 3600.0;
}

int jobspec_parse_size(const char *s, uint64_t *out)
{
	static const struct { const char *u; double m; } units[] = {
		{ "", 1 },      { "B", 1 },       { "KB", 1e3 },   { "MB", 1e6 },
		{ "GB", 1e9 },  { "TB", 1e12 },   { "KiB", 1024.0 },
		{ "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
		{ "TiB", 1099511627776.0 },
	};
	char num[64];
	size_t k = 0;
	double v;

	while (s[k] && (isdigit((unsigned char)s[k]) || s[k] == '.'))
		k++;
	if (k == 0 || k >= sizeof num)
		return -EINVAL;
	memcpy(num, s, k);
	num[k] = '\0';
	if (catalog__parse_num(num, &v))
		return -EINVAL;
	while (s[k] == ' ')
		k++;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (!strcmp(s + k, units[i].u)) {
			double b = v * units[i].m;

			if (!(b < 9.2e18) || b != floor(b))
				return -EINVAL;
			*out = (uint64_t)b;
			return 0;
		}
	}
	return -EINVAL;
}

int jobspec_infra_parse(const char *s, struct jobspec_infra *out)
{
	char buf[160], *parts[3] = { 0 }, *save = NULL, *tok;
	int np = 0;

	memset(out, 0, sizeof *out);
	if (strlen(s) >= sizeof buf)
		return -EINVAL;
	strcpy(buf, s);
	for (tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (np == 3)
			return -EINVAL;
		parts[np++] = tok;
	}
	if (np == 0 || strlen(parts[0]) >= sizeof out->cloud ||
	    (parts[1] && strlen(parts[1]) >= sizeof out->region) ||
	    (parts[2] && strlen(parts[2]) >= sizeof out->zone))
		return -EINVAL;
	for (char *p = parts[0]; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	strcpy(out->cloud, strcmp(parts[0], "*") ? parts[0] : "");
	if (parts[1])
		strcpy(out->region, strcmp(parts[1], "*") ? parts[1] : "");
	if (parts[2])
		strcpy(out->zone, parts[2]);
	return 0;
}

const char *jobspec_image_for(const struct jobspec *js, const char *region)
{
	for (size_t i = 0; region && i < js->n_images; i++) {
		if (strcmp(js->images[i].region, region) == 0)
			return js->images[i].image;
	}
	return js->image_id;
}

char *jobspec_infra_format(const struct jobspec_infra *in, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s%s%s%s", in->cloud[0] ? in->cloud : "*",
		 in->region[0] || in->zone[0] ? "/" : "",
		 in->region[0] ? in->region : (in->zone[0] ? "*" : ""),
		 in->zone[0] ? "/" : "", in->zone);
	return buf;
}

static const char *const crit_names[] = {
	[JOBSPEC_CRIT_STANDARD] = "standard",
	[JOBSPEC_CRIT_CRITICAL] = "critical",
	[JOBSPEC_CRIT_BEST_EFFORT] = "best-effort",
};

const char *jobspec_crit_name(enum jobspec_crit c)
{
	if ((unsigned)c > JOBSPEC_CRIT_BEST_EFFORT)
		return "standard";
	return crit_names[c];
}

int jobspec_crit_parse(const char *s, enum jobspec_crit *out)
{
	for (int i = 0; i <= JOBSPEC_CRIT_BEST_EFFORT; i++) {
		if (!strcmp(s, crit_names[i])) {
			*out = (enum jobspec_crit)i;
			return 0;
		}
	}
	if (!strcmp(s, "best_effort")) {
		*out = JOBSPEC_CRIT_BEST_EFFORT;
		return 0;
	}
	return -EINVAL;
}
