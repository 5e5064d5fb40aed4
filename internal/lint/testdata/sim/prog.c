// Patterns for cuprof lint, recorded with cuprof record --sim -- ./prog MODE:
// 0: default pool threshold 0, a stream per call, synchronize each iteration;
// 1: fixed: threshold UINT64_MAX, one stream;
// 2: threshold 0, a stream per call, no synchronize (the stream destroy trims).
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
typedef int CUresult; typedef int CUdevice; typedef void *CUcontext, *CUstream, *CUmemoryPool; typedef unsigned long long CUdeviceptr;
#define F(ret, name, args) typedef ret (*name##_t) args; static name##_t name;
F(CUresult, cuInit, (unsigned))
F(CUresult, cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))
F(CUresult, cuCtxSetCurrent, (CUcontext))
F(CUresult, cuStreamCreate, (CUstream *, unsigned))
F(CUresult, cuStreamDestroy_v2, (CUstream))
F(CUresult, cuMemAllocAsync, (CUdeviceptr *, size_t, CUstream))
F(CUresult, cuMemFreeAsync, (CUdeviceptr, CUstream))
F(CUresult, cuStreamSynchronize, (CUstream))
F(CUresult, cuDeviceGetDefaultMemPool, (CUmemoryPool *, CUdevice))
F(CUresult, cuMemPoolSetAttribute, (CUmemoryPool, int, void *))
#define L(name) name = (name##_t)dlsym(h, #name); if (!name) { fprintf(stderr, "no %s\n", #name); return 2; }
int main(int argc, char **argv) {
	int mode = argc > 1 ? atoi(argv[1]) : 0, fixed = mode == 1;
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
	L(cuInit) L(cuDevicePrimaryCtxRetain) L(cuCtxSetCurrent) L(cuStreamCreate) L(cuStreamDestroy_v2)
	L(cuMemAllocAsync) L(cuMemFreeAsync) L(cuStreamSynchronize) L(cuDeviceGetDefaultMemPool) L(cuMemPoolSetAttribute)
	CUcontext ctx; CUstream s = 0; CUdeviceptr p;
	cuInit(0); cuDevicePrimaryCtxRetain(&ctx, 0); cuCtxSetCurrent(ctx);
	if (fixed) {
		CUmemoryPool pool; uint64_t max = UINT64_MAX;
		cuDeviceGetDefaultMemPool(&pool, 0); cuMemPoolSetAttribute(pool, 4, &max);
		cuStreamCreate(&s, 0);
	}
	for (int i = 0; i < 50; i++) {
		if (!fixed) cuStreamCreate(&s, 0);
		cuMemAllocAsync(&p, 10, s); cuMemFreeAsync(p, s);
		if (mode != 2) cuStreamSynchronize(s);
		if (!fixed) cuStreamDestroy_v2(s);
	}
	if (fixed) cuStreamDestroy_v2(s);
	return 0;
}
