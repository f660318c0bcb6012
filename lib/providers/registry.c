/*
 * registry.c - THE REGISTRY: one line per provider built into spotrun.
 * Each names `prov_<name>`, defined in lib/providers/<name>/ (see
 * registry.h and docs/providers.md "Writing a provider").
 */
#include <stdio.h>
#include <string.h>

#include "providers/registry.h"

#define PROVIDERS(X) \
	X(local) \
	X(aws)

#define DECLARE(n) extern const struct cloud_prov_def prov_##n;
#define ENTRY(n) &prov_##n,

PROVIDERS(DECLARE)

static const struct cloud_prov_def *const table[] = {
	PROVIDERS(ENTRY) NULL
};

const struct cloud_prov_def *const *prov_registry(void)
{
	return table;
}

const struct cloud_prov_def *prov_find(const struct cloud_prov_def *const *reg,
				       const char *name)
{
	const struct cloud_prov_def *const *t = reg ? reg : table;

	for (size_t i = 0; name && t[i]; i++) {
		if (strcmp(t[i]->name, name) == 0)
			return t[i];
	}
	return NULL;
}

void prov_names(const struct cloud_prov_def *const *reg, char *out, size_t cap)
{
	const struct cloud_prov_def *const *t = reg ? reg : table;

	out[0] = '\0';
	for (size_t i = 0; t[i]; i++) {
		size_t l = strlen(out);

		snprintf(out + l, cap - l, "%s%s", i ? ", " : "", t[i]->name);
	}
}
