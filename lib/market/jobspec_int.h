/*
 * jobspec_int.h - internal: the YAML walker shared by jobspec.c (top
 * level, spotrun:) and jobspec_res.c (resources:, SkyPilot's keys).
 *
 * Problems do not stop the walk: fail() records "file:line: path: reason"
 * in the context and returns -SR_EPARSE, so the caller abandons only the
 * value at fault and walk_map() goes on with the next key.  Only
 * -ENOMEM ends a walk.  jobspec_parse_buf_diag() turns the records into
 * the caller's struct jobspec_diag and sr_err.
 */
#ifndef SR_MARKET_JOBSPEC_INT_H
#define SR_MARKET_JOBSPEC_INT_H

#include <yaml.h>

#include "jobspec.h"

struct jobspec__ctx {
	yaml_document_t *doc;
	const char *name;
	struct jobspec *js;
	struct jobspec_diag d;      /* owned; handed over or freed at the end */
	int oom;
	int use_spot_line, crit_line, peer_line;
	/* resources.cloud/region/zone and resources.infra, merged at the end */
	struct jobspec_infra base;
	int base_from;              /* 0 none, 1 infra, 2 cloud/region/zone */
	yaml_node_t *base_node;     /* the first cloud/region/zone key */
	void *entry;                /* the any_of entry being walked */
	yaml_node_t **bucket_nodes; /* owned; the key of js->buckets[i] */
	/* resources.spot_recovery, read apart and merged at the end */
	yaml_node_t *job_rec_n, *spot_rec_n;
	char *spot_strategy;        /* owned */
	int spot_max_restarts;
	/* file_mounts, read once envs are known (their $VARs) */
	yaml_node_t *mounts_n;
	char **filled;              /* owned: mount strings with envs filled */
	size_t n_filled;
};

#define JOBSPEC__LINE(n) ((int)(n)->start_mark.line + 1)

/* Record an error (fail) or a note at node n; fail returns -SR_EPARSE,
 * note returns 0.  path "" leaves out the key path. */
int jobspec__fail(struct jobspec__ctx *c, yaml_node_t *n, const char *path,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int jobspec__note(struct jobspec__ctx *c, yaml_node_t *n, const char *path,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

const char *jobspec__scalar(yaml_node_t *n);
int jobspec__is_null(yaml_node_t *n);
int jobspec__want_scalar(struct jobspec__ctx *c, yaml_node_t *n,
			 const char *path, const char **out);
int jobspec__want_str(struct jobspec__ctx *c, yaml_node_t *n, const char *path,
		      char **out);
int jobspec__want_bool(struct jobspec__ctx *c, yaml_node_t *n, const char *path,
		       int *out);
int jobspec__want_int(struct jobspec__ctx *c, yaml_node_t *n, const char *path,
		      long lo, long hi, int *out);

typedef int (*jobspec__pair_fn)(struct jobspec__ctx *c, const char *key,
				yaml_node_t *kn, yaml_node_t *vn,
				const char *path);
/* Walk a mapping, recording duplicate keys; fn per pair.  Returns 0, or
 * -ENOMEM; -SR_EPARSE when n is not a mapping. */
int jobspec__walk_map(struct jobspec__ctx *c, yaml_node_t *n, const char *path,
		      jobspec__pair_fn fn);
/* "unknown key", with the hint from `hints` (pairs of key, advice, NULL
 * ended) or else the nearest of `keys` (NULL ended). */
int jobspec__unknown(struct jobspec__ctx *c, yaml_node_t *kn, const char *path,
		     const char *key, const char *const *keys,
		     const char *const *hints);

/* resources: (jobspec_res.c) and the merge of its locations at the end. */
int jobspec__res_pair(struct jobspec__ctx *c, const char *k, yaml_node_t *kn,
		      yaml_node_t *vn, const char *path);
int jobspec__res_finish(struct jobspec__ctx *c);

/* file_mounts: entries (jobspec_mount.c) and the checks once every key
 * is read (a name:-only bucket's store, mounts inside a bucket's DST). */
/* file_mounts, walked after every other top-level key (envs first). */
int jobspec__mounts(struct jobspec__ctx *c);
int jobspec__mount_pair(struct jobspec__ctx *c, const char *k, yaml_node_t *kn,
			yaml_node_t *vn, const char *path);
int jobspec__mount_finish(struct jobspec__ctx *c);

#endif
