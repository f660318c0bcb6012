/*
 * conf.h - the `providers:` section of the daemon's configuration file
 * (docs/providers.md "Configuration"), as data every provider reads the
 * same way:
 *
 *   providers:
 *     local:                      # a provider: its settings ...
 *       notice_ms: 5000
 *     aws:
 *       key_name: ops
 *       regions:                  # ... and its regions (several)
 *         us-east-1:
 *           image: ami-0abc        # region settings
 *           subnet: subnet-1
 *           security_group: sg-1
 *           zones:
 *             us-east-1b: { subnet: subnet-2 }   # zone settings
 *         us-west-2: { image: ami-0def }
 *
 * A setting is looked up from the narrowest place out: the zone's, the
 * region's, then the provider's (cloud_conf_get).  Command-line flags
 * override the file: they are set with cloud_conf_override and win at
 * every level.  Keys a provider does not know are errors naming the file
 * and line (cloud_conf_check, against cloud_prov_def.conf_keys).
 *
 * Ownership: a cloud_confs owns every string in it; cloud_confs_free.
 */
#ifndef SR_CLOUD_CONF_H
#define SR_CLOUD_CONF_H

#include <stddef.h>

#include "common/err.h"

struct cloud_conf_kv {
	char *key, *val;
	int line;                  /* in the file; 0: set by a flag */
};

struct cloud_conf_kvs {
	struct cloud_conf_kv *v;
	size_t n;
};

struct cloud_conf_zone {
	char *name;
	struct cloud_conf_kvs kv;
	int line;
};

struct cloud_conf_region {
	char *name;
	struct cloud_conf_kvs kv;
	struct cloud_conf_zone *zones;
	size_t nzones;
	int line;
};

struct cloud_conf {
	char *name;                /* the provider's registry name */
	struct cloud_conf_kvs kv;
	struct cloud_conf_kvs over;/* flags: win at every level */
	struct cloud_conf_region *regions;
	size_t nregions;
	int line;
	const char *file;          /* borrowed from the cloud_confs */
};

struct cloud_confs {
	struct cloud_conf *v;      /* in the file's (or the flag's) order */
	size_t n;
	char *file;                /* the file they came from, or NULL */
};

/* Parse the `providers:` mapping of a YAML document (a yaml_node_t of
 * yaml_document_t doc, passed as void * so this header needs no libyaml)
 * into *out (appended).  Errors name file:line and the key. */
int cloud_confs_parse_yaml(void *doc, void *node, const char *file,
			   struct cloud_confs *out, struct sr_err *e);

/* The provider named `name`, adding an empty one when absent (add) or
 * returning NULL (!add, or out of memory). */
struct cloud_conf *cloud_confs_find(struct cloud_confs *cs, const char *name,
				    int add);

/* Set a flag's value for the provider (wins over the file). */
int cloud_conf_override(struct cloud_conf *c, const char *key,
			const char *val);

/* The value of key for the region (NULL: the provider's own) and zone
 * (NULL: none): a flag's, the zone's, the region's, then the provider's;
 * NULL when unset.  Borrowed. */
const char *cloud_conf_get(const struct cloud_conf *c,
			   const struct cloud_conf_region *r,
			   const char *zone, const char *key);

/* Every key of c (provider, regions, zones) is in keys (NULL-terminated):
 * 0 or -EINVAL naming file:line, the key and what it accepts. */
int cloud_conf_check(const struct cloud_conf *c, const char *const *keys,
		     struct sr_err *e);

void cloud_confs_free(struct cloud_confs *cs); /* NULL-safe; zeroes it */

#endif
