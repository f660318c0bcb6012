/*
 * dirsync_syncer - lib/dirsync's loop for the crash test
 * (tests/py/test_dirsync.py): a bucket mount's syncer that takes a round
 * only when told ("sync" on stdin: the quiet time and the scan period
 * are an hour), so the test
 * decides what each round holds.
 *
 *   dirsync_syncer DIR URI [POINT]
 *
 * Events as `spotrun-agent --dirsync` prints them.  With POINT ("object":
 * one content object confirmed; "manifest": every object confirmed, the
 * manifest not sent; "retention": the round committed, retention not
 * run) the syncer stops at the first such point, prints "at POINT N" and
 * waits there to be killed.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dirsync/dirsync.h"
#include "dirsync/dirsync_loop.h"

static const char *stop_at;

static void test_point(const char *what, int64_t round)
{
	if (!stop_at || strcmp(what, stop_at))
		return;
	printf("at %s %lld\n", what, (long long)round);
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	struct dirsync_loop_opts o = {
		.quiet_ns = 3600 * 1000000000LL, .poll_ns = 3600 * 1000000000LL,
		.keep = 2, .workers = 4, .upload = 1, .cmd_fd = 0,
		.events = stdout };
	struct sr_err e = { 0 };

	if (argc < 3) {
		fprintf(stderr, "usage: dirsync_syncer DIR URI [POINT]\n");
		return 2;
	}
	o.dir = argv[1];
	o.uri = argv[2];
	stop_at = argc > 3 ? argv[3] : NULL;
	dirsync__test_point = test_point;
	if (dirsync_loop(&o, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	return 0;
}
