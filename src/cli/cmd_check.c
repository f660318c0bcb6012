/*
 * cmd_check.c - `spotrun check [--json] [PROVIDER...]`: which providers
 * can be used from this machine, like `sky check`.
 *
 *   local  the built-in local spot cloud: always available.
 *   aws    credentials found the way the AWS CLI finds them (environment,
 *          profiles with keys, role_arn, web identity, SSO,
 *          credential_process, the container, the instance role) and
 *          valid: one cheap signed read call,
 *          DescribeInstanceTypeOfferings, which also says which zones of
 *          the region sell the probe instance type.  Nothing is started.
 *
 * A provider that cannot be used is reported with the reason, which names
 * the missing variable or file.  Temporary credentials show when they
 * expire; ones that run out within the hour and cannot be renewed
 * without the user (an exported session, an SSO login) are a warning
 * naming what to do, and expired ones an error (common/awscred.h,
 * sr_awscred_health) - before a job would need them.  Exit status: 0, or 1 when a provider
 * named on the command line cannot be used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "aws/ec2.h"
#include "cli.h"
#include "common/err.h"
#include "common/timeutil.h"

#define PROBE_TYPE "m5.large"

struct result {
	const char *name;
	bool ok;
	char reason[SR_ERR_MSG_MAX + 64];
	char detail[400];      /* credentials source */
	char expires[48];      /* "2026-11-30T20:00:00Z (instance-role)" */
	char warning[SR_ERR_MSG_MAX + 64]; /* they run out soon */
	char region[64];
	char endpoint[256];
	json_t *zones;         /* array of strings, owned */
};

static void check_local(struct result *r)
{
	r->ok = true;
	snprintf(r->detail, sizeof(r->detail),
		 "the built-in local spot cloud (trace replay)");
	r->zones = json_array();
}

static void check_aws(struct result *r)
{
	struct ec2_opts o = { .allow_remote = true, .timeout_ms = 10000,
			      .max_retries = 1 };
	struct ec2 *c = NULL;
	struct sr_err e = { 0 };
	struct cloud_error err = { 0 };
	char **zones = NULL;
	size_t n = 0;
	int rc;

	r->zones = json_array();
	/* A read call starts nothing, so any endpoint may be asked. */
	rc = ec2_open(&o, &c, &e);
	if (rc < 0) {
		snprintf(r->reason, sizeof(r->reason), "%s", sr_err_str(&e, rc));
		return;
	}
	snprintf(r->detail, sizeof(r->detail), "%s", ec2_cred_source(c));
	{
		struct sr_awscred_state st;
		char msg[SR_ERR_MSG_MAX];
		int lvl = sr_awscred_cache_health(ec2_creds(c), time(NULL), msg,
						  sizeof(msg));

		sr_awscred_cache_state(ec2_creds(c), &st);
		if (st.expires_s > 0)
			sr_time_format_rfc3339(st.expires_s * SR_NS_PER_SEC, 0,
					       r->expires, sizeof(r->expires));
		if (lvl == 2) {
			snprintf(r->reason, sizeof(r->reason), "%s", msg);
			ec2_close(c);
			return;
		}
		if (lvl == 1)
			snprintf(r->warning, sizeof(r->warning), "%s", msg);
	}
	snprintf(r->region, sizeof(r->region), "%s", ec2_region(c));
	snprintf(r->endpoint, sizeof(r->endpoint), "%s", ec2_endpoint(c));
	rc = ec2_instance_type_zones(c, PROBE_TYPE, &zones, &n, &err);
	if (rc < 0) {
		snprintf(r->reason, sizeof(r->reason), "signed call failed (%s): %s",
			 cloud_err_class_str(err.cls), err.msg);
	} else {
		r->ok = true;
		for (size_t i = 0; i < n; i++)
			json_array_append_new(r->zones, json_string(zones[i]));
	}
	ec2_strv_free(zones, n);
	ec2_close(c);
}

static const struct {
	const char *name;
	void (*fn)(struct result *r);
} providers[] = {
	{ "local", check_local },
	{ "aws", check_aws },
};
#define NPROV (sizeof(providers) / sizeof(providers[0]))

static void print_text(const struct result *r)
{
	size_t nz = json_array_size(r->zones);

	if (!r->ok) {
		printf("  %-6s disabled\n         %s\n", r->name, r->reason);
		return;
	}
	printf("  %-6s enabled\n", r->name);
	if (r->region[0] == '\0') {
		printf("         %s\n", r->detail);
		return;
	}
	printf("         credentials: %s\n", r->detail);
	if (r->expires[0] != '\0')
		printf("         expires:     %s (renewed before then)\n",
		       r->expires);
	if (r->warning[0] != '\0')
		printf("         WARNING:     %s\n", r->warning);
	printf("         region:      %s (%s)\n", r->region, r->endpoint);
	printf("         zones selling %s:", PROBE_TYPE);
	for (size_t i = 0; i < nz; i++)
		printf(" %s", json_string_value(json_array_get(r->zones, i)));
	printf("%s\n", nz == 0 ? " none" : "");
}

static json_t *to_json(struct result *r)
{
	json_t *o = json_pack("{ss sb}", "provider", r->name, "enabled", r->ok);

	if (!r->ok)
		json_object_set_new(o, "reason", json_string(r->reason));
	if (r->detail[0] != '\0')
		json_object_set_new(o, r->region[0] ? "credentials" : "detail",
				    json_string(r->detail));
	if (r->expires[0] != '\0')
		json_object_set_new(o, "credentials_expire", json_string(r->expires));
	if (r->warning[0] != '\0')
		json_object_set_new(o, "warning", json_string(r->warning));
	if (r->region[0] != '\0') {
		json_object_set_new(o, "region", json_string(r->region));
		json_object_set_new(o, "endpoint", json_string(r->endpoint));
		json_object_set_new(o, "probe_instance_type", json_string(PROBE_TYPE));
		json_object_set(o, "zones", r->zones);
	}
	return o;
}

static int cmd_check(int argc, char **argv)
{
	struct result res[NPROV];
	bool want[NPROV] = { false }, named = false, json = false;
	json_t *arr = NULL;
	int rc = CLI_OK;

	for (int i = 1; i < argc; i++) {
		size_t k;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: spotrun check [--json] [PROVIDER...]\n\n"
			       "Say which providers spotrun can use from here: for\n"
			       "each, whether its credentials are found and valid (one\n"
			       "cheap signed read call; nothing is started) and which\n"
			       "region it will use.  PROVIDER: local, aws (default:\n"
			       "all).  Exits 1 when a provider named here cannot be\n"
			       "used.\n\n"
			       "AWS finds credentials as the AWS CLI does: AWS_ACCESS_KEY_ID/\n"
			       "AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN; AWS_PROFILE in\n"
			       "~/.aws/credentials and ~/.aws/config (keys, role_arn with\n"
			       "source_profile, web identity, sso_session,\n"
			       "credential_process); AWS_WEB_IDENTITY_TOKEN_FILE; the\n"
			       "ECS/EKS container endpoint; the instance role (IMDSv2).\n"
			       "Credentials that expire within the hour and cannot be\n"
			       "renewed unaided are a WARNING; expired ones an error.\n"
			       "AWS_REGION; AWS_ENDPOINT_URL_EC2.  See docs/providers.md.\n");
			return CLI_OK;
		}
		if (!strcmp(argv[i], "--json")) {
			json = true;
			continue;
		}
		if (argv[i][0] == '-')
			return cli_usage_error("check", "unknown option '%s'", argv[i]);
		for (k = 0; k < NPROV; k++)
			if (!strcmp(argv[i], providers[k].name))
				break;
		if (k == NPROV)
			return cli_usage_error("check", "unknown provider '%s' "
					       "(known: local, aws)", argv[i]);
		want[k] = true;
		named = true;
	}
	memset(res, 0, sizeof(res));
	if (json)
		arr = json_array();
	else
		printf("Checking providers:\n");
	for (size_t k = 0; k < NPROV; k++) {
		if (named && !want[k])
			continue;
		res[k].name = providers[k].name;
		providers[k].fn(&res[k]);
		if (named && !res[k].ok)
			rc = CLI_FAIL;
		if (json)
			json_array_append_new(arr, to_json(&res[k]));
		else
			print_text(&res[k]);
		json_decref(res[k].zones);
	}
	if (json) {
		json_t *doc = json_pack("{so}", "providers", arr);

		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		putchar('\n');
		json_decref(doc);
	}
	return rc;
}

CLI_COMMAND("check", "which providers can be used (credentials, region)",
	    cmd_check)
