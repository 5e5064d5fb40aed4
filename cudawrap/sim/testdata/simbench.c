/*
 * Times the simulated driver's calls with its configured costs: prints one
 * line "NAME NS_PER_CALL" per measured call (pairs as one line), for
 * BenchmarkSimCosts. Usage: simbench ITERATIONS
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cuprof_cuda.h"
#include "cuprof_apis.h"

#define X_PROTO(sym, api, params, ...) CUresult sym params;
CUPROF_SYMBOLS(X_PROTO)

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define TIME(name, n, body)                                                                         \
	do {                                                                                        \
		double t0_ = now_ns();                                                              \
		for (long i_ = 0; i_ < (n); i_++) {                                                 \
			body;                                                                       \
		}                                                                                   \
		printf("%s %.1f\n", name, (now_ns() - t0_) / (double)(n));                          \
	} while (0)

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000;
	CUcontext ctx, cur;
	CUstream s;
	CUevent e;
	CUdeviceptr p;
	CUmemoryPool pool;
	const char *str;
	cuuint64_t zero = 0, max = ~(cuuint64_t)0;
	if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx) || cuStreamCreate(&s, 0) ||
	    cuDeviceGetDefaultMemPool(&pool, 0))
		return 1;
	TIME("cuCtxGetCurrent", n, cuCtxGetCurrent(&cur));
	TIME("cuCtxSetCurrent", n, cuCtxSetCurrent(ctx));
	TIME("cuGetErrorName", n, cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &str));
	TIME("cuStreamCreate+cuStreamDestroy", n / 10, {
		CUstream t;
		cuStreamCreate(&t, 0);
		cuStreamDestroy(t);
	});
	TIME("cuEventCreate+cuEventDestroy", n, {
		cuEventCreate(&e, 0);
		cuEventDestroy(e);
	});
	cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max);
	TIME("cuMemAllocAsync+cuMemFreeAsync", n, {
		cuMemAllocAsync(&p, 10, s);
		cuMemFreeAsync(p, s);
	});
	TIME("cuCtxSynchronize,idle", n, cuCtxSynchronize());
	TIME("alloc+free+sync,thr=max", n, {
		cuMemAllocAsync(&p, 10, s);
		cuMemFreeAsync(p, s);
		cuCtxSynchronize();
	});
	cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero);
	TIME("alloc+free+sync,thr=0", n / 100 + 1, {
		cuMemAllocAsync(&p, 10, s);
		cuMemFreeAsync(p, s);
		cuCtxSynchronize();
	});
	return 0;
}
