/*
 * flamedemo: the program recorded for docs/images/flamegraph.png.
 *
 * It allocates the way a Python wrapper library does (a Buffer object whose
 * alloc/free cost some host time around each driver call: the "wrapper
 * overhead" cuprof's flame graph shows as a wide bar) and then the same
 * number of allocations raw, inside a training-step-like loop. Each wrapper
 * operation is a cuprof span (cuprof_span from the shim, found with dlsym:
 * without the shim the program runs unrecorded).
 *
 *   cc -O2 -o flamedemo flamedemo.c -ldl
 *   cuprof record -o demo.cuprof -- ./flamedemo
 *   cuprof view demo.cuprof
 *
 * libcuda is opened with dlopen (CUPROF_DEMO_LIBCUDA names another library);
 * no CUDA header is needed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

static struct {
	CUresult (*Init)(unsigned int);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxGetCurrent)(CUcontext *);
	CUresult (*StreamCreate)(CUstream *, unsigned int);
	CUresult (*StreamDestroy)(CUstream);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*EventCreate)(CUevent *, unsigned int);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventDestroy)(CUevent);
	CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
	CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
} cu;

static const struct {
	void **slot;
	const char *name;
} symbols[] = {
	{(void **)&cu.Init, "cuInit"},
	{(void **)&cu.DeviceGet, "cuDeviceGet"},
	{(void **)&cu.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
	{(void **)&cu.DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
	{(void **)&cu.CtxSetCurrent, "cuCtxSetCurrent"},
	{(void **)&cu.CtxGetCurrent, "cuCtxGetCurrent"},
	{(void **)&cu.StreamCreate, "cuStreamCreate"},
	{(void **)&cu.StreamDestroy, "cuStreamDestroy_v2"},
	{(void **)&cu.StreamSynchronize, "cuStreamSynchronize"},
	{(void **)&cu.EventCreate, "cuEventCreate"},
	{(void **)&cu.EventRecord, "cuEventRecord"},
	{(void **)&cu.EventDestroy, "cuEventDestroy_v2"},
	{(void **)&cu.MemAllocAsync, "cuMemAllocAsync"},
	{(void **)&cu.MemFreeAsync, "cuMemFreeAsync"},
};

/* cuprof's span ABI (cudawrap/shim/cuprof.h), when the shim is loaded. */
static uint64_t (*cuprof_now)(void);
static uint32_t (*cuprof_intern)(const char *);
static void (*cuprof_span)(uint32_t, uint32_t, uint64_t, uint64_t);
static uint32_t domain;

static uint64_t span_start(void) { return cuprof_now ? cuprof_now() : 0; }

static void span_end(const char *name, uint64_t start)
{
	if (cuprof_span)
		cuprof_span(domain, cuprof_intern(name), start, cuprof_now());
}

static CUstream stream;
static unsigned long failures;

static void check(CUresult r)
{
	if (r != 0)
		failures++;
}

/* host_work spins for about ns nanoseconds: the interpreter's share. */
static void host_work(long ns)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

/* Buffer.alloc: argument checks, a current-context check, the allocation,
 * then the object's construction. */
__attribute__((noinline)) static CUdeviceptr buffer_alloc(size_t size)
{
	uint64_t t = span_start();
	CUcontext c;
	CUdeviceptr p = 0;
	host_work(1500);
	check(cu.CtxGetCurrent(&c));
	check(cu.MemAllocAsync(&p, size, stream));
	host_work(700);
	span_end("Buffer.alloc", t);
	return p;
}

__attribute__((noinline)) static void buffer_free(CUdeviceptr p)
{
	uint64_t t = span_start();
	host_work(900);
	check(cu.MemFreeAsync(p, stream));
	span_end("Buffer.free", t);
}

__attribute__((noinline)) static CUdeviceptr raw_alloc(size_t size)
{
	CUdeviceptr p = 0;
	check(cu.MemAllocAsync(&p, size, stream));
	return p;
}

__attribute__((noinline)) static void raw_free(CUdeviceptr p) { check(cu.MemFreeAsync(p, stream)); }

enum { PER_STEP = 16 };

__attribute__((noinline)) static void step_buffer(CUevent ev)
{
	uint64_t t = span_start();
	CUdeviceptr p[PER_STEP];
	for (int i = 0; i < PER_STEP; i++)
		p[i] = buffer_alloc((size_t)4096 << (i % 8));
	for (int i = 0; i < PER_STEP; i++)
		buffer_free(p[i]);
	check(cu.EventRecord(ev, stream));
	span_end("step (Buffer)", t);
}

__attribute__((noinline)) static void step_raw(CUevent ev)
{
	uint64_t t = span_start();
	CUdeviceptr p[PER_STEP];
	for (int i = 0; i < PER_STEP; i++)
		p[i] = raw_alloc((size_t)4096 << (i % 8));
	for (int i = 0; i < PER_STEP; i++)
		raw_free(p[i]);
	check(cu.EventRecord(ev, stream));
	span_end("step (raw)", t);
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 200;
	const char *lib = getenv("CUPROF_DEMO_LIBCUDA");
	void *h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "flamedemo: %s\n", dlerror());
		return 2;
	}
	for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
		*symbols[i].slot = dlsym(h, symbols[i].name);
		if (!*symbols[i].slot) {
			fprintf(stderr, "flamedemo: no %s in the driver\n", symbols[i].name);
			return 2;
		}
	}
	cuprof_now = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "cuprof_now");
	cuprof_intern = (uint32_t(*)(const char *))dlsym(RTLD_DEFAULT, "cuprof_intern");
	cuprof_span = (void (*)(uint32_t, uint32_t, uint64_t, uint64_t))dlsym(RTLD_DEFAULT, "cuprof_span");
	if (!cuprof_now || !cuprof_intern || !cuprof_span)
		cuprof_now = NULL, cuprof_span = NULL;
	else
		domain = cuprof_intern("flamedemo");

	uint64_t t = span_start();
	CUdevice dev;
	CUcontext ctx;
	CUevent ev;
	check(cu.Init(0));
	check(cu.DeviceGet(&dev, 0));
	check(cu.DevicePrimaryCtxRetain(&ctx, dev));
	check(cu.CtxSetCurrent(ctx));
	check(cu.StreamCreate(&stream, 1));
	check(cu.EventCreate(&ev, 2));
	span_end("setup", t);

	for (int i = 0; i < steps; i++) {
		step_buffer(ev);
		step_raw(ev);
	}

	check(cu.StreamSynchronize(stream));
	check(cu.EventDestroy(ev));
	check(cu.StreamDestroy(stream));
	check(cu.DevicePrimaryCtxRelease(dev));
	printf("flamedemo: %d steps, %lu failed calls\n", steps, failures);
	return failures != 0;
}
