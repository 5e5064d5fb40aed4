// Alternate stream, allocation and synchronize between devices 0 and 1.
#include <dlfcn.h>
#include <stdio.h>
typedef int CUresult; typedef int CUdevice; typedef void *CUcontext, *CUstream; typedef unsigned long long CUdeviceptr;
#define F(ret, name, args) typedef ret (*name##_t) args; static name##_t name;
F(CUresult, cuInit, (unsigned))
F(CUresult, cuDeviceGetCount, (int *))
F(CUresult, cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))
F(CUresult, cuCtxSetCurrent, (CUcontext))
F(CUresult, cuStreamCreate, (CUstream *, unsigned))
F(CUresult, cuStreamDestroy_v2, (CUstream))
F(CUresult, cuMemAllocAsync, (CUdeviceptr *, size_t, CUstream))
F(CUresult, cuMemFreeAsync, (CUdeviceptr, CUstream))
F(CUresult, cuStreamSynchronize, (CUstream))
F(CUresult, cuCtxSynchronize, (void))
#define L(name) name = (name##_t)dlsym(h, #name); if (!name) { fprintf(stderr, "no %s\n", #name); return 2; }
int main(void) {
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h) return 2;
	L(cuInit) L(cuDeviceGetCount) L(cuDevicePrimaryCtxRetain) L(cuCtxSetCurrent) L(cuStreamCreate) L(cuStreamDestroy_v2)
	L(cuMemAllocAsync) L(cuMemFreeAsync) L(cuStreamSynchronize) L(cuCtxSynchronize)
	int n = 0; cuInit(0); cuDeviceGetCount(&n);
	printf("devices %d\n", n);
	CUcontext ctx[2]; CUstream s[2]; CUdeviceptr p[2];
	for (int d = 0; d < 2; d++) cuDevicePrimaryCtxRetain(&ctx[d], d);
	for (int d = 0; d < 2; d++) { cuCtxSetCurrent(ctx[d]); cuStreamCreate(&s[d], 0); }
	for (int i = 0; i < 10; i++) {
		int d = i % 2;
		cuCtxSetCurrent(ctx[d]);
		cuMemAllocAsync(&p[d], 1000 * (d + 1), s[d]);
		cuMemFreeAsync(p[d], s[d]);
		cuCtxSynchronize();
	}
	for (int d = 0; d < 2; d++) { cuCtxSetCurrent(ctx[d]); cuStreamSynchronize(s[d]); cuStreamDestroy_v2(s[d]); }
	return 0;
}
