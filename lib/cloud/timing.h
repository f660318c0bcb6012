/*
 * timing.h - a real cloud's timing profile for the local cloud
 * (data/timing/<name>.json, data/timing/README.md): the notice lead, a
 * node's boot drawn from a triangular distribution, a setup and an
 * import time, all in cloud seconds.  spotrund --timing divides them by
 * --time-scale, as it does the rest of the local cloud's clock.
 *
 * File (JSON object; every key required but `source`):
 *   name      string
 *   notice_s  number > 0
 *   boot_s    {min, mode, max}: 0 <= min <= mode <= max, max > 0
 *   setup_s   number >= 0
 *   import_s  number >= 0
 *   source    string (where the figures come from)
 */
#ifndef SR_CLOUD_TIMING_H
#define SR_CLOUD_TIMING_H

#include <stdint.h>

#include "common/err.h"

struct cloud_timing {
	char name[32];
	double notice_s;
	double boot_min_s, boot_mode_s, boot_max_s;
	double setup_s, import_s;
};

/* Parse a profile from `text` (len bytes); `what` names it in errors
 * ("data/timing/aws.json").  0, or -EINVAL with e naming the field. */
int cloud_timing_parse(const char *text, size_t len, const char *what,
		       struct cloud_timing *out, struct sr_err *e);

/* Load profile `spec`: a path when it holds a '/', else the name of
 * <data_dir>/timing/<spec>.json.  0, -ENOENT (e names the file) or
 * -EINVAL. */
int cloud_timing_load(const char *data_dir, const char *spec,
		      struct cloud_timing *out, struct sr_err *e);

/* The boot time of draw `key` (any 64-bit value: the same key, the same
 * draw), cloud seconds, in [boot_min_s, boot_max_s]. */
double cloud_timing_boot_s(const struct cloud_timing *t, uint64_t key);

/* The mean of the boot distribution, cloud seconds. */
double cloud_timing_boot_mean_s(const struct cloud_timing *t);

#endif
