/*
 * slurm_cmd.c - running Slurm's commands (sbatch, squeue, scancel,
 * sinfo) for the slurm provider and `spotrun slurm` (slurm_cmd.h), and
 * reading what they print.
 *
 * A command is exec'd with an argv (sr_proc_run): no shell, so nothing a
 * user wrote (a partition, a path) is ever parsed twice.  Its
 * environment is this process's, plus SLURM_CONF when the provider is
 * configured with one, plus what the caller adds (sbatch exports it all
 * to the job).  A command that exits non-zero is an error whose class is
 * read from its message (slurm__classify):
 *
 *   controller unreachable, timeouts, "try again"      transient (retry)
 *   invalid partition, time limit, account, option     invalid (the job)
 *   node configuration not available                   capacity
 *   QOS / association / job count limits              quota
 *   access or permission denied, invalid user          auth
 *   anything else                                      invalid, quoted
 *
 * Output formats are fixed, '|'-separated (slurm__parse_sinfo; the
 * driver's squeue lines, slurm_drv.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/proc.h"
#include "common/timeutil.h"
#include "providers/slurm/slurm_cmd.h"
#include "providers/slurm/slurm_int.h"

#define ENV_MAX 1024

extern char **environ;

static const struct {
	const char *needle;
	enum cloud_err_class cls;
} classes[] = {
	{ "Unable to contact slurm controller", CLOUD_ETRANSIENT },
	{ "Socket timed out", CLOUD_ETRANSIENT },
	{ "Connection refused", CLOUD_ETRANSIENT },
	{ "Zero Bytes were transmitted", CLOUD_ETRANSIENT },
	{ "try again", CLOUD_ETRANSIENT },
	{ "Slurm temporarily unable", CLOUD_ETRANSIENT },
	{ "did not finish within", CLOUD_ETRANSIENT },
	{ "Requested node configuration is not available", CLOUD_ECAPACITY },
	{ "QOS", CLOUD_EQUOTA },
	{ "AssocMax", CLOUD_EQUOTA },
	{ "job submit limit", CLOUD_EQUOTA },
	{ "Access/permission denied", CLOUD_EAUTH },
	{ "Invalid user", CLOUD_EAUTH },
	{ "Authentication", CLOUD_EAUTH },
};

enum cloud_err_class slurm__classify(const char *msg)
{
	for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
		if (strstr(msg, classes[i].needle))
			return classes[i].cls;
	}
	return CLOUD_EINVALID;
}

/* envp: ours without SLURM_CONF, then SLURM_CONF=..., then extra. */
static char **env_of(struct slurm_prov *p, const char *const *extra,
		     char *conf_kv, size_t cap)
{
	char **v = calloc(ENV_MAX + 1, sizeof *v);
	size_t n = 0;

	if (!v)
		return NULL;
	/* ours that a launch sets are never inherited (one of each) */
	for (char **e = environ; e && *e && n < ENV_MAX - SLURM_EXTRA_MAX - 1;
	     e++) {
		if (strncmp(*e, "SLURM_CONF=", 11) &&
		    strncmp(*e, "SPOTRUN_SLURM_", 14) &&
		    strncmp(*e, "SPOTRUN_AGENT_BOOTSTRAP", 23))
			v[n++] = *e;
	}
	if (p->slurm_conf[0]) {
		snprintf(conf_kv, cap, "SLURM_CONF=%s", p->slurm_conf);
		v[n++] = conf_kv;
	}
	for (size_t i = 0; extra && extra[i] && n < ENV_MAX; i++)
		v[n++] = (char *)extra[i];
	return v;
}

int slurm_cmd_run(const char *bin, const char *const *argv, char *const *envp,
		  char **out, enum cloud_err_class *cls, char *why, size_t cap)
{
	char *av[SLURM_CMD_ARGS], path[512], errbuf[2048], line[400];
	char *buf = malloc(SLURM_CMD_OUT_MAX);
	struct sr_err se = { 0 };
	enum cloud_err_class c = CLOUD_ETRANSIENT;
	size_t n = 0, k = 0;
	int status = -1, rc;

	*out = NULL;
	if (!buf) {
		snprintf(why, cap, "%s: out of memory", argv[0]);
		rc = -ENOMEM;
		goto out;
	}
	snprintf(path, sizeof path, "%s%s%s", bin, bin[0] ? "/" : "", argv[0]);
	av[k++] = path;
	for (size_t i = 1; argv[i] && k < SLURM_CMD_ARGS - 1; i++)
		av[k++] = (char *)argv[i];
	av[k] = NULL;
	rc = sr_proc_run(av, envp, SLURM_CMD_TIMEOUT_S * SR_NS_PER_SEC, buf,
			 SLURM_CMD_OUT_MAX, &n, errbuf, sizeof errbuf, &status, &se);
	if (rc) {
		c = rc == -ENOENT ? CLOUD_EINVALID : CLOUD_ETRANSIENT;
		snprintf(why, cap, "%s", se.msg);
		goto out;
	}
	if (status != -1 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		size_t cmd = strlen(argv[0]);
		bool named;

		sr_proc_first_line(errbuf[0] ? errbuf : buf, line, sizeof line);
		/* Slurm's lines name the command already ("sbatch: error:") */
		named = !strncmp(line, argv[0], cmd) && line[cmd] == ':';
		c = slurm__classify(line);
		snprintf(why, cap, "%s%s%s", named ? "" : argv[0],
			 named ? "" : ": ", line[0] ? line : "failed with no message");
		rc = -EIO;
		goto out;
	}
	*out = buf;
	buf = NULL;
out:
	if (rc && cls)
		*cls = c;
	free(buf);
	return rc;
}

int slurm__run(struct slurm_prov *p, const char *const *argv,
	       const char *const *extra, char **out, struct cloud_error *err)
{
	char conf_kv[560], why[SR_ERR_MSG_MAX];
	char **envp = env_of(p, extra, conf_kv, sizeof conf_kv);
	enum cloud_err_class cls = CLOUD_ETRANSIENT;
	int rc;

	*out = NULL;
	if (!envp)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	rc = slurm_cmd_run(p->bin, argv, envp, out, &cls, why, sizeof why);
	free(envp);
	if (rc)
		return cloud_err_set(err, cls, NULL, "%s", why);
	return 0;
}

/* Bounds that keep the sum below INT64_MAX: 10^6 days, 10^7 in any other
 * field (19 years in minutes); Slurm's own limits are far below. */
#define SLURM_DAYS_MAX 1000000L
#define SLURM_FIELD_MAX 10000000L

int slurm__parse_time(const char *s, int64_t *out_s)
{
	long f[4] = { 0 };
	long days = 0;
	int nf = 0;
	const char *q = s;
	char *end;

	if (!strcmp(s, "UNLIMITED") || !strcmp(s, "infinite")) {
		*out_s = -1;
		return 0;
	}
	if (strchr(s, '-')) {
		days = strtol(s, &end, 10);
		if (end == s || *end != '-' || days < 0 || days > SLURM_DAYS_MAX)
			return -EINVAL;
		q = end + 1;
	}
	while (nf < 3) {
		f[nf++] = strtol(q, &end, 10);
		if (end == q || f[nf - 1] < 0 || f[nf - 1] > SLURM_FIELD_MAX)
			return -EINVAL;
		if (*end != ':')
			break;
		q = end + 1;
	}
	if (*end != '\0')
		return -EINVAL;
	/* minutes; min:sec; h:min:sec; with days: hours[:min[:sec]] */
	if (strchr(s, '-')) {
		long h = f[0], m = nf > 1 ? f[1] : 0, sec = nf > 2 ? f[2] : 0;

		*out_s = ((days * 24 + h) * 60 + m) * 60 + sec;
	} else if (nf == 1) {
		*out_s = f[0] * 60;
	} else if (nf == 2) {
		*out_s = f[0] * 60 + f[1];
	} else {
		*out_s = (f[0] * 60 + f[1]) * 60 + f[2];
	}
	return 0;
}

/* "gpu:2", "gpu:a100:8(S:0-1)", "nic:1,gpu:h100:4": GPUs per node. */
static void gres_gpus(const char *g, int *count, char *type, size_t cap)
{
	const char *p = strstr(g, "gpu:");

	*count = 0;
	type[0] = '\0';
	if (!p || (p != g && p[-1] != ','))
		return;
	p += 4;
	if (*p < '0' || *p > '9') { /* typed */
		size_t n = strcspn(p, ":,(");

		snprintf(type, cap, "%.*s", (int)n, p);
		p += n;
		if (*p != ':')
			return;
		p++;
	}
	*count = atoi(p);
}

int slurm__parse_sinfo(const char *text, struct slurm_part *parts, int max,
		       struct sr_err *e)
{
	int n = 0, lineno = 0;

	while (*text) {
		char line[512], *f[6], *save = NULL;
		size_t len = strcspn(text, "\n");
		struct slurm_part *pt = NULL;
		int nf = 0, nodes, gpus;
		char type[24];

		lineno++;
		snprintf(line, sizeof line, "%.*s", (int)len, text);
		text += len + (text[len] == '\n');
		if (!line[0])
			continue;
		for (char *t = strtok_r(line, "|", &save); t && nf < 6;
		     t = strtok_r(NULL, "|", &save))
			f[nf++] = t;
		if (nf != 6 || (nodes = atoi(f[1])) < 0)
			return sr_err_set(e, -EINVAL, "sinfo: line %d: expected "
					  "partition|nodes|avail|timelimit|gres|"
					  "state", lineno);
		for (int i = 0; i < n; i++)
			if (!strcmp(parts[i].name, f[0]))
				pt = &parts[i];
		if (!pt) {
			if (n == max)
				continue;
			pt = &parts[n++];
			memset(pt, 0, sizeof *pt);
			snprintf(pt->name, sizeof pt->name, "%s", f[0]);
			pt->up = !strcmp(f[2], "up");
			if (slurm__parse_time(f[3], &pt->max_time_s))
				return sr_err_set(e, -EINVAL, "sinfo: line %d: "
						  "time limit '%s'", lineno, f[3]);
		}
		pt->nodes += nodes;
		if (!strncmp(f[5], "idle", 4))
			pt->idle += nodes;
		gres_gpus(f[4], &gpus, type, sizeof type);
		if (gpus > pt->gpus) {
			pt->gpus = gpus;
			snprintf(pt->gpu_type, sizeof pt->gpu_type, "%s", type);
		}
	}
	return n;
}
