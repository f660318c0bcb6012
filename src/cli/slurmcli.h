/*
 * slurmcli.h - what `spotrun slurm` (cmd_slurm.c: resume, suspend,
 * resume-fail; slurm_node.c: node) share: running one of Slurm's
 * commands, and the node subcommand's entry.
 */
#ifndef SR_CLI_SLURMCLI_H
#define SR_CLI_SLURMCLI_H

#include <stddef.h>

/* Run Slurm command argv (argv[0] a bare name, looked up in `bin` when
 * not "", else on PATH) with this process's environment, no shell, 30 s
 * at most.  0 and *out (malloc'd stdout, NUL-ended; caller frees), or
 * -1 with "<cmd>: <its first line>" in why. */
int slurmcli_run(const char *bin, const char *const *argv, char **out,
		 char *why, size_t cap);

/* `spotrun slurm node NAME` (slurm_node.c): argv[0] is "node". */
int slurmcli_node(int argc, char **argv);

#endif
