/*
 * Reaches the driver four ways (direct link, dlsym on a dlopen handle,
 * cuGetProcAddress, cuGetProcAddress_v2 at several versions and both flag
 * values) and prints every result, then "made API N" per API it called, so
 * the test can compare its output with and without the shim and the trace's
 * counts with what was made.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cuprof_cuda.h"
#include "cuprof_apis.h"

#define X_PROTO(sym, api, params, ...) CUresult sym params;
CUPROF_SYMBOLS(X_PROTO)
CUresult cuGetProcAddress(const char *, void **, int, cuuint64_t);
CUresult cuGetProcAddress_v2(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static const char *names[CUPROF_API_COUNT];
static int made[CUPROF_API_COUNT];

#define CALL(api, expr)                                                 \
	do {                                                            \
		names[CUPROF_API_##api] = #api;                         \
		made[CUPROF_API_##api]++;                               \
		CUresult r_ = (expr);                                   \
		printf("%s:%d %s -> %d\n", __func__, __LINE__, #api, r_); \
	} while (0)

typedef CUresult (*streamCreate_t)(CUstream *, unsigned);
typedef CUresult (*streamDestroy_t)(CUstream);
typedef CUresult (*eventCreate_t)(CUevent *, unsigned);
typedef CUresult (*eventDestroy_t)(CUevent);
typedef CUresult (*ctxGetCurrent_t)(CUcontext *);
typedef CUresult (*streamSync_t)(CUstream);
typedef CUresult (*gpa1_t)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa2_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*allocAsync_t)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*freeAsync_t)(CUdeviceptr, CUstream);

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUstream s;
	CUevent e;
	CUdeviceptr p;

	/* 1. direct link. The first call opens the ring and resolves the
	 * driver: errno must come out as the driver left it. */
	errno = 77;
	CALL(cuInit, cuInit(0));
	printf("errno after the first call %d\n", errno);
	CALL(cuDeviceGet, cuDeviceGet(&dev, 0));
	CALL(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain(&ctx, dev));
	CALL(cuCtxSetCurrent, cuCtxSetCurrent(ctx));
	CALL(cuStreamCreate, cuStreamCreate(&s, 0));
	CALL(cuEventCreate, cuEventCreate(&e, 0));
	CALL(cuEventRecord, cuEventRecord(e, s));
	CALL(cuMemAlloc, cuMemAlloc_v2(&p, 1024));
	CALL(cuMemFree, cuMemFree_v2(p));
	CALL(cuMemFree, cuMemFree_v2(p)); /* double free: an error, recorded as such */
	CALL(cuEventDestroy, cuEventDestroy_v2(e));
	CALL(cuStreamDestroy, cuStreamDestroy_v2(s));
	const char *str = NULL;
	CALL(cuGetErrorName, cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &str));
	printf("error name %s\n", str ? str : "(null)");

	/* 2. dlsym on a dlopen handle */
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("dlopen failed\n");
		return 1;
	}
	streamCreate_t sc = (streamCreate_t)dlsym(h, "cuStreamCreate");
	streamDestroy_t sd = (streamDestroy_t)dlsym(h, "cuStreamDestroy_v2");
	ctxGetCurrent_t gc = (ctxGetCurrent_t)dlsym(h, "cuCtxGetCurrent");
	printf("dlsym found %d %d %d\n", sc != NULL, sd != NULL, gc != NULL);
	printf("dlsym of a missing symbol %p\n", dlsym(h, "cuNoSuchFunction"));
	printf("dlsym of cuGetExportTable found %d\n", dlsym(h, "cuGetExportTable") != NULL);
	CALL(cuStreamCreate, sc(&s, CU_STREAM_NON_BLOCKING));
	CALL(cuCtxGetCurrent, gc(&ctx));
	CALL(cuStreamDestroy, sd(s));

	/* 3. cuGetProcAddress (v1), itself looked up through itself */
	gpa1_t gpa1 = (gpa1_t)dlsym(h, "cuGetProcAddress");
	gpa2_t gpa2 = NULL;
	gpa1_t self1 = NULL;
	printf("gpa1 self %d\n", gpa1("cuGetProcAddress", (void **)&self1, 11030, 0));
	int vers[] = {4000, 11020, 12000};
	for (int v = 0; v < 3; v++) {
		for (int flags = 1; flags <= 2; flags++) {
			streamCreate_t c = NULL;
			streamDestroy_t d = NULL;
			streamSync_t y = NULL;
			printf("gpa1 v%d f%d: %d %d %d\n", vers[v], flags,
			       self1("cuStreamCreate", (void **)&c, vers[v], flags),
			       self1("cuStreamDestroy", (void **)&d, vers[v], flags),
			       self1("cuStreamSynchronize", (void **)&y, vers[v], flags));
			if (c && d && y) {
				CALL(cuStreamCreate, c(&s, 0));
				CALL(cuStreamSynchronize, y(s));
				CALL(cuStreamSynchronize, y(NULL));
				CALL(cuStreamDestroy, d(s));
			}
		}
	}

	/* 4. cuGetProcAddress_v2, found through cuGetProcAddress at 12000 */
	CUdriverProcAddressQueryResult q;
	printf("gpa self v2 %d\n", gpa1("cuGetProcAddress", (void **)&gpa2, 12000, 0));
	for (int v = 0; v < 3; v++) {
		for (int flags = 1; flags <= 2; flags++) {
			eventCreate_t ec = NULL;
			eventDestroy_t ed = NULL;
			allocAsync_t aa = NULL;
			freeAsync_t fa = NULL;
			int r1 = gpa2("cuEventCreate", (void **)&ec, vers[v], flags, &q);
			int r2 = gpa2("cuEventDestroy", (void **)&ed, vers[v], flags, &q);
			int r3 = gpa2("cuMemAllocAsync", (void **)&aa, vers[v], flags, &q);
			int r4 = gpa2("cuMemFreeAsync", (void **)&fa, vers[v], flags, NULL);
			printf("gpa2 v%d f%d: %d %d %d %d status %d\n", vers[v], flags, r1, r2, r3, r4, q);
			if (ec && ed) {
				CALL(cuEventCreate, ec(&e, CU_EVENT_DISABLE_TIMING));
				CALL(cuEventDestroy, ed(e));
			}
			if (aa && fa) {
				CALL(cuMemAllocAsync, aa(&p, 64, NULL));
				CALL(cuMemFreeAsync, fa(p, NULL));
			}
		}
	}
	void *missing = (void *)1;
	printf("gpa2 missing %d %p\n", gpa2("cuNoSuchFunction", &missing, 12000, 0, &q), missing);
	CALL(cuCtxSynchronize, cuCtxSynchronize());
	CALL(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2(dev));
	for (int i = 0; i < CUPROF_API_COUNT; i++)
		if (made[i])
			printf("made %s %d\n", names[i], made[i]);
	return 0;
}
