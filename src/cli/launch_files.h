/*
 * launch_files.h - a job's workdir and file_mounts, read by `spotrun
 * launch` as its user and uploaded with the job (launch_files.c).
 */
#ifndef SR_CLI_LAUNCH_FILES_H
#define SR_CLI_LAUNCH_FILES_H

#include <jansson.h>

#include "ctlcli.h"
#include "market/jobspec.h"

/* Upload js's files (o is open) and put "files" in the POST /v1/jobs
 * body; for a job without workdir: or file_mounts:, put its directory as
 * "workdir" instead (run in place).  workdir: --workdir, or NULL.  0, or
 * -1 after printing why (a source outside the job's directory, in
 * spotrund's state dir, a link leaving its tree, ...). */
int launch_files(struct ctlcli *o, const struct jobspec *js, const char *file,
		 const char *workdir, json_t *body);

#endif
