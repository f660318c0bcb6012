/*
 * launch_ckpt.h - `spotrun launch` checks the job's checkpoint store
 * before the job is submitted (launch_ckpt.c).
 */
#ifndef SR_CLI_LAUNCH_CKPT_H
#define SR_CLI_LAUNCH_CKPT_H

#include <jansson.h>

#include "market/jobspec.h"

/* With spotrun.checkpoint.uri naming an object store, and for each
 * bucket file_mounts: can the job's nodes reach it with the credentials
 * they will get (js's envs: and secrets:, then envs, the --env values)?
 * 0 when they can reach every one, when there is none, or when a store
 * did not answer (a warning is printed: the nodes retry); -1 after
 * printing, for each store refused, why (no credentials, credentials
 * refused, no such bucket, a bad URI). */
int launch_ckpt_check(const struct jobspec *js, json_t *envs, const char *file);

#endif
