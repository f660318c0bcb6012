/*
 * gcp_check.c - `spotrun check gcp`: credentials found and a token had,
 * then one cheap read (regions.get: the region's zones); and the catalog's
 * GPU names as GCE accelerator types.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "providers/gcp/gcp_int.h"

const char *gcp__accel_type(const char *gpu)
{
	static const char *const map[][2] = {
		{ "V100", "nvidia-tesla-v100" }, { "T4", "nvidia-tesla-t4" },
		{ "P100", "nvidia-tesla-p100" }, { "P4", "nvidia-tesla-p4" },
		{ "K80", "nvidia-tesla-k80" }, { "L4", "nvidia-l4" },
		{ "A100", "nvidia-tesla-a100" },
		{ "A100-80GB", "nvidia-a100-80gb" }, { "H100", "nvidia-h100-80gb" },
	};

	for (size_t i = 0; gpu && i < sizeof map / sizeof map[0]; i++) {
		if (strcasecmp(map[i][0], gpu) == 0)
			return map[i][1];
	}
	return NULL;
}

int gcp__check(const struct cloud_conf *conf,
	       const struct cloud_conf_region *region, struct cloud_check *out,
	       struct sr_err *e)
{
	struct gce *c = NULL;
	struct cloud_error err = { 0 };
	char tok[GCPCRED_TOKEN_MAX];
	int rc;

	memset(out, 0, sizeof *out);
	rc = gcp__open_client(conf, region, 10000, &c, out->region,
			      sizeof out->region, e);
	if (rc)
		return rc;
	snprintf(out->credentials, sizeof out->credentials, "%s (project %s)",
		 gcpcred_source(gce_creds(c)), gce_project(c));
	snprintf(out->endpoint, sizeof out->endpoint, "%s", gce_endpoint(c));
	rc = gcpcred_token(gce_creds(c), tok, sizeof tok, &out->expires_s, e);
	memset(tok, 0, sizeof tok);
	if (rc)
		goto out;
	rc = gce_region_zones(c, out->region, &out->zones, &out->nzones, &err);
	if (rc)
		sr_err_set(e, rc, "signed call failed (%s): %s",
			   cloud_err_class_str(err.cls), err.msg);
	snprintf(out->probe, sizeof out->probe, "VMs");
out:
	gce_close(c);
	return rc;
}
