/*
 * Exercises the simulated driver through a direct link (-lcuda), dlsym and
 * cuGetProcAddress v1/v2. Prints one line per failed check and exits 1 when
 * any failed; "simtest: N checks passed" otherwise.
 * Run with CUPROF_SIM_DEVICES=2 and a small CUPROF_SIM_MEM_BYTES (1 GiB).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuprof_cuda.h"
#include "cuprof_apis.h"
#include "simcheck.h"

/* SIMTEST_REAL=1 runs the program against a real driver, to compare: the
 * checks that only hold for the simulator (its device names and sizes, its
 * release counter, garbage, destroyed or NULL handles, which are undefined
 * behaviour in the real driver) are skipped, and "device 1" is device 0
 * on a one-GPU machine. */
static int real, dev1 = 1;
#define SIM_ONLY(x)                                                                                 \
	do {                                                                                        \
		if (!real) {                                                                        \
			x;                                                                          \
		}                                                                                   \
	} while (0)
/* The pool holds exactly one 2 MiB granule (sim) or something (real). */
#define RES2M(e) (real ? (e) > 0 : (e) == 2 << 20)

static unsigned long long no_releases(void) { return 0; }

/* An allocation size no device can satisfy. */
static size_t oom_size(void)
{
	size_t total = 0;
	cuDeviceTotalMem_v2(&total, 0);
	return total * 2;
}

static cuuint64_t pool_attr(CUmemoryPool p, CUmemPool_attribute a)
{
	cuuint64_t v = 0;
	OK(cuMemPoolGetAttribute(p, a, &v));
	return v;
}

static void test_before_init(void)
{
	CUcontext c;
	const char *s = NULL;
	int v = 0;
	EXPECT(cuCtxGetCurrent(&c), CUDA_ERROR_NOT_INITIALIZED);
	EXPECT(cuStreamCreate((CUstream *)&c, 0), CUDA_ERROR_NOT_INITIALIZED);
	OK(cuGetErrorName(CUDA_ERROR_INVALID_HANDLE, &s));
	CHECK(s && strcmp(s, "CUDA_ERROR_INVALID_HANDLE") == 0);
	OK(cuDriverGetVersion(&v));
	CHECK(v == 13000);
	EXPECT(cuInit(1), CUDA_ERROR_INVALID_VALUE);
	OK(cuInit(0));
	OK(cuInit(0));
}

static void test_errors(void)
{
	const char *s = NULL;
	OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
	CHECK(s && strcmp(s, "out of memory") == 0);
	OK(cuGetErrorName(CUDA_SUCCESS, &s));
	CHECK(s && strcmp(s, "CUDA_SUCCESS") == 0);
	EXPECT(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
	CHECK(s == NULL);
	SIM_ONLY(EXPECT(cuGetErrorName(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE));
}

static void test_devices(void)
{
	int n = 0, v = 0;
	CUdevice d = -1;
	char name[64];
	size_t total = 0;
	OK(cuDeviceGetCount(&n));
	SIM_ONLY(CHECK(n == 2));
	dev1 = n >= 2 ? 1 : 0;
	OK(cuDeviceGet(&d, dev1));
	CHECK(d == dev1);
	EXPECT(cuDeviceGet(&d, n), CUDA_ERROR_INVALID_DEVICE);
	EXPECT(cuDeviceGet(&d, -1), CUDA_ERROR_INVALID_DEVICE);
	OK(cuDeviceGetName(name, sizeof name, dev1));
	SIM_ONLY(CHECK(strcmp(name, "cuprof simulated GPU 1") == 0));
	EXPECT(cuDeviceGetName(name, sizeof name, 7), CUDA_ERROR_INVALID_DEVICE);
	OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
	CHECK(v == 9);
	OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
	CHECK(v == 1);
	EXPECT(cuDeviceGetAttribute(&v, (CUdevice_attribute)100000, 0), CUDA_ERROR_INVALID_VALUE);
	OK(cuDeviceTotalMem_v2(&total, 0));
	SIM_ONLY(CHECK(total == (size_t)1 << 30));
}

static void test_contexts(void)
{
	CUcontext p1, p2, cur, made, popped;
	CUdevice d = -1;
	unsigned flags = 9;
	int active = -1;

	/* No context yet on this thread. */
	OK(cuCtxGetCurrent(&cur));
	CHECK(cur == NULL);
	EXPECT(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
	EXPECT(cuCtxGetDevice(&d), CUDA_ERROR_INVALID_CONTEXT);

	OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
	CHECK(active == 0);
	OK(cuDevicePrimaryCtxRetain(&p1, 0));
	OK(cuDevicePrimaryCtxRetain(&p2, 0));
	CHECK(p1 == p2 && p1 != NULL);
	OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
	CHECK(active == 1);
	EXPECT(cuDevicePrimaryCtxRetain(&p2, 5), CUDA_ERROR_INVALID_DEVICE);

	OK(cuCtxSetCurrent(p1));
	OK(cuCtxGetCurrent(&cur));
	CHECK(cur == p1);
	OK(cuCtxGetDevice(&d));
	CHECK(d == 0);
	OK(cuCtxSynchronize());
	OK(cuCtxSynchronize_v2(NULL));
	OK(cuCtxSynchronize_v2(p1));

	/* A created context is pushed; its device is 1. */
	OK(cuCtxCreate_v2(&made, 0, dev1));
	OK(cuCtxGetCurrent(&cur));
	CHECK(cur == made);
	OK(cuCtxGetDevice(&d));
	CHECK(d == dev1);
	d = -1;
	OK(cuCtxGetDevice_v2(&d, p1));
	CHECK(d == 0);
	EXPECT(cuCtxCreate_v2(&made, 0, 3), CUDA_ERROR_INVALID_DEVICE);
	OK(cuCtxPopCurrent_v2(&popped));
	OK(cuCtxGetCurrent(&cur));
	CHECK(cur == p1);
	OK(cuCtxPushCurrent_v2(popped));
	OK(cuCtxGetCurrent(&cur));
	CHECK(cur == popped);
	OK(cuCtxDestroy_v2(made)); /* current: popped too */
	OK(cuCtxGetCurrent(&cur));
	CHECK(cur == p1);
	SIM_ONLY(EXPECT(cuCtxDestroy_v2(made), CUDA_ERROR_INVALID_CONTEXT));
	SIM_ONLY(EXPECT(cuCtxSetCurrent(made), CUDA_ERROR_INVALID_CONTEXT));
	SIM_ONLY(EXPECT(cuCtxPushCurrent_v2(made), CUDA_ERROR_INVALID_CONTEXT));
	EXPECT(cuCtxDestroy_v2(p1), CUDA_ERROR_INVALID_CONTEXT); /* primary */
	SIM_ONLY(EXPECT(cuCtxDestroy_v2((CUcontext)&d), CUDA_ERROR_INVALID_CONTEXT));

	/* A context destroyed below the top of the stack stays there, dead.
	 * (The real 13.0 driver answers the pre-4.0 cuCtxPushCurrent and
	 * cuCtxPopCurrent with CUDA_ERROR_INVALID_CONTEXT: use the _v2.) */
	OK(cuCtxCreate_v4(&made, NULL, 0, 0));
	OK(cuCtxPushCurrent_v2(p1));
	OK(cuCtxDestroy_v2(made)); /* not on top: stays in the stack */
	OK(cuCtxPopCurrent_v2(&popped));
	CHECK(popped == p1);
	SIM_ONLY(EXPECT(cuStreamCreate((CUstream *)&cur, 0), CUDA_ERROR_CONTEXT_IS_DESTROYED));
	OK(cuCtxSetCurrent(NULL)); /* pops the dead one */
	OK(cuCtxGetCurrent(&cur));
	CHECK(cur == p1);
	OK(cuCtxPopCurrent_v2(&popped));
	CHECK(popped == p1);
	OK(cuCtxGetCurrent(&cur));
	CHECK(cur == NULL);
	EXPECT(cuCtxPopCurrent_v2(&popped), CUDA_ERROR_INVALID_CONTEXT);

	OK(cuDevicePrimaryCtxRelease_v2(0));
	OK(cuDevicePrimaryCtxRelease(0));
	EXPECT(cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);
	OK(cuCtxSetCurrent(p1)); /* inactive, but still a context */
	EXPECT(cuCtxSynchronize(), CUDA_ERROR_CONTEXT_IS_DESTROYED);
	OK(cuCtxSetCurrent(NULL));
}

static void *thread_ctx(void *arg)
{
	CUcontext cur = (CUcontext)1;
	(void)arg;
	OK(cuCtxGetCurrent(&cur));
	CHECK(cur == NULL); /* the current context is per thread */
	return NULL;
}

static void test_streams_events(CUcontext ctx)
{
	CUstream s, s2;
	CUevent a, b, nt;
	float ms = -1;

	OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	OK(cuStreamCreateWithPriority(&s2, 0, -3));
	EXPECT(cuStreamCreate(&s, 0x10), CUDA_ERROR_INVALID_VALUE);
	OK(cuStreamQuery(s));
	OK(cuStreamSynchronize(s));
	OK(cuStreamSynchronize_ptsz(NULL));
	OK(cuStreamSynchronize(CU_STREAM_LEGACY));

	OK(cuEventCreate(&a, CU_EVENT_DEFAULT));
	OK(cuEventCreate(&b, CU_EVENT_BLOCKING_SYNC));
	OK(cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
	EXPECT(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE); /* not recorded */
	OK(cuEventRecord(a, s));
	OK(cuEventRecord_ptsz(b, NULL));
	OK(cuEventRecordWithFlags(nt, s2, 0));
	OK(cuEventSynchronize(b));
	OK(cuEventQuery(b));
	OK(cuEventElapsedTime(&ms, a, b));
	CHECK(ms >= 0);
	OK(cuEventElapsedTime_v2(&ms, a, b));
	EXPECT(cuEventElapsedTime(&ms, a, nt), CUDA_ERROR_INVALID_HANDLE);
	OK(cuStreamWaitEvent(s2, a, 0));
	OK(cuStreamWaitEvent_ptsz(NULL, a, 0));

	OK(cuEventDestroy_v2(a));
	SIM_ONLY(EXPECT(cuEventDestroy_v2(a), CUDA_ERROR_INVALID_HANDLE));
	SIM_ONLY(EXPECT(cuEventRecord(a, s), CUDA_ERROR_INVALID_HANDLE));
	SIM_ONLY(EXPECT(cuStreamWaitEvent(s, a, 0), CUDA_ERROR_INVALID_HANDLE));
	OK(cuEventDestroy(b));
	OK(cuEventDestroy(nt));
	SIM_ONLY(EXPECT(cuEventDestroy((CUevent)&ms), CUDA_ERROR_INVALID_HANDLE));

	OK(cuStreamDestroy_v2(s));
	SIM_ONLY(EXPECT(cuStreamDestroy_v2(s), CUDA_ERROR_INVALID_HANDLE));
	SIM_ONLY(EXPECT(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE));
	SIM_ONLY(EXPECT(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE));
	SIM_ONLY(EXPECT(cuStreamDestroy((CUstream)&ms), CUDA_ERROR_INVALID_HANDLE));
	OK(cuStreamDestroy(s2));

	pthread_t t;
	pthread_create(&t, NULL, thread_ctx, NULL);
	pthread_join(t, NULL);
	(void)ctx;
}

static void test_memory(void)
{
	CUdeviceptr p = 0, q = 0, m = 0;
	size_t free0, free1, total;
	void *h = NULL;

	OK(cuMemGetInfo_v2(&free0, &total));
	SIM_ONLY(CHECK(total == (size_t)1 << 30));
	OK(cuMemAlloc_v2(&p, 1000));
	CHECK(p != 0);
	OK(cuMemGetInfo_v2(&free1, &total));
	SIM_ONLY(CHECK(free1 == free0 - 1024));
	EXPECT(cuMemAlloc_v2(&q, 0), CUDA_ERROR_INVALID_VALUE);
	EXPECT(cuMemAlloc_v2(&q, oom_size()), CUDA_ERROR_OUT_OF_MEMORY);
	OK(cuMemFree_v2(p));
	EXPECT(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE); /* double free */
	EXPECT(cuMemFree_v2(0x1234), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemGetInfo_v2(&free1, &total));
	SIM_ONLY(CHECK(free1 == free0));

	OK(cuMemAllocHost_v2(&h, 100));
	memset(h, 1, 100);
	OK(cuMemFreeHost(h));
	SIM_ONLY(EXPECT(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE));
	OK(cuMemHostAlloc(&h, 100, 0));
	OK(cuMemFreeHost(h));
	OK(cuMemAllocManaged(&m, 4096, 1));
	memset((void *)(uintptr_t)m, 2, 4096); /* host-accessible */
	OK(cuMemFree_v2(m));

	OK(cuMemAlloc_v2(&p, 256));
	OK(cuMemcpyHtoD_v2(p, &free0, sizeof free0));
	OK(cuMemcpyDtoH_v2(&free0, p, sizeof free0));
	OK(cuMemsetD8_v2(p, 0, 256));
	OK(cuMemsetD32Async(p, 0, 64, NULL));
	SIM_ONLY(EXPECT(cuMemcpyAsync(p, p, 8, (CUstream)&h), CUDA_ERROR_INVALID_HANDLE));
	EXPECT(cuMemcpyHtoD_v2(0, &free0, 8), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemFree_v2(p));
}

static void test_pools(void)
{
	CUmemoryPool def, cur, mine, dead;
	CUdeviceptr p, q;
	CUstream s;
	cuuint64_t v, max = ~(cuuint64_t)0, zero = 0;
	unsigned long long (*releases)(void) = (unsigned long long (*)(void))dlsym(RTLD_DEFAULT, "cuprofsim_pool_releases");
	SIM_ONLY(CHECK(releases != NULL));
	if (!releases)
		releases = no_releases;

	OK(cuDeviceGetDefaultMemPool(&def, 0));
	OK(cuDeviceGetMemPool(&cur, 0));
	CHECK(def == cur);
	EXPECT(cuDeviceGetDefaultMemPool(&def, 9), CUDA_ERROR_INVALID_DEVICE);
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 0);
	OK(cuStreamCreate(&s, 0));

	/* Threshold 0: freed memory stays reserved until a synchronize releases it. */
	unsigned long long r0 = releases();
	OK(cuMemAllocAsync(&p, 10, s));
	CHECK_EQ(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 10); /* bytes asked for */
	CHECK(RES2M(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)));
	OK(cuMemFreeAsync(p, s));
	EXPECT(cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
	CHECK(RES2M(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)));
	SIM_ONLY(CHECK(releases() == r0));
	OK(cuStreamSynchronize(s));
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
	SIM_ONLY(CHECK(releases() == r0 + 1));
	OK(cuCtxSynchronize()); /* nothing left to release */
	SIM_ONLY(CHECK(releases() == r0 + 1));

	/* The same through cuCtxSynchronize and an event. */
	CUevent e;
	OK(cuEventCreate(&e, 0));
	OK(cuMemAllocAsync_ptsz(&p, 10, NULL));
	OK(cuMemFreeAsync_ptsz(p, NULL));
	OK(cuEventRecord(e, s));
	OK(cuEventSynchronize(e));
	SIM_ONLY(CHECK(releases() == r0 + 2));
	OK(cuEventDestroy(e));

	/* Threshold max: the reservation stays, no release. */
	OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max));
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == max);
	OK(cuMemAllocAsync(&p, 10, s));
	OK(cuMemFreeAsync(p, s));
	OK(cuCtxSynchronize());
	SIM_ONLY(CHECK(releases() == r0 + 2));
	CHECK(RES2M(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)));
	/* Reuse: a second allocation takes no new reservation. */
	OK(cuMemAllocAsync(&q, 100, s));
	CHECK(RES2M(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)));
	OK(cuMemFreeAsync(q, s));
	OK(cuStreamSynchronize(s)); /* a trim releases only frees that completed */
	OK(cuMemPoolTrimTo(def, 0));
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
	SIM_ONLY(CHECK(releases() == r0 + 3));
	CHECK(RES2M(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)));
	OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero));
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 0);
	v = 5;
	EXPECT(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v), CUDA_ERROR_INVALID_VALUE);
	EXPECT(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v), CUDA_ERROR_INVALID_VALUE);
	int reuse = 0;
	OK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
	CHECK(reuse == 1);
	OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero));

	/* Out of memory beyond the device's size (1 GiB here). */
	EXPECT(cuMemAllocAsync(&p, oom_size(), s), CUDA_ERROR_OUT_OF_MEMORY);

	/* Created pools. */
	CUmemPoolProps props;
	memset(&props, 0, sizeof props);
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	OK(cuMemPoolCreate(&mine, &props));
	CHECK(mine != def);
	OK(cuMemAllocFromPoolAsync(&p, 4096, mine, s));
	CHECK_EQ(pool_attr(mine, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4096);
	CHECK_EQ(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
	OK(cuDeviceSetMemPool(0, mine));
	OK(cuDeviceGetMemPool(&cur, 0));
	CHECK(cur == mine);
	EXPECT(cuDeviceSetMemPool(7, mine), CUDA_ERROR_INVALID_VALUE); /* as the real driver answers */
	OK(cuMemAllocAsync(&q, 10, s)); /* from the current pool: mine */
	CHECK_EQ(pool_attr(mine, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4096 + 10);
	OK(cuMemFreeAsync(q, s));
	OK(cuMemPoolDestroy(mine));
	OK(cuDeviceGetMemPool(&cur, 0));
	CHECK(cur == def); /* back to the default */
	OK(cuMemFreeAsync(p, s)); /* outlived its pool */
	dead = mine;
	SIM_ONLY(EXPECT(cuMemPoolDestroy(dead), CUDA_ERROR_INVALID_VALUE));
	SIM_ONLY(EXPECT(cuMemAllocFromPoolAsync(&p, 10, dead, s), CUDA_ERROR_INVALID_VALUE));
	EXPECT(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);
	props.location.id = 4;
	EXPECT(cuMemPoolCreate(&mine, &props), CUDA_ERROR_INVALID_VALUE);
	props.location.id = 0;
	props.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
	EXPECT(cuMemPoolCreate(&mine, &props), CUDA_ERROR_INVALID_VALUE);

	size_t fr, total;
	OK(cuMemGetInfo_v2(&fr, &total));
	SIM_ONLY(CHECK(fr == total)); /* everything given back */
	OK(cuStreamDestroy(s));
}

/* Destroying a stream on which memory was freed releases like a synchronize. */
static void test_stream_destroy_releases(void)
{
	unsigned long long (*releases)(void) = (unsigned long long (*)(void))dlsym(RTLD_DEFAULT, "cuprofsim_pool_releases");
	if (!releases)
		releases = no_releases;
	CUmemoryPool def;
	CUstream s;
	CUdeviceptr p;
	cuuint64_t zero = 0;
	OK(cuDeviceGetDefaultMemPool(&def, 0));
	OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero));
	unsigned long long r0 = releases();
	OK(cuStreamCreate(&s, 0));
	OK(cuStreamDestroy(s)); /* no frees: nothing to give back */
	SIM_ONLY(CHECK(releases() == r0));
	OK(cuStreamCreate(&s, 0));
	OK(cuMemAllocAsync(&p, 10, s));
	OK(cuMemFreeAsync(p, s));
	CHECK(RES2M(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)));
	OK(cuStreamDestroy_v2(s));
	SIM_ONLY(CHECK(releases() == r0 + 1));
	CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
}

/* Many threads creating and destroying objects at once keep the books right. */
static void *stress_thread(void *arg)
{
	CUcontext ctx = arg;
	if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
		return (void *)1;
	for (int i = 0; i < 2000; i++) {
		CUstream s;
		CUevent e;
		CUdeviceptr p;
		if (cuStreamCreate(&s, 0) || cuEventCreate(&e, 0) || cuMemAllocAsync(&p, 100 + (size_t)i, s) ||
		    cuEventRecord(e, s) || cuMemFreeAsync(p, s) || cuEventSynchronize(e) || cuEventDestroy(e) ||
		    cuStreamDestroy(s))
			return (void *)1;
		CUcontext cur;
		if (cuCtxGetCurrent(&cur) || cur != ctx)
			return (void *)1;
	}
	return NULL;
}

static void test_threads(CUcontext ctx)
{
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, stress_thread, ctx);
	for (int i = 0; i < 8; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		CHECK(ret == NULL);
	}
	CUmemoryPool def;
	OK(cuDeviceGetDefaultMemPool(&def, 0));
	CHECK_EQ(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
	OK(cuCtxSynchronize());
	size_t fr, total;
	OK(cuMemGetInfo_v2(&fr, &total));
	SIM_ONLY(CHECK(fr == total));
}

static void test_modules(void)
{
	CUmodule mod;
	CUfunction f;
	static const char image[] = "fake";
	OK(cuModuleLoadData(&mod, image));
	OK(cuModuleGetFunction(&f, mod, "kernel"));
	OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	OK(cuLaunchKernel_ptsz(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	EXPECT(cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	CUlaunchConfig cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
	OK(cuLaunchKernelEx(&cfg, f, NULL, NULL));
	OK(cuModuleUnload(mod));
	EXPECT(cuModuleUnload(mod), CUDA_ERROR_INVALID_HANDLE);
	EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
	EXPECT(cuModuleLoadData(&mod, NULL), CUDA_ERROR_INVALID_VALUE);
}

/* cuGetProcAddress: (name, version, flags) -> the exported variant. */
static const struct {
	const char *name;
	int version;
	int flags;
	const char *want; /* NULL: not found */
	int status;
} lookups[] = {
	{"cuStreamDestroy", 3020, 0, "cuStreamDestroy", 0},
	{"cuStreamDestroy", 4000, 0, "cuStreamDestroy_v2", 0},
	{"cuStreamDestroy", 13000, 2, "cuStreamDestroy_v2", 0},
	{"cuMemAlloc", 3010, 0, "cuMemAlloc", 0},
	{"cuMemAlloc", 3020, 0, "cuMemAlloc_v2", 0},
	{"cuCtxSynchronize", 12090, 0, "cuCtxSynchronize", 0},
	{"cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2", 0},
	{"cuCtxGetDevice", 12000, 0, "cuCtxGetDevice", 0},
	{"cuCtxGetDevice", 13000, 1, "cuCtxGetDevice_v2", 0},
	{"cuCtxCreate", 11040, 0, "cuCtxCreate_v3", 0},
	{"cuCtxCreate", 13000, 0, "cuCtxCreate_v4", 0},
	{"cuStreamSynchronize", 12000, 0, "cuStreamSynchronize", 0},
	{"cuStreamSynchronize", 12000, 1, "cuStreamSynchronize", 0},
	{"cuStreamSynchronize", 12000, 2, "cuStreamSynchronize_ptsz", 0},
	{"cuStreamSynchronize", 6050, 2, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT},
	{"cuStreamSynchronize", 6050, 0, "cuStreamSynchronize", 0},
	{"cuMemAllocAsync", 11020, 0, "cuMemAllocAsync", 0},
	{"cuMemAllocAsync", 11020, 2, "cuMemAllocAsync_ptsz", 0},
	{"cuMemAllocAsync", 11010, 0, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT},
	{"cuMemcpyHtoD", 12000, 2, "cuMemcpyHtoD_v2_ptds", 0},
	{"cuMemcpyHtoD", 12000, 0, "cuMemcpyHtoD_v2", 0},
	{"cuMemcpy", 12000, 2, "cuMemcpy_ptds", 0},
	{"cuEventElapsedTime", 12000, 0, "cuEventElapsedTime", 0},
	{"cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2", 0},
	{"cuCtxSetCurrent", 4000, 0, "cuCtxSetCurrent", 0},
	{"cuCtxSetCurrent", 3020, 0, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT},
	{"cuGetProcAddress", 11030, 0, "cuGetProcAddress", 0},
	{"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2", 0},
	{"cuGetProcAddress", 13000, 2, "cuGetProcAddress_v2", 0},
	{"cuNoSuchThing", 13000, 0, NULL, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND},
	{"cuStreamDestroy_v2", 13000, 0, NULL, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND},
};

static void test_proc_address(void)
{
	for (size_t i = 0; i < sizeof lookups / sizeof lookups[0]; i++) {
		void *want = lookups[i].want ? dlsym(RTLD_DEFAULT, lookups[i].want) : NULL;
		void *got1 = (void *)1, *got2 = (void *)1;
		CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
		CUresult r1 = cuGetProcAddress(lookups[i].name, &got1, lookups[i].version, lookups[i].flags);
		CUresult r2 = cuGetProcAddress_v2(lookups[i].name, &got2, lookups[i].version, lookups[i].flags, &st);
		checks++;
		/* Not found: v1 says CUDA_ERROR_NOT_FOUND and leaves the pointer;
		 * v2 succeeds with a NULL pointer and the reason in its status. */
		if (lookups[i].want ? (r1 || r2 || !want || got1 != want || got2 != want || st != 0)
				    : (r1 != CUDA_ERROR_NOT_FOUND || r2 != CUDA_SUCCESS || got1 != (void *)1 || got2 ||
				       (int)st != lookups[i].status)) {
			failures++;
			printf("FAIL lookup %s %d %d: r1=%d r2=%d status=%d got %p/%p want %s %p\n", lookups[i].name,
			       lookups[i].version, lookups[i].flags, r1, r2, (int)st, got1, got2,
			       lookups[i].want ? lookups[i].want : "none", want);
		}
	}
	void *p;
	EXPECT(cuGetProcAddress("cuInit", &p, 13000, 4), CUDA_ERROR_INVALID_VALUE);
	SIM_ONLY(EXPECT(cuGetProcAddress(NULL, &p, 13000, 0), CUDA_ERROR_INVALID_VALUE));

	/* Calling through a looked-up pointer. */
	CUresult (*getproc)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) = NULL;
	OK(cuGetProcAddress("cuGetProcAddress", (void **)&getproc, 12000, 0));
	CHECK(getproc == cuGetProcAddress_v2);
	if (getproc) {
		CUresult (*gn)(CUresult, const char **) = NULL;
		const char *s = NULL;
		OK(getproc("cuGetErrorName", (void **)&gn, 12000, 0, NULL));
		CHECK(gn == cuGetErrorName);
		if (gn)
			OK(gn(CUDA_ERROR_NOT_FOUND, &s));
		CHECK(s && strcmp(s, "CUDA_ERROR_NOT_FOUND") == 0);
	}

	/* Every exported variant is a distinct function, reachable by dlsym. */
	static const char *const syms[] = {
#define X_NAME(sym, ...) #sym,
		CUPROF_SYMBOLS(X_NAME)
	};
	size_t n = sizeof syms / sizeof syms[0];
	void *addr[sizeof syms / sizeof syms[0]];
	for (size_t i = 0; i < n; i++) {
		addr[i] = dlsym(RTLD_DEFAULT, syms[i]);
		checks++;
		if (!addr[i]) {
			failures++;
			printf("FAIL dlsym %s\n", syms[i]);
		}
		for (size_t j = 0; j < i; j++) {
			if (addr[i] && addr[i] == addr[j]) {
				failures++;
				printf("FAIL %s and %s share an address\n", syms[i], syms[j]);
			}
		}
	}
	CHECK(dlsym(RTLD_DEFAULT, "cuGetProcAddress") != dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"));

	/* ... and cuGetProcAddress hands out each of them for some version and flag. */
	static const char *const bases[] = {
#define X_BASE(sym, api, ...) #api,
		CUPROF_SYMBOLS(X_BASE)
	};
	/* Every version the headers' version table names. */
#define X_VER(name, ver, ptds, sym) ver,
	static const int versions[] = {CUPROF_PROCS(X_VER)};
#undef X_VER
	for (size_t i = 0; i < n; i++) {
		int found = 0;
		for (size_t v = 0; v < sizeof versions / sizeof versions[0] && !found; v++) {
			for (int fl = 0; fl <= 2 && !found; fl += 2) {
				void *got = NULL;
				if (cuGetProcAddress(bases[i], &got, versions[v], fl) == CUDA_SUCCESS && got == addr[i])
					found = 1;
			}
		}
		checks++;
		if (!found) {
			failures++;
			printf("FAIL %s is never returned by cuGetProcAddress(\"%s\")\n", syms[i], bases[i]);
		}
	}
	/* Internal symbols stay hidden. */
	CHECK(dlsym(RTLD_DEFAULT, "sync_device") == NULL);
}

/* Runs one test function, naming it first against a real driver (where a
 * crash would otherwise say nothing). */
#define RUN(call)                                                                                   \
	do {                                                                                        \
		if (real)                                                                           \
			printf("== %s\n", #call);                                                  \
		call;                                                                               \
	} while (0)

int main(void)
{
	CUcontext ctx;
	real = getenv("SIMTEST_REAL") != NULL;
	if (real)
		setvbuf(stdout, NULL, _IONBF, 0);
	RUN(test_before_init());
	RUN(test_errors());
	RUN(test_proc_address());
	RUN(test_devices());
	RUN(test_contexts());
	OK(cuDevicePrimaryCtxRetain(&ctx, 0));
	OK(cuCtxSetCurrent(ctx));
	RUN(test_streams_events(ctx));
	RUN(test_memory());
	RUN(test_pools());
	SIM_ONLY(RUN(test_modules())); /* the real driver wants a real image */
	RUN(test_stream_destroy_releases());
	RUN(test_threads(ctx));
	/* Releasing the primary context destroys what it owned. */
	CUstream s;
	OK(cuStreamCreate(&s, 0));
	OK(cuDevicePrimaryCtxRelease(0));
	SIM_ONLY(EXPECT(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE));
	if (failures) {
		printf("simtest: %d of %d checks failed\n", failures, checks);
		return 1;
	}
	printf("simtest: %d checks passed\n", checks);
	return 0;
}
