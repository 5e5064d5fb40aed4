/*
 * One rank of a simulated training job: STEPS steps, each a "step" range
 * (a cuprof span, when the cuprof shim is loaded) around what a framework's
 * memory wrapper does per step: create a stream, allocate a buffer on it
 * from the device's default pool, free it, synchronize the stream, destroy
 * the stream. A well-behaved wrapper raises the pool's release threshold
 * once, so the pool keeps its memory between steps; the wrapper of the rank
 * named by SLOW_RANK forgets to, so its pool gives its memory back at every
 * synchronize (cuprof lint's pool-trim) and its steps are slower: the rank
 * every other rank waits for at the next collective.
 *
 *   rank [-n STEPS] [-size BYTES]
 *
 * The rank is read from the launcher's variables (RANK, SLURM_PROCID,
 * OMPI_COMM_WORLD_RANK, PMI_RANK). The driver is libcuda.so.1 (under
 * cuprof record --sim, cuprof's simulated driver).
 *
 * Build: cc -O2 -o rank rank.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUstream, *CUmemoryPool;
typedef uint64_t CUdeviceptr;
#define CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4

static struct {
	CUresult (*Init)(unsigned);
	CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*DefaultMemPool)(CUmemoryPool *, CUdevice);
	CUresult (*PoolSetAttribute)(CUmemoryPool, int, void *);
	CUresult (*StreamCreate)(CUstream *, unsigned);
	CUresult (*StreamDestroy)(CUstream);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
	CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
} cu;

/* cuprof's span API, present only under the shim (cuprof.h). */
static uint64_t (*span_now)(void);
static uint32_t (*span_intern)(const char *);
static void (*span)(uint32_t, uint32_t, uint64_t, uint64_t);

static void *need(void *h, const char *name)
{
	void *f = dlsym(h, name);
	if (!f) {
		fprintf(stderr, "rank: the driver has no %s\n", name);
		exit(2);
	}
	return f;
}

static void check(CUresult r, const char *what)
{
	if (r != 0) {
		fprintf(stderr, "rank: %s failed: %d\n", what, r);
		exit(1);
	}
}

static int my_rank(void)
{
	const char *vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL};
	for (int i = 0; vars[i]; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return atoi(v);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int steps = 20;
	size_t size = 1 << 20;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-n"))
			steps = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-size"))
			size = (size_t)strtoull(argv[i + 1], NULL, 10);
	}
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "rank: cannot open libcuda.so.1: %s\n", dlerror());
		return 2;
	}
	cu.Init = need(h, "cuInit");
	cu.PrimaryCtxRetain = need(h, "cuDevicePrimaryCtxRetain");
	cu.CtxSetCurrent = need(h, "cuCtxSetCurrent");
	cu.DefaultMemPool = need(h, "cuDeviceGetDefaultMemPool");
	cu.PoolSetAttribute = need(h, "cuMemPoolSetAttribute");
	cu.StreamCreate = need(h, "cuStreamCreate");
	cu.StreamDestroy = need(h, "cuStreamDestroy_v2");
	cu.StreamSynchronize = need(h, "cuStreamSynchronize");
	cu.MemAllocAsync = need(h, "cuMemAllocAsync");
	cu.MemFreeAsync = need(h, "cuMemFreeAsync");
	span_now = dlsym(RTLD_DEFAULT, "cuprof_now");
	span_intern = dlsym(RTLD_DEFAULT, "cuprof_intern");
	span = dlsym(RTLD_DEFAULT, "cuprof_span");
	uint32_t domain = 0, name = 0;
	if (span_now && span_intern && span) {
		domain = span_intern("job");
		name = span_intern("step");
	}

	int rank = my_rank();
	const char *slow = getenv("SLOW_RANK");
	int forgets = slow && *slow && atoi(slow) == rank;

	CUcontext ctx;
	CUmemoryPool pool;
	check(cu.Init(0), "cuInit");
	check(cu.PrimaryCtxRetain(&ctx, 0), "cuDevicePrimaryCtxRetain");
	check(cu.CtxSetCurrent(ctx), "cuCtxSetCurrent");
	check(cu.DefaultMemPool(&pool, 0), "cuDeviceGetDefaultMemPool");
	if (!forgets) {
		uint64_t keep = UINT64_MAX;
		check(cu.PoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep), "cuMemPoolSetAttribute");
	}
	for (int s = 0; s < steps; s++) {
		uint64_t t0 = span ? span_now() : 0;
		CUstream st;
		CUdeviceptr p;
		check(cu.StreamCreate(&st, 1), "cuStreamCreate");
		check(cu.MemAllocAsync(&p, size, st), "cuMemAllocAsync");
		check(cu.MemFreeAsync(p, st), "cuMemFreeAsync");
		check(cu.StreamSynchronize(st), "cuStreamSynchronize");
		check(cu.StreamDestroy(st), "cuStreamDestroy");
		if (span)
			span(domain, name, t0, span_now());
	}
	printf("rank %d: %d steps%s\n", rank, steps, forgets ? " (pool threshold left at 0)" : "");
	return 0;
}
