/*
 * test_market_mounts.c - SkyPilot's bucket file_mounts and the other keys
 * of a SkyPilot spot task (issue 30): every form maps to the bucket's
 * URI and mode, survives the JSON the daemon stores, and every form
 * spotrun cannot honour is an error naming file, line and key - all of
 * them in one run.  resources.spot_recovery is job_recovery's older name.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "jobspec_diag.h"

static void dump(const struct jobspec_diag *d)
{
	for (size_t i = 0; i < d->n_errors; i++)
		fprintf(stderr, "  error: %s\n", d->errors[i]);
}

#define HEAD "resources: {accelerators: H100:8}\nrun: python t.py\n"

/* Each accepted form: its URI, store and mode. */
static void test_bucket_forms(void **state)
{
	static const struct {
		const char *yaml, *dst, *uri, *store;
		enum jobspec_mode mode;
	} cases[] = {
		{ "file_mounts:\n  /checkpoint:\n    source: s3://my-bucket/ckpt/\n"
		  "    mode: MOUNT_CACHED\n", "/checkpoint", "s3://my-bucket/ckpt",
		  "s3", JOBSPEC_MODE_MOUNT_CACHED },
		{ "file_mounts:\n  /data: s3://my-bucket/imagenet\n", "/data",
		  "s3://my-bucket/imagenet", "s3", JOBSPEC_MODE_COPY },
		{ "file_mounts:\n  ~/ckpt: {source: gs://g-bucket, store: gcs}\n",
		  "~/ckpt", "gs://g-bucket", "gcs", JOBSPEC_MODE_MOUNT },
		{ "file_mounts:\n  /out:\n    source: https://acct.blob.core.windows.net/cont/run1\n"
		  "    mode: copy\n", "/out", "az://acct/cont/run1", "azure",
		  JOBSPEC_MODE_COPY },
		{ "file_mounts:\n  /out: {source: az://acct/cont, persistent: true}\n",
		  "/out", "az://acct/cont", "azure", JOBSPEC_MODE_MOUNT },
		{ "file_mounts:\n  /ckpt: {name: my-ckpts, store: s3, mode: MOUNT}\n",
		  "/ckpt", "s3://my-ckpts", "s3", JOBSPEC_MODE_MOUNT },
		/* name: alone takes spotrun.checkpoint.uri's store ... */
		{ "file_mounts:\n  /ckpt: {name: my-ckpts}\n"
		  "spotrun: {checkpoint: {uri: 'gs://other/x'}}\n",
		  "/ckpt", "gs://my-ckpts", "gcs", JOBSPEC_MODE_MOUNT },
		/* ... else the job's one cloud's */
		{ "file_mounts:\n  /ckpt: {name: my-ckpts}\n"
		  "resources: {accelerators: H100:8, infra: aws}\n",
		  "/ckpt", "s3://my-ckpts", "s3", JOBSPEC_MODE_MOUNT },
		{ "file_mounts:\n  /ckpt: {name: my-ckpts}\n"
		  "resources: {accelerators: H100:8, infra: GCP/us-central1}\n",
		  "/ckpt", "gs://my-ckpts", "gcs", JOBSPEC_MODE_MOUNT },
		/* envs filled in as SkyPilot does: ${X} and $X, in DST, source:
		 * and name:, whichever of envs/file_mounts comes first; a name
		 * envs does not give stays as written */
		{ "file_mounts:\n  /models/llama-${SIZE}b:\n"
		  "    source: s3://$BUCKET/llama-${SIZE}b\n    mode: MOUNT_CACHED\n"
		  "envs: {SIZE: 7, BUCKET: wts}\n", "/models/llama-7b",
		  "s3://wts/llama-7b", "s3", JOBSPEC_MODE_MOUNT_CACHED },
		{ "envs: {RUN: r1}\nfile_mounts:\n  ~/ckpt-$RUN: {name: 'ckpts-${RUN}', "
		  "store: s3}\n", "~/ckpt-r1", "s3://ckpts-r1", "s3",
		  JOBSPEC_MODE_MOUNT },
		{ "envs: {A: x}\nfile_mounts:\n  /d/$NOT_SET: s3://b-$A/p$\n",
		  "/d/$NOT_SET", "s3://b-x/p$", "s3", JOBSPEC_MODE_COPY },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct jobspec js, back;
		struct jobspec_diag d;
		struct sr_err e = { 0 };
		char y[1024];
		json_t *j;

		snprintf(y, sizeof y, "%s%s", strstr(cases[i].yaml, "resources:") ?
			 "run: python t.py\n" : HEAD, cases[i].yaml);
		if (parse(y, &js, &d, &e)) {
			dump(&d);
			fail_msg("case %zu: %s", i, e.msg);
		}
		assert_int_equal(js.n_buckets, 1);
		assert_int_equal(js.n_mounts, 0);
		assert_string_equal(js.buckets[0].dst, cases[i].dst);
		assert_string_equal(js.buckets[0].uri, cases[i].uri);
		assert_string_equal(js.buckets[0].store, cases[i].store);
		assert_int_equal(js.buckets[0].mode, cases[i].mode);
		/* the stored form reads back the same */
		j = jobspec_to_json(&js);
		assert_non_null(j);
		if (jobspec_from_json(j, &back, &e))
			fail_msg("case %zu: from_json: %s", i, e.msg);
		assert_int_equal(back.n_buckets, 1);
		assert_string_equal(back.buckets[0].uri, cases[i].uri);
		assert_string_equal(back.buckets[0].store, cases[i].store);
		assert_int_equal(back.buckets[0].mode, cases[i].mode);
		json_decref(j);
		jobspec_free(&back);
		jobspec_free(&js);
		jobspec_diag_free(&d);
	}
}

/* {source: ./local, mode: COPY} is a local mount, as DST: ./local. */
static void test_local_source_copy(void **state)
{
	struct jobspec js;
	struct jobspec_diag d;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(parse(HEAD "file_mounts:\n  /data: {source: ./d, mode: COPY}\n"
			       "  /cfg: ./cfg.yaml\n", &js, &d, &e), 0);
	assert_int_equal(js.n_mounts, 2);
	assert_int_equal(js.n_buckets, 0);
	assert_string_equal(js.mounts[0].src, "./d");
	jobspec_free(&js);
	jobspec_diag_free(&d);
}

/* Everything spotrun cannot honour, in one file: one error per problem,
 * each with its line and key. */
static void test_bucket_errors_at_once(void **state)
{
	static const char *const want[] = {
		"t.yaml:4: file_mounts./a.source: 'r2://b': r2:// buckets are not supported",
		"t.yaml:5: file_mounts./b.mode: unknown mode 'MOUNTED'; expected one of: MOUNT",
		"t.yaml:6: file_mounts./c.store: 'ibm' is not supported",
		"t.yaml:7: file_mounts./d.persistent: false is not supported",
		"t.yaml:8: file_mounts./e.config: not supported; spotrun's sync settings",
		"t.yaml:9: file_mounts./f: name: with a bucket source",
		"t.yaml:10: file_mounts./g: store gcs differs from the source's (s3)",
		"t.yaml:11: file_mounts./h.source: './x' is a local path",
		"t.yaml:12: file_mounts.rel/dir: 'rel/dir' is not a destination",
		"t.yaml:13: file_mounts./i.source: 's3://Bad_Bucket': ",
		"t.yaml:14: file_mounts./j: give source: (a bucket URL) or name:",
		"t.yaml:15: file_mounts./k.sorce: unknown key; expected one of: source",
		"t.yaml:16: file_mounts./l.name: an Azure container needs its storage account",
		"t.yaml:17: file_mounts./m: name: nm without source: or store:",
		"t.yaml:18: file_mounts./n.store: unknown store 's4'; expected one of: s3",
		"t.yaml:20: file_mounts: /ckpt/inner lies inside the bucket mount /ckpt/ (line 19)",
		"t.yaml:19: file_mounts./ckpt/: /ckpt/cfg (a local mount) lies inside",
		"t.yaml:22: file_mounts./o: 'ftp://x/y': ftp:// is not a bucket URL",
		"t.yaml:23: file_mounts./p.name: 'b/p' is not a bucket name",
	};
	const char *y =
		"resources: {accelerators: H100:8}\n"                 /* 1 */
		"run: python t.py\n"                                  /* 2 */
		"file_mounts:\n"                                      /* 3 */
		"  /a: {source: r2://b}\n"                            /* 4 */
		"  /b: {source: s3://bkt, mode: MOUNTED}\n"             /* 5 */
		"  /c: {source: s3://bkt, store: ibm}\n"                /* 6 */
		"  /d: {source: s3://bkt, persistent: false}\n"         /* 7 */
		"  /e: {source: s3://bkt, config: {x: 1}}\n"            /* 8 */
		"  /f: {source: s3://bkt, name: bkt}\n"                   /* 9 */
		"  /g: {source: s3://bkt, store: gcs}\n"                /* 10 */
		"  /h: {source: ./x}\n"                               /* 11 */
		"  rel/dir: s3://bkt\n"                                 /* 12 */
		"  /i: {source: 's3://Bad_Bucket'}\n"                 /* 13 */
		"  /j: {mode: COPY}\n"                                /* 14 */
		"  /k: {sorce: s3://bkt}\n"                             /* 15 */
		"  /l: {name: c, store: azure}\n"                     /* 16 */
		"  /m: {name: nm}\n"                                  /* 17 */
		"  /n: {name: nm, store: s4}\n"                       /* 18 */
		"  /ckpt/: {source: s3://bkt/ckpt, mode: MOUNT_CACHED}\n" /* 19 */
		"  /ckpt/inner: s3://bkt/x\n"                           /* 20 */
		"  /ckpt/cfg: ./cfg\n"                                /* 21 */
		"  /o: ftp://x/y\n"                                   /* 22 */
		"  /p: {name: b/p, store: s3}\n";                     /* 23 */
	struct jobspec js;
	struct jobspec_diag d;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(parse(y, &js, &d, &e), -SR_EPARSE);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		if (!has(&d, want[i])) {
			dump(&d);
			fail_msg("missing: %s", want[i]);
		}
	}
	if (d.n_errors != sizeof want / sizeof want[0]) {
		dump(&d);
		fail_msg("%zu errors, want %zu", d.n_errors, sizeof want / sizeof want[0]);
	}
	jobspec_diag_free(&d);
}

/* The stored JSON is checked like the YAML: a bad URI, store or DST from
 * an API client is refused, naming the mount. */
static void test_bucket_json_checked(void **state)
{
	static const struct { const char *m, *err; } cases[] = {
		{ "{\"uri\": \"s3://bkt\", \"store\": \"gcs\", \"mode\": \"MOUNT\"}",
		  "file_mounts./x.uri: 's3://bkt' is not a gs:// URI" },
		{ "{\"uri\": \"s3://bkt\", \"store\": \"s3\", \"mode\": \"SYNC\"}",
		  "file_mounts./x.mode: 'SYNC'" },
		{ "{\"uri\": \"s3://bkt/../c\", \"store\": \"s3\", \"mode\": \"COPY\"}",
		  "" },
		{ "{\"uri\": \"s3://bkt\", \"store\": \"s3\", \"mode\": \"COPY\", \"x\": 1}",
		  "unknown field 'x'" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct jobspec js;
		struct sr_err e = { 0 };
		char buf[512];
		json_t *j;

		snprintf(buf, sizeof buf, "{\"run\": \"x\", \"resources\": "
			 "{\"accelerators\": \"H100:8\"}, \"file_mounts\": "
			 "{\"/x\": %s}}", cases[i].m);
		j = json_loads(buf, 0, NULL);
		assert_non_null(j);
		assert_int_not_equal(jobspec_from_json(j, &js, &e), 0);
		if (!strstr(e.msg, cases[i].err))
			fail_msg("case %zu: '%s'", i, e.msg);
		json_decref(j);
	}
}

/* spot_recovery is job_recovery; both given must agree. */
static void test_spot_recovery(void **state)
{
	struct jobspec js;
	struct jobspec_diag d;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(parse(HEAD "resources: {accelerators: H100:8, "
			       "spot_recovery: failover}\n", &js, &d, &e), -SR_EPARSE);
	jobspec_diag_free(&d); /* duplicate resources key: write it whole */
	assert_int_equal(parse("run: x\nresources:\n  accelerators: H100:8\n"
			       "  spot_recovery: failover\n", &js, &d, &e), 0);
	assert_string_equal(js.recovery, "FAILOVER");
	assert_true(d.n_notes >= 1);
	jobspec_free(&js);
	jobspec_diag_free(&d);
	assert_int_equal(parse("run: x\nresources:\n  accelerators: H100:8\n"
			       "  spot_recovery: {strategy: EAGER_NEXT_REGION, "
			       "max_restarts_on_errors: 2}\n"
			       "  job_recovery: {strategy: eager_next_region, "
			       "max_restarts_on_errors: 2}\n", &js, &d, &e), 0);
	assert_string_equal(js.recovery, "EAGER_NEXT_REGION");
	assert_int_equal(js.max_restarts_on_errors, 2);
	jobspec_free(&js);
	jobspec_diag_free(&d);
	assert_int_equal(parse("run: x\nresources:\n  accelerators: H100:8\n"
			       "  job_recovery: FAILOVER\n"
			       "  spot_recovery: {strategy: FAILOVER, "
			       "max_restarts_on_errors: 3}\n", &js, &d, &e), -SR_EPARSE);
	assert_true(has(&d, "t.yaml:5: resources.spot_recovery: differs from "
			"resources.job_recovery (line 4)"));
	jobspec_diag_free(&d);
	/* a bad strategy under the old name is named under it */
	assert_int_equal(parse("run: x\nresources:\n  accelerators: H100:8\n"
			       "  spot_recovery: RETRY\n", &js, &d, &e), -SR_EPARSE);
	assert_true(has(&d, "t.yaml:4: resources.spot_recovery: unknown strategy 'RETRY'"));
	jobspec_diag_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_forms),
		cmocka_unit_test(test_local_source_copy),
		cmocka_unit_test(test_bucket_errors_at_once),
		cmocka_unit_test(test_bucket_json_checked),
		cmocka_unit_test(test_spot_recovery),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
