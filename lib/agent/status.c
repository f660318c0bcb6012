/*
 * status.c - reading the workload's status file (see status.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/status.h"
#include "common/fsutil.h"
#include "common/json.h"

static void info_reset(struct status_info *s)
{
	memset(s, 0, sizeof *s);
	s->step = s->total_steps = s->ckpt_step = s->restored_step = -1;
	s->saves = -1;
}

void status_reader_init(struct status_reader *r, const char *path)
{
	memset(r, 0, sizeof *r);
	snprintf(r->path, sizeof r->path, "%s", path ? path : "");
	r->last_seq = -1;
	r->last_saves = -1;
	info_reset(&r->last);
}

static int get_count(json_t *o, const char *key, int64_t *out,
		     const char *name, struct sr_err *e)
{
	int rc = sr_json_get_int_opt(o, key, out, name, e);

	if (rc == 0 && *out < -1)
		rc = sr_err_set(e, -SR_EPARSE, "%s: %s: must be >= 0", name, key);
	return rc;
}

int status_parse(const char *buf, size_t len, const char *name,
		 struct status_info *out, int64_t *seq, struct sr_err *e)
{
	json_t *j, *arr = NULL;
	int rc;

	info_reset(out);
	*seq = -1;
	j = sr_json_load_buf(buf, len, name, e);
	if (!j)
		return (e && e->code) ? e->code : -SR_EPARSE;
	if (!json_is_object(j)) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: expected a JSON object", name);
		goto out;
	}
	rc = get_count(j, "seq", seq, name, e);
	if (rc == 0)
		rc = get_count(j, "step", &out->step, name, e);
	if (rc == 0)
		rc = get_count(j, "total_steps", &out->total_steps, name, e);
	if (rc == 0)
		rc = get_count(j, "ckpt_step", &out->ckpt_step, name, e);
	if (rc == 0)
		rc = get_count(j, "restored_step", &out->restored_step, name, e);
	if (rc == 0)
		rc = get_count(j, "saves", &out->saves, name, e);
	if (rc < 0)
		goto out;
	arr = json_object_get(j, "ckpt_error");
	if (arr && !json_is_null(arr)) {
		if (!json_is_string(arr)) {
			rc = sr_err_set(e, -SR_EPARSE, "%s: ckpt_error: expected "
					"a string", name);
			goto out;
		}
		snprintf(out->ckpt_error, sizeof out->ckpt_error, "%s",
			 json_string_value(arr));
	}
	arr = json_object_get(j, "restored_from");
	if (arr && !json_is_null(arr)) {
		if (!json_is_string(arr)) {
			rc = sr_err_set(e, -SR_EPARSE, "%s: restored_from: "
					"expected a string", name);
			goto out;
		}
		snprintf(out->restored_from, sizeof out->restored_from, "%s",
			 json_string_value(arr));
	}
	arr = NULL;
	arr = json_object_get(j, "stall_ms");
	if (arr && !json_is_null(arr)) {
		size_t i;
		json_t *v;

		if (!json_is_array(arr)) {
			rc = sr_err_set(e, -SR_EPARSE, "%s: stall_ms: expected "
					"an array of numbers", name);
			goto out;
		}
		json_array_foreach(arr, i, v) {
			double ms;

			if (!json_is_number(v)) {
				rc = sr_err_set(e, -SR_EPARSE, "%s: stall_ms[%zu]: "
						"expected a number", name, i);
				goto out;
			}
			ms = json_number_value(v);
			if (!(ms >= 0 && ms < 1e9)) {
				rc = sr_err_set(e, -SR_EPARSE, "%s: stall_ms[%zu]: "
						"%g out of range", name, i, ms);
				goto out;
			}
			if (out->nstalls < STATUS_MAX_STALLS)
				out->stall_ms[out->nstalls++] = ms;
		}
	}
	rc = 0;
out:
	json_decref(j);
	if (rc < 0)
		info_reset(out);
	return rc;
}

int status_read(struct status_reader *r, struct status_info *out,
		struct sr_err *e)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int64_t seq, mt;
	int rc;

	*out = r->last;
	out->nstalls = 0;
	/* the workload writes in the file's directory: a link it planted
	 * (to spotrund's api.token, say) is not followed, a FIFO not waited
	 * on - the agent reads nothing on its behalf */
	if (!r->path[0] || lstat(r->path, &st) < 0)
		return 0;
	mt = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	if (st.st_ino == r->last_ino && mt == r->last_mtime_ns &&
	    st.st_size == r->last_size)
		return 0;
	rc = sr_fs_read_regular_at(AT_FDCWD, r->path, r->path, STATUS_MAX_BYTES,
				   &buf, &len, e);
	if (rc == -ENOENT)
		return 0; /* replaced between stat and open */
	if (rc == 0)
		rc = status_parse(buf, len, r->path, out, &seq, e);
	free(buf);
	r->last_ino = st.st_ino; /* a bad file is reported once */
	r->last_mtime_ns = mt;
	r->last_size = st.st_size;
	if (rc < 0) {
		*out = r->last;
		out->nstalls = 0;
		return rc;
	}
	if (out->saves >= 0) {
		/* the newest stalls, counted: keep the ones not seen (a
		 * smaller count is a new process, all of whose are new) */
		int64_t fresh = r->last_saves >= 0 && out->saves >= r->last_saves ?
				out->saves - r->last_saves : out->saves;

		if (fresh < out->nstalls) {
			int skip = out->nstalls - (int)fresh;

			memmove(out->stall_ms, out->stall_ms + skip,
				(size_t)fresh * sizeof out->stall_ms[0]);
			out->nstalls = (int)fresh;
		}
		r->last_saves = out->saves;
	} else if (seq >= 0) {
		if (seq <= r->last_seq) { /* same write seen again */
			out->nstalls = 0;
		}
		r->last_seq = seq > r->last_seq ? seq : r->last_seq;
	}
	if (out->nstalls > 0)
		r->stalls_seen = 1;
	r->last = *out;
	r->last.nstalls = 0;
	return 1;
}
