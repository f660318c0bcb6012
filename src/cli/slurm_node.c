/*
 * slurm_node.c - `spotrun slurm node NODE`: the run of a burst node's
 * spot job (cmd_slurm.c submits it; docs/slurm.md "Spot bursting").
 *
 * It starts `slurmd -D -b -N NODE` (its own process group, so the
 * agent's signal to the workload reaches this process alone) and waits:
 *   - while the node is drained for SLURM_BURST_REASON (the spot notice
 *     of the instance this one replaces) with jobs still on it, slurmd
 *     is not started yet: that requeue is finishing (bounded);
 *   - until the node answers Slurm: that drain is lifted once no job is
 *     left on the node - never an administrator's drain; slurmd failing
 *     before then is started again (START_TRIES);
 *   - SIGTERM with the agent's notice file present (a spot notice):
 *     drain the node, requeue its Slurm jobs (they resume from their
 *     checkpoints), wait (bounded) until they have left it, stop slurmd;
 *   - SIGTERM without it (the job cancelled: Slurm suspended the node),
 *     SIGINT: stop slurmd;
 *   - slurmd exiting on its own: its status is ours.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cliopt.h"
#include "common/timeutil.h"
#include "providers/slurm/slurm_burst.h"
#include "providers/slurm/slurm_cmd.h"
#include "slurmcli.h"

#define SETTLE_S 600      /* how long to watch for the node to answer */
#define LEAVE_S 120       /* for the requeued jobs to leave the node */
#define STOP_S 15         /* for slurmd to stop on SIGTERM */
#define START_TRIES 10    /* slurmd starts before the node answers */

enum { OPT_SLURMD = CLI_KEY_LONG, OPT_BIN };

struct node {
	const char *name, *slurmd, *bin;
	pid_t pid;
	int status;
	bool exited;
};

static void usage(void)
{
	printf("usage: spotrun slurm node NODE [--slurmd PATH] [--bin DIR]\n\n"
	       "The run of a burst node's spot job (spotrun slurm resume submits\n"
	       "it): slurmd -D -b -N NODE.  At a spot notice it drains NODE\n"
	       "(reason \"" SLURM_BURST_REASON "\"), requeues its Slurm jobs,\n"
	       "waits until they have left and stops slurmd; the instance that\n"
	       "replaces it lifts that drain once its slurmd answers.\n\n"
	       "  --slurmd PATH  (default $SPOTRUN_SLURM_SLURMD, else\n"
	       "                 /usr/sbin/slurmd)\n"
	       "  --bin DIR      Slurm's commands (default $SPOTRUN_SLURM_BIN,\n"
	       "                 else PATH)\n");
}

static const char *env_or(const char *k, const char *dflt)
{
	const char *v = getenv(k);

	return v && *v ? v : dflt;
}

static int run_quiet(const struct node *n, const char *const *argv, char **out)
{
	char why[512];
	char *o = NULL;

	if (slurm_cmd_run(n->bin, argv, NULL, &o, NULL, why, sizeof why)) {
		fprintf(stderr, "spotrun slurm node %s: %s\n", n->name, why);
		return -1;
	}
	if (out)
		*out = o;
	else
		free(o);
	return 0;
}

static int start_slurmd(struct node *n, const sigset_t *old)
{
	char *const argv[] = { (char *)n->slurmd, "-D", "-b", "-N",
			       (char *)n->name, NULL };

	n->pid = fork();
	if (n->pid < 0) {
		fprintf(stderr, "spotrun slurm node: fork: %s\n", strerror(errno));
		return -1;
	}
	if (n->pid == 0) {
		setpgid(0, 0);
		sigprocmask(SIG_SETMASK, old, NULL);
		execv(n->slurmd, argv);
		fprintf(stderr, "spotrun slurm node: %s: %s\n", n->slurmd,
			strerror(errno));
		_exit(127);
	}
	printf("node %s: slurmd started (pid %d)\n", n->name, (int)n->pid);
	fflush(stdout);
	return 0;
}

static bool reap(struct node *n)
{
	if (!n->exited && waitpid(n->pid, &n->status, WNOHANG) == n->pid)
		n->exited = true;
	return n->exited;
}

/* The node's Slurm jobs, comma-separated, into buf ("" none): 0 or -1. */
static int jobs_on(const struct node *n, char *buf, size_t cap);

/* The node's state now: 0, or -1 (printed). */
static int node_state(const struct node *n, bool *responding, bool *ours)
{
	const char *argv[] = { "sinfo", "-h", "-n", n->name, "-o", "%T|%E", NULL };
	char *out = NULL;
	int rc;

	if (run_quiet(n, argv, &out))
		return -1;
	out[strcspn(out, "\n")] = '\0';
	rc = slurm_burst_node_line(out, responding, ours);
	free(out);
	return rc < 0 ? -1 : 0;
}

/* The instance replaced waits (bounded) until the notice's requeue has
 * taken every job off the node before this one's slurmd registers it. */
static void wait_for_requeue(const struct node *n)
{
	int64_t end = sr_time_mono_ns() + LEAVE_S * SR_NS_PER_SEC;
	bool responding = false, ours = false, said = false;
	char ids[4096];

	while (sr_time_mono_ns() < end) {
		if (node_state(n, &responding, &ours) || !ours ||
		    jobs_on(n, ids, sizeof ids) || !ids[0])
			return;
		if (!said)
			printf("node %s: waiting for the requeue of jobs %s\n",
			       n->name, ids);
		fflush(stdout);
		said = true;
		usleep(200 * 1000);
	}
}

/* The node answers: lift our own drain once no job is left on the node
 * (the replaced instance's requeue is done).  true once settled. */
static bool settle(const struct node *n)
{
	const char *up[] = { "scontrol", "update", NULL, "state=resume", NULL };
	bool responding = false, ours = false;
	char kv[96], ids[4096];

	if (node_state(n, &responding, &ours) || !responding)
		return false;
	if (!ours)
		return true;
	if (jobs_on(n, ids, sizeof ids) || ids[0])
		return false;
	snprintf(kv, sizeof kv, "nodename=%s", n->name);
	up[2] = kv;
	if (run_quiet(n, up, NULL))
		return false;
	printf("node %s: answers; the spot notice's drain lifted\n", n->name);
	fflush(stdout);
	return true;
}

static int jobs_on(const struct node *n, char *buf, size_t cap)
{
	const char *argv[] = { "squeue", "-h", "-w", n->name, "-o", "%i", NULL };
	char *out = NULL;
	size_t k = 0;

	buf[0] = '\0';
	if (run_quiet(n, argv, &out))
		return -1;
	for (char *p = strtok(out, "\n"); p; p = strtok(NULL, "\n")) {
		if (!*p || k + strlen(p) + 2 > cap)
			continue;
		k += (size_t)snprintf(buf + k, cap - k, "%s%s", k ? "," : "", p);
	}
	free(out);
	return 0;
}

static void drain_and_requeue(struct node *n)
{
	const char *drain[] = { "scontrol", "update", NULL, "state=drain",
				"reason=" SLURM_BURST_REASON, NULL };
	const char *requeue[] = { "scontrol", "requeue", NULL, NULL };
	char kv[96], ids[4096];
	int64_t end = sr_time_mono_ns() + LEAVE_S * SR_NS_PER_SEC;

	snprintf(kv, sizeof kv, "nodename=%s", n->name);
	drain[2] = kv;
	if (run_quiet(n, drain, NULL) == 0)
		printf("node %s: spot notice: drained (reason \"%s\")\n", n->name,
		       SLURM_BURST_REASON);
	if (jobs_on(n, ids, sizeof ids) == 0 && ids[0]) {
		requeue[2] = ids;
		if (run_quiet(n, requeue, NULL) == 0)
			printf("node %s: Slurm jobs %s requeued\n", n->name, ids);
	}
	fflush(stdout);
	/* their steps end through this slurmd: keep it until they have */
	while (sr_time_mono_ns() < end && !reap(n)) {
		if (jobs_on(n, ids, sizeof ids) == 0 && !ids[0])
			break;
		usleep(200 * 1000);
	}
	printf("node %s: %s\n", n->name, ids[0] ? "jobs still on the node at "
	       "the limit" : "no Slurm job left on the node");
	fflush(stdout);
}

static void stop_slurmd(struct node *n)
{
	int64_t end = sr_time_mono_ns() + STOP_S * SR_NS_PER_SEC;

	if (reap(n))
		return;
	kill(n->pid, SIGTERM);
	while (!reap(n) && sr_time_mono_ns() < end)
		usleep(50 * 1000);
	if (!reap(n)) {
		kill(n->pid, SIGKILL);
		waitpid(n->pid, &n->status, 0);
		n->exited = true;
	}
}

int slurmcli_node(int argc, char **argv)
{
	static const struct cli_optdef defs[] = {
		{ "slurmd", OPT_SLURMD, CLI_ARG },
		{ "bin", OPT_BIN, CLI_ARG },
		{ NULL, 0, 0 },
	};
	struct cli_opts p = { .cmd = "slurm", .sub = "node", .defs = defs,
			      .usage = usage, .max_operands = 1 };
	struct node n = { .slurmd = env_or("SPOTRUN_SLURM_SLURMD",
					    "/usr/sbin/slurmd"),
			  .bin = env_or("SPOTRUN_SLURM_BIN", "") };
	int64_t settle_end = sr_time_mono_ns() + SETTLE_S * SR_NS_PER_SEC;
	struct timespec tick = { 0, 500 * 1000 * 1000 };
	const char *notice = getenv("SPOTRUN_NOTICE_FILE");
	bool settled = false;
	sigset_t set, old;
	int c, sig, starts = 0;

	while ((c = cli_opts_next(&p, argc, argv)) > 0) {
		if (c == OPT_SLURMD)
			n.slurmd = p.arg;
		else
			n.bin = p.arg;
	}
	if (c < 0)
		return p.status;
	if (!p.n_operands)
		return cli_opts_error(&p, "which node? (its Slurm name)");
	n.name = p.operand[0];
	if (!slurm_burst_name_ok(n.name))
		return cli_opts_error(&p, "'%s' is not a node name "
				      "([A-Za-z0-9_.-])", n.name);
	unsetenv("LD_PRELOAD"); /* slurmd and Slurm's commands are not ours */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	wait_for_requeue(&n);
	if (start_slurmd(&n, &old))
		return CLI_FAIL;
	for (;;) {
		sig = sigtimedwait(&set, NULL, &tick);
		/* slurmd failing before the node ever answered (its port still
		 * held, munge not up yet at boot): started again, boundedly */
		if (reap(&n) && !settled && ++starts < START_TRIES &&
		    !(WIFEXITED(n.status) && WEXITSTATUS(n.status) == 0) &&
		    sig != SIGTERM && sig != SIGINT) {
			printf("node %s: slurmd ended before the node answered; "
			       "starting it again (%d of %d)\n", n.name,
			       starts + 1, START_TRIES);
			sleep(1);
			n.exited = false;
			if (start_slurmd(&n, &old))
				return CLI_FAIL;
			continue;
		}
		if (n.exited)
			break;
		if (sig == SIGTERM && notice && access(notice, F_OK) == 0) {
			drain_and_requeue(&n);
			break;
		}
		if (sig == SIGTERM || sig == SIGINT) {
			printf("node %s: stopping (%s)\n", n.name,
			       sig == SIGINT ? "SIGINT" : "SIGTERM, no notice");
			break;
		}
		if (!settled && sr_time_mono_ns() < settle_end)
			settled = settle(&n);
	}
	stop_slurmd(&n);
	printf("node %s: slurmd ended (%s %d)\n", n.name,
	       WIFEXITED(n.status) ? "exit" : "signal",
	       WIFEXITED(n.status) ? WEXITSTATUS(n.status) : WTERMSIG(n.status));
	fflush(stdout);
	return WIFEXITED(n.status) ? WEXITSTATUS(n.status) : CLI_FAIL;
}
