/*
 * store_rows.c - the row structs of jobs and nodes (store.h): the one
 * place that knows which column fills which field.
 *
 * Each struct has a table of { column, kind, field offset }.  A load or
 * list selects exactly the table's columns (the select list is built
 * from the table), reads each by position (checked against the names
 * once per statement), and copies every text value into
 * one buffer the row owns, so a row outlives its statement and a value
 * is never cut short.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"

enum col_kind {
	C_I64,       /* int64_t; SQL NULL reads 0 */
	C_I64_NULL,  /* int64_t; SQL NULL reads STORE_NULL_I64 */
	C_INT,       /* int */
	C_BOOL,      /* bool: non-zero */
	C_F64,       /* double; SQL NULL reads 0 */
	C_F64_NULL,  /* double; SQL NULL reads NAN */
	C_TEXT,      /* const char *; SQL NULL reads "" */
	C_TEXT_NULL, /* const char *; SQL NULL reads NULL */
};

struct col {
	const char *name;
	enum col_kind kind;
	size_t off;
};

#define NODE(c, k, f) { c, k, offsetof(struct store_node, f) }
static const struct col node_cols[] = {
	NODE("id", C_I64, id),
	NODE("job_id", C_I64, job_id),
	NODE("rank", C_I64, rank),
	NODE("state", C_TEXT, state),
	NODE("phase", C_TEXT, phase),
	NODE("provider", C_TEXT, provider),
	NODE("cloud", C_TEXT, cloud),
	NODE("region", C_TEXT, region),
	NODE("zone", C_TEXT, zone),
	NODE("instance_type", C_TEXT, instance_type),
	NODE("accelerator", C_TEXT, accelerator),
	NODE("accel_count", C_F64, accel_count),
	NODE("spot", C_BOOL, spot),
	NODE("pool", C_INT, pool),
	NODE("price_micros", C_I64, price_micros),
	NODE("list_micros", C_I64, list_micros),
	NODE("reserved_micros", C_I64, reserved_micros),
	NODE("cost_micros", C_I64, cost_micros),
	NODE("pid", C_I64_NULL, pid),
	NODE("created_ns", C_I64, created_ns),
	NODE("boot_at_ns", C_I64, boot_at_ns),
	NODE("registered_ns", C_I64_NULL, registered_ns),
	NODE("last_hb_ns", C_I64_NULL, last_hb_ns),
	NODE("notice_ns", C_I64_NULL, notice_ns),
	NODE("kill_ns", C_I64_NULL, kill_ns),
	NODE("rebalance_ns", C_I64_NULL, rebalance_ns),
	NODE("terminated_ns", C_I64_NULL, terminated_ns),
	NODE("billed_until_ns", C_I64_NULL, billed_until_ns),
	NODE("end_reason", C_TEXT_NULL, end_reason),
	NODE("workload", C_TEXT, workload),
	NODE("wl_attempt", C_I64, wl_attempt),
	NODE("cpu_util", C_F64_NULL, cpu_util),
	NODE("gpu_util", C_F64_NULL, gpu_util),
	NODE("util_sum", C_F64, util_sum),
	NODE("util_n", C_I64, util_n),
	NODE("setup_rc", C_I64_NULL, setup_rc),
	NODE("retire", C_BOOL, retire),
	NODE("spare", C_BOOL, spare),
	NODE("adopted_ns", C_I64_NULL, adopted_ns),
	NODE("instance_id", C_TEXT_NULL, instance_id),
	NODE("driver_blob", C_TEXT_NULL, driver_blob),
	NODE("addr", C_TEXT_NULL, addr),
};

#define JOB(c, k, f) { c, k, offsetof(struct store_job, f) }
static const struct col job_cols[] = {
	JOB("id", C_I64, id),
	JOB("name", C_TEXT, name),
	JOB("state", C_TEXT, state),
	JOB("desired", C_TEXT, desired),
	JOB("spec_name", C_TEXT, spec_name),
	JOB("workdir", C_TEXT_NULL, workdir),
	JOB("num_nodes", C_I64, num_nodes),
	JOB("attempt", C_I64, attempt),
	JOB("restarts", C_I64, restarts),
	JOB("max_restarts", C_I64, max_restarts),
	JOB("preemptions", C_I64, preemptions),
	JOB("moves", C_I64, moves),
	JOB("recoveries", C_I64, recoveries),
	JOB("exit_code", C_I64_NULL, exit_code),
	JOB("created_ns", C_I64, created_ns),
	JOB("updated_ns", C_I64, updated_ns),
	JOB("finished_ns", C_I64_NULL, finished_ns),
	JOB("state_since_ns", C_I64, state_since_ns),
	JOB("sim_start_s", C_F64, sim_start_s),
	JOB("deadline_s", C_F64_NULL, deadline_s),
	JOB("work_s", C_F64, work_s),
	JOB("est_work_s", C_F64, est_work_s),
	JOB("step", C_I64_NULL, step),
	JOB("total_steps", C_I64_NULL, total_steps),
	JOB("ckpt_step", C_I64_NULL, ckpt_step),
	JOB("ckpt_local_step", C_I64_NULL, ckpt_local_step),
	JOB("ckpt_store_ns", C_I64_NULL, ckpt_store_ns),
	JOB("step_ns", C_F64_NULL, step_ns),
	JOB("placement", C_TEXT_NULL, placement),
	JOB("message", C_TEXT, message),
	JOB("cost_micros", C_I64, cost_micros),
	JOB("list_cost_micros", C_I64, list_cost_micros),
	JOB("reserved_cost_micros", C_I64, reserved_cost_micros),
	JOB("reserved_unknown", C_BOOL, reserved_unknown),
	JOB("run_s", C_F64, run_s),
	JOB("run_started_ns", C_I64_NULL, run_started_ns),
	JOB("down_since_ns", C_I64_NULL, down_since_ns),
	JOB("notice_ns", C_I64_NULL, notice_ns),
	JOB("recover_reason", C_TEXT_NULL, recover_reason),
	JOB("candidates", C_TEXT_NULL, candidates),
	JOB("policy_tick", C_I64, policy_tick),
	JOB("est_pace_ns", C_F64, est_pace_ns),
	JOB("est_restart_s", C_F64, est_restart_s),
	JOB("pace_attempt", C_I64, pace_attempt),
	JOB("pace_step0", C_I64_NULL, pace_step0),
	JOB("deadline_state", C_I64, deadline_state),
	/* last: only with STORE_JOB_SPEC */
	JOB("spec_json", C_TEXT, spec_json),
};

#define NCOLS(t) (sizeof t / sizeof t[0])

/* "SELECT c1, c2, ... FROM table WHERE where" into buf. */
static int select_sql(char *buf, size_t cap, const struct col *cols, size_t n,
		      const char *table, const char *where)
{
	size_t len = (size_t)snprintf(buf, cap, "SELECT ");

	for (size_t i = 0; i < n && len < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "",
					cols[i].name);
	if (len < cap)
		len += (size_t)snprintf(buf + len, cap - len, " FROM %s WHERE %s",
					table, where);
	return len < cap ? 0 : -ENAMETOOLONG;
}

/* The select list is built from the table, so result column i is
 * table column i: fill() reads by position (store_col_* looks each name
 * up, which for 10,000 rows of 40 columns costs more than the query).
 * check_cols() verifies that once per statement, on its first row. */
static int check_cols(struct store_stmt *st, const struct col *cols, size_t n,
		      struct sr_err *e)
{
	for (size_t i = 0; i < n; i++) {
		if (st->s->ops->col_index(st, cols[i].name) != (int)i)
			return sr_err_set(e, -EIO, "store row: column %s is not "
					  "result column %zu", cols[i].name, i);
	}
	return 0;
}

/* Fill the row at base from st's current row; its text goes into one
 * new buffer, *buf (the caller frees it). */
static int fill(struct store_stmt *st, const struct col *cols, size_t n,
		void *base, char **buf, struct sr_err *e)
{
	const struct store_ops *o = st->s->ops;
	char *b = NULL, *p;
	size_t need = 0;

	for (size_t i = 0; i < n; i++) {
		if (cols[i].kind == C_TEXT || cols[i].kind == C_TEXT_NULL) {
			const char *t = o->col_text(st, (int)i);

			need += (t ? strlen(t) : 0) + 1;
		}
	}
	b = malloc(need ? need : 1);
	if (!b)
		return sr_err_set(e, -ENOMEM, "store row: out of memory");
	p = b;
	for (size_t i = 0; i < n; i++) {
		const struct col *c = &cols[i];
		char *f = (char *)base + c->off;
		int k = (int)i;
		bool null = o->col_null(st, k);

		switch (c->kind) {
		case C_I64:
			*(int64_t *)(void *)f = null ? 0 : o->col_i64(st, k);
			break;
		case C_I64_NULL:
			*(int64_t *)(void *)f = null ? STORE_NULL_I64 :
						o->col_i64(st, k);
			break;
		case C_INT:
			*(int *)(void *)f = null ? 0 : (int)o->col_i64(st, k);
			break;
		case C_BOOL:
			*(bool *)(void *)f = !null && o->col_i64(st, k) != 0;
			break;
		case C_F64:
			*(double *)(void *)f = null ? 0.0 : o->col_f64(st, k);
			break;
		case C_F64_NULL:
			*(double *)(void *)f = null ? NAN : o->col_f64(st, k);
			break;
		case C_TEXT:
		case C_TEXT_NULL: {
			const char *t = null ? NULL : o->col_text(st, k);
			size_t l = (t ? strlen(t) : 0) + 1;

			memcpy(p, t ? t : "", l);
			*(const char **)(void *)f =
				null && c->kind == C_TEXT_NULL ? NULL : p;
			p += l;
			break;
		}
		}
	}
	*buf = b;
	return 0;
}

/* The row of `table` whose id is `id`, its first n columns `cols` read
 * into row (text into a buffer that *text owns); -SR_ENOTFOUND names it
 * "<noun> <id>: <missing>".  The caller has set row's defaults. */
static int row_load(struct store *s, const char *table, const struct col *cols,
		    size_t n, int64_t id, void *row, char **text,
		    const char *noun, const char *missing, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	char sql[1536];
	int rc;

	rc = select_sql(sql, sizeof sql, cols, n, table, "id=?");
	if (rc)
		return sr_err_set(e, rc, "%s select: too long", noun);
	rc = store_prepare(s, sql, &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, id);
	rc = store_step(st, e);
	if (rc == 1) {
		rc = check_cols(st, cols, n, e);
		if (!rc)
			rc = fill(st, cols, n, row, text, e);
	} else if (rc == 0) {
		rc = sr_err_set(e, -SR_ENOTFOUND, "%s %" PRId64 ": %s", noun, id,
				missing);
	}
	store_done(st);
	return rc;
}

/* ---- nodes ---------------------------------------------------------------- */

void store_node_free(struct store_node *n)
{
	if (!n)
		return;
	free(n->text_);
	n->text_ = NULL;
}

void store_nodes_free(struct store_node *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		store_node_free(&v[i]);
	free(v);
}

int store_node_load(struct store *s, int64_t id, struct store_node *n,
		    struct sr_err *e)
{
	memset(n, 0, sizeof *n);
	return row_load(s, "nodes", node_cols, NCOLS(node_cols), id, n,
			&n->text_, "node", "not found", e);
}

/* The nodes of "SELECT <node_cols> FROM nodes WHERE where", bound with
 * args[0..nargs-1] as ?1, ?2, ... */
static int nodes_run(struct store *s, const char *where, const int64_t *args,
		     int nargs, struct store_node **out, size_t *count,
		     struct sr_err *e)
{
	struct store_stmt *st = NULL;
	struct store_node *v = NULL;
	size_t k = 0, cap = 0;
	char sql[1536];
	int rc;

	*out = NULL;
	*count = 0;
	rc = select_sql(sql, sizeof sql, node_cols, NCOLS(node_cols), "nodes",
			where);
	if (rc)
		return sr_err_set(e, rc, "node select: too long");
	rc = store_prepare(s, sql, &st, e);
	if (rc)
		return rc;
	for (int i = 0; i < nargs; i++)
		store_bind_i64(st, i + 1, args[i]);
	/* an error must not read as the end of the rows: a short list of
	 * live nodes would have the reconciler place a rank twice */
	while ((rc = store_step(st, e)) == 1) {
		if (k == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct store_node *nv = realloc(v, nc * sizeof *v);

			if (!nv) {
				rc = sr_err_set(e, -ENOMEM, "node list: out of memory");
				break;
			}
			v = nv;
			cap = nc;
		}
		memset(&v[k], 0, sizeof v[k]);
		rc = k ? 0 : check_cols(st, node_cols, NCOLS(node_cols), e);
		if (!rc)
			rc = fill(st, node_cols, NCOLS(node_cols), &v[k], &v[k].text_, e);
		if (rc)
			break;
		k++;
	}
	store_done(st);
	if (rc < 0) {
		store_nodes_free(v, k);
		return rc;
	}
	*out = v;
	*count = k;
	return 0;
}

int store_node_list(struct store *s, int64_t job, bool live_only,
		    size_t limit, struct store_node **out, size_t *count,
		    struct sr_err *e)
{
	/* one plain WHERE per case, so that each statement's plan (cached
	 * by PostgreSQL) is the index's: no "?=0 OR" */
	static const char *const where[2][2] = {
		{ "1=1 ORDER BY id LIMIT ?1",
		  "state IN ('REQUESTED','BOOTING','READY') ORDER BY id LIMIT ?1" },
		{ "job_id=?2 ORDER BY id LIMIT ?1",
		  "job_id=?2 AND state IN ('REQUESTED','BOOTING','READY')"
		  " ORDER BY id LIMIT ?1" },
	};
	int64_t args[2] = { limit ? (int64_t)limit : INT64_MAX, job };

	return nodes_run(s, where[job != 0][live_only], args, job ? 2 : 1, out,
			 count, e);
}

int store_node_select(struct store *s, const char *where, int64_t arg,
		      struct store_node **out, size_t *count, struct sr_err *e)
{
	char w[512];
	int len = snprintf(w, sizeof w, "%s ORDER BY id", where);

	if (len < 0 || (size_t)len >= sizeof w)
		return sr_err_set(e, -ENAMETOOLONG, "node select: too long");
	return nodes_run(s, w, &arg, 1, out, count, e);
}

/* ---- jobs ----------------------------------------------------------------- */

void store_job_free(struct store_job *j)
{
	if (!j)
		return;
	free(j->text_);
	j->text_ = NULL;
}

int store_job_load(struct store *s, int64_t id, unsigned what,
		   struct store_job *j, struct sr_err *e)
{
	/* spec_json is the table's last column */
	size_t ncols = NCOLS(job_cols) - ((what & STORE_JOB_SPEC) ? 0 : 1);

	memset(j, 0, sizeof *j);
	j->spec_json = "";
	return row_load(s, "jobs", job_cols, ncols, id, j, &j->text_, "job",
			"no such job", e);
}
