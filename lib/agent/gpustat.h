/*
 * gpustat.h - GPU utilisation through NVML, loaded with dlopen at run time.
 *
 * spotrun builds and runs without the NVIDIA driver: gpustat_open() looks
 * for libnvidia-ml.so.1 (or $SPOTRUN_NVML_LIB) and, when it is missing or
 * nvmlInit fails, returns -SR_EUNSUPPORTED and the agent reports GPU
 * utilisation as unknown (-1) instead of failing.
 *
 * Not thread-safe; one handle per agent.
 */
#ifndef SR_AGENT_GPUSTAT_H
#define SR_AGENT_GPUSTAT_H

#include <stdint.h>

#include "common/err.h"

#define GPUSTAT_MAX_GPUS 16

struct gpustat;

struct gpustat_sample {
	int ngpus;                       /* 0 if none or unknown */
	int util_pct[GPUSTAT_MAX_GPUS];  /* SM busy % over the last period */
	uint64_t mem_used[GPUSTAT_MAX_GPUS];
	uint64_t mem_total[GPUSTAT_MAX_GPUS];
};

/* Load NVML and initialise it.  lib may be NULL for the default search.
 * On success *out is a new handle (caller owns; gpustat_close()).  On
 * failure *out is NULL and the code says why (-SR_EUNSUPPORTED when NVML
 * is absent), with *e naming the library or the failing call. */
int gpustat_open(const char *lib, struct gpustat **out, struct sr_err *e);
void gpustat_close(struct gpustat *g); /* NULL-safe */

/* Read every GPU's utilisation and memory.  NULL g gives ngpus 0. */
int gpustat_sample(struct gpustat *g, struct gpustat_sample *out,
		   struct sr_err *e);

/* Mean utilisation in permille over the sample's GPUs, -1 if none. */
int gpustat_mean_permille(const struct gpustat_sample *s);

#endif
