/*
 * A do-nothing stand-in for libcuda.so.1 exporting exactly the symbols loops.c
 * resolves, so the suite's self-test can run the loops on a machine without a
 * GPU (CUPROF_BENCH_LIBCUDA=path/to/it). Not a simulation: see cudawrap/sim.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef int CUresult;
static int ctx_token, pool_token;
static void *current;

CUresult cuInit(unsigned int f) { return f ? 1 : 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGet(int *d, int ord) { if (ord != 0) return 101; *d = ord; return 0; }
CUresult cuDeviceGetName(char *s, int n, int d)
{
	(void)d;
	const char *name = "Fake \"GPU\"";
	int i = 0;
	for (; i < n - 1 && name[i]; i++)
		s[i] = name[i];
	s[i] = 0;
	return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = &ctx_token; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
CUresult cuCtxGetCurrent(void **c) { *c = current; return 0; }
CUresult cuCtxSetCurrent(void *c) { current = c; return 0; }
CUresult cuCtxSynchronize(void) { return current ? 0 : 201; }
CUresult cuGetErrorName(CUresult r, const char **s) { *s = r == 1 ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_UNKNOWN"; return 0; }
CUresult cuStreamCreate(void **s, unsigned f) { (void)f; *s = malloc(8); return *s ? 0 : 2; }
CUresult cuStreamDestroy_v2(void *s) { free(s); return 0; }
CUresult cuEventCreate(void **e, unsigned f) { (void)f; *e = malloc(8); return *e ? 0 : 2; }
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuMemAllocAsync(unsigned long long *p, size_t n, void *s) { (void)s; *p = (uintptr_t)malloc(n); return *p ? 0 : 2; }
CUresult cuMemFreeAsync(unsigned long long p, void *s) { (void)s; free((void *)(uintptr_t)p); return 0; }
CUresult cuDeviceGetDefaultMemPool(void **p, int d) { (void)d; *p = &pool_token; return 0; }
CUresult cuMemPoolSetAttribute(void *p, int a, void *v) { (void)v; return p == &pool_token && a == 4 ? 0 : 1; }
