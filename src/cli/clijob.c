/*
 * clijob.c - see clijob.h.
 */
#include <stdio.h>

#include "clijob.h"

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
