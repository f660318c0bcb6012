/*
 * ckpt_uploader - a training loop stand-in for the tier-3 crash tests
 * (tests/py/test_objstore_crash.py): saves checkpoints with a remote
 * store as fast as tier 2 allows, until killed.
 *
 *   ckpt_uploader LOCAL_DIR URI FIRST_STEP [WAIT|final [POINT]]
 *
 * Three tensors: "w" 6 MiB float32 (two 5 MiB-part multipart uploads when
 * it is in a shard of its own), "b" 64 KiB int64, "s" one int64 = step.
 * Every byte is a function of the step (see fill()), so a reader can
 * check that what it restored is exactly step N's state.  With WAIT = 1
 * each save waits for its upload (more kills land mid-upload; a failed
 * upload is reported on stderr and training goes on).  With WAIT =
 * final each step is a final save straight into the store
 * (spotckpt_save_final_ex, SPOTCKPT_FINAL_STORE_ONLY: tier 2 never
 * written, the upload in this thread; a failed one is reported on
 * stderr and the next step goes on).  Prints "ready"
 * once tier 3 is set, then "saved N" after each save, and "stored N"
 * whenever spotckpt_remote_stats() reports a newer step in the store.
 * With POINT ("shard": a shard confirmed, "manifest": every shard
 * confirmed, the manifest not sent; "retention": an old step's manifest
 * deleted, its shards not yet) the uploader stops at the first such
 * point, prints "at POINT N" and waits there to be killed: a kill at
 * exactly that point of the protocol.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "objstore/tier3.h"
#include "spotrun/ckpt.h"

#define W_N (3u << 19)    /* 1.5 Mi floats = 6 MiB */
#define B_N (8u << 10)    /* 8 Ki int64 = 64 KiB */

static void fill(float *w, int64_t *b, int64_t *s, int64_t step)
{
	for (uint32_t i = 0; i < W_N; i++)
		w[i] = (float)((step * 7 + i) % 1000003);
	for (uint32_t i = 0; i < B_N; i++)
		b[i] = step * 1000 + i;
	*s = step;
}

static const char *g_stop_at;

/* The uploader's thread, at a point of the protocol (tier3.c). */
static void stop_at(const char *what, int64_t step)
{
	if (strcmp(what, g_stop_at))
		return;
	printf("at %s %lld\n", what, (long long)step);
	fflush(stdout);
	for (;;)
		pause(); /* until the kill */
}

int main(int argc, char **argv)
{
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;
	float *w = malloc(W_N * sizeof *w);
	int64_t *b = malloc(B_N * sizeof *b), s = 0;
	int64_t wshape[1] = { W_N }, bshape[1] = { B_N };
	int64_t step, stored = -1;
	int wait, final, rc;

	if (argc < 4 || !w || !b) {
		fprintf(stderr, "usage: ckpt_uploader LOCAL_DIR URI FIRST_STEP "
			"[WAIT|final [POINT]]\n");
		return 2;
	}
	step = strtoll(argv[3], NULL, 10);
	wait = argc > 4 && !strcmp(argv[4], "1");
	final = argc > 4 && !strcmp(argv[4], "final");
	if (argc > 5) {
		g_stop_at = argv[5];
		objstore__tier3_test_point = stop_at;
	}
	spotckpt_opts_init(&o);
	o.dir = argv[1];
	o.keep = 2;
	o.shard_bytes = 4u << 20; /* w alone in shard 0; b and s in shard 1 */
	rc = spotckpt_open(&o, &e);
	if (rc == 0)
		rc = spotckpt_register(e, "w", w, SPOTCKPT_F32, 1, wshape,
				       SPOTCKPT_DEV_CPU);
	if (rc == 0)
		rc = spotckpt_register(e, "b", b, SPOTCKPT_I64, 1, bshape,
				       SPOTCKPT_DEV_CPU);
	if (rc == 0)
		rc = spotckpt_register(e, "s", &s, SPOTCKPT_I64, 0, NULL,
				       SPOTCKPT_DEV_CPU);
	if (rc == 0)
		rc = spotckpt_set_remote(e, argv[2]);
	if (rc) {
		fprintf(stderr, "ckpt_uploader: %s: %s\n", spotckpt_strerror(rc),
			spotckpt_errmsg());
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;; step++) {
		fill(w, b, &s, step);
		if (final) {
			/* an upload that fails leaves the store's previous
			 * step: say so and go on */
			if (spotckpt_save_final_ex(e, step, NULL, 0,
						   SPOTCKPT_FINAL_STORE_ONLY, NULL))
				fprintf(stderr, "ckpt_uploader: step %lld: final: "
					"%s\n", (long long)step, spotckpt_errmsg());
			rc = 0;
		} else {
			rc = spotckpt_save(e, step, NULL, 0, NULL);
		}
		if (rc == 0 && wait) {
			rc = spotckpt_wait(e);
			/* a failed upload does not stop training: say so and go
			 * on (the next save is uploaded again) */
			if (rc == 0 && spotckpt_remote_wait(e, step, 0, NULL))
				fprintf(stderr, "ckpt_uploader: step %lld: upload: "
					"%s\n", (long long)step, spotckpt_errmsg());
		}
		if (rc) {
			fprintf(stderr, "ckpt_uploader: step %lld: %s: %s\n",
				(long long)step, spotckpt_strerror(rc),
				spotckpt_errmsg());
			return 1;
		}
		printf("saved %lld\n", (long long)step);
		/* what the library reports in the store: the kill test checks
		 * that it really is there */
		{
			struct spotckpt_remote_stats rs;

			if (spotckpt_remote_stats(e, &rs, NULL, 0) == 0 &&
			    rs.uploaded_step > stored) {
				stored = rs.uploaded_step;
				printf("stored %lld\n", (long long)stored);
			}
		}
		fflush(stdout);
	}
}
