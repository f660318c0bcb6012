/*
 * registry.h - the providers built into spotrun, by name.
 *
 * The table is lib/providers/registry.c: one line per provider.  Adding a
 * provider is a folder, lib/providers/<name>/, defining
 * `const struct cloud_prov_def prov_<name>` (cloud/provider.h), plus its
 * line there; nothing else names it (docs/providers.md, "Writing a
 * provider").  The control plane, `spotrun check` and the job-spec
 * checks read the providers only through this table.
 */
#ifndef SR_PROVIDERS_REGISTRY_H
#define SR_PROVIDERS_REGISTRY_H

#include <stddef.h>

#include "cloud/provider.h"

/* THE REGISTRY: one X(name) per provider, each defining prov_<name> in
 * lib/providers/<name>/.  registry.c builds the table from it; a test
 * may build its own from PROVIDERS(X) plus its test providers. */
#define PROVIDERS(X) \
	X(local) \
	X(aws) \
	X(azure) \
	X(gcp) \
	X(lambda) \
	X(slurm)

/* The built-in providers, NULL-terminated, in the registry's order. */
const struct cloud_prov_def *const *prov_registry(void);

/* The provider called `name` in table reg (NULL: prov_registry()), or
 * NULL. */
const struct cloud_prov_def *prov_find(const struct cloud_prov_def *const *reg,
				       const char *name);

/* "local, aws": the names of table reg (NULL: prov_registry()). */
void prov_names(const struct cloud_prov_def *const *reg, char *out,
		size_t cap);

/* Make table reg (NULL: prov_registry()) the one job files are checked
 * against: a job's infra may name a cloud one of its providers sells
 * (cloud_prov_def.infra) besides the catalog's (jobspec_set_infra_source).
 * Call at start, before any job file is parsed. */
void prov_infra_install(const struct cloud_prov_def *const *reg);

#endif
