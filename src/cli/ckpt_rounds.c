/*
 * ckpt_rounds.c - `spotrun ckpt ls URI` on a synced directory (a bucket
 * mount, lib/dirsync): its rounds, newest first, each with its files,
 * sizes and SHA-256 digests; a torn manifest is listed with its error.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/timeutil.h"
#include "dirsync/dirsync.h"

int ckpt_ls_rounds(const char *uri, int json)
{
	struct dirsync_listed *v = NULL;
	struct sr_err e;
	size_t n = 0;
	int rc;

	sr_err_clear(&e);
	rc = dirsync_list(uri, &v, &n, &e);
	if (rc < 0) {
		fprintf(stderr, "spotrun ckpt: %s: %s\n", uri, sr_err_str(&e, rc));
		return CLI_FAIL;
	}
	if (json) {
		json_t *arr = json_array();
		char *s;

		for (size_t i = 0; arr && i < n; i++) {
			const struct dirsync_round *r = &v[i].r;
			json_t *files = json_array(), *o;
			char ts[40] = "";

			for (size_t f = 0; files && f < r->n; f++)
				json_array_append_new(files, json_pack(
					"{s:s, s:I, s:s}", "path", r->files[f].path,
					"size", (json_int_t)r->files[f].size,
					"sha256", r->files[f].sha256));
			if (r->time_ns)
				sr_time_format_rfc3339(r->time_ns, 0, ts, sizeof ts);
			o = json_pack("{s:I, s:s, s:b, s:I, s:o}", "round",
				      (json_int_t)r->round, "time", ts,
				      "committed", v[i].error == NULL, "bytes",
				      (json_int_t)r->bytes, "files", files);
			if (o && v[i].error)
				json_object_set_new(o, "error", json_string(v[i].error));
			json_array_append_new(arr, o);
		}
		s = arr ? json_dumps(arr, JSON_INDENT(2)) : NULL;
		printf("%s\n", s ? s : "[]");
		free(s);
		json_decref(arr);
	} else {
		printf("%-8s %-22s %6s %14s\n", "ROUND", "TIME", "FILES", "BYTES");
		for (size_t i = 0; i < n; i++) {
			const struct dirsync_round *r = &v[i].r;
			char ts[40] = "-";

			if (v[i].error) {
				printf("%-8" PRId64 " not committed: %s\n", r->round,
				       v[i].error);
				continue;
			}
			sr_time_format_rfc3339(r->time_ns, 0, ts, sizeof ts);
			printf("%-8" PRId64 " %-22s %6zu %14" PRIu64 "\n", r->round,
			       ts, r->n, r->bytes);
			for (size_t f = 0; f < r->n; f++)
				printf("    %-40s %14" PRIu64 "  sha256:%s\n",
				       r->files[f].path, r->files[f].size,
				       r->files[f].sha256);
		}
	}
	dirsync_listed_free(v, n);
	if (!n)
		fprintf(stderr, "spotrun ckpt: %s: no checkpoints there\n", uri);
	return n ? CLI_OK : CLI_FAIL;
}
