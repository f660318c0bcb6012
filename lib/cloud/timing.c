/*
 * timing.c - real-cloud timing profiles (rules in timing.h).
 *
 * A boot is drawn by inverting the triangular distribution's CDF at a
 * uniform u in [0, 1) made from the key with splitmix64, so a draw needs
 * no state and the same key gives the same boot.
 */
#include "cloud/timing.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/fsutil.h"

static int num(json_t *o, const char *k, const char *what, const char *field,
	       double min, double *out, struct sr_err *e)
{
	json_t *v = json_object_get(o, k);

	if (!json_is_number(v) || !isfinite(json_number_value(v)) ||
	    json_number_value(v) < min)
		return sr_err_set(e, -EINVAL, "%s: %s: expected a number >= %g",
				  what, field, min);
	*out = json_number_value(v);
	return 0;
}

int cloud_timing_parse(const char *text, size_t len, const char *what,
		       struct cloud_timing *out, struct sr_err *e)
{
	json_error_t je;
	json_t *o = json_loadb(text, len, 0, &je), *b;
	const char *name;
	int rc = 0;

	memset(out, 0, sizeof *out);
	if (!json_is_object(o)) {
		rc = o ? sr_err_set(e, -EINVAL, "%s: expected a JSON object", what)
		       : sr_err_set(e, -EINVAL, "%s:%d: %s", what, je.line, je.text);
		goto out;
	}
	name = json_string_value(json_object_get(o, "name"));
	if (!name || !name[0] || strlen(name) >= sizeof out->name) {
		rc = sr_err_set(e, -EINVAL, "%s: name: expected a string of 1 to "
				"%zu bytes", what, sizeof out->name - 1);
		goto out;
	}
	snprintf(out->name, sizeof out->name, "%s", name);
	b = json_object_get(o, "boot_s");
	if (!json_is_object(b)) {
		rc = sr_err_set(e, -EINVAL, "%s: boot_s: expected {min, mode, max}",
				what);
		goto out;
	}
	rc = num(o, "notice_s", what, "notice_s", 0, &out->notice_s, e);
	if (!rc)
		rc = num(b, "min", what, "boot_s.min", 0, &out->boot_min_s, e);
	if (!rc)
		rc = num(b, "mode", what, "boot_s.mode", 0, &out->boot_mode_s, e);
	if (!rc)
		rc = num(b, "max", what, "boot_s.max", 0, &out->boot_max_s, e);
	if (!rc)
		rc = num(o, "setup_s", what, "setup_s", 0, &out->setup_s, e);
	if (!rc)
		rc = num(o, "import_s", what, "import_s", 0, &out->import_s, e);
	if (rc)
		goto out;
	if (!(out->notice_s > 0))
		rc = sr_err_set(e, -EINVAL, "%s: notice_s: expected a number > 0",
				what);
	else if (!(out->boot_min_s <= out->boot_mode_s &&
		   out->boot_mode_s <= out->boot_max_s && out->boot_max_s > 0))
		rc = sr_err_set(e, -EINVAL, "%s: boot_s: expected min <= mode <= "
				"max and max > 0", what);
out:
	json_decref(o);
	if (rc)
		memset(out, 0, sizeof *out);
	return rc;
}

int cloud_timing_load(const char *data_dir, const char *spec,
		      struct cloud_timing *out, struct sr_err *e)
{
	char path[4200];
	char *text = NULL;
	size_t len = 0;
	int rc;

	memset(out, 0, sizeof *out);
	if (strchr(spec, '/'))
		snprintf(path, sizeof path, "%s", spec);
	else
		snprintf(path, sizeof path, "%s/timing/%s.json",
			 data_dir ? data_dir : ".", spec);
	rc = sr_fs_read_file(path, 1 << 16, &text, &len, e);
	if (rc)
		goto out;
	rc = cloud_timing_parse(text, len, path, out, e);
out:
	free(text);
	return rc;
}

static uint64_t splitmix64(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

double cloud_timing_boot_s(const struct cloud_timing *t, uint64_t key)
{
	double a = t->boot_min_s, c = t->boot_mode_s, b = t->boot_max_s;
	double u = (double)(splitmix64(key) >> 11) / 9007199254740992.0;

	if (b <= a)
		return a;
	if (u < (c - a) / (b - a))
		return a + sqrt(u * (b - a) * (c - a));
	return b - sqrt((1 - u) * (b - a) * (b - c));
}

double cloud_timing_boot_mean_s(const struct cloud_timing *t)
{
	return (t->boot_min_s + t->boot_mode_s + t->boot_max_s) / 3;
}
