/*
 * slurmcli.h - the node subcommand's entry, which `spotrun slurm`
 * (cmd_slurm.c: resume, suspend, resume-fail) hands `node` to.  Both run
 * Slurm's commands with slurm_cmd_run (lib/providers/slurm/slurm_cmd.h).
 */
#ifndef SR_CLI_SLURMCLI_H
#define SR_CLI_SLURMCLI_H

/* `spotrun slurm node NAME` (slurm_node.c): argv[0] is "node". */
int slurmcli_node(int argc, char **argv);

#endif
