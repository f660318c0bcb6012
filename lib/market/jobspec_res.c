/*
 * jobspec_res.c - the `resources:` mapping of a job file, with SkyPilot's
 * keys mapped onto spotrun's model (the table is in docs/jobs.md):
 *
 *   accelerators  "H100:8" | [A100:8, H100:8] | {H100: 8, A100: 8}
 *                 -> accels[] (any one of them), accel = the first
 *   infra         "aws/us-east-1[/us-east-1a]"       -> one location
 *   cloud, region, zone                              -> the same location
 *   any_of / ordered: [{infra|cloud|region|zone, accelerators}, ...]
 *                 -> infra[] (each may carry its own accelerators); the
 *                 top-level location fills what an entry leaves out
 *   cpus, memory  "8" (exactly) | "8+" (at least)    -> offering filter
 *   image_id      "ami-..." | {us-east-1: ami-..., ...}  -> image_id /
 *                 images[]: the image a provider boots its nodes from
 *                 (one that boots none ignores it)
 *   disk_size, ports                                 -> kept for the
 *                 provider
 *   job_recovery  STRATEGY | {strategy, max_restarts_on_errors}
 *
 * Keys SkyPilot has and spotrun does not (instance_type, labels, ...) are
 * errors with a hint saying what to write instead.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog_csv.h"
#include "joblimits.h"
#include "jobspec_int.h"

#define ctx jobspec__ctx
#define fail jobspec__fail
#define note jobspec__note
#define scalar(n) jobspec__scalar(n)
#define is_null jobspec__is_null
#define want_scalar jobspec__want_scalar

#define MAX_CHOICES 16


static int (*infra_known)(const char *name);
static void (*infra_names)(char *buf, size_t cap);

void jobspec_set_infra_source(int (*known)(const char *name),
			      void (*names)(char *buf, size_t cap))
{
	infra_known = known;
	infra_names = names;
}

int jobspec_cloud_known(const char *cloud)
{
	for (size_t i = 0; i < catalog_n_clouds; i++) {
		if (!strcasecmp(cloud, catalog_clouds[i]))
			return 1;
	}
	return infra_known && infra_known(cloud);
}

/* ---- accelerators ------------------------------------------------------ */

struct choices {
	struct jobspec_accel v[MAX_CHOICES];
	size_t n;
};

static int add_choice(struct ctx *c, yaml_node_t *n, const char *path,
		      const char *name, const char *count, struct choices *out)
{
	struct jobspec_accel a;
	char spec[80];
	double cnt;

	if (!strncasecmp(name, "tpu", 3))
		return fail(c, n, path, "'%s': TPUs are not supported; name a GPU like H100:8",
			    name);
	snprintf(spec, sizeof spec, "%s%s%s", name, count ? ":" : "", count ? count : "");
	if (catalog_parse_accel(spec, a.name, sizeof a.name, &cnt) ||
	    cnt != floor(cnt) || cnt < 1 || cnt > SR_LIMIT_ACCEL_COUNT_MAX)
		return fail(c, n, path, "'%s' is not NAME:COUNT like H100:8 (a whole count)",
			    spec);
	a.count = (int)cnt;
	if (out->n == MAX_CHOICES)
		return fail(c, n, path, "at most %d accelerator choices", MAX_CHOICES);
	out->v[out->n++] = a;
	return 0;
}

/* "H100:8" | [A100:8, H100:8] | {H100: 8, A100: 8} | {A100, H100} */
static int parse_accels(struct ctx *c, yaml_node_t *n, const char *path,
			struct choices *out)
{
	const char *s = scalar(n);
	char sub[300];
	size_t i = 0;

	if (n->type == YAML_SCALAR_NODE) {
		if (!s || is_null(n))
			return fail(c, n, path, "expected NAME:COUNT like H100:8");
		return add_choice(c, n, path, s, NULL, out);
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     it < n->data.sequence.items.top; it++, i++) {
			yaml_node_t *in = yaml_document_get_node(c->doc, *it);

			snprintf(sub, sizeof sub, "%s[%zu]", path, i);
			if (!scalar(in) || is_null(in))
				fail(c, in, sub, "expected NAME:COUNT like H100:8");
			else
				add_choice(c, in, sub, scalar(in), NULL, out);
		}
		if (i == 0)
			return fail(c, n, path, "expected at least one accelerator");
		return 0;
	}
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++, i++) {
		yaml_node_t *kn = yaml_document_get_node(c->doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(c->doc, p->value);
		const char *k = scalar(kn);

		snprintf(sub, sizeof sub, "%s.%s", path, k ? k : "?");
		if (!k || (!is_null(vn) && !scalar(vn)))
			fail(c, kn, sub, "expected NAME: COUNT");
		else
			add_choice(c, kn, sub, k, is_null(vn) ? NULL : scalar(vn), out);
	}
	if (i == 0)
		return fail(c, n, path, "expected at least one accelerator");
	return 0;
}

/* ---- locations ------------------------------------------------------------ */

static int check_cloud(struct ctx *c, yaml_node_t *n, const char *path,
		       const char *cloud)
{
	char near[120];

	char more[200] = "", all[200] = "";

	if (!cloud[0] || jobspec_cloud_known(cloud))
		return 0;
	/* not a catalog cloud, and no provider of the registry sells it (a
	 * cluster such as slurm or kubernetes needs a provider of its own:
	 * docs/providers.md) */
	if (infra_names)
		infra_names(more, sizeof more);
	for (size_t i = 0; i < catalog_n_clouds; i++) {
		size_t l = strlen(all);

		snprintf(all + l, sizeof all - l, "%s%s", i ? ", " : "",
			 catalog_clouds[i]);
	}
	catalog_nearest(cloud, catalog_clouds, catalog_n_clouds, near, sizeof near);
	return fail(c, n, path, "unknown cloud '%s': no catalog cloud and no provider "
		    "sells it; did you mean %s? (clouds: %s%s%s)", cloud, near, all,
		    more[0] ? "; from providers: " : "", more);
}

static int parse_infra(struct ctx *c, yaml_node_t *n, const char *path,
		       struct jobspec_infra *out)
{
	const char *s;
	int rc = want_scalar(c, n, path, &s);

	if (rc)
		return rc;
	if (jobspec_infra_parse(s, out))
		return fail(c, n, path, "'%s' is not CLOUD[/REGION[/ZONE]] like aws/us-east-1", s);
	return check_cloud(c, n, path, out->cloud);
}

/* cloud / region / zone into *in, one field. */
static int set_loc(struct ctx *c, yaml_node_t *n, const char *path,
		   const char *k, struct jobspec_infra *in)
{
	const char *s;
	char *dst;
	size_t cap;
	int rc = want_scalar(c, n, path, &s);

	if (rc)
		return rc;
	if (!strcmp(k, "cloud")) {
		dst = in->cloud;
		cap = sizeof in->cloud;
	} else if (!strcmp(k, "region")) {
		dst = in->region;
		cap = sizeof in->region;
	} else {
		dst = in->zone;
		cap = sizeof in->zone;
	}
	if (strlen(s) >= cap || strchr(s, '/'))
		return fail(c, n, path, "'%s' is not a %s name", s, k);
	snprintf(dst, cap, "%s", s);
	if (!strcmp(k, "cloud")) {
		for (char *p = dst; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		return check_cloud(c, n, path, dst);
	}
	return 0;
}

static int push_infra(struct ctx *c, const struct jobspec_infra *in)
{
	struct jobspec_infra *v = realloc(c->js->infra,
					  (c->js->n_infra + 1) * sizeof *v);

	if (!v)
		return -ENOMEM;
	c->js->infra = v;
	v[c->js->n_infra++] = *in;
	return 0;
}

/* One any_of / ordered entry. */
struct entry {
	struct jobspec_infra loc;
	int have_infra, have_parts;
	struct choices acc;
	struct ctx *c;
};

static const char *const entry_keys[] = {
	"infra", "cloud", "region", "zone", "accelerators", "use_spot", NULL
};

static int entry_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		      yaml_node_t *vn, const char *path)
{
	struct entry *en = c->entry;

	if (!strcmp(k, "infra")) {
		if (en->have_parts)
			return fail(c, kn, path, "give infra or cloud/region/zone, not both");
		en->have_infra = 1;
		return parse_infra(c, vn, path, &en->loc);
	}
	if (!strcmp(k, "cloud") || !strcmp(k, "region") || !strcmp(k, "zone")) {
		if (en->have_infra)
			return fail(c, kn, path, "give infra or cloud/region/zone, not both");
		en->have_parts = 1;
		return set_loc(c, vn, path, k, &en->loc);
	}
	if (!strcmp(k, "accelerators"))
		return parse_accels(c, vn, path, &en->acc);
	if (!strcmp(k, "use_spot")) {
		int v;
		int rc = jobspec__want_bool(c, vn, path, &v);

		if (!rc && c->js->use_spot >= 0 && v != c->js->use_spot)
			return fail(c, vn, path, "differs from resources.use_spot; one "
				    "purchase rule per job: set resources.use_spot");
		if (!rc)
			c->js->use_spot = v;
		return rc;
	}
	return jobspec__unknown(c, kn, path, k, entry_keys,
				(const char *const[]){
					"cpus", "set resources.cpus for every candidate",
					"memory", "set resources.memory for every candidate",
					"instance_type", "name the GPU with accelerators: H100:8",
					NULL });
}

static int parse_candidates(struct ctx *c, yaml_node_t *vn, const char *path)
{
	char sub[300];
	size_t i = 0;

	if (vn->type != YAML_SEQUENCE_NODE ||
	    vn->data.sequence.items.top == vn->data.sequence.items.start)
		return fail(c, vn, path, "expected a non-empty list of {infra: ...}");
	for (yaml_node_item_t *it = vn->data.sequence.items.start;
	     it < vn->data.sequence.items.top; it++, i++) {
		struct entry en;
		int rc;

		memset(&en, 0, sizeof en);
		en.c = c;
		c->entry = &en;
		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		rc = jobspec__walk_map(c, yaml_document_get_node(c->doc, *it), sub,
				       entry_pair);
		c->entry = NULL;
		if (rc == -ENOMEM)
			return rc;
		if (en.acc.n == 0)
			rc = push_infra(c, &en.loc);
		for (size_t k = 0; k < en.acc.n && !rc; k++) {
			struct jobspec_infra in = en.loc;

			snprintf(in.accel, sizeof in.accel, "%s", en.acc.v[k].name);
			in.accel_count = en.acc.v[k].count;
			rc = push_infra(c, &in);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- other resources -------------------------------------------------------- */

/* "8", "8+", 8 -> value and the "at least" flag. */
static int parse_amount(struct ctx *c, yaml_node_t *n, const char *path,
			double *v, int *plus)
{
	const char *s;
	char buf[32];
	size_t len;
	int rc = want_scalar(c, n, path, &s);

	if (rc)
		return rc;
	len = strlen(s);
	if (len == 0 || len >= sizeof buf)
		return fail(c, n, path, "'%s' is not a count like 8 or 8+", s);
	memcpy(buf, s, len + 1);
	*plus = buf[len - 1] == '+';
	if (*plus)
		buf[len - 1] = '\0';
	if (catalog__parse_num(buf, v) || !(*v > 0) || *v > 1e6)
		return fail(c, n, path, "'%s' is not a count like 8 or 8+", s);
	return 0;
}

static int add_port(struct ctx *c, yaml_node_t *n, const char *path)
{
	struct jobspec *js = c->js;
	const char *s = scalar(n);
	char **v;
	long lo, hi;
	char *end;

	if (!s || is_null(n))
		return fail(c, n, path, "expected a port like 8080 or a range like 10020-10040");
	lo = strtol(s, &end, 10);
	hi = lo;
	if (*end == '-')
		hi = strtol(end + 1, &end, 10);
	if (*end || end == s || lo < 1 || hi > 65535 || hi < lo)
		return fail(c, n, path, "'%s' is not a port like 8080 or a range like 10020-10040", s);
	v = realloc(js->ports, (js->n_ports + 1) * sizeof *v);
	if (!v)
		return -ENOMEM;
	js->ports = v;
	v[js->n_ports] = strdup(s);
	if (!v[js->n_ports])
		return -ENOMEM;
	js->n_ports++;
	return 0;
}

static int parse_ports(struct ctx *c, yaml_node_t *n, const char *path)
{
	char sub[300];
	size_t i = 0;
	int rc = 0;

	if (n->type != YAML_SEQUENCE_NODE)
		return add_port(c, n, path);
	for (yaml_node_item_t *it = n->data.sequence.items.start;
	     it < n->data.sequence.items.top && rc != -ENOMEM; it++, i++) {
		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		rc = add_port(c, yaml_document_get_node(c->doc, *it), sub);
	}
	return rc == -ENOMEM ? rc : 0;
}

static int set_strategy(struct ctx *c, yaml_node_t *n, const char *path)
{
	static const char *const names[] = { "FAILOVER", "EAGER_NEXT_REGION", "NONE" };
	const char *s;
	char near[120];
	int rc = want_scalar(c, n, path, &s);

	if (rc)
		return rc;
	for (size_t i = 0; i < 3; i++) {
		if (!strcasecmp(s, names[i])) {
			free(c->js->recovery);
			c->js->recovery = strdup(names[i]);
			if (!c->js->recovery)
				return -ENOMEM;
			return note(c, n, path, "recorded; spotrun's deadline-aware policy "
				    "chooses where a preempted job resumes (docs/jobs.md)");
		}
	}
	catalog_nearest(s, names, 3, near, sizeof near);
	return fail(c, n, path, "unknown strategy '%s'; expected one of: %s", s, near);
}

static int recovery_pair(struct ctx *c, const char *k, yaml_node_t *kn,
			 yaml_node_t *vn, const char *path)
{
	static const char *const keys[] = { "strategy", "max_restarts_on_errors", NULL };
	if (!strcmp(k, "strategy"))
		return set_strategy(c, vn, path);
	if (!strcmp(k, "max_restarts_on_errors"))
		return jobspec__want_int(c, vn, path, 0, SR_LIMIT_MAX_RESTARTS_MAX,
					 &c->js->max_restarts_on_errors);
	return jobspec__unknown(c, kn, path, k, keys, NULL);
}

/* job_recovery, or (spot) its older name spot_recovery, read into the
 * context apart from job_recovery's and merged by recovery_merge. */
static int parse_recovery(struct ctx *c, yaml_node_t *vn, const char *path,
			  int spot)
{
	struct jobspec *js = c->js;
	char *keep = js->recovery;
	int keep_max = js->max_restarts_on_errors, rc;

	if (spot) {
		js->recovery = NULL;
		js->max_restarts_on_errors = -1;
		c->spot_rec_n = vn;
	} else {
		c->job_rec_n = vn;
	}
	if (vn->type == YAML_MAPPING_NODE)
		rc = jobspec__walk_map(c, vn, path, recovery_pair);
	else
		rc = set_strategy(c, vn, path);
	if (spot) {
		free(c->spot_strategy);
		c->spot_strategy = js->recovery;
		c->spot_max_restarts = js->max_restarts_on_errors;
		js->recovery = keep;
		js->max_restarts_on_errors = keep_max;
		if (rc == 0)
			rc = note(c, vn, path, "the older name of job_recovery; "
				  "taken as job_recovery");
	}
	return rc;
}

/* spot_recovery given: it is job_recovery, unless both are given and
 * differ. */
static void recovery_merge(struct ctx *c)
{
	struct jobspec *js = c->js;
	const char *a = js->recovery ? js->recovery : "",
		   *b = c->spot_strategy ? c->spot_strategy : "";

	if (!c->spot_rec_n)
		return;
	if (!c->job_rec_n) {
		js->recovery = c->spot_strategy;
		js->max_restarts_on_errors = c->spot_max_restarts;
		c->spot_strategy = NULL;
		return;
	}
	if (strcmp(a, b) || js->max_restarts_on_errors != c->spot_max_restarts)
		fail(c, c->spot_rec_n, "resources.spot_recovery", "differs from "
		     "resources.job_recovery (line %d), its newer name: give "
		     "one of them", JOBSPEC__LINE(c->job_rec_n));
}

/* image_id: {REGION: IMAGE, ...}, as SkyPilot allows. */
static int image_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		      yaml_node_t *vn, const char *path)
{
	struct jobspec *js = c->js;
	struct jobspec_image *v;
	char *img = NULL;
	int rc;

	if (!k[0] || strlen(k) >= sizeof v->region || strchr(k, '/'))
		return fail(c, kn, path, "'%s' is not a region name (image_id: "
			    "{us-east-1: ami-..., us-west-2: ami-...})", k);
	rc = jobspec__want_str(c, vn, path, &img);
	if (rc)
		return rc;
	v = realloc(js->images, (js->n_images + 1) * sizeof *v);
	if (!v) {
		free(img);
		c->oom = 1;
		return -ENOMEM;
	}
	js->images = v;
	snprintf(v[js->n_images].region, sizeof v->region, "%s", k);
	v[js->n_images].image = img;
	js->n_images++;
	return 0;
}

static const char *const res_keys[] = {
	"accelerators", "use_spot", "infra", "cloud", "region", "zone", "any_of",
	"ordered", "cpus", "memory", "disk_size", "image_id", "ports",
	"job_recovery", "spot_recovery", NULL
};

static const char *const res_hints[] = {
	"instance_type", "name the GPU with accelerators: H100:8; spotrun picks the instance",
	"disk_tier", "remove it; the provider's default disk is used",
	"labels", "remove it; spotrun tags its nodes with the job id",
	"accelerator_args", "TPUs are not supported; remove it",
	"network_tier", "use spotrun.network: rdma",
	"autostop", "use spotrun.autostop: 30m",
	"max_hourly_cost", "use spotrun.max_hourly_cost (dollars per hour for the whole gang)",
	NULL
};

int jobspec__res_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		      yaml_node_t *vn, const char *path)
{
	struct jobspec *js = c->js;

	if (!strcmp(k, "accelerators")) {
		struct choices ch;
		struct jobspec_accel *v;

		memset(&ch, 0, sizeof ch);
		if (parse_accels(c, vn, path, &ch) || ch.n == 0)
			return -SR_EPARSE;
		v = realloc(js->accels, (js->n_accels + ch.n) * sizeof *v);
		if (!v)
			return -ENOMEM;
		js->accels = v;
		memcpy(v + js->n_accels, ch.v, ch.n * sizeof *v);
		js->n_accels += ch.n;
		return 0;
	}
	if (!strcmp(k, "use_spot")) {
		c->use_spot_line = JOBSPEC__LINE(vn);
		return jobspec__want_bool(c, vn, path, &js->use_spot);
	}
	if (!strcmp(k, "infra")) {
		if (c->base_from == 2)
			return fail(c, kn, path, "give infra or cloud/region/zone, not both");
		c->base_from = 1;
		return parse_infra(c, vn, path, &c->base);
	}
	if (!strcmp(k, "cloud") || !strcmp(k, "region") || !strcmp(k, "zone")) {
		if (c->base_from == 1)
			return fail(c, kn, path, "give infra or cloud/region/zone, not both");
		c->base_from = 2;
		if (!c->base_node)
			c->base_node = kn;
		return set_loc(c, vn, path, k, &c->base);
	}
	if (!strcmp(k, "any_of") || !strcmp(k, "ordered")) {
		if (js->n_infra)
			return fail(c, kn, path, "give any_of or ordered, not both");
		js->infra_ordered = !strcmp(k, "ordered");
		if (js->infra_ordered)
			note(c, kn, path, "taken as any_of: spotrun ranks the candidates by "
			     "expected cost and deadline, not by their order");
		return parse_candidates(c, vn, path);
	}
	if (!strcmp(k, "cpus"))
		return parse_amount(c, vn, path, &js->cpus, &js->cpus_plus);
	if (!strcmp(k, "memory"))
		return parse_amount(c, vn, path, &js->memory_gib, &js->memory_plus);
	if (!strcmp(k, "disk_size")) {
		const char *s = scalar(vn);
		uint64_t b;

		if (s && !is_null(vn) && !strchr(s, 'B') && !strchr(s, 'b'))
			return jobspec__want_int(c, vn, path, 1, 65536, &js->disk_gb);
		if (!s || jobspec_parse_size(s, &b) || b < 1000000000ull ||
		    b > 65536000000000ull)
			return fail(c, vn, path, "'%s' is not a disk size in GB like 256",
				    s ? s : "");
		js->disk_gb = (int)(b / 1000000000ull);
		return 0;
	}
	if (!strcmp(k, "image_id")) {
		if (vn->type == YAML_MAPPING_NODE)
			return jobspec__walk_map(c, vn, path, image_pair);
		return jobspec__want_str(c, vn, path, &js->image_id);
	}
	if (!strcmp(k, "ports"))
		return parse_ports(c, vn, path);
	if (!strcmp(k, "job_recovery"))
		return parse_recovery(c, vn, path, 0);
	if (!strcmp(k, "spot_recovery"))
		return parse_recovery(c, vn, path, 1);
	return jobspec__unknown(c, kn, path, k, res_keys, res_hints);
}

/* Merge the top-level location into the candidates, and the candidates'
 * accelerators into the job's choices. */
int jobspec__res_finish(struct ctx *c)
{
	struct jobspec *js = c->js;
	char eg[140];

	recovery_merge(c);
	if (c->base_from == 2)
		note(c, c->base_node, "resources", "cloud/region/zone accepted; the "
		     "shorter form is infra: %s",
		     jobspec_infra_format(&c->base, eg, sizeof eg));
	if (c->base_from && js->n_infra == 0) {
		int rc = push_infra(c, &c->base);

		if (rc)
			return rc;
	} else if (c->base_from) {
		for (size_t i = 0; i < js->n_infra; i++) {
			struct jobspec_infra *in = &js->infra[i];

			if (!in->cloud[0])
				memcpy(in->cloud, c->base.cloud, sizeof in->cloud);
			if (!in->region[0] && !strcasecmp(in->cloud, c->base.cloud))
				memcpy(in->region, c->base.region, sizeof in->region);
			if (!in->zone[0] && !strcasecmp(in->cloud, c->base.cloud) &&
			    !strcmp(in->region, c->base.region))
				memcpy(in->zone, c->base.zone, sizeof in->zone);
		}
	}
	for (size_t i = 0; i < js->n_infra; i++) {
		const struct jobspec_infra *in = &js->infra[i];
		struct jobspec_accel *v;
		int seen = !in->accel[0];

		for (size_t k = 0; k < js->n_accels && !seen; k++)
			seen = !strcasecmp(js->accels[k].name, in->accel) &&
			       js->accels[k].count == in->accel_count;
		if (seen)
			continue;
		v = realloc(js->accels, (js->n_accels + 1) * sizeof *v);
		if (!v)
			return -ENOMEM;
		js->accels = v;
		snprintf(v[js->n_accels].name, sizeof v->name, "%s", in->accel);
		v[js->n_accels++].count = in->accel_count;
	}
	if (js->n_accels) {
		snprintf(js->accel, sizeof js->accel, "%s", js->accels[0].name);
		js->accel_count = js->accels[0].count;
	}
	return 0;
}
