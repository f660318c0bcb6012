/*
 * slurmcli.c - run one of Slurm's commands for `spotrun slurm`
 * (slurmcli.h): an argv, never a shell (common/proc.h sr_proc_run).
 */
#include "slurmcli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/proc.h"
#include "common/timeutil.h"

#define RUN_TIMEOUT_S 30
#define RUN_OUT_MAX (1 << 20)

int slurmcli_run(const char *bin, const char *const *argv, char **out,
		 char *why, size_t cap)
{
	char *av[24], path[512], errbuf[2048], line[400];
	char *buf = malloc(RUN_OUT_MAX);
	struct sr_err e = { 0 };
	size_t n = 0, k = 0;
	int status = -1, rc = -1;

	*out = NULL;
	if (!buf) {
		snprintf(why, cap, "%s: out of memory", argv[0]);
		return -1;
	}
	snprintf(path, sizeof path, "%s%s%s", bin, *bin ? "/" : "", argv[0]);
	av[k++] = path;
	for (size_t i = 1; argv[i] && k < 23; i++)
		av[k++] = (char *)argv[i];
	av[k] = NULL;
	if (sr_proc_run(av, NULL, RUN_TIMEOUT_S * SR_NS_PER_SEC, buf, RUN_OUT_MAX,
			&n, errbuf, sizeof errbuf, &status, &e) < 0) {
		snprintf(why, cap, "%s", e.msg);
		goto out;
	}
	if (status != -1 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		size_t cmd = strlen(argv[0]);
		bool named;

		sr_proc_first_line(errbuf[0] ? errbuf : buf, line, sizeof line);
		/* Slurm's lines name the command already ("scontrol: error:") */
		named = !strncmp(line, argv[0], cmd) && line[cmd] == ':';
		snprintf(why, cap, "%s%s%s", named ? "" : argv[0],
			 named ? "" : ": ", line[0] ? line : "failed with no message");
		goto out;
	}
	*out = buf;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	return rc;
}
