/*
 * envp.c - the workload's environment (docs/api.md, "Workload environment
 * contract").
 *
 * Order of precedence, lowest first:
 *   1. the agent's own environment (spotrund passes only PATH, HOME, LANG,
 *      PYTHONPATH, SPOTRUN_LIB, SPOTRUN_LOG_LEVEL), minus anything that
 *      could carry the node token (SPOTRUN_AGENT_TOKEN);
 *   2. the job's `envs`; unless they set PYTHONPATH, the folder of the
 *      spotrun Python package the agent came with goes first on it
 *      (agent_python_dir), so a job finds `import spotrun`;
 *   3. the SPOTRUN_* contract, SkyPilot's SKYPILOT_* variables and the
 *      torch.distributed launch contract (MASTER_ADDR, MASTER_PORT,
 *      WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK, NNODES),
 *      which the job cannot override.
 * Values are passed as they are: they never go through a shell.
 *
 * The rendezvous port (envp_master_port) is a function of the job id and
 * the attempt, the same on every node of the gang, and different from one
 * attempt to the next: a rank left over from an old attempt knocks on a
 * port nobody of the new attempt listens on, so it can never join it
 * (docs/distributed.md).  spotrund sends the port it derived the same way
 * with a per-daemon salt (the run directive's master_port), which wins:
 * two daemons on one host then do not give their jobs the same ports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "common/signame.h"

extern char **environ;

struct envv {
	char **v;
	size_t n, cap;
};

static int valid_name(const char *k)
{
	if (!k[0] || (k[0] >= '0' && k[0] <= '9'))
		return 0;
	for (const char *p = k; *p; p++) {
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return 0;
	}
	return 1;
}

/* Set name=value, replacing an earlier entry of the same name. */
static int env_set(struct envv *ev, const char *name, const char *value)
{
	size_t nl = strlen(name);
	char *s = NULL;

	if (asprintf(&s, "%s=%s", name, value) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < ev->n; i++) {
		if (!strncmp(ev->v[i], name, nl) && ev->v[i][nl] == '=') {
			free(ev->v[i]);
			ev->v[i] = s;
			return 0;
		}
	}
	if (ev->n + 2 > ev->cap) {
		size_t cap = ev->cap ? ev->cap * 2 : 64;
		char **nv = realloc(ev->v, cap * sizeof *nv);

		if (!nv) {
			free(s);
			return -ENOMEM;
		}
		ev->v = nv;
		ev->cap = cap;
	}
	ev->v[ev->n++] = s;
	ev->v[ev->n] = NULL;
	return 0;
}

static int env_setf(struct envv *ev, const char *name, long long v)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%lld", v);
	return env_set(ev, name, buf);
}

void envp_free(char **envp)
{
	if (!envp)
		return;
	for (char **p = envp; *p; p++)
		free(*p);
	free(envp);
}

/* SkyPilot's variables, so torchrun lines from its examples work:
 * SKYPILOT_NODE_RANK, SKYPILOT_NUM_NODES, SKYPILOT_NUM_GPUS_PER_NODE and
 * SKYPILOT_NODE_IPS (one address per line, rank 0 first: the gang's
 * addresses from the attempt's `run` directive; before one arrives,
 * the master address for every rank), their older names SKY_NODE_RANK
 * and SKY_NODE_IPS, and the managed job's task id (the daemon's
 * task_id, the same on every node and attempt) as SKYPILOT_TASK_ID and
 * its deprecated names SKYPILOT_JOB_ID and SKYPILOT_SPOT_RUN_ID. */
static int sky_env(struct envv *ev, const struct assignment *a)
{
	const char *ip = a->master_addr ? a->master_addr : "127.0.0.1";
	size_t len = (strlen(ip) + 1) * (size_t)a->num_nodes + 1, k = 0;
	char *ips;
	int rc;

	if (a->node_ips)
		len = strlen(a->node_ips) + 1;
	ips = malloc(len);
	if (!ips)
		return -ENOMEM;
	ips[0] = '\0';
	if (a->node_ips)
		memcpy(ips, a->node_ips, len);
	for (int64_t i = 0; !a->node_ips && i < a->num_nodes; i++)
		k += (size_t)snprintf(ips + k, len - k, "%s%s", i ? "\n" : "", ip);
	rc = env_set(ev, "SKYPILOT_NODE_IPS", ips);
	if (rc == 0)
		rc = env_set(ev, "SKY_NODE_IPS", ips);
	free(ips);
	if (rc == 0)
		rc = env_setf(ev, "SKYPILOT_NODE_RANK", (long long)a->rank);
	if (rc == 0)
		rc = env_setf(ev, "SKY_NODE_RANK", (long long)a->rank);
	for (int i = 0; rc == 0 && a->task_id && i < 3; i++) {
		static const char *const names[] = {
			"SKYPILOT_TASK_ID", "SKYPILOT_JOB_ID", "SKYPILOT_SPOT_RUN_ID"
		};

		rc = env_set(ev, names[i], a->task_id);
	}
	if (rc == 0)
		rc = env_setf(ev, "SKYPILOT_NUM_NODES", (long long)a->num_nodes);
	if (rc == 0)
		rc = env_setf(ev, "SKYPILOT_NUM_GPUS_PER_NODE",
			      (long long)(a->gpus_per_node > 0 ? a->gpus_per_node : 1));
	return rc;
}

uint16_t envp_master_port(int64_t job_id, int attempt)
{
	/* consecutive attempts are consecutive ports (mod the range), so two
	 * attempts of one job collide only ENVP_PORT_SPAN attempts apart; the
	 * job id spreads jobs sharing a host over the range (7919 is prime,
	 * coprime with the span).  The range ends below Linux's ephemeral
	 * ports (32768..), which outgoing connections take. */
	uint64_t j = (uint64_t)(job_id < 0 ? -job_id : job_id) % ENVP_PORT_SPAN;
	uint64_t at = (uint64_t)(attempt < 0 ? 0 : attempt) % ENVP_PORT_SPAN;

	return (uint16_t)(ENVP_PORT_BASE + (j * 7919 + at) % ENVP_PORT_SPAN);
}

/* torchrun's contract, one rank per node: the workload process is rank
 * NODE_RANK of NNODES.  A `torchrun --nnodes=$NNODES --node_rank=$NODE_RANK
 * --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT` line in `run`
 * replaces RANK/LOCAL_RANK/WORLD_SIZE/LOCAL_WORLD_SIZE for the processes it
 * starts, as it does anywhere. */
static int torch_env(struct envv *ev, const struct assignment *a, int attempt)
{
	int rc = env_set(ev, "MASTER_ADDR",
			 a->master_addr ? a->master_addr : "127.0.0.1");

	if (rc == 0)
		rc = env_setf(ev, "MASTER_PORT", a->master_port > 0 ?
			      (long long)a->master_port :
			      (long long)envp_master_port(a->job_id, attempt));
	if (rc == 0)
		rc = env_setf(ev, "WORLD_SIZE", (long long)a->num_nodes);
	if (rc == 0)
		rc = env_setf(ev, "RANK", (long long)a->rank);
	if (rc == 0)
		rc = env_set(ev, "LOCAL_RANK", "0");
	if (rc == 0)
		rc = env_set(ev, "LOCAL_WORLD_SIZE", "1");
	if (rc == 0)
		rc = env_setf(ev, "NODE_RANK", (long long)a->rank);
	if (rc == 0)
		rc = env_setf(ev, "NNODES", (long long)a->num_nodes);
	return rc;
}

/* The spotrun package's folder first on PYTHONPATH (before what the
 * agent inherited), unless the job set PYTHONPATH itself. */
static int python_env(struct envv *ev, const struct assignment *a,
		      const char *dir)
{
	const char *inherited = getenv("PYTHONPATH");
	char *v = NULL;
	int rc;

	if (!dir || (a->envs && json_object_get(a->envs, "PYTHONPATH")))
		return 0;
	if (inherited && *inherited && strcmp(inherited, dir) != 0)
		rc = asprintf(&v, "%s:%s", dir, inherited) < 0 ? -ENOMEM : 0;
	else
		rc = (v = strdup(dir)) ? 0 : -ENOMEM;
	if (rc == 0)
		rc = env_set(ev, "PYTHONPATH", v);
	free(v);
	return rc;
}

char **envp_build(const struct assignment *a, int64_t node_id, int attempt,
		  const struct envp_files *f, struct sr_err *e)
{
	struct envv ev = { NULL, 0, 0 };
	const char *k;
	json_t *v;
	int rc = 0;

	for (char **p = environ; p && *p && rc == 0; p++) {
		char *eq = strchr(*p, '=');
		char name[256];

		if (!eq || (size_t)(eq - *p) >= sizeof name)
			continue;
		memcpy(name, *p, (size_t)(eq - *p));
		name[eq - *p] = '\0';
		if (!strcmp(name, "SPOTRUN_AGENT_TOKEN") ||
		    !strcmp(name, "SPOTRUN_TOKEN"))
			continue;
		rc = env_set(&ev, name, eq + 1);
	}
	if (a->envs) {
		json_object_foreach(a->envs, k, v) {
			if (rc < 0)
				break;
			if (!valid_name(k)) {
				rc = sr_err_set(e, -EINVAL, "envs: '%.64s' is not a "
						"valid variable name", k);
				break;
			}
			rc = env_set(&ev, k, json_string_value(v));
		}
	}
	if (rc == 0)
		rc = env_setf(&ev, "SPOTRUN_JOB_ID", (long long)a->job_id);
	if (rc == 0)
		rc = env_setf(&ev, "SPOTRUN_NODE_ID", (long long)node_id);
	if (rc == 0)
		rc = env_setf(&ev, "SPOTRUN_NODE_RANK", (long long)a->rank);
	if (rc == 0)
		rc = env_setf(&ev, "SPOTRUN_NUM_NODES", (long long)a->num_nodes);
	if (rc == 0)
		rc = env_setf(&ev, "SPOTRUN_ATTEMPT", attempt);
	if (rc == 0 && a->ckpt_dir)
		rc = env_set(&ev, "SPOTRUN_CKPT_DIR", a->ckpt_dir);
	if (rc == 0 && a->ckpt_uri)
		rc = env_set(&ev, "SPOTRUN_CKPT_URI", a->ckpt_uri);
	if (rc == 0)
		rc = python_env(&ev, a, f->python_dir);
	if (rc == 0 && f->home)
		rc = env_set(&ev, "HOME", f->home);
	if (rc == 0)
		rc = env_set(&ev, "SPOTRUN_NODE_DIR", f->node_dir);
	if (rc == 0)
		rc = env_set(&ev, "SPOTRUN_STATUS_FILE", f->status_file);
	if (rc == 0 && f->progress_file)
		rc = env_set(&ev, "SPOTRUN_PROGRESS_FILE", f->progress_file);
	if (rc == 0)
		rc = env_set(&ev, "SPOTRUN_NOTICE_FILE", f->notice_file);
	if (rc == 0)
		rc = env_set(&ev, "SPOTRUN_PREEMPT_SIGNAL",
			     sr_stop_signal_name(a->stop_signal) ?
			     sr_stop_signal_name(a->stop_signal) : "TERM");
	if (rc == 0 && f->sync_request)
		rc = env_set(&ev, "SPOTRUN_SYNC_REQUEST", f->sync_request);
	if (rc == 0 && f->sync_answers)
		rc = env_set(&ev, "SPOTRUN_SYNC_ANSWERS", f->sync_answers);
	if (rc == 0 && f->sync_pids)
		rc = env_set(&ev, "SPOTRUN_SYNC_PIDS", f->sync_pids);
	if (rc == 0)
		rc = env_set(&ev, "SPOTRUN_MASTER_ADDR",
			     a->master_addr ? a->master_addr : "127.0.0.1");
	if (rc == 0 && a->cloud)
		rc = env_set(&ev, "SPOTRUN_CLOUD", a->cloud);
	if (rc == 0 && a->region)
		rc = env_set(&ev, "SPOTRUN_REGION", a->region);
	if (rc == 0 && a->zone)
		rc = env_set(&ev, "SPOTRUN_ZONE", a->zone);
	if (rc == 0 && a->instance_type)
		rc = env_set(&ev, "SPOTRUN_INSTANCE_TYPE", a->instance_type);
	if (rc == 0 && a->spot >= 0)
		rc = env_set(&ev, "SPOTRUN_SPOT", a->spot ? "1" : "0");
	if (rc == 0)
		rc = sky_env(&ev, a);
	if (rc == 0)
		rc = torch_env(&ev, a, attempt);
	if (rc < 0) {
		if (e && !e->code)
			sr_err_set(e, rc, "workload environment: out of memory");
		envp_free(ev.v);
		return NULL;
	}
	return ev.v;
}
