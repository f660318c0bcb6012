/*
 * registry.c - THE REGISTRY: one line per provider built into spotrun.
 * Each names `prov_<name>`, defined in lib/providers/<name>/ (see
 * registry.h and docs/providers.md "Writing a provider").
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "market/jobspec.h"
#include "providers/registry.h"

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

/* The table job files are checked against (prov_infra_install). */
static const struct cloud_prov_def *const *infra_reg = table;

static int infra_known(const char *name)
{
	for (size_t i = 0; infra_reg[i]; i++) {
		for (size_t k = 0; infra_reg[i]->infra && infra_reg[i]->infra[k]; k++) {
			if (strcasecmp(infra_reg[i]->infra[k], name) == 0)
				return 1;
		}
	}
	return 0;
}

static void infra_names(char *buf, size_t cap)
{
	buf[0] = '\0';
	for (size_t i = 0; infra_reg[i]; i++) {
		for (size_t k = 0; infra_reg[i]->infra && infra_reg[i]->infra[k]; k++) {
			size_t l = strlen(buf);

			snprintf(buf + l, cap - l, "%s%s", l ? ", " : "",
				 infra_reg[i]->infra[k]);
		}
	}
}

void prov_infra_install(const struct cloud_prov_def *const *reg)
{
	infra_reg = reg ? reg : table;
	jobspec_set_infra_source(infra_known, infra_names);
}
