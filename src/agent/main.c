/*
 * main.c - spotrun-agent: the node agent (docs/agent.md, docs/api.md).
 *
 *   spotrun-agent --api URL --node-id N --workdir DIR
 *                 (--bootstrap-file PATH | --token-file PATH)
 *                 [--imds URL] [--private PATH]... [--isolation MODE]
 *                 [--notice SOURCES] [--notice-signal SIG] [--notice-lead D]
 *
 * Signals: SIGINT asks the agent to quit (the workload is stopped with a
 * short grace, the agent exits).  SIGTERM does the same, unless the
 * signal notice source claims it (--notice signal --notice-signal TERM,
 * as under Slurm): then SIGTERM is a preemption notice - final checkpoint,
 * the notice reported with its time, exit - and only SIGINT quits.
 *
 *   spotrun-agent --unpack DIR    (the agent runs this itself: sync.c)
 *   spotrun-agent --dirsync DIR --uri URI ...  (a bucket mount's syncer,
 *                                 run by the agent: dirsync_main.c)
 *   spotrun-agent --gpu-stat [--json]  (what NVML says: gpustat_main.c)
 *
 * A provider starts it with the node's one-time bootstrap secret
 * (--bootstrap-file, read and removed at once, or $SPOTRUN_AGENT_BOOTSTRAP),
 * which it trades for its node token at first contact (boot.c); the token
 * lives in its memory only.  --token-file (or $SPOTRUN_AGENT_TOKEN) gives
 * a token directly (tests, a hand-started agent).  Either variable is
 * wiped from the environment so the workload never sees it.  The agent is
 * not dumpable: a process of the same user cannot read its memory or
 * /proc/PID/environ (docs/security.md).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agent.h"
#include "bundle/bundle.h"
#include "common/log.h"
#include "common/timeutil.h"

static void on_quit(int sig)
{
	agent_quit_signal = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: spotrun-agent --api URL --node-id N --workdir DIR\n"
		"                     (--bootstrap-file PATH | --token-file PATH)\n"
		"                     [--imds URL] [--private PATH]... "
		"[--isolation MODE]\n\n"
		"The spotrun node agent.  spotrund's provider starts one per node;\n"
		"it registers, runs the job's setup and run as a process group,\n"
		"heartbeats, ships logs and utilisation, and on a spot interruption\n"
		"notice (AWS IMDSv2 at --imds) has the workload take a final\n"
		"checkpoint before the node goes away.\n\n"
		"  --api URL          spotrund base URL (e.g. http://127.0.0.1:7077)\n"
		"  --node-id N        this node's id\n"
		"  --bootstrap-file PATH  the node's one-time bootstrap secret\n"
		"                     (or $SPOTRUN_AGENT_BOOTSTRAP): read, the file\n"
		"                     removed, and traded for the node token at\n"
		"                     first contact (what providers start it with)\n"
		"  --token-file PATH  file holding the node token itself (or set\n"
		"                     $SPOTRUN_AGENT_TOKEN)\n"
		"  --workdir DIR      the node's private directory\n"
		"  --imds URL         metadata endpoint (default %s)\n"
		"  --orphan-timeout D stop the workload (final checkpoint) and exit\n"
		"                     when spotrund has not answered for D (default\n"
		"                     10m; 0 = never)\n"
		"  --retry-base D     while spotrund fails, the first retry waits\n"
		"                     D/2..D, doubling each time (default 200ms)\n"
		"  --retry-cap D      ... up to D/2..D (default 5s)\n"
		"  --private PATH     a file or directory the workload must not\n"
		"                     see (repeatable; spotrund passes its state dir)\n"
		"  --isolation MODE   auto (default, or $SPOTRUN_ISOLATION): hide\n"
		"                     --private and the token file from the workload\n"
		"                     with namespaces, or say once why not and run\n"
		"                     it anyway; strict: refuse to run it without\n"
		"                     full isolation; off\n"
		"  --notice SOURCES   where preemption notices come from, comma-\n"
		"                     separated (default imds): imds (IMDSv2 spot/\n"
		"                     instance-action and rebalance recommendations\n"
		"                     at --imds), scheduled-events (Azure's, at\n"
		"                     --imds; acknowledged after the final\n"
		"                     checkpoint), gce (the GCE metadata server at\n"
		"                     --imds: hanging GETs on instance/preempted and\n"
		"                     maintenance-event), signal (a scheduler's\n"
		"                     signal), none\n"
		"  --notice-signal S  the signal source's signal: USR1 (default),\n"
		"                     USR2 or TERM (then SIGTERM is a notice, not a\n"
		"                     quit: only SIGINT quits the agent)\n"
		"  --notice-lead D    the scheduler kills this long after its signal\n"
		"                     (default 30s): the notice's deadline\n\n"
		"$SPOTRUN_NODE_ADDR, when set, is the address this node's gang\n"
		"peers reach it at (rank 0's becomes MASTER_ADDR); without it\n"
		"spotrund takes the address the agent's requests come from.\n\n"
		"spotrun-agent --gpu-stat [--json] prints what the agent reads of\n"
		"this node's GPUs through NVML (--gpu-stat --help).\n",
		IMDS_DEFAULT_URL);
}

/* --unpack DIR: the job's files archive on stdin, unpacked under DIR,
 * its "~/" entries under $SPOTRUN_UNPACK_HOME when set (lib/bundle; run
 * by the agent in the workload's isolation, sync.c). */
static int unpack_main(const char *dir)
{
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap);
	struct sr_err e = { 0 };
	int rc;

	while (buf) {
		ssize_t n;

		if (len == cap) {
			char *nb = cap > BUNDLE_MAX_BYTES ? NULL : realloc(buf, cap * 2);

			if (!nb) {
				fprintf(stderr, "the job's files are over %u MiB, or out "
					"of memory\n", BUNDLE_MAX_BYTES >> 20);
				free(buf);
				return 1;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(0, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "reading the job's files: %s\n", strerror(errno));
			free(buf);
			return 1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (!buf) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	rc = bundle_unpack_home(buf, len, dir, getenv("SPOTRUN_UNPACK_HOME"), &e);
	free(buf);
	if (rc) {
		fprintf(stderr, "%s\n", sr_err_str(&e, rc));
		return 1;
	}
	return 0;
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "spotrun-agent: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry 'spotrun-agent --help'\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "api", required_argument, NULL, 'a' },
		{ "node-id", required_argument, NULL, 'n' },
		{ "token-file", required_argument, NULL, 't' },
		{ "bootstrap-file", required_argument, NULL, 'b' },
		{ "unpack", required_argument, NULL, 'U' },
		{ "workdir", required_argument, NULL, 'w' },
		{ "imds", required_argument, NULL, 'i' },
		{ "orphan-timeout", required_argument, NULL, 'o' },
		{ "private", required_argument, NULL, 'p' },
		{ "isolation", required_argument, NULL, 'I' },
		{ "notice", required_argument, NULL, 'N' },
		{ "notice-signal", required_argument, NULL, 'S' },
		{ "notice-lead", required_argument, NULL, 'L' },
		{ "retry-base", required_argument, NULL, 'r' },
		{ "retry-cap", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned char addr_buf[16];
	struct agent_opts o = { .imds = IMDS_DEFAULT_URL,
				.orphan_timeout_ns = 600 * SR_NS_PER_SEC,
				.notice_sources = NOTICE_SRC_IMDS,
				.notice_signal = SIGUSR1,
				.notice_lead_ns = 30 * SR_NS_PER_SEC };
	struct sigaction sa;
	struct sr_err e;
	char *token = NULL, *boot = NULL, *end;
	const char *env, *benv, *iso = getenv("SPOTRUN_ISOLATION");
	const char *boot_file = NULL;
	size_t npriv = 0;
	int c, rc;

	if (argc > 1 && !strncmp(argv[1], "--dirsync", 9))
		return agent_dirsync_main(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "--gpu-stat"))
		return agent_gpustat_main(argc, argv);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'a': o.api = optarg; break;
		case 't': o.token_file = optarg; break;
		case 'b': boot_file = optarg; break;
		case 'U': return unpack_main(optarg);
		case 'w': o.workdir = optarg; break;
		case 'i': o.imds = optarg; break;
		case 'I': iso = optarg; break;
		case 'N':
			sr_err_clear(&e);
			if (notice_sources_parse(optarg, &o.notice_sources, &e) < 0)
				return bad("--notice: %s", e.msg);
			break;
		case 'S':
			o.notice_signal = notice_signal_parse(optarg);
			if (o.notice_signal < 0)
				return bad("--notice-signal: '%s' is not TERM, USR1 "
					   "or USR2", optarg);
			break;
		case 'L':
			sr_err_clear(&e);
			if (sr_dur_parse(optarg, &o.notice_lead_ns, &e) < 0 ||
			    o.notice_lead_ns <= 0)
				return bad("--notice-lead: '%s' is not a duration "
					   "like 30s", optarg);
			break;
		case 'p':
			if (npriv + 1 >= sizeof o.private_paths / sizeof o.private_paths[0])
				return bad("--private: at most %zu paths",
					   sizeof o.private_paths /
					   sizeof o.private_paths[0] - 1);
			if (optarg[0] != '/')
				return bad("--private: '%s' is not an absolute path",
					   optarg);
			o.private_paths[npriv++] = optarg;
			break;
		case 'o':
			sr_err_clear(&e);
			if (sr_dur_parse(optarg, &o.orphan_timeout_ns, &e) < 0)
				return bad("--orphan-timeout: %s", sr_err_str(&e, -EINVAL));
			break;
		case 'r':
		case 'R': {
			int64_t *d = c == 'r' ? &o.retry_base_ns : &o.retry_cap_ns;

			sr_err_clear(&e);
			if (sr_dur_parse(optarg, d, &e) < 0 || *d < 1000000)
				return bad("--retry-%s: '%s' is not a duration of "
					   "1ms or more", c == 'r' ? "base" : "cap",
					   optarg);
			break;
		}
		case 'n':
			errno = 0;
			o.node_id = strtoll(optarg, &end, 10);
			if (errno || *end || o.node_id <= 0)
				return bad("--node-id: '%s' is not a positive "
					   "integer", optarg);
			break;
		case 'h': usage(stdout); return 0;
		default:
			return bad("unknown or incomplete option '%s'",
				   argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad("unexpected argument '%s'", argv[optind]);
	if (!o.api)
		return bad("%s", "--api is required");
	if ((o.retry_base_ns ? o.retry_base_ns : RETRY_BASE_NS) >
	    (o.retry_cap_ns ? o.retry_cap_ns : RETRY_CAP_NS))
		return bad("%s", "--retry-base is more than --retry-cap");
	if (!o.node_id)
		return bad("%s", "--node-id is required");
	if (!o.workdir)
		return bad("%s", "--workdir is required");
	if (!iso || !*iso || !strcmp(iso, "auto"))
		o.isolation = AGENT_ISO_AUTO;
	else if (!strcmp(iso, "strict"))
		o.isolation = AGENT_ISO_STRICT;
	else if (!strcmp(iso, "off"))
		o.isolation = AGENT_ISO_OFF;
	else
		return bad("--isolation (or $SPOTRUN_ISOLATION): '%s' is not "
			   "auto, strict or off", iso);
	/* nothing of ours is readable through /proc/PID/{mem,environ} or
	 * ptrace by another process of this user (the workload runs as it) */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	env = getenv("SPOTRUN_NODE_ADDR");
	if (env && *env && inet_pton(AF_INET, env, addr_buf) != 1 &&
	    inet_pton(AF_INET6, env, addr_buf) != 1)
		return bad("$SPOTRUN_NODE_ADDR: '%s' is not an IPv4 or IPv6 "
			   "address", env);
	env = getenv("SPOTRUN_AGENT_TOKEN");
	benv = getenv("SPOTRUN_AGENT_BOOTSTRAP");
	if (o.token_file && boot_file)
		return bad("%s", "--token-file and --bootstrap-file: give one");
	sr_err_clear(&e);
	if (boot_file) {
		rc = ctlc_read_token_file(boot_file, &boot, &e);
		/* one use: nothing the workload could read is left behind */
		if (rc == 0 && unlink(boot_file) < 0)
			fprintf(stderr, "spotrun-agent: %s: cannot remove it: %s\n",
				boot_file, strerror(errno));
	} else if (o.token_file) {
		rc = ctlc_read_token_file(o.token_file, &token, &e);
	} else if (env && *env) {
		token = strdup(env);
		rc = token ? 0 : -ENOMEM;
	} else if (benv && *benv) {
		boot = strdup(benv);
		rc = boot ? 0 : -ENOMEM;
	} else {
		return bad("%s", "--bootstrap-file or --token-file (or "
			   "$SPOTRUN_AGENT_BOOTSTRAP / $SPOTRUN_AGENT_TOKEN) is "
			   "required");
	}
	/* unsetenv only drops the pointer: the bytes stay in the initial
	 * environment block, which /proc/PID/environ shows */
	if (env)
		explicit_bzero((char *)env, strlen(env));
	if (benv)
		explicit_bzero((char *)benv, strlen(benv));
	unsetenv("SPOTRUN_AGENT_TOKEN");
	unsetenv("SPOTRUN_AGENT_BOOTSTRAP");
	if (rc < 0) {
		fprintf(stderr, "spotrun-agent: %s\n", sr_err_str(&e, rc));
		return 1;
	}
	sr_log_secret(token ? token : boot);

	/* "agent, quit": SIGINT, and SIGTERM unless a scheduler's notice
	 * signal is SIGTERM (notice.c installs that one's handler) */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_quit;
	sigemptyset(&sa.sa_mask);
	if (!(o.notice_sources & NOTICE_SRC_SIGNAL) || o.notice_signal != SIGTERM)
		sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* the notice signal is caught from now on (a handler, never
	 * SIG_IGN, which the workload would inherit through execve) */
	if (o.notice_sources & NOTICE_SRC_SIGNAL &&
	    notice_signal_install(o.notice_signal) < 0) {
		fprintf(stderr, "spotrun-agent: --notice-signal: %s\n",
			strerror(errno));
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	/* orphans of the workload (its /bin/sh killed first) are ours to reap */
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	rc = agent_run(&o, token, boot);
	if (token)
		explicit_bzero(token, strlen(token));
	if (boot)
		explicit_bzero(boot, strlen(boot));
	free(token);
	free(boot);
	return rc < 0 ? 1 : 0;
}
