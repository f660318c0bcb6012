/*
 * cmd_ckpt.c - `spotrun ckpt`: list, verify, inspect and benchmark
 * checkpoint directories written by libspotckpt.
 *
 *   spotrun ckpt ls DIR [--json]
 *   spotrun ckpt verify DIR [--step N] [--json]     exit 0 valid, 1 invalid
 *   spotrun ckpt inspect DIR [--step N] [--json] [--full-meta]
 *   spotrun ckpt bench --size 2G --dir DIR [--json] (see ckpt_bench.c)
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_bench.h"
#include "cli.h"
#include "cliopt.h"
#include "common/text.h"
#include "common/timeutil.h"
#include "common/url.h"
#include "dirsync/dirsync.h"
#include "spotrun/ckpt.h"

static const char *const USAGE =
	"usage: spotrun ckpt ls DIR [--json]\n"
	"       spotrun ckpt verify DIR [--step N] [--json]\n"
	"       spotrun ckpt inspect DIR [--step N] [--json] [--full-meta]\n"
	"       spotrun ckpt bench --size SIZE --dir DIR [--json] [...]\n"
	"       spotrun ckpt bench-sync DIR --remote URI [--reps N] [--json]\n\n"
	"Checkpoint directories written by libspotckpt (docs/checkpoint-format.md).\n"
	"  ls       list checkpoints, newest first, without reading their data;\n"
	"           on a synced directory's URI (a bucket mount), its rounds\n"
	"           with each file's size and SHA-256\n"
	"  verify   check one checkpoint (default: the newest committed) byte\n"
	"           for byte against its checksums; exit 0 if valid, 1 if not\n"
	"  inspect  show a checkpoint's metadata and tensors (default: the\n"
	"           newest one whose manifest and headers are valid); long\n"
	"           arrays and strings in the metadata are shortened unless\n"
	"           --full-meta (--json always has all of it)\n"
	"  bench    measure the engine against its peers ('ckpt bench --help')\n"
	"  bench-sync  a bucket mount's round against a raw multipart upload\n";

struct args {
	const char *dir;
	int64_t step;
	int json, full_meta;
};

/* The word `ckpt ls` shows for an entry's state. */
static const char *entry_state(int32_t st)
{
	switch (st) {
	case SPOTCKPT_ENTRY_COMMITTED: return "committed";
	case SPOTCKPT_ENTRY_DAMAGED: return "damaged";
	default: return "incomplete";
	}
}

enum { OPT_STEP = CLI_KEY_LONG, OPT_FULL_META };

static const struct cli_optdef verify_defs[] = {
	{ "step", OPT_STEP, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};
static const struct cli_optdef inspect_defs[] = {
	{ "step", OPT_STEP, CLI_ARG },
	{ "full-meta", OPT_FULL_META, CLI_NOARG },
	{ NULL, 0, CLI_NOARG },
};

static void usage(void)
{
	fputs(USAGE, stdout);
}

/* argv[0] is the subcommand: ls takes no option of its own, verify
 * --step, inspect --step and --full-meta. */
static int parse_args(int argc, char **argv, struct args *a)
{
	const char *sub = argv[0];
	struct cli_opts p = {
		.cmd = "ckpt", .sub = sub, .usage = usage, .flags = CLI_OPT_JSON,
		.max_operands = 1,
		.defs = !strcmp(sub, "ls") ? NULL : !strcmp(sub, "verify")
			? verify_defs : inspect_defs,
	};
	int c;

	a->step = SPOTCKPT_NEWEST;
	a->full_meta = 0;
	while ((c = cli_opts_next(&p, argc, argv)) > 0) {
		char *end;

		if (c == OPT_FULL_META) {
			a->full_meta = 1;
			continue;
		}
		errno = 0;
		a->step = strtoll(p.arg, &end, 10);
		if (*end || end == p.arg || errno || a->step < 0)
			return cli_opts_error(&p, "--step: '%s' is not a step number",
					      p.arg);
	}
	if (c < 0)
		return p.status;
	a->json = p.json;
	a->dir = p.n_operands ? p.operand[0] : NULL;
	if (!a->dir)
		return cli_opts_error(&p, "DIR is required");
	return 0;
}

static int cmd_ls(int argc, char **argv)
{
	struct spotckpt_entry *ents = NULL;
	struct args a;
	char scheme[16];
	size_t n = 0;
	int rc = parse_args(argc, argv, &a);

	if (rc)
		return rc;
	/* a bucket mount's synced directory (issue 30): its rounds */
	if (sr_url_scheme(a.dir, scheme, sizeof scheme) == 1 &&
	    dirsync_present(a.dir, NULL) == 1)
		return ckpt_ls_rounds(a.dir, a.json);
	rc = spotckpt_list(a.dir, NULL, 0, &n);
	if (rc == 0 && n) {
		ents = calloc(n, sizeof *ents);
		rc = ents ? spotckpt_list(a.dir, ents, n, &n) : -ENOMEM;
	}
	if (rc) {
		fprintf(stderr, "spotrun ckpt: %s\n", spotckpt_errmsg());
		free(ents);
		return CLI_FAIL;
	}
	if (!n) {
		/* an empty prefix of a store is not "nothing wrong": a job
		 * that should have saved there did not (issue 28) */
		if (a.json)
			printf("[]\n");
		fprintf(stderr, "spotrun ckpt: %s: no checkpoints there\n", a.dir);
		return CLI_FAIL;
	}
	if (a.json) {
		json_t *arr = json_array();
		char *s;

		for (size_t i = 0; i < n; i++) {
			char ts[40] = "";

			sr_time_format_rfc3339(ents[i].time_ns, 0, ts, sizeof ts);
			json_array_append_new(arr, json_pack("{s:I,s:s,s:i,s:I,s:s}",
				"step", (json_int_t)ents[i].step,
				"state", entry_state(ents[i].state),
				"tensors", ents[i].ntensors,
				"bytes", (json_int_t)ents[i].bytes, "time", ts));
		}
		s = json_dumps(arr, JSON_INDENT(2));
		printf("%s\n", s ? s : "[]");
		free(s);
		json_decref(arr);
	} else {
		printf("%-12s %-10s %8s %12s  %s\n", "STEP", "STATE", "TENSORS",
		       "SIZE", "TIME");
		for (size_t i = 0; i < n; i++) {
			char ts[40] = "", sz[32];

			sr_time_format_rfc3339(ents[i].time_ns, 0, ts, sizeof ts);
			sr_text_bytes(ents[i].bytes, sz, sizeof sz);
			printf("%-12" PRId64 " %-10s %8d %12s  %s\n", ents[i].step,
			       entry_state(ents[i].state), ents[i].ntensors, sz, ts);
		}
	}
	free(ents);
	return CLI_OK;
}

static int cmd_verify(int argc, char **argv)
{
	struct args a;
	int64_t step = -1;
	int rc = parse_args(argc, argv, &a);

	if (rc)
		return rc;
	rc = spotckpt_verify(a.dir, a.step, &step);
	if (a.json) {
		json_t *o = json_pack("{s:s,s:I,s:b}", "dir", a.dir,
				      "step", (json_int_t)step, "valid", rc == 0);
		char *s;

		if (rc)
			json_object_set_new(o, "error", json_string(spotckpt_errmsg()));
		s = json_dumps(o, JSON_INDENT(2));
		printf("%s\n", s);
		free(s);
		json_decref(o);
	} else if (rc == 0) {
		printf("%s: step %" PRId64 ": valid\n", a.dir, step);
	} else {
		printf("%s: step %" PRId64 ": INVALID: %s\n", a.dir, step,
		       spotckpt_errmsg());
	}
	return rc ? CLI_FAIL : CLI_OK;
}

static json_t *tensor_json(const struct spotckpt_tensor_info *ti)
{
	json_t *shape = json_array();

	for (int d = 0; d < ti->ndim; d++)
		json_array_append_new(shape, json_integer(ti->shape[d]));
	return json_pack("{s:s,s:s,s:o,s:I,s:i,s:I}", "name", ti->name,
			 "dtype", spotckpt_dtype_name(ti->dtype), "shape", shape,
			 "nbytes", (json_int_t)ti->nbytes, "shard", ti->shard,
			 "offset", (json_int_t)ti->offset);
}

/* The metadata as a person reads it: indented, with arrays past
 * META_ITEMS items and strings past META_CHARS characters cut short and
 * saying how much was left out (a Python RNG state alone is a 625-number
 * array).  Returns a new reference. */
#define META_ITEMS 6
#define META_CHARS 100
#define META_DEPTH 8

static json_t *meta_short(json_t *v, int depth)
{
	char buf[META_CHARS + 64];

	if (depth >= META_DEPTH && (json_is_object(v) || json_is_array(v)))
		return json_string(json_is_object(v) ? "{...}" : "[...]");
	if (json_is_string(v) && json_string_length(v) > META_CHARS) {
		snprintf(buf, sizeof buf, "%.*s... (%zu characters)", META_CHARS / 2,
			 json_string_value(v), json_string_length(v));
		return json_string(buf);
	}
	if (json_is_array(v)) {
		json_t *out = json_array();
		size_t n = json_array_size(v);

		for (size_t i = 0; i < n && i < META_ITEMS; i++)
			json_array_append_new(out, meta_short(json_array_get(v, i),
							      depth + 1));
		if (n > META_ITEMS) {
			snprintf(buf, sizeof buf, "... %zu more items", n - META_ITEMS);
			json_array_append_new(out, json_string(buf));
		}
		return out;
	}
	if (json_is_object(v)) {
		json_t *out = json_object();
		const char *k;
		json_t *x;

		json_object_foreach(v, k, x)
			json_object_set_new(out, k, meta_short(x, depth + 1));
		return out;
	}
	return json_incref(v);
}

static void print_meta(const char *raw, int full)
{
	json_error_t je;
	json_t *m = json_loads(raw, 0, &je), *shown;
	char *s, sz[32];

	sr_text_bytes(strlen(raw), sz, sizeof sz);
	if (!m) { /* the reader validated it; print it as it is */
		printf("metadata: %s\n", raw);
		return;
	}
	shown = full ? json_incref(m) : meta_short(m, 0);
	s = json_dumps(shown, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	printf("metadata: %s of JSON%s\n", sz, !full && !json_equal(m, shown) ?
	       ", shortened (--full-meta shows all of it)" : "");
	for (char *line = s, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		printf("  %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
		if (!nl)
			break;
	}
	free(s);
	json_decref(shown);
	json_decref(m);
}

static int cmd_inspect(int argc, char **argv)
{
	struct spotckpt_reader *r = NULL;
	struct args a;
	char ts[40] = "", sz[32];
	int rc = parse_args(argc, argv, &a);
	int64_t nt;

	if (rc)
		return rc;
	rc = spotckpt_reader_open(a.dir, a.step, SPOTCKPT_NEWEST, 0, &r);
	if (rc) {
		fprintf(stderr, "spotrun ckpt: %s\n", spotckpt_errmsg());
		return CLI_FAIL;
	}
	nt = spotckpt_reader_ntensors(r);
	sr_time_format_rfc3339(spotckpt_reader_time_ns(r), 3, ts, sizeof ts);
	if (a.json) {
		json_error_t je;
		json_t *o = json_pack("{s:s,s:I,s:s,s:I,s:I}", "path",
				      spotckpt_reader_path(r), "step",
				      (json_int_t)spotckpt_reader_step(r), "time", ts,
				      "bytes", (json_int_t)spotckpt_reader_nbytes(r),
				      "ntensors", (json_int_t)nt);
		json_t *arr = json_array();
		char *s;

		json_object_set_new(o, "meta", json_loads(spotckpt_reader_meta(r),
							  0, &je));
		for (int64_t i = 0; i < nt; i++) {
			struct spotckpt_tensor_info ti;

			spotckpt_reader_tensor(r, i, &ti);
			json_array_append_new(arr, tensor_json(&ti));
		}
		json_object_set_new(o, "tensors", arr);
		s = json_dumps(o, JSON_INDENT(2));
		printf("%s\n", s);
		free(s);
		json_decref(o);
	} else {
		sr_text_bytes(spotckpt_reader_nbytes(r), sz, sizeof sz);
		printf("path:     %s\nstep:     %" PRId64 "\ntime:     %s\n"
		       "tensors:  %" PRId64 " (%s)\n",
		       spotckpt_reader_path(r), spotckpt_reader_step(r), ts, nt,
		       sz);
		print_meta(spotckpt_reader_meta(r), a.full_meta);
		printf("\n");
		printf("%-40s %-5s %-20s %12s %5s\n", "NAME", "DTYPE", "SHAPE",
		       "BYTES", "SHARD");
		for (int64_t i = 0; i < nt; i++) {
			struct spotckpt_tensor_info ti;
			char shape[128] = "[";
			size_t off = 1;

			spotckpt_reader_tensor(r, i, &ti);
			for (int d = 0; d < ti.ndim && off < sizeof shape - 24; d++)
				off += (size_t)snprintf(shape + off, sizeof shape - off,
							"%s%" PRId64, d ? "," : "",
							ti.shape[d]);
			snprintf(shape + off, sizeof shape - off, "]");
			printf("%-40s %-5s %-20s %12" PRIu64 " %5d\n", ti.name,
			       spotckpt_dtype_name(ti.dtype), shape, ti.nbytes,
			       ti.shard);
		}
	}
	spotckpt_reader_close(r);
	return CLI_OK;
}

static int cmd_ckpt(int argc, char **argv)
{
	const char *sub = NULL;
	int rc = cli_opts_verb("ckpt", usage, USAGE, argc, argv, &sub, &argc, &argv);

	if (rc >= 0)
		return rc;
	if (!strcmp(sub, "ls"))
		return cmd_ls(argc, argv);
	if (!strcmp(sub, "verify"))
		return cmd_verify(argc, argv);
	if (!strcmp(sub, "inspect"))
		return cmd_inspect(argc, argv);
	if (!strcmp(sub, "bench"))
		return ckpt_bench_main(argc, argv);
	if (!strcmp(sub, "bench-sync"))
		return ckpt_bench_sync_main(argc, argv);
	return cli_usage_error("ckpt", "unknown subcommand '%s'", sub);
}

CLI_COMMAND("ckpt", "list, verify, inspect and benchmark checkpoints", cmd_ckpt)
