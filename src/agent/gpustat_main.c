/*
 * gpustat_main.c - `spotrun-agent --gpu-stat [--json] [--samples N]
 * [--interval D]`: what the agent sees of this node's GPUs through NVML
 * (lib/agent/gpustat.c), the figures its heartbeats carry and its idle
 * detection reads (docs/agent.md).  Exit status 0 when NVML answered, 3
 * when it is absent or failed (the message says which), 2 on bad usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "agent/gpustat.h"
#include "common/timeutil.h"

static void gs_usage(FILE *f)
{
	fprintf(f,
		"usage: spotrun-agent --gpu-stat [--json] [--samples N] "
		"[--interval DURATION]\n\n"
		"Print each GPU's utilisation (SM busy %% over NVML's last "
		"period) and memory,\nas the agent reads them for its "
		"heartbeats and idle detection.  NVML is\nloaded from "
		"libnvidia-ml.so.1 or $SPOTRUN_NVML_LIB.  --samples N reads N "
		"times,\n--interval apart (default 1s).  Exit 0, or 3 when NVML "
		"is absent or fails.\n");
}

static void gs_print(const struct gpustat_sample *s, int json)
{
	if (json) {
		printf("{\"gpus\":[");
		for (int i = 0; i < s->ngpus; i++)
			printf("%s{\"index\":%d,\"util_pct\":%d,"
			       "\"mem_used\":%llu,\"mem_total\":%llu}",
			       i ? "," : "", i, s->util_pct[i],
			       (unsigned long long)s->mem_used[i],
			       (unsigned long long)s->mem_total[i]);
		printf("],\"mean_permille\":%d}\n", gpustat_mean_permille(s));
	} else {
		for (int i = 0; i < s->ngpus; i++)
			printf("gpu %d: util %d%%, memory %.1f / %.1f GiB\n", i,
			       s->util_pct[i], s->mem_used[i] / 1073741824.0,
			       s->mem_total[i] / 1073741824.0);
		if (!s->ngpus)
			printf("no GPUs\n");
	}
	fflush(stdout);
}

int agent_gpustat_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "gpu-stat", no_argument, NULL, 'g' },
		{ "json", no_argument, NULL, 'j' },
		{ "samples", required_argument, NULL, 'n' },
		{ "interval", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gpustat *g = NULL;
	struct gpustat_sample s;
	struct sr_err e;
	int64_t interval = SR_NS_PER_SEC;
	long samples = 1;
	char *end;
	int c, json = 0, rc = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'g': break;
		case 'j': json = 1; break;
		case 'n':
			samples = strtol(optarg, &end, 10);
			if (*end || samples < 1 || samples > 100000) {
				fprintf(stderr, "spotrun-agent --gpu-stat: "
					"--samples: '%s' is not a count from 1 "
					"to 100000\n", optarg);
				return 2;
			}
			break;
		case 'i':
			sr_err_clear(&e);
			if (sr_dur_parse(optarg, &interval, &e) < 0 ||
			    interval <= 0) {
				fprintf(stderr, "spotrun-agent --gpu-stat: "
					"--interval: '%s' is not a duration "
					"like 500ms\n", optarg);
				return 2;
			}
			break;
		case 'h': gs_usage(stdout); return 0;
		default:
			fprintf(stderr, "spotrun-agent --gpu-stat: unknown "
				"option '%s'\n", argv[optind - 1]);
			gs_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "spotrun-agent --gpu-stat: unexpected argument "
			"'%s'\n", argv[optind]);
		return 2;
	}
	sr_err_clear(&e);
	if (gpustat_open(NULL, &g, &e) < 0) {
		fprintf(stderr, "spotrun-agent --gpu-stat: %s\n", e.msg);
		return 3;
	}
	for (long k = 0; k < samples; k++) {
		if (k) {
			struct timespec ts = {
				.tv_sec = interval / SR_NS_PER_SEC,
				.tv_nsec = interval % SR_NS_PER_SEC };

			while (nanosleep(&ts, &ts) < 0)
				;
		}
		sr_err_clear(&e);
		if (gpustat_sample(g, &s, &e) < 0) {
			fprintf(stderr, "spotrun-agent --gpu-stat: %s\n", e.msg);
			rc = 3;
			break;
		}
		gs_print(&s, json);
	}
	gpustat_close(g);
	return rc;
}
