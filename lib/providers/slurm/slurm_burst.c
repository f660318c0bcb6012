/*
 * slurm_burst.c - spot bursting's text: node names, job comments, squeue
 * and sinfo lines, the spot job's file (slurm_burst.h).
 */
#include "providers/slurm/slurm_burst.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "providers/slurm/slurm_int.h"

bool slurm_burst_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= SLURM_BURST_NAME_MAX || s[0] == '-' || s[0] == '.')
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		      "0123456789_.-") == n;
}

int slurm_burst_parse_hostnames(const char *text,
				char (*names)[SLURM_BURST_NAME_MAX], int max,
				struct sr_err *e)
{
	int n = 0, line = 0;

	for (const char *p = text; *p;) {
		size_t len = strcspn(p, "\n");
		char buf[SLURM_BURST_NAME_MAX];

		line++;
		if (len && p[len - 1] == '\r')
			len--;
		if (len >= sizeof buf)
			return sr_err_set(e, -EINVAL, "hostnames line %d: a name "
					  "of %zu bytes (at most %d)", line, len,
					  SLURM_BURST_NAME_MAX - 1);
		memcpy(buf, p, len);
		buf[len] = '\0';
		p += strcspn(p, "\n");
		if (*p)
			p++;
		if (!len)
			continue;
		if (!slurm_burst_name_ok(buf))
			return sr_err_set(e, -EINVAL, "hostnames line %d: '%.63s' "
					  "is not a node name ([A-Za-z0-9_.-])",
					  line, buf);
		if (n >= max)
			return sr_err_set(e, -E2BIG, "more than %d nodes in one "
					  "call", max);
		memcpy(names[n++], buf, len + 1);
	}
	return n;
}

int slurm_burst_comment_deadline(const char *comment, int64_t *out_s,
				 struct sr_err *e)
{
	static const char sep[] = " \t\r\n,;";
	static const char key[] = "deadline=";

	for (const char *p = comment; *p;) {
		size_t len;

		p += strspn(p, sep);
		len = strcspn(p, sep);
		if (len > sizeof key - 1 && !strncmp(p, key, sizeof key - 1)) {
			char v[64];
			int64_t ns = 0;
			size_t vl = len - (sizeof key - 1);

			if (vl >= sizeof v)
				return sr_err_set(e, -EINVAL, "comment: deadline=: "
						  "a value of %zu bytes", vl);
			memcpy(v, p + sizeof key - 1, vl);
			v[vl] = '\0';
			if (sr_dur_parse(v, &ns, e) < 0 || ns < 1000000000) {
				sr_err_clear(e);
				return sr_err_set(e, -EINVAL, "comment: deadline=%s: "
						  "not a duration of 1s or more "
						  "like 90m, 12h or 2d", v);
			}
			*out_s = ns / 1000000000;
			return 1;
		}
		p += len;
	}
	return 0;
}

/* Copy at most cap - 1 bytes of [s, s + n) into dst, NUL-ended. */
static void cut(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

int slurm_burst_parse_jobs(const char *text, struct slurm_burst_job *v,
			   int max, struct sr_err *e)
{
	int n = 0, line = 0;

	for (const char *p = text; *p;) {
		size_t len = strcspn(p, "\n");
		const char *f[3], *end = p + len;
		char id[24], lim[32];
		struct slurm_burst_job j = { 0 };
		char *x = NULL;

		line++;
		if (!len) {
			p = *end ? end + 1 : end;
			continue;
		}
		/* %i|%P|%l|%k: the comment last, so it may hold '|' */
		f[0] = memchr(p, '|', len);
		f[1] = f[0] ? memchr(f[0] + 1, '|', (size_t)(end - f[0] - 1)) : NULL;
		f[2] = f[1] ? memchr(f[1] + 1, '|', (size_t)(end - f[1] - 1)) : NULL;
		if (!f[2] || (size_t)(f[0] - p) >= sizeof id ||
		    (size_t)(f[2] - f[1] - 1) >= sizeof lim)
			return sr_err_set(e, -EINVAL, "squeue line %d: not "
					  "id|partition|limit|comment", line);
		cut(id, sizeof id, p, (size_t)(f[0] - p));
		errno = 0;
		j.id = strtoll(id, &x, 10);
		if (errno || x == id || *x || j.id <= 0)
			return sr_err_set(e, -EINVAL, "squeue line %d: job id "
					  "'%s'", line, id);
		cut(j.partition, sizeof j.partition, f[0] + 1,
		    (size_t)(f[1] - f[0] - 1));
		cut(lim, sizeof lim, f[1] + 1, (size_t)(f[2] - f[1] - 1));
		if (slurm__parse_time(lim, &j.limit_s) < 0)
			return sr_err_set(e, -EINVAL, "squeue line %d: time "
					  "limit '%s'", line, lim);
		if (end > f[2] + 1 && end[-1] == '\r')
			end--;
		cut(j.comment, sizeof j.comment, f[2] + 1,
		    (size_t)(end - f[2] - 1));
		if (!strcmp(j.comment, "(null)"))
			j.comment[0] = '\0';
		if (n < max)
			v[n++] = j;
		p = p + len;
		if (*p)
			p++;
	}
	return n;
}

int slurm_burst_parse_deadline_opt(const char *arg,
				   struct slurm_burst_deadline *out,
				   struct sr_err *e)
{
	const char *eq = strchr(arg, '=');
	const char *dur = eq ? eq + 1 : arg;
	int64_t ns = 0;

	memset(out, 0, sizeof *out);
	if (eq) {
		size_t n = (size_t)(eq - arg);

		if (!n || n >= sizeof out->partition)
			return sr_err_set(e, -EINVAL, "'%s': a partition name of "
					  "1..%zu bytes before '='", arg,
					  sizeof out->partition - 1);
		memcpy(out->partition, arg, n);
		if (!slurm_burst_name_ok(out->partition))
			return sr_err_set(e, -EINVAL, "'%s': '%s' is not a "
					  "partition name", arg, out->partition);
	}
	if (sr_dur_parse(dur, &ns, e) < 0 || ns < 1000000000) {
		sr_err_clear(e);
		return sr_err_set(e, -EINVAL, "'%s': not [PARTITION=]DURATION "
				  "(12h, burst=2d)", arg);
	}
	out->s = ns / 1000000000;
	return 0;
}

int slurm_burst_need_of(const struct slurm_burst_job *v, int n,
			const struct slurm_burst_deadline *defs, int ndefs,
			struct slurm_burst_need *out, struct sr_err *e)
{
	out->deadline_s = -1;
	out->work_s = -1;
	snprintf(out->why, sizeof out->why, "no deadline");
	for (int i = 0; i < n; i++) {
		int64_t s = 0;
		int rc = slurm_burst_comment_deadline(v[i].comment, &s, e);

		if (rc < 0)
			return sr_err_prefix(e, "Slurm job %lld", v[i].id);
		if (rc && (out->deadline_s < 0 || s < out->deadline_s)) {
			out->deadline_s = s;
			snprintf(out->why, sizeof out->why, "job %lld's comment",
				 v[i].id);
		}
		if (v[i].limit_s > out->work_s)
			out->work_s = v[i].limit_s;
	}
	if (out->deadline_s >= 0)
		return 0;
	/* a partition's own default first, then the one of all */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < ndefs; i++) {
			bool all = !defs[i].partition[0];

			if (pass == 0 ? (all || !n ||
					 strcmp(defs[i].partition, v[0].partition))
				      : !all)
				continue;
			out->deadline_s = defs[i].s;
			if (all)
				snprintf(out->why, sizeof out->why, "the default");
			else
				snprintf(out->why, sizeof out->why, "partition "
					 "%s's default", defs[i].partition);
			return 0;
		}
	}
	return 0;
}

/* s as a YAML double-quoted scalar (JSON's string syntax is YAML's). */
static char *yq(const char *s)
{
	json_t *j = json_string(s);
	char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;

	json_decref(j);
	return out;
}

/* A path the instance runs or reads: absolute, printable, no quote. */
static int path_ok(const char *field, const char *s, bool may_be_empty,
		   struct sr_err *e)
{
	if (!*s && may_be_empty)
		return 0;
	if (s[0] != '/' || strlen(s) > 1024)
		return sr_err_set(e, -EINVAL, "%s: '%.200s' is not an absolute "
				  "path", field, s);
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			return sr_err_set(e, -EINVAL, "%s: a control character "
					  "in the path", field);
	return 0;
}

int slurm_burst_job_yaml(const struct slurm_burst_spec *s, char **out,
			 struct sr_err *e)
{
	const char *vals[] = { s->name, s->node, s->accelerators, s->spotrun,
			       s->slurmd, s->bin, s->slurm_conf };
	char *q[7] = { NULL };
	char extra[96] = "";
	int rc = -ENOMEM;

	*out = NULL;
	if (!slurm_burst_name_ok(s->node))
		return sr_err_set(e, -EINVAL, "node '%.63s': not a node name "
				  "([A-Za-z0-9_.-])", s->node);
	if ((rc = path_ok("spotrun", s->spotrun, false, e)) ||
	    (rc = path_ok("slurmd", s->slurmd, false, e)) ||
	    (rc = path_ok("bin", s->bin, true, e)) ||
	    (rc = path_ok("slurm_conf", s->slurm_conf, true, e)))
		return rc;
	rc = -ENOMEM;
	for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
		if (!(q[i] = yq(vals[i])))
			goto out;
	if (s->need.deadline_s > 0)
		snprintf(extra, sizeof extra, "  deadline: %llds\n",
			 (long long)s->need.deadline_s);
	if (s->need.work_s > 0)
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
			 "  work: %.4fh\n", (double)s->need.work_s / 3600.0);
	/* the run is fixed text: every value reaches it as a variable */
	if (asprintf(out,
		     "name: %s\n"
		     "resources:\n"
		     "  accelerators: %s\n"
		     "  use_spot: true\n"
		     "envs:\n"
		     "  SPOTRUN_SLURM_NODE: %s\n"
		     "  SPOTRUN_SLURM_SPOTRUN: %s\n"
		     "  SPOTRUN_SLURM_SLURMD: %s\n"
		     "  SPOTRUN_SLURM_BIN: %s\n"
		     "  SLURM_CONF: %s\n"
		     "run: exec \"$SPOTRUN_SLURM_SPOTRUN\" slurm node "
		     "\"$SPOTRUN_SLURM_NODE\"\n"
		     "%s%s",
		     q[0], q[2], q[1], q[3], q[4], q[5], q[6],
		     extra[0] ? "spotrun:\n" : "", extra) < 0) {
		*out = NULL;
		goto out;
	}
	rc = 0;
out:
	for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
		free(q[i]);
	return rc == -ENOMEM ? sr_err_set(e, rc, "out of memory") : rc;
}

int slurm_burst_node_line(const char *line, bool *responding,
			  bool *spot_drained)
{
	const char *bar = strchr(line, '|');
	size_t sl;

	if (!bar)
		return -EINVAL;
	sl = (size_t)(bar - line);
	*responding = sl && !memchr(line, '*', sl) && !memchr(line, '~', sl) &&
		      !memchr(line, '#', sl) && !memchr(line, '%', sl);
	*spot_drained = sl >= 5 && !strncmp(line, "drain", 5) &&
			!strncmp(bar + 1, SLURM_BURST_REASON,
				 strlen(SLURM_BURST_REASON));
	return 0;
}
