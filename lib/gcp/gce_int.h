/*
 * gce_int.h - what gce_api.c and gce_json.c share.
 */
#ifndef SR_GCP_GCE_INT_H
#define SR_GCP_GCE_INT_H

#include <jansson.h>

#include "gcp/gce.h"

/* The instances of one aggregatedList page ({"items": {"zones/Z":
 * {"instances": [...]}}}) appended to *v (*n counts them). */
int gce__parse_list(json_t *doc, struct cloud_instance **v, size_t *n,
		    struct sr_err *e);

#endif
