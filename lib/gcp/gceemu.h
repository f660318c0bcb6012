/*
 * gceemu.h - a Compute Engine emulator for the local spot cloud: the
 * Compute REST v1 calls the gcp driver makes, the OAuth2 token endpoint,
 * and each VM's metadata server, for the GCP pools of one region of the
 * local market (cloud/localmkt.h: catalog offerings whose spot
 * availability replays real traces).
 *
 *   POST {url}/token              jwt-bearer (a three-part RS256 JWT whose
 *                                 claims name iss, aud = this URL, scope,
 *                                 iat, exp) or refresh_token (client_id,
 *                                 client_secret, refresh_token) ->
 *                                 {"access_token","expires_in":3600,
 *                                 "token_type":"Bearer"}; else 400
 *                                 invalid_grant
 *   {url}/compute/v1/projects/{p}/...   (Authorization: Bearer <a token
 *                                 it issued>, else 401)
 *     GET  regions/{r}            the region's zones
 *     POST zones/{z}/instances?requestId=U   insert -> Operation RUNNING
 *          (the same requestId again: the same operation; a name in use:
 *          409 alreadyExists; a zone/machine type the region does not
 *          sell: 400; spot without capacity now (the trace, or
 *          --capacity ZONE=none): the operation ends DONE with error
 *          ZONE_RESOURCE_POOL_EXHAUSTED)
 *     POST zones/{z}/operations/{op}/wait, GET zones/{z}/operations/{op}
 *          -> DONE
 *     GET  zones/{z}/instances/{name}, DELETE (-> Operation; 404 unknown)
 *     GET  aggregated/instances?filter=labels.K="V"&maxResults=N
 *          &pageToken=T           paginated
 *   {url}/meta/{name}/computeMetadata/v1/...  the VM's metadata server
 *          (Metadata-Flavor: Google required and answered):
 *          instance/preempted, instance/maintenance-event (ETag;
 *          ?wait_for_change=true&last_etag=E&timeout_sec=S hangs until
 *          the value's ETag differs from E), instance/name,
 *          instance/zone, project/project-id,
 *          instance/service-accounts/default/token
 *   GET {url}/v1/services/6F81-5844-456A/skus?pageSize=N&pageToken=T
 *        (Bearer) the Cloud Billing Catalog's Compute Engine SKUs: the
 *        --billing-skus file's, at most min(N, 3) a page, nextPageToken
 *   POST {url}/emu/preempt?name=N (or every spot VM without name; the
 *        zone keeps no spot capacity after: --capacity ZONE=none, unless
 *        &keep_capacity=true),
 *        {url}/emu/capacity?zone=Z&spot=none|plenty (the zone's spot
 *        capacity from now on; none preempts its spot VMs),
 *        {url}/emu/maintenance?name=N&event=E    (tests' controls)
 *
 * A VM is its startup-script run by /bin/sh in a new session under
 * <work_dir>/<name>/ with SPOTRUN_NODE_ROOT=<that dir>/root,
 * SPOTRUN_IMDS_URL=<url>/meta/<name> and SPOTRUN_EMU_HIDE=<work_dir>
 * (the bootstrap script honours them).  Preemption (the trace's pool
 * losing capacity, /emu/preempt, gceemu_preempt): instance/preempted
 * turns TRUE (a new ETag, hanging GETs answered), notice_s cloud seconds
 * later the session is killed and the VM deleted
 * (instanceTerminationAction DELETE).
 *
 * Clock: cloud time = time_scale x real time since start.  Listens on
 * 127.0.0.1 only.  Thread-safe; the HTTP server runs a thread per
 * connection (a hanging GET holds one).
 */
#ifndef SR_GCP_GCEEMU_H
#define SR_GCP_GCEEMU_H

#include <stdbool.h>

#include "cloud/emuconf.h"
#include "common/err.h"

struct gceemu_opts {
	struct emuhttp_conf conf;  /* capacity: "ZONE=none|plenty" */
	const char *project;       /* NULL: "spotrun-emu" */
	const char *region;        /* NULL: "us-central1" */
	double notice_s;           /* preempted -> deleted, cloud s; 0: 30 */
	const char *request_log;   /* one line per call; NULL none */
	/* a Cloud Billing Catalog answer ({"skus": [...]}) served, paged,
	 * at GET {url}/v1/services/6F81-5844-456A/skus; NULL: 404 */
	const char *billing_skus;
};

struct gceemu;

int gceemu_start(const struct gceemu_opts *o, struct gceemu **out,
		 struct sr_err *e);
const char *gceemu_url(const struct gceemu *m);
/* Preempt VM `name` (NULL: every running spot VM), its zone left
 * without spot capacity (as a reclaim): how many. */
int gceemu_preempt(struct gceemu *m, const char *name);
void gceemu_stop(struct gceemu *m); /* kills every VM; NULL-safe */

#endif
