/*
 * clijob.h - reading a job file for a CLI command: every problem and
 * every note, printed the same way by plan and launch.
 */
#ifndef SR_CLI_CLIJOB_H
#define SR_CLI_CLIJOB_H

#include "market/jobspec.h"

/* Parse path into *js.  Notes go to stderr as "spotrun CMD: note: ...";
 * on failure every error goes to stderr as "spotrun CMD: ..." and the
 * result is -1 (js left empty), else 0. */
int cli_load_job(const char *cmd, const char *path, struct jobspec *js);

#endif
