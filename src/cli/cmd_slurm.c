/*
 * cmd_slurm.c - `spotrun slurm resume|suspend|resume-fail HOSTLIST`:
 * Slurm's power-saving programs for State=CLOUD nodes (docs/slurm.md,
 * "Spot bursting").  resume submits one spot job per node to spotrund
 * (its run: `spotrun slurm node NODE`, slurm_node.c), suspend and
 * resume-fail cancel it.  Every call is idempotent: a node whose job is
 * still live gets no second one, a node without a live job is no error.
 * The token comes from a file only its owner may read.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ctlcli.h"
#include "providers/slurm/slurm_burst.h"
#include "providers/slurm/slurm_cmd.h"
#include "slurmcli.h"

#define USAGE                                                                  \
	"usage: spotrun slurm resume HOSTLIST --token-file F --accelerators A\n" \
	"                            [--deadline [PARTITION=]D]... [--api URL]\n" \
	"                            [--cluster NAME] [--bin DIR] [--slurmd P]\n" \
	"                            [--slurm-conf F] [--spotrun P] [--json]\n" \
	"       spotrun slurm suspend HOSTLIST --token-file F [--api URL]\n"   \
	"                            [--cluster NAME] [--json]\n"              \
	"       spotrun slurm resume-fail HOSTLIST  (as suspend)\n"            \
	"       spotrun slurm node NODE [--slurmd P] [--bin DIR]\n"

enum {
	OPT_TOKEN = CLI_KEY_LONG, OPT_ACC, OPT_DEADLINE, OPT_CLUSTER, OPT_BIN,
	OPT_SLURMD, OPT_CONF, OPT_SPOTRUN, OPT_API,
};

static void usage(void)
{
	printf(USAGE "\n"
	       "Slurm's power-saving programs for State=CLOUD nodes: Slurm runs\n"
	       "them with a node list (ResumeProgram, SuspendProgram,\n"
	       "ResumeFailProgram), sbatch users burst onto spot capacity.\n\n"
	       "  resume       per node, submit a spot job named\n"
	       "               slurm-<cluster>-<node> (none when one is live):\n"
	       "               spotrund places it on the cheapest spot pool that\n"
	       "               meets its deadline; its run is `spotrun slurm\n"
	       "               node NODE`, the node's slurmd\n"
	       "  suspend      cancel each node's job\n"
	       "  resume-fail  the same (Slurm gave up on the node)\n"
	       "  node         on the instance: run slurmd -D -b -N NODE; at a\n"
	       "               spot notice (SIGTERM) drain the node, requeue its\n"
	       "               Slurm jobs and stop; a replacement lifts that\n"
	       "               drain once its slurmd answers\n\n"
	       "  --token-file F    spotrund's token (mode 0600, only its owner\n"
	       "                    may read it)\n"
	       "  --api URL         spotrund (default $SPOTRUN_API, else "
	       CTLC_DEFAULT_URL ")\n"
	       "  --accelerators A  the GPUs of one node, as a job file's\n"
	       "                    (V100:1, H100:8)\n"
	       "  --deadline [PARTITION=]D  the deadline when the node's Slurm\n"
	       "                    jobs name none in their comment (a word\n"
	       "                    deadline=D, as sbatch --comment deadline=12h);\n"
	       "                    repeatable, a partition's first\n"
	       "  --cluster NAME    in the job names (default slurm)\n"
	       "  --bin DIR         Slurm's commands, here and on the instance\n"
	       "                    (default: PATH)\n"
	       "  --slurmd P        slurmd on the instance (default\n"
	       "                    /usr/sbin/slurmd)\n"
	       "  --slurm-conf F    SLURM_CONF on the instance (default: this\n"
	       "                    process's $SLURM_CONF, none)\n"
	       "  --spotrun P       spotrun on the instance (default: this\n"
	       "                    program's path)\n"
	       "  --json            one JSON document: {\"nodes\": [...]}\n\n"
	       "HOSTLIST is Slurm's (b[1-4],c7), expanded by `scontrol show\n"
	       "hostnames`.  The exit status is 1 when any node failed.\n");
}

static const struct cli_optdef defs[] = {
	{ "token-file", OPT_TOKEN, CLI_ARG },
	{ "accelerators", OPT_ACC, CLI_ARG },
	{ "deadline", OPT_DEADLINE, CLI_REPEAT },
	{ "cluster", OPT_CLUSTER, CLI_ARG },
	{ "bin", OPT_BIN, CLI_ARG },
	{ "slurmd", OPT_SLURMD, CLI_ARG },
	{ "slurm-conf", OPT_CONF, CLI_ARG },
	{ "spotrun", OPT_SPOTRUN, CLI_ARG },
	{ "api", OPT_API, CLI_ARG },
	{ NULL, 0, 0 },
};

struct burst {
	bool resume;
	const char *token_file, *acc, *cluster, *bin, *slurmd, *conf;
	char spotrun[PATH_MAX];
	struct slurm_burst_deadline defs[SLURM_BURST_DEFS_MAX];
	int ndefs;
	struct ctlcli o;
};

/* The token of a file its owner alone may read: 0, or -1 (printed). */
static int read_token(const char *path, char **tok)
{
	struct sr_err e = { 0 };
	struct stat st;
	int rc;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "spotrun slurm: --token-file %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	if (st.st_mode & 077) {
		fprintf(stderr, "spotrun slurm: --token-file %s: mode %03o: a "
			"token file must be readable by its owner only (chmod "
			"600)\n", path, (unsigned)(st.st_mode & 0777));
		return -1;
	}
	rc = ctlc_read_token_file(path, tok, &e);
	if (rc < 0) {
		fprintf(stderr, "spotrun slurm: %s\n", sr_err_str(&e, rc));
		return -1;
	}
	return 0;
}

static int open_client(struct burst *b)
{
	const char *api = b->o.api ? b->o.api : getenv("SPOTRUN_API");
	char *tok = NULL;

	if (read_token(b->token_file, &tok))
		return -1;
	b->o.c = ctlc_create(api && *api ? api : CTLC_DEFAULT_URL, tok, NULL);
	explicit_bzero(tok, strlen(tok));
	free(tok);
	if (!b->o.c) {
		fprintf(stderr, "spotrun slurm: out of memory\n");
		return -1;
	}
	return 0;
}

/* The newest job named `name`: its id and whether it is still live (0),
 * none (1), or -1 (printed). */
static int find_job(struct burst *b, const char *name, int64_t *id, bool *live)
{
	static const char *const done[] = { "SUCCEEDED", "FAILED", "CANCELLED" };
	json_t *reply = NULL, *j;
	char path[256];
	const char *st;

	snprintf(path, sizeof path, "/v1/jobs?name=%s&limit=1", name);
	if (ctlcli_call(&b->o, "GET", path, NULL, &reply) < 0)
		return -1;
	j = json_array_get(json_object_get(reply, "jobs"), 0);
	if (!j) {
		json_decref(reply);
		return 1;
	}
	*id = ctlcli_int(j, "id", 0);
	st = json_string_value(json_object_get(j, "state"));
	*live = st != NULL;
	for (size_t i = 0; st && i < sizeof done / sizeof done[0]; i++)
		*live &= strcmp(st, done[i]) != 0;
	json_decref(reply);
	return 0;
}

/* The node's Slurm jobs, and what its spot job needs: 0 or -1 (why). */
static int need_of(struct burst *b, const char *node,
		   struct slurm_burst_need *need, char *why, size_t cap)
{
	const char *argv[] = { "squeue", "-h", "-w", node, "-o", "%i|%P|%l|%k",
			       NULL };
	struct slurm_burst_job v[SLURM_BURST_JOBS_MAX];
	struct sr_err e = { 0 };
	char *out = NULL;
	int n;

	if (slurm_cmd_run(b->bin, argv, NULL, &out, NULL, why, cap))
		return -1;
	n = slurm_burst_parse_jobs(out, v, SLURM_BURST_JOBS_MAX, &e);
	free(out);
	if (n < 0 || slurm_burst_need_of(v, n, b->defs, b->ndefs, need, &e) < 0) {
		snprintf(why, cap, "%s", e.msg);
		return -1;
	}
	return 0;
}

static int resume_node(struct burst *b, const char *node, const char *name,
		       json_t *rec)
{
	struct slurm_burst_spec s = {
		.name = name, .node = node, .accelerators = b->acc,
		.spotrun = b->spotrun, .slurmd = b->slurmd, .bin = b->bin,
		.slurm_conf = b->conf,
	};
	struct sr_err e = { 0 };
	json_t *body = NULL, *reply = NULL;
	char *yaml = NULL, why[512];
	int rc = -1;

	if (need_of(b, node, &s.need, why, sizeof why)) {
		fprintf(stderr, "spotrun slurm: resume %s: %s\n", node, why);
		return -1;
	}
	if (slurm_burst_job_yaml(&s, &yaml, &e) < 0) {
		fprintf(stderr, "spotrun slurm: resume %s: %s\n", node, e.msg);
		return -1;
	}
	body = json_pack("{s:s, s:s}", "spec_yaml", yaml, "spec_name", name);
	if (body && ctlcli_call(&b->o, "POST", "/v1/jobs", body, &reply) == 0) {
		int64_t id = ctlcli_int(json_object_get(reply, "job"), "id", 0);

		json_object_set_new(rec, "action", json_string("submitted"));
		json_object_set_new(rec, "job", json_integer(id));
		json_object_set_new(rec, "deadline_s", json_integer(s.need.deadline_s));
		json_object_set_new(rec, "deadline_from", json_string(s.need.why));
		if (!b->o.json)
			printf("%s: spot job %lld submitted (deadline %s%llds, "
			       "from %s)\n", node, (long long)id,
			       s.need.deadline_s < 0 ? "none " : "",
			       (long long)(s.need.deadline_s < 0 ? 0 :
					   s.need.deadline_s), s.need.why);
		rc = 0;
	}
	json_decref(body);
	json_decref(reply);
	free(yaml);
	return rc;
}

/* One node: 0, or -1 (printed). */
static int one_node(struct burst *b, const char *node, json_t *rec)
{
	char name[2 * SLURM_BURST_NAME_MAX + 16], path[96];
	int64_t id = 0;
	bool live = false;
	json_t *reply = NULL;
	int rc;

	snprintf(name, sizeof name, "slurm-%.40s-%.63s", b->cluster, node);
	json_object_set_new(rec, "node", json_string(node));
	json_object_set_new(rec, "name", json_string(name));
	rc = find_job(b, name, &id, &live);
	if (rc < 0)
		return -1;
	if (rc == 0 && live) {
		json_object_set_new(rec, "job", json_integer(id));
		if (b->resume) {
			json_object_set_new(rec, "action", json_string("live"));
			if (!b->o.json)
				printf("%s: spot job %lld is live already\n", node,
				       (long long)id);
			return 0;
		}
		snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", (long long)id);
		json_t *body = json_object();
		rc = ctlcli_call(&b->o, "POST", path, body, &reply);
		json_decref(body);
		json_decref(reply);
		if (rc < 0)
			return -1;
		json_object_set_new(rec, "action", json_string("cancelled"));
		if (!b->o.json)
			printf("%s: spot job %lld cancelled\n", node, (long long)id);
		return 0;
	}
	if (b->resume)
		return resume_node(b, node, name, rec);
	json_object_set_new(rec, "action", json_string("none"));
	if (!b->o.json)
		printf("%s: no live spot job\n", node);
	return 0;
}

static int opt(struct burst *b, struct cli_opts *p, int c)
{
	struct sr_err e = { 0 };

	switch (c) {
	case OPT_TOKEN: b->token_file = p->arg; break;
	case OPT_API: b->o.api = p->arg; break;
	case OPT_ACC: b->acc = p->arg; break;
	case OPT_CLUSTER:
		if (!slurm_burst_name_ok(p->arg) || strlen(p->arg) > 40)
			return cli_opts_error(p, "%s: '%s' is not a name of 1..40 "
					      "of [A-Za-z0-9_.-]", p->name, p->arg);
		b->cluster = p->arg;
		break;
	case OPT_BIN: b->bin = p->arg; break;
	case OPT_SLURMD: b->slurmd = p->arg; break;
	case OPT_CONF: b->conf = p->arg; break;
	case OPT_SPOTRUN: snprintf(b->spotrun, sizeof b->spotrun, "%s", p->arg); break;
	case OPT_DEADLINE:
		if (b->ndefs >= SLURM_BURST_DEFS_MAX)
			return cli_opts_error(p, "%s: at most %d", p->name,
					      SLURM_BURST_DEFS_MAX);
		if (slurm_burst_parse_deadline_opt(p->arg, &b->defs[b->ndefs], &e))
			return cli_opts_error(p, "%s: %s", p->name, e.msg);
		b->ndefs++;
		break;
	default:
		break;
	}
	return 0;
}

static int run(const char *sub, int argc, char **argv)
{
	static char names[SLURM_BURST_NODES_MAX][SLURM_BURST_NAME_MAX];
	struct burst b = { .resume = !strcmp(sub, "resume"), .cluster = "slurm",
			   .bin = "", .slurmd = "/usr/sbin/slurmd",
			   .o = { .cmd = "slurm" } };
	struct cli_opts p = { .cmd = "slurm", .sub = sub, .defs = defs,
			      .usage = usage, .flags = CLI_OPT_JSON,
			      .max_operands = 1 };
	const char *av[] = { "scontrol", "show", "hostnames", NULL, NULL };
	struct sr_err e = { 0 };
	json_t *doc = NULL, *arr;
	char *out = NULL, why[512];
	int c, n, failed = 0, rc;

	while ((c = cli_opts_next(&p, argc, argv)) > 0)
		if ((rc = opt(&b, &p, c)))
			return rc;
	if (c < 0)
		return p.status;
	b.o.json = p.json;
	if (!p.n_operands)
		return cli_opts_error(&p, "which nodes? (Slurm's HOSTLIST)");
	if (!b.token_file)
		return cli_opts_error(&p, "--token-file: where spotrund's token "
				      "is (mode 0600)");
	if (b.resume && !b.acc)
		return cli_opts_error(&p, "--accelerators: the GPUs of one node "
				      "(V100:1)");
	if (!b.conf)
		b.conf = getenv("SLURM_CONF") ? getenv("SLURM_CONF") : "";
	if (!b.spotrun[0]) {
		ssize_t k = readlink("/proc/self/exe", b.spotrun, sizeof b.spotrun - 1);

		b.spotrun[k > 0 ? k : 0] = '\0';
	}
	/* Slurm's commands are not ours: no sanitizer runtime for them */
	unsetenv("LD_PRELOAD");
	if (open_client(&b))
		return CLI_FAIL;
	av[3] = p.operand[0];
	if (slurm_cmd_run(b.bin, av, NULL, &out, NULL, why, sizeof why)) {
		fprintf(stderr, "spotrun slurm: %s: %s\n", sub, why);
		ctlcli_close(&b.o);
		return CLI_FAIL;
	}
	n = slurm_burst_parse_hostnames(out, names, SLURM_BURST_NODES_MAX, &e);
	free(out);
	if (n < 0) {
		fprintf(stderr, "spotrun slurm: %s %s: %s\n", sub, p.operand[0], e.msg);
		ctlcli_close(&b.o);
		return CLI_FAIL;
	}
	doc = json_pack("{s:s, s:[]}", "action", sub, "nodes");
	arr = json_object_get(doc, "nodes");
	for (int i = 0; arr && i < n; i++) {
		json_t *rec = json_object();

		if (!rec || one_node(&b, names[i], rec) < 0) {
			failed++;
			json_object_set_new(rec, "node", json_string(names[i]));
			json_object_set_new(rec, "action", json_string("failed"));
		}
		json_array_append_new(arr, rec);
	}
	if (b.o.json && doc)
		ctlcli_print_json(doc);
	json_decref(doc);
	ctlcli_close(&b.o);
	return failed || !arr ? CLI_FAIL : CLI_OK;
}

static int cmd_slurm(int argc, char **argv)
{
	const char *sub = NULL;
	int rc = cli_opts_verb("slurm", usage, USAGE, argc, argv, &sub, &argc, &argv);

	if (rc >= 0)
		return rc;
	if (!strcmp(sub, "node"))
		return slurmcli_node(argc, argv);
	if (strcmp(sub, "resume") && strcmp(sub, "suspend") &&
	    strcmp(sub, "resume-fail"))
		return cli_usage_error("slurm", "unknown subcommand '%s' (resume, "
				       "suspend, resume-fail, node)", sub);
	return run(sub, argc, argv);
}

CLI_COMMAND("slurm", "Slurm's power-saving programs: burst onto spot nodes",
	    cmd_slurm)
