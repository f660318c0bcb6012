/*
 * ctlfile.h - the daemon's configuration file (YAML), as spotrund and
 * `spotrun check` read it (docs/providers.md "Configuration file"):
 *
 *   listen: 127.0.0.1:7077     # any spotrund flag, without the "--"
 *   time-scale: 3600           # ("_" and "-" are the same)
 *   providers:                 # per provider: settings and regions
 *     aws:                     # (cloud/conf.h)
 *       regions:
 *         us-east-1: { image: ami-0abc, subnet: subnet-1 }
 *
 * Flags override the file: spotrund applies the file's settings first,
 * then its command line.  Errors name the file, the line and the key.
 */
#ifndef SR_CTL_CTLFILE_H
#define SR_CTL_CTLFILE_H

#include <stddef.h>

#include "cloud/conf.h"
#include "common/err.h"

#define CTL_FILE_MAX (1 << 20) /* bytes */

struct ctl_file_setting {
	char *key;                 /* as written: "listen", "state_dir" */
	char *val;
	int line;
};

struct ctl_file {
	char *path;
	struct ctl_file_setting *v;/* the top-level settings, in order */
	size_t n;
	struct cloud_confs providers;
};

/* Read `path` into *out (zeroed first; ctl_file_free it, also after an
 * error).  The top-level settings must be scalars; `providers:` is parsed
 * by cloud_confs_parse_yaml. */
int ctl_file_load(const char *path, struct ctl_file *out, struct sr_err *e);
void ctl_file_free(struct ctl_file *f); /* NULL-safe; zeroes it */

/* Only the providers: section of `path`, into *out (an empty one). */
int ctl_config_file_providers(const char *path, struct cloud_confs *out,
			      struct sr_err *e);

#endif
