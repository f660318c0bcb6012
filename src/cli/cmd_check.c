/*
 * cmd_check.c - `spotrun check [--json] [--config FILE] [PROVIDER...]`:
 * which providers can be used from this machine, like `sky check`.
 *
 * Every provider of the registry (lib/providers/registry.h) answers its
 * own check (cloud_prov_def.check): the local cloud is always available;
 * a cloud says where its credentials came from and makes one cheap
 * signed read call (AWS: DescribeInstanceTypeOfferings, which also says
 * which zones sell the probe type).  Nothing is started.  A regional
 * provider is checked in each region the configuration file names
 * (--config, else $SPOTRUN_CONFIG; the daemon reads the same file), or
 * in the region its environment names.
 *
 * A provider that cannot be used is reported with the reason, which names
 * the missing variable or file.  Temporary credentials show when they
 * expire; ones that run out within the hour and cannot be renewed
 * without the user (an exported session, an SSO login) are a WARNING
 * naming what to do, and expired ones an error - before a job would need
 * them.  Each provider's credentials are reported as valid, missing,
 * bad or unverified (found, but the endpoint could not be reached), with
 * the variable or file to fix.  Exit status: 0, or 1 when a provider
 * named on the command line cannot be used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "cliopt.h"
#include "ctl/ctlfile.h"
#include "cloud/provider.h"
#include "common/err.h"
#include "common/timeutil.h"
#include "providers/registry.h"

struct result {
	const struct cloud_prov_def *def;
	const char *region;        /* the configured one, or NULL */
	bool ok;
	enum cloud_cred_state cred;
	char reason[SR_ERR_MSG_MAX + 64];
	struct cloud_check chk;
};

static void run_check(const struct cloud_conf *conf,
		      const struct cloud_conf_region *reg, struct result *r)
{
	struct sr_err e = { 0 };
	int rc = r->def->check(conf, reg, &r->chk, &e);

	r->region = reg ? reg->name : NULL;
	r->ok = rc == 0;
	r->cred = r->chk.cred ? r->chk.cred : cloud_cred_state_of(rc);
	if (rc)
		snprintf(r->reason, sizeof r->reason, "%s", sr_err_str(&e, rc));
}

static void print_text(const struct result *r)
{
	const struct cloud_check *c = &r->chk;

	if (!r->ok) {
		printf("  %-6s disabled (credentials %s)\n         %s\n",
		       r->def->name, cloud_cred_state_str(r->cred), r->reason);
		return;
	}
	printf("  %-6s enabled (credentials %s)\n", r->def->name,
	       cloud_cred_state_str(r->cred));
	if (!c->region[0]) {
		printf("         %s\n", c->detail);
		return;
	}
	printf("         credentials: %s\n", c->credentials);
	if (c->expires_s > 0) {
		char t[40];

		sr_time_format_rfc3339(c->expires_s * SR_NS_PER_SEC, 0, t, sizeof t);
		printf("         expires:     %s (renewed before then)\n", t);
	}
	if (c->warning[0])
		printf("         WARNING:     %s\n", c->warning);
	printf("         region:      %s (%s)\n", c->region, c->endpoint);
	if (c->probe[0]) {
		printf("         zones selling %s:", c->probe);
		for (size_t i = 0; i < c->nzones; i++)
			printf(" %s", c->zones[i]);
		printf("%s\n", c->nzones == 0 ? " none" : "");
	}
}

static json_t *to_json(const struct result *r)
{
	const struct cloud_check *c = &r->chk;
	json_t *o = json_pack("{ss sb ss}", "provider", r->def->name,
			      "enabled", r->ok, "credentials_state",
			      cloud_cred_state_str(r->cred));
	json_t *z;

	if (!o)
		return NULL;
	if (!r->ok)
		json_object_set_new(o, "reason", json_string(r->reason));
	if (c->region[0]) {
		json_object_set_new(o, "credentials", json_string(c->credentials));
		json_object_set_new(o, "region", json_string(c->region));
		json_object_set_new(o, "endpoint", json_string(c->endpoint));
	} else if (c->detail[0]) {
		json_object_set_new(o, "detail", json_string(c->detail));
	} else if (r->region) {
		json_object_set_new(o, "region", json_string(r->region));
	}
	if (c->probe[0]) {
		json_object_set_new(o, "probe_instance_type", json_string(c->probe));
		z = json_array();
		for (size_t i = 0; z && i < c->nzones; i++)
			json_array_append_new(z, json_string(c->zones[i]));
		json_object_set_new(o, "zones", z);
	}
	if (c->expires_s)
		json_object_set_new(o, "credentials_expire_s",
				    json_integer(c->expires_s));
	if (c->warning[0])
		json_object_set_new(o, "warning", json_string(c->warning));
	return o;
}

/* Check provider def in each of its configured regions (or once). */
static int check_one(const struct cloud_prov_def *def, struct cloud_confs *cs,
		     bool json, json_t *arr)
{
	const struct cloud_conf *conf = cloud_confs_find(cs, def->name, 0);
	size_t nreg = def->regional && conf && conf->nregions ? conf->nregions : 1;
	bool all_ok = true;

	for (size_t k = 0; k < nreg; k++) {
		struct result r = { .def = def };

		run_check(conf, def->regional && conf && conf->nregions ?
			  &conf->regions[k] : NULL, &r);
		all_ok &= r.ok;
		if (json)
			json_array_append_new(arr, to_json(&r));
		else
			print_text(&r);
		cloud_check_clear(&r.chk);
	}
	return all_ok ? 0 : -1;
}

static void usage(void)
{
	char names[256];

	prov_names(NULL, names, sizeof names);
	printf("usage: spotrun check [--json] [--config FILE] [PROVIDER...]\n\n"
	       "Say which providers spotrun can use from here: for\n"
	       "each, whether its credentials are found and valid (one\n"
	       "cheap signed read call; nothing is started) and which\n"
	       "region it will use.  PROVIDER: %s (default:\n"
	       "all).  Exits 1 when a provider named here cannot be\n"
	       "used.\n\n"
	       "  --config FILE  the daemon's configuration file (default:\n"
	       "                 $SPOTRUN_CONFIG): each region of its\n"
	       "                 providers: section is checked\n\n"
	       "AWS reads AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/\n"
	       "AWS_SESSION_TOKEN, AWS_PROFILE with ~/.aws/credentials\n"
	       "and ~/.aws/config, or the instance role (IMDSv2);\n"
	       "AWS_REGION; AWS_ENDPOINT_URL_EC2.  See docs/providers.md.\n",
	       names);
}

enum { OPT_CONFIG = CLI_KEY_LONG };

static const struct cli_optdef check_defs[] = {
	{ "config", OPT_CONFIG, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static int cmd_check(int argc, char **argv)
{
	struct cli_opts p = {
		.cmd = "check", .defs = check_defs, .usage = usage,
		.flags = CLI_OPT_JSON, .max_operands = CLI_MAX_OPERANDS,
	};
	const struct cloud_prov_def *const *reg = prov_registry();
	const struct cloud_prov_def *want[32];
	struct cloud_confs cs = { 0 };
	size_t nwant = 0;
	const char *config = getenv("SPOTRUN_CONFIG");
	bool json;
	json_t *arr = NULL;
	int rc = CLI_OK, c;

	while ((c = cli_opts_next(&p, argc, argv)) > 0)
		config = p.arg; /* OPT_CONFIG */
	if (c < 0)
		return p.status;
	json = p.json;
	for (int i = 0; i < p.n_operands; i++) {
		const struct cloud_prov_def *d = prov_find(reg, p.operand[i]);
		char names[256];

		if (!d) {
			prov_names(reg, names, sizeof names);
			return cli_usage_error("check", "unknown provider '%s' "
					       "(known: %s)", p.operand[i], names);
		}
		if (nwant < sizeof want / sizeof want[0])
			want[nwant++] = d;
	}
	if (config && *config) {
		struct sr_err e = { 0 };
		int crc = ctl_config_file_providers(config, &cs, &e);

		if (crc) {
			fprintf(stderr, "spotrun check: %s\n", sr_err_str(&e, crc));
			cloud_confs_free(&cs);
			return CLI_FAIL;
		}
	}
	if (json)
		arr = json_array();
	else
		printf("Checking providers:\n");
	for (size_t k = 0; nwant ? k < nwant : reg[k] != NULL; k++) {
		if (check_one(nwant ? want[k] : reg[k], &cs, json, arr) && nwant)
			rc = CLI_FAIL;
	}
	if (json) {
		json_t *doc = json_pack("{so}", "providers", arr);

		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		putchar('\n');
		json_decref(doc);
	}
	cloud_confs_free(&cs);
	return rc;
}

CLI_COMMAND("check", "which providers can be used (credentials, region)",
	    cmd_check)
