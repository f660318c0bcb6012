/*
 * slurm_queue.c - the queue estimate of a partition (docs/slurm.md
 * "The queue estimate"): how long a job of k nodes would wait there,
 * read from the cluster now, never from a figure of ours.
 *
 * Inputs: sinfo's nodes and idle nodes of the partition
 * (slurm__parse_sinfo); the jobs running on its nodes, of any partition
 * (`sinfo -h -p PART -o %N`, then `squeue -h -w NODES -t RUNNING,
 * CONFIGURING,COMPLETING -o %T|%D|%L`: a preempting partition's jobs
 * hold the nodes of the partition it preempts), and its own pending jobs
 * (`squeue -h -p PART -t PENDING -o %T|%D|%L`): state, nodes, time left
 * (a running job's time to its limit, a pending job's limit).  A running
 * job that also holds nodes outside the partition counts them as freed
 * here too (an optimistic estimate where partitions only overlap).
 *
 * Estimate: the pending jobs are ahead of ours and take the first nodes
 * freed; the running jobs free theirs at their time limits (an upper
 * bound: they may end sooner).  So the wait is 0 when the idle nodes
 * cover k plus every pending job's nodes, else the time left of the
 * running job whose end brings the free nodes to that many.  Unknown
 * (-1) when a running job in the way has no limit, or the partition
 * cannot hold that many nodes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/slurm/slurm_int.h"

static int cmp_left(const void *a, const void *b)
{
	const struct slurm_qjob *x = a, *y = b;

	/* no limit (-1) last */
	if ((x->left_s < 0) != (y->left_s < 0))
		return x->left_s < 0 ? 1 : -1;
	return x->left_s < y->left_s ? -1 : x->left_s > y->left_s;
}

int slurm__parse_squeue_queue(const char *text, struct slurm_qjob *v, int max,
			      struct sr_err *e)
{
	int n = 0, lineno = 0;

	while (text && *text) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text);
		char line[160], *f[3], *end;
		int nf = 0;

		lineno++;
		if (len >= sizeof line)
			return sr_err_set(e, -EINVAL, "squeue: line %d: longer "
					  "than %zu bytes", lineno, sizeof line - 1);
		memcpy(line, text, len);
		line[len] = '\0';
		text += len + (nl != NULL);
		if (!line[0])
			continue;
		for (char *s = line; nf < 3; nf++) {
			f[nf] = s;
			s = strchr(s, '|');
			if (!s)
				break;
			*s++ = '\0';
		}
		if (nf != 2)
			return sr_err_set(e, -EINVAL, "squeue: line %d: expected "
					  "state|nodes|time left", lineno);
		if (n == max)
			continue; /* counted no further: the estimate says so */
		v[n].pending = !strcmp(f[0], "PENDING");
		v[n].nodes = (int)strtol(f[1], &end, 10);
		if (end == f[1] || *end || v[n].nodes < 1 || v[n].nodes > 1000000)
			return sr_err_set(e, -EINVAL, "squeue: line %d: node count "
					  "'%s'", lineno, f[1]);
		/* NOT_SET, INVALID: not known, as no limit */
		if (slurm__parse_time(f[2], &v[n].left_s))
			v[n].left_s = -1;
		n++;
	}
	return n;
}

int64_t slurm__queue_wait(const struct slurm_part *pt, struct slurm_qjob *v,
			  int n, int k, char *basis, size_t cap)
{
	int pend = 0, npend = 0, nrun = 0, free_n = pt->idle, need;
	int64_t wait = -1;
	const char *how;

	for (int i = 0; i < n; i++) {
		if (v[i].pending) {
			pend += v[i].nodes;
			npend++;
		} else {
			v[nrun++] = v[i]; /* the running ones first, in place */
		}
	}
	need = k + pend;
	qsort(v, (size_t)nrun, sizeof *v, cmp_left);
	if (k > pt->nodes) {
		how = "the partition has fewer nodes than the job";
	} else if (free_n >= need) {
		wait = 0;
		how = "starts now";
	} else {
		how = "nodes in use or down past every running job's limit";
		for (int i = 0; i < nrun; i++) {
			if (v[i].left_s < 0) {
				how = "a running job in the way has no time limit";
				break;
			}
			free_n += v[i].nodes;
			if (free_n >= need) {
				wait = v[i].left_s;
				how = "when running jobs reach their time limits "
				      "(an upper bound)";
				break;
			}
		}
	}
	snprintf(basis, cap, "sinfo/squeue: %d of %d nodes idle, %d running, "
		 "%d pending (%d nodes); %s", pt->idle, pt->nodes, nrun, npend,
		 pend, how);
	return wait;
}

/* One command's output (argv) appended to *text (malloc'd). */
static int run_add(struct slurm_prov *p, const char *const *argv, char **text,
		   struct sr_err *e)
{
	struct cloud_error err = { 0 };
	char *out = NULL, *t;
	size_t a = *text ? strlen(*text) : 0, b;
	int rc = slurm__run(p, argv, NULL, &out, &err);

	if (rc)
		return sr_err_set(e, rc, "%s", err.msg);
	b = strlen(out);
	t = realloc(*text, a + b + 2);
	if (!t) {
		free(out);
		return sr_err_set(e, -ENOMEM, "out of memory");
	}
	memcpy(t + a, out, b);
	t[a + b] = '\n';
	t[a + b + 1] = '\0';
	*text = t;
	free(out);
	return 0;
}

int slurm__queue_read(struct slurm_prov *p, const struct slurm_part *pt,
		      int nodes, int64_t *wait_s, char *basis, size_t cap,
		      struct sr_err *e)
{
	const char *nl_argv[] = { "sinfo", "-h", "-p", pt->name, "-o", "%N",
				  NULL };
	const char *pd_argv[] = { "squeue", "-h", "-p", pt->name, "-t",
				  "PENDING", "-o", "%T|%D|%L", NULL };
	char *list = NULL, *text = NULL;
	struct slurm_qjob *q = calloc(SLURM_QJOBS_MAX, sizeof *q);
	int n = 0, rc;

	if (!q)
		return sr_err_set(e, -ENOMEM, "out of memory");
	/* the jobs holding its nodes, of any partition (partitions may
	 * share nodes: a preempting one over a preemptible one) */
	rc = run_add(p, nl_argv, &list, e);
	if (!rc) {
		list[strcspn(list, "\n")] = '\0';
		if (list[0]) {
			const char *run_argv[] = { "squeue", "-h", "-w", list, "-t",
				"RUNNING,CONFIGURING,COMPLETING", "-o",
				"%T|%D|%L", NULL };

			rc = run_add(p, run_argv, &text, e);
		}
	}
	if (!rc)
		rc = run_add(p, pd_argv, &text, e);
	if (!rc)
		n = rc = slurm__parse_squeue_queue(text, q, SLURM_QJOBS_MAX, e);
	if (rc >= 0) {
		*wait_s = slurm__queue_wait(pt, q, n, nodes, basis, cap);
		rc = 0;
	}
	free(list);
	free(text);
	free(q);
	return rc;
}
