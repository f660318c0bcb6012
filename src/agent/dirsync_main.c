/*
 * dirsync_main.c - `spotrun-agent --dirsync DIR --uri URI [...]`: one
 * bucket mount's syncer (lib/dirsync, loop.c), which the agent runs
 * itself in the workload's isolation and as its user (mounts.c): it reads
 * nothing the workload could not, follows no link, and its only channels
 * are the command pipe (stdin), the events (stdout, JSON lines) and the
 * sync_now request/answer files.  Also usable by hand and by tests.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "dirsync/dirsync_loop.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: spotrun-agent --dirsync DIR --uri URI [--copy | --restore-only]\n"
		"                     [--quiet D] [--poll D] [--keep N] [--workers N]\n"
		"                     [--yield D]\n"
		"                     [--request FILE --answer FILE]\n\n"
		"Keep DIR in URI in whole rounds (a bucket mount; docs/jobs.md):\n"
		"restore the newest committed round into DIR, then upload every\n"
		"file once it has not changed for --quiet (default 2s), committing\n"
		"each round with its manifest written last.  A line 'sync' on stdin\n"
		"forces a round now; 'final', end of input or SIGTERM makes a last\n"
		"round (every file) and exits once it is committed.  Progress is\n"
		"printed as JSON lines.  It runs at a lower CPU and I/O priority\n"
		"(nice +10, best-effort level 7) than the training beside it, and\n"
		"its uploads wait while the workload writes into DIR (until 250ms\n"
		"after the last write, at most --yield at a stretch).\n\n"
		"  --copy          COPY mode: download URI's objects into DIR, exit\n"
		"  --restore-only  restore, then exit (ranks other than 0)\n"
		"  --keep N        rounds kept in the store (default 3)\n"
		"  --workers N     files uploaded at once (default 4)\n"
		"  --yield D       longest wait for the workload's writes (default\n"
		"                  60s; 0: never wait)\n"
		"  --request FILE  spotrun.sync_now()'s request ({\"request\": N})\n"
		"  --answer FILE   where its answer is written\n");
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "spotrun-agent --dirsync: %s '%s'\ntry 'spotrun-agent "
		"--dirsync --help'\n", what, arg ? arg : "");
	return 2;
}

int agent_dirsync_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dirsync", required_argument, NULL, 'd' },
		{ "uri", required_argument, NULL, 'u' },
		{ "copy", no_argument, NULL, 'c' },
		{ "restore-only", no_argument, NULL, 'r' },
		{ "quiet", required_argument, NULL, 'q' },
		{ "poll", required_argument, NULL, 'p' },
		{ "keep", required_argument, NULL, 'k' },
		{ "workers", required_argument, NULL, 'w' },
		{ "request", required_argument, NULL, 'R' },
		{ "answer", required_argument, NULL, 'A' },
		{ "yield", required_argument, NULL, 'y' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dirsync_loop_opts o = { .quiet_ns = 2 * SR_NS_PER_SEC, .keep = 3,
				       .workers = 4, .upload = 1, .cmd_fd = 0,
				       .events = stdout, .background = 1,
				       .yield_max_ns = 60 * SR_NS_PER_SEC };
	struct sr_err e;
	char *end;
	long v;
	int c, rc;

	optind = 1;
	opterr = 0;
	sr_err_clear(&e);
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o.dir = optarg; break;
		case 'u': o.uri = optarg; break;
		case 'c': o.copy = 1; break;
		case 'r': o.upload = 0; break;
		case 'R': o.request = optarg; break;
		case 'A': o.answer = optarg; break;
		case 'q':
			if (sr_dur_parse(optarg, &o.quiet_ns, &e) < 0 || o.quiet_ns < 0)
				return bad("--quiet: not a duration like 2s:", optarg);
			break;
		case 'y':
			if (sr_dur_parse(optarg, &o.yield_max_ns, &e) < 0 ||
			    o.yield_max_ns < 0)
				return bad("--yield: not a duration like 60s:", optarg);
			break;
		case 'p':
			if (sr_dur_parse(optarg, &o.poll_ns, &e) < 0 || o.poll_ns <= 0)
				return bad("--poll: not a duration like 500ms:", optarg);
			break;
		case 'k':
		case 'w':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 1 || v > 1000)
				return bad(c == 'k' ? "--keep: not 1..1000:"
						    : "--workers: not 1..1000:", optarg);
			if (c == 'k')
				o.keep = (int)v;
			else
				o.workers = (int)v;
			break;
		case 'h': usage(stdout); return 0;
		default: return bad("unknown or incomplete option", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad("unexpected argument", argv[optind]);
	if (!o.dir || !o.uri)
		return bad("DIR and --uri URI are required:", "");
	if ((o.request != NULL) != (o.answer != NULL))
		return bad("--request and --answer go together:", "");
	rc = dirsync_loop(&o, &e);
	if (rc < 0) {
		json_t *ev = json_pack("{s:s, s:s}", "event", "failed", "message",
				       sr_err_str(&e, rc));
		char *line = ev ? json_dumps(ev, JSON_COMPACT) : NULL;

		fprintf(stderr, "%s: %s\n", o.uri, sr_err_str(&e, rc));
		if (line)
			printf("%s\n", line);
		free(line);
		json_decref(ev);
		return 1;
	}
	return 0;
}
