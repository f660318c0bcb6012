/*
 * launchrec.c - a launch's parameters kept from its first attempt
 * (clouds.h: ctl__launch_keep / _recall / _forget; table node_launch).
 *
 * WHY.  A launch is sent under an idempotency key (EC2 ClientToken)
 * derived from the node, and is sent again under the same key after a
 * crash or, after a failover, by another daemon.  EC2 answers a repeat
 * with different parameters IdempotentParameterMismatch - and they did
 * differ: the bootstrap text lists the daemons leader first, a new member
 * changes the list, a price or a configured image may have moved.  So the
 * first attempt writes down exactly what it sends (zone, type, spot,
 * price cap, image, the bootstrap text) before sending it, in the
 * leader's fenced transaction, and every later attempt sends what was
 * written.
 *
 * The record holds the node's bootstrap text (its first secret), so it
 * is sealed with the secrets key (secrets.h, label "spotrun-launch-v1"),
 * which every daemon of a store shares; it is dropped once the instance
 * is recorded with the node.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/log.h"
#include "ctl/clouds.h"
#include "ctl/ctl_int.h"
#include "ctl/secrets.h"
#include "store/store.h"

#define LABEL "spotrun-launch-v1"

static const char *str_or_null(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s && s[0] ? s : NULL;
}

int ctl__launch_recall(struct ctl *c, int64_t node, const char *key,
		       struct cloud_launch *l, json_t **doc, struct sr_err *e)
{
	struct store *db = ctl__store(c);
	char kept[CLOUD_IDEM_MAX + 1];
	void *blob = NULL;
	size_t n = 0;
	json_t *d;
	int rc;

	*doc = NULL;
	if (!db)
		return sr_err_set(e, -EIO, "launch of node %" PRId64 ": no store",
				  node);
	rc = store_launch_get(db, node, kept, sizeof kept, &blob, &n, e);
	if (rc <= 0)
		return rc;
	d = ctl_sealed_open(blob, n, LABEL, c->secrets_key);
	free(blob);
	if (!d || strcmp(kept, key) != 0 ||
	    !json_string_value(json_object_get(d, "type")) ||
	    !json_string_value(json_object_get(d, "bootstrap"))) {
		json_decref(d);
		return sr_err_set(e, -EIO, "launch of node %" PRId64 ": the kept "
				  "parameters do not open (another secrets key?)",
				  node);
	}
	l->idem_key = key;
	l->zone = str_or_null(d, "zone");
	l->instance_type = str_or_null(d, "type");
	l->spot = json_is_true(json_object_get(d, "spot"));
	l->max_price_per_h = json_integer_value(json_object_get(d, "max_price"));
	l->image = str_or_null(d, "image");
	l->subnet = str_or_null(d, "subnet");
	l->security_group = str_or_null(d, "security_group");
	l->bootstrap = json_string_value(json_object_get(d, "bootstrap"));
	*doc = d;
	return 1;
}

int ctl__launch_keep(struct ctl *c, int64_t node, const struct cloud_launch *l,
		     struct sr_err *e)
{
	struct store *db = ctl__store(c);
	unsigned char *blob = NULL;
	size_t n = 0;
	json_t *d;
	int rc;

	if (!db)
		return sr_err_set(e, -EIO, "launch of node %" PRId64 ": no store",
				  node);
	d = json_pack("{ss? ss sb sI ss? ss? ss? ss}", "zone", l->zone,
		      "type", l->instance_type, "spot", l->spot, "max_price",
		      (json_int_t)l->max_price_per_h, "image", l->image,
		      "subnet", l->subnet, "security_group", l->security_group,
		      "bootstrap", l->bootstrap);
	if (!d)
		return sr_err_set(e, -ENOMEM, "out of memory");
	rc = ctl_sealed_json(d, LABEL, c->secrets_key, &blob, &n);
	json_decref(d);
	if (rc)
		return sr_err_set(e, rc, "launch of node %" PRId64 ": cannot "
				  "seal its parameters", node);
	rc = store_begin(db, e);
	if (!rc)
		rc = store_launch_put(db, node, l->idem_key, blob, n, ctl__now(c), e);
	rc = store_end(db, rc < 0 ? rc : 0, e);
	free(blob);
	return rc;
}

void ctl__launch_forget(struct ctl *c, int64_t node)
{
	struct store *db = ctl__store(c);
	struct sr_err e = { 0 };
	int rc;

	if (!db)
		return;
	rc = store_begin(db, &e);
	if (!rc)
		rc = store_launch_del(db, node, &e);
	rc = store_end(db, rc, &e);
	if (rc)
		sr_warn("clouds", "cannot drop a launch's kept parameters", "node=%"
			PRId64 " err=\"%s\"", node, sr_err_str(&e, rc));
}
