/*
 * prov_local.c - the `local` provider: a simulated multi-cloud spot market
 * on this machine.
 *
 * Offerings and spot availability come from localmkt (catalog + replayed
 * traces).  A node is a real spotrun-agent process started with
 * fork + execve (no shell) in its own session and work directory; the
 * node's metadata service is the daemon's /imds/{id} (routes_imds.c).
 * The node's token reaches it the way a local machine's "bootstrap
 * channel" can: a 0600 file in the node's work dir (<state>/nodes/<id>),
 * written here at provision, before the process may run.
 * Terminating a node SIGKILLs every process of its session, as a cloud
 * reclaiming an instance would.  A spot node is reclaimed when its pool's
 * trace turns unavailable; the reconciler then serves the notice and
 * kills the node when the notice deadline passes.  A pool's lost
 * capacity takes a job's instances one at a time, as a cloud's reclaims
 * of a fleet come instance by instance: the job's oldest node in that
 * pool is reclaimed, the next only once it is gone (so a gang loses one
 * node, keeps the others, and loses the next if the pool stays short).
 *
 * Injected interruptions (the local cloud's send-spot-instance-
 * interruptions, as AWS FIS offers): a file <state>/interrupts/<node id>
 * reclaims that one spot node on the next pass, whatever its pool does.
 * Tests and `make demo` preempt one node of a gang this way.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "ctl/auth.h"
#include "ctl/ctl_int.h"
#include "ctl/localmkt.h"
#include "ctl/proc.h"

struct local {
	struct ctl *c;
	struct localmkt *m;
};

static void local_destroy(void *st)
{
	struct local *l = st;

	if (!l)
		return;
	localmkt_free(l->m);
	free(l);
}

static int local_offerings(void *st, const struct prov_query *q, double sim_s,
			   struct prov_offering **out, size_t *n, struct sr_err *e)
{
	struct local *l = st;

	return localmkt_offerings(l->m, q, sim_s, out, n, e);
}

static int local_describe(void *st, int pool, double sim_s,
			  struct prov_offering *out)
{
	struct local *l = st;

	return localmkt_describe(l->m, pool, sim_s, out);
}

/* Environment handed to the agent: a short allow list (docs/api.md). */
static const char *const pass_env[] = {
	"PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "SPOTRUN_LIB",
	"SPOTRUN_LOG_LEVEL", "SPOTRUN_BUILD", "SPOTRUN_CHECK_MODE", "LD_PRELOAD",
	"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TMPDIR",
	"SPOTRUN_CA_CERT", "SPOTRUN_ISOLATION", NULL
};

struct gate_ud {
	int (*commit)(void *ud, const struct prov_node *n);
	void *ud;
	struct prov_node *n;
};

static int gate(void *ud, int64_t pid, int64_t start)
{
	struct gate_ud *g = ud;

	g->n->pid = pid;
	g->n->pid_start = start;
	return g->commit(g->ud, g->n);
}

/* The node's "disk": <state>/nodes/<id>. */
static void work_dir_of(const struct local *l, int64_t id, char *out, size_t cap)
{
	snprintf(out, cap, "%s/nodes/%" PRId64, l->c->state_dir, id);
}

static int local_provision(void *st, struct prov_node *n,
			   int (*commit)(void *ud, const struct prov_node *n),
			   void *ud, struct sr_err *e)
{
	struct local *l = st;
	struct ctl *c = l->c;
	char id[24], tokfile[2500], imds[256], logp[2500], wd[2400];
	char *argv[16], *envp[32];
	struct gate_ud g = { commit, ud, n };
	int64_t pid = 0, start = 0;
	size_t k = 0;
	int rc;

	work_dir_of(l, n->id, wd, sizeof wd);
	snprintf(id, sizeof id, "%" PRId64, n->id);
	snprintf(tokfile, sizeof tokfile, "%s/node.token", wd);
	snprintf(imds, sizeof imds, "%s/imds/%" PRId64, c->url, n->id);
	snprintf(logp, sizeof logp, "%s/agent.log", wd);
	if (!n->token)
		return sr_err_set(e, -EINVAL, "node %" PRId64 ": no token", n->id);
	rc = sr_fs_mkdir_p(wd, 0700);
	if (rc)
		return sr_err_set(e, rc, "%s: %s", wd, sr_strerror(rc));
	rc = ctl_token_write(tokfile, n->token, e);
	if (rc)
		return rc;
	argv[0] = c->agent_path;
	argv[1] = "--api";
	argv[2] = c->url;
	argv[3] = "--node-id";
	argv[4] = id;
	argv[5] = "--token-file";
	argv[6] = tokfile;
	argv[7] = "--workdir";
	argv[8] = wd;
	argv[9] = "--imds";
	argv[10] = imds;
	/* the workload must not see the state dir (admin token, database,
	 * every node's token): docs/security.md */
	argv[11] = "--private";
	argv[12] = c->state_dir;
	argv[13] = NULL;
	for (size_t i = 0; pass_env[i] && k < 30; i++) {
		const char *v = getenv(pass_env[i]);

		if (!v)
			continue;
		envp[k] = malloc(strlen(pass_env[i]) + strlen(v) + 2);
		if (!envp[k]) {
			rc = -ENOMEM;
			goto out;
		}
		sprintf(envp[k], "%s=%s", pass_env[i], v);
		k++;
	}
	envp[k] = NULL;
	rc = proc_spawn(argv, envp, wd, logp, gate, &g, &pid, &start, e);
	if (!rc)
		sr_info("local", "node started", "node=%" PRId64 " pid=%" PRId64
			" pool=%d spot=%d", n->id, pid, n->pool, n->spot);
out:
	for (size_t i = 0; i < k; i++)
		free(envp[i]);
	return rc;
}

static int rm_one(const char *p, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(p);
	else
		unlink(p);
	return 0;
}

/* rm -r WORK_DIR/ckpt, not following symlinks. */
static void ckpt_dir_remove(const char *work_dir)
{
	char path[4200];

	snprintf(path, sizeof path, "%s/ckpt", work_dir);
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int local_terminate(void *st, const struct prov_node *n)
{
	struct local *l = st;
	char wd[2400];

	if (n->pid > 0 && proc_kill_session(n->pid, n->pid_start) > 0)
		sr_info("local", "node killed", "node=%" PRId64 " pid=%" PRId64,
			n->id, n->pid);
	proc_reap();
	/* the instance's disk goes with it: its tier-2 checkpoints too */
	work_dir_of(l, n->id, wd, sizeof wd);
	ckpt_dir_remove(wd);
	return 0;
}

/* Whether <state>/interrupts/<id> asks to reclaim node `id`. */
static bool interrupt_injected(const struct local *l, int64_t id)
{
	char p[2200];
	struct stat sb;

	snprintf(p, sizeof p, "%s/interrupts/%" PRId64, l->c->state_dir, id);
	return stat(p, &sb) == 0;
}

/* Whether nodes[i] is its job's oldest spot node in its pool among the
 * live ones (the one a reclaim of that pool takes first). */
static bool oldest_of_job_in_pool(const struct prov_node *nodes, size_t n,
				  size_t i)
{
	for (size_t k = 0; k < n; k++) {
		if (nodes[k].spot && nodes[k].job_id == nodes[i].job_id &&
		    nodes[k].pool == nodes[i].pool && nodes[k].id < nodes[i].id)
			return false;
	}
	return true;
}

static int local_list(void *st, const struct prov_node *nodes, size_t n,
		      double sim_s, struct prov_obs *obs)
{
	struct local *l = st;

	proc_reap();
	for (size_t i = 0; i < n; i++) {
		obs[i].alive = nodes[i].pid > 0 &&
			       proc_alive(nodes[i].pid, nodes[i].pid_start);
		obs[i].reclaim = nodes[i].spot &&
				 ((!localmkt_available(l->m, nodes[i].pool, sim_s) &&
				   oldest_of_job_in_pool(nodes, n, i)) ||
				  interrupt_injected(l, nodes[i].id));
	}
	return 0;
}

static const struct prov_ops local_ops = {
	.name = "local",
	.shared_disk = true,
	.destroy = local_destroy,
	.offerings = local_offerings,
	.describe = local_describe,
	.provision = local_provision,
	.terminate = local_terminate,
	.list = local_list,
};

int ctl__prov_local_init(struct ctl *c, struct sr_err *e)
{
	struct local *l = calloc(1, sizeof *l);
	int rc;

	if (!l)
		return sr_err_set(e, -ENOMEM, "out of memory");
	l->c = c;
	rc = localmkt_load(c->data_dir, &l->m, e);
	if (rc) {
		free(l);
		return rc;
	}
	sr_info("local", "market loaded", "data=%s pools=%zu", c->data_dir,
		localmkt_npools(l->m));
	c->prov.ops = &local_ops;
	c->prov.st = l;
	return 0;
}
