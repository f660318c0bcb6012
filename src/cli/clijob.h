/*
 * clijob.h - what plan, launch, catalog and gpus share: reading a job
 * file (every problem and note, printed the same way) and loading the
 * catalog with one error for a missing data directory.
 */
#ifndef SR_CLI_CLIJOB_H
#define SR_CLI_CLIJOB_H

#include "market/catalog.h"
#include "providers/liveprice.h"
#include "market/jobspec.h"

/* Parse path into *js.  Notes go to stderr as "spotrun CMD: note: ...";
 * on failure every error goes to stderr as "spotrun CMD: ..." and the
 * result is -1 (js left empty), else 0. */
int cli_load_job(const char *cmd, const char *path, struct jobspec *js);

/* Load the catalog from `data` (NULL: catalog_find_data_dir) into *cat
 * (initialised here).  On failure prints "spotrun CMD: why" and returns
 * -1 (*cat left empty). */
int cli_load_catalog(const char *cmd, const char *data, struct catalog *cat);

/* Reprice cat from the providers' live feeds (providers/liveprice.h):
 * mode "auto", "live" or "catalog" (NULL: auto), the configuration file
 * config (NULL: $SPOTRUN_CONFIG, none when unset) for their regions,
 * only the cloud `only` when not NULL.  The pools of the configured
 * providers that have their own (a Slurm cluster's partitions) are added
 * to cat, with their queue estimates for a job of `nodes` nodes, unless
 * mode is "catalog".  *rep filled
 * (prov_price_report_free).  On failure prints "spotrun CMD: why" and
 * returns -1 (2 for a bad mode). */
int cli_live_prices(const char *cmd, const char *mode, const char *config,
		    const char *only, int nodes, struct catalog *cat,
		    struct prov_price_report *rep);

#endif
