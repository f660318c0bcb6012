/*
 * clijob.c - see clijob.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clijob.h"
#include "cli.h"
#include "ctl/ctlfile.h"

int cli_load_job(const char *cmd, const char *path, struct jobspec *js)
{
	struct jobspec_diag d;
	struct sr_err err = { 0 };
	int rc = jobspec_parse_file_diag(path, js, &d, &err);

	for (size_t i = 0; i < d.n_notes; i++)
		fprintf(stderr, "spotrun %s: note: %s\n", cmd, d.notes[i]);
	if (rc && d.n_errors) {
		for (size_t i = 0; i < d.n_errors; i++)
			fprintf(stderr, "spotrun %s: %s\n", cmd, d.errors[i]);
		if (d.n_errors > 1)
			fprintf(stderr, "spotrun %s: %zu problems in %s\n", cmd,
				d.n_errors, path);
	} else if (rc) {
		fprintf(stderr, "spotrun %s: %s\n", cmd, sr_err_str(&err, rc));
	}
	jobspec_diag_free(&d);
	return rc ? -1 : 0;
}

int cli_load_catalog(const char *cmd, const char *data, struct catalog *cat)
{
	struct sr_err err = { 0 };
	char dir[PATH_MAX];

	catalog_init(cat);
	if (!data) {
		if (catalog_find_data_dir(dir, sizeof dir)) {
			fprintf(stderr, "spotrun %s: no data directory (set SPOTRUN_DATA%s)\n",
				cmd, strcmp(cmd, "launch") ? " or use --data" : "");
			return -1;
		}
		data = dir;
	}
	if (catalog_load_dir(cat, data, &err)) {
		fprintf(stderr, "spotrun %s: %s\n", cmd, sr_err_str(&err, err.code));
		catalog_free(cat);
		return -1;
	}
	return 0;
}

int cli_live_prices(const char *cmd, const char *mode, const char *config,
		    const char *only, int nodes, struct catalog *cat,
		    struct prov_price_report *rep)
{
	enum prov_prices_mode m = PROV_PRICES_AUTO;
	struct cloud_confs cs = { 0 };
	struct sr_err err = { 0 };
	int rc = 0;

	memset(rep, 0, sizeof *rep);
	if (mode && prov_prices_mode_parse(mode, &m)) {
		cli_usage_error(cmd, "--prices '%s': expected auto, live or "
				"catalog", mode);
		return 2;
	}
	if (!config)
		config = getenv("SPOTRUN_CONFIG");
	if (m != PROV_PRICES_CATALOG && config && *config)
		rc = ctl_config_file_providers(config, &cs, &err);
	if (rc == 0 && m != PROV_PRICES_CATALOG)
		rc = prov_own_offerings_add(NULL, &cs, nodes, cat, &err);
	if (rc == 0)
		rc = prov_prices_apply(NULL, &cs, m, only, cat, rep, &err);
	cloud_confs_free(&cs);
	if (rc) {
		fprintf(stderr, "spotrun %s: %s\n", cmd, sr_err_str(&err, rc));
		prov_price_report_free(rep);
		return -1;
	}
	return 0;
}
