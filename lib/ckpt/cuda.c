/*
 * cuda.c - the CUDA runtime, loaded with dlopen at run time.
 *
 * libspotckpt links nothing from CUDA, so it builds and runs on machines
 * without it.  The first CUDA tensor (or spotckpt_cuda_available()) tries
 * $SPOTCKPT_CUDART, then libcudart.so, libcudart.so.13, .so.12, .so.11.0
 * (a name without a path also finds the copy a framework already loaded),
 * and resolves every entry point the engine needs; if any is missing the
 * runtime counts as absent and CUDA tensors are refused with
 * -SPOTCKPT_EUNSUPPORTED and a message naming what failed.  Tests swap in
 * a fake runtime with ckpt__cuda_set_ops().
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_tried;
static const struct ckpt_cuda_ops *g_ops;
static struct ckpt_cuda_ops g_real;
static char g_err[256];

static int load_from(void *h)
{
	static const char *const names[] = {
		"cudaHostAlloc", "cudaFreeHost", "cudaStreamCreateWithFlags",
		"cudaStreamDestroy", "cudaMemcpyAsync", "cudaMemcpy",
		"cudaStreamSynchronize", "cudaEventCreateWithFlags",
		"cudaEventDestroy", "cudaEventRecord", "cudaStreamWaitEvent",
		"cudaGetErrorString",
	};
	void *sym[sizeof names / sizeof names[0]];

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		sym[i] = dlsym(h, names[i]);
		if (!sym[i]) {
			snprintf(g_err, sizeof g_err, "symbol %s not found",
				 names[i]);
			return -1;
		}
	}
	/* POSIX guarantees object/function pointer round trips for dlsym */
	memcpy(&g_real.malloc_host, &sym[0], sizeof(void *));
	memcpy(&g_real.free_host, &sym[1], sizeof(void *));
	memcpy(&g_real.stream_create, &sym[2], sizeof(void *));
	memcpy(&g_real.stream_destroy, &sym[3], sizeof(void *));
	memcpy(&g_real.memcpy_async, &sym[4], sizeof(void *));
	memcpy(&g_real.memcpy, &sym[5], sizeof(void *));
	memcpy(&g_real.stream_sync, &sym[6], sizeof(void *));
	memcpy(&g_real.event_create, &sym[7], sizeof(void *));
	memcpy(&g_real.event_destroy, &sym[8], sizeof(void *));
	memcpy(&g_real.event_record, &sym[9], sizeof(void *));
	memcpy(&g_real.stream_wait_event, &sym[10], sizeof(void *));
	memcpy(&g_real.get_error_string, &sym[11], sizeof(void *));
	return 0;
}

static void try_load(void)
{
	const char *env = getenv("SPOTCKPT_CUDART");
	const char *cands[] = { env, "libcudart.so", "libcudart.so.13",
				"libcudart.so.12", "libcudart.so.11.0" };

	snprintf(g_err, sizeof g_err, "libcudart not found");
	for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
		void *h;

		if (!cands[i] || !*cands[i])
			continue;
		h = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			snprintf(g_err, sizeof g_err, "%s", dlerror());
			if (env && i == 0)
				return; /* an explicit choice: no guessing */
			continue;
		}
		if (load_from(h) == 0) {
			g_ops = &g_real;
			return;
		}
		dlclose(h);
		if (env && i == 0)
			return;
	}
}

const struct ckpt_cuda_ops *ckpt__cuda(void)
{
	const struct ckpt_cuda_ops *ops;

	pthread_mutex_lock(&g_mu);
	if (!g_tried) {
		g_tried = 1;
		try_load();
	}
	ops = g_ops;
	pthread_mutex_unlock(&g_mu);
	return ops;
}

void ckpt__cuda_set_ops(const struct ckpt_cuda_ops *ops)
{
	pthread_mutex_lock(&g_mu);
	g_tried = 1;
	g_ops = ops;
	if (!ops)
		snprintf(g_err, sizeof g_err, "CUDA runtime disabled");
	pthread_mutex_unlock(&g_mu);
}

const char *ckpt__cuda_error(void)
{
	return g_err;
}

SPOTCKPT_API int32_t spotckpt_cuda_available(void)
{
	return ckpt__cuda() != NULL;
}

void ckpt__cuda_reload(void)
{
	pthread_mutex_lock(&g_mu);
	g_tried = 0;
	g_ops = NULL;
	pthread_mutex_unlock(&g_mu);
}
