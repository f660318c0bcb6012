/*
 * toy.h - the `toy` provider: a test provider that proves a provider is
 * a folder plus a registry line (docs/providers.md "Writing a
 * provider").  It sells two pools of its own cloud, "toy" (zones toy-1a
 * and toy-1b), numbered from CLOUD_POOL_OWN_BASE, and starts nothing: an
 * instance is a record; the test speaks for its agent with the token the
 * bootstrap handed over (toy_token).
 */
#ifndef SR_TESTS_TOY_H
#define SR_TESTS_TOY_H

#include <stdint.h>

#include "cloud/provider.h"

extern const struct cloud_prov_def prov_toy;

/* The first-boot text toy's bootstrap made for node `node` (its token),
 * or NULL when it launched none. */
const char *toy_token(int64_t node);
/* How many provisions / terminations toy received. */
int toy_provisions(void);
int toy_terminations(void);

#endif
