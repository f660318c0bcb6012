/*
 * gpustat.c - NVML through dlopen (see gpustat.h).
 *
 * Only the handful of NVML entry points needed are resolved; their ABI
 * (from NVIDIA's public nvml.h) is restated here so no NVIDIA header is
 * needed to build:
 *   nvmlReturn_t  = int, 0 = NVML_SUCCESS
 *   nvmlDevice_t  = opaque pointer
 *   nvmlUtilization_t = { unsigned int gpu, memory; }   (percent)
 *   nvmlMemory_t  = { unsigned long long total, free, used; }  (bytes)
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "agent/gpustat.h"

typedef void *nvml_dev;
struct nvml_util { unsigned int gpu, memory; };
struct nvml_mem { unsigned long long total, free, used; };

struct gpustat {
	void *dl;
	int (*init)(void);
	int (*shutdown)(void);
	int (*count)(unsigned int *);
	int (*handle)(unsigned int, nvml_dev *);
	int (*util)(nvml_dev, struct nvml_util *);
	int (*mem)(nvml_dev, struct nvml_mem *);
	const char *(*errstr)(int);
};

static const char *nv_err(const struct gpustat *g, int r)
{
	return g->errstr ? g->errstr(r) : "NVML error";
}

static int sym(struct gpustat *g, void *slot, const char *name,
	       struct sr_err *e)
{
	void *p = dlsym(g->dl, name);

	if (!p)
		return sr_err_set(e, -SR_EUNSUPPORTED, "nvml: symbol %s missing",
				  name);
	memcpy(slot, &p, sizeof p);
	return 0;
}

int gpustat_open(const char *lib, struct gpustat **out, struct sr_err *e)
{
	const char *path = lib;
	struct gpustat *g = NULL;
	int rc, r;

	*out = NULL;
	if (!path)
		path = getenv("SPOTRUN_NVML_LIB");
	if (!path || !*path)
		path = "libnvidia-ml.so.1";
	g = calloc(1, sizeof *g);
	if (!g)
		return -ENOMEM;
	g->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!g->dl) {
		rc = sr_err_set(e, -SR_EUNSUPPORTED, "nvml: %s not loadable "
				"(no NVIDIA driver?)", path);
		goto out;
	}
	rc = sym(g, &g->init, "nvmlInit_v2", e);
	if (rc == 0)
		rc = sym(g, &g->shutdown, "nvmlShutdown", e);
	if (rc == 0)
		rc = sym(g, &g->count, "nvmlDeviceGetCount_v2", e);
	if (rc == 0)
		rc = sym(g, &g->handle, "nvmlDeviceGetHandleByIndex_v2", e);
	if (rc == 0)
		rc = sym(g, &g->util, "nvmlDeviceGetUtilizationRates", e);
	if (rc == 0)
		rc = sym(g, &g->mem, "nvmlDeviceGetMemoryInfo", e);
	if (rc < 0)
		goto out;
	(void)sym(g, &g->errstr, "nvmlErrorString", NULL); /* optional */
	r = g->init();
	if (r != 0) {
		rc = sr_err_set(e, -SR_EUNSUPPORTED, "nvml: nvmlInit_v2: %s",
				nv_err(g, r));
		goto out;
	}
	*out = g;
	g = NULL;
	rc = 0;
out:
	if (g) {
		if (g->dl)
			dlclose(g->dl);
		free(g);
	}
	return rc;
}

void gpustat_close(struct gpustat *g)
{
	if (!g)
		return;
	g->shutdown();
	dlclose(g->dl);
	free(g);
}

int gpustat_sample(struct gpustat *g, struct gpustat_sample *out,
		   struct sr_err *e)
{
	unsigned int n = 0;
	int r;

	memset(out, 0, sizeof *out);
	if (!g)
		return 0;
	r = g->count(&n);
	if (r != 0)
		return sr_err_set(e, -SR_EUNSUPPORTED,
				  "nvml: nvmlDeviceGetCount_v2: %s", nv_err(g, r));
	if (n > GPUSTAT_MAX_GPUS)
		n = GPUSTAT_MAX_GPUS;
	for (unsigned int i = 0; i < n; i++) {
		struct nvml_util u = { 0, 0 };
		struct nvml_mem m = { 0, 0, 0 };
		nvml_dev d = NULL;

		r = g->handle(i, &d);
		if (r == 0)
			r = g->util(d, &u);
		if (r == 0)
			r = g->mem(d, &m);
		if (r != 0)
			return sr_err_set(e, -SR_EUNSUPPORTED, "nvml: GPU %u: %s",
					  i, nv_err(g, r));
		out->util_pct[i] = (int)u.gpu;
		out->mem_used[i] = m.used;
		out->mem_total[i] = m.total;
	}
	out->ngpus = (int)n;
	return 0;
}

int gpustat_mean_permille(const struct gpustat_sample *s)
{
	long sum = 0;

	if (s->ngpus <= 0)
		return -1;
	for (int i = 0; i < s->ngpus; i++)
		sum += s->util_pct[i];
	return (int)(sum * 10 / s->ngpus);
}
