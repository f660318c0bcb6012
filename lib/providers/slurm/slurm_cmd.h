/*
 * slurm_cmd.h - running one of Slurm's commands (sbatch, squeue, scancel,
 * scontrol, sinfo): what the slurm provider (slurm__run, slurm_cmd.c)
 * and `spotrun slurm` (src/cli/cmd_slurm.c, slurm_node.c) share.
 */
#ifndef SR_PROVIDERS_SLURM_CMD_H
#define SR_PROVIDERS_SLURM_CMD_H

#include <stddef.h>

#include "cloud/compute.h"

#define SLURM_CMD_TIMEOUT_S 30      /* one command's whole run */
#define SLURM_CMD_OUT_MAX (1 << 20) /* what one command may print */
#define SLURM_CMD_ARGS 40           /* argv entries passed, argv[0] too */

/* Run Slurm command argv (argv[0] a bare name: looked up in `bin` when
 * not "", else on PATH; arguments past SLURM_CMD_ARGS - 1 are not
 * passed) with envp (NULL: this process's environment), no shell,
 * SLURM_CMD_TIMEOUT_S at most.  0 with *out (its stdout, malloc'd,
 * NUL-ended; caller frees).  Else *out NULL, why (cap bytes) says what
 * happened, *cls (may be NULL) its error class, and the return is:
 *   -errno, -ETIMEDOUT, -EFBIG  it could not run or was killed
 *                               (sr_proc_run's message; class invalid
 *                               when it is not there, else transient)
 *   -EIO                        it exited non-zero: "<cmd>: <its first
 *                               line>", or that line alone when Slurm's
 *                               names the command already ("sbatch:
 *                               error: ..."); class read from it
 *                               (slurm_cmd.c's table) */
int slurm_cmd_run(const char *bin, const char *const *argv, char *const *envp,
		  char **out, enum cloud_err_class *cls, char *why, size_t cap);

#endif
