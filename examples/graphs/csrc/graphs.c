/*
 * Eager launches against CUDA graph replay of the same work, through the
 * driver API only (libcuda.so.1 opened with dlopen, functions found with
 * cuGetProcAddress as the CUDA runtime finds them). Each step runs K tiny
 * kernels on one stream, four ways:
 *
 *   eager          K x (cuStreamIsCapturing, cuLaunchKernel): a library that
 *                  checks the capture state before every launch, as
 *                  cuda.core does before every allocation
 *   replay         the K launches captured once into a graph, instantiated
 *                  once, then one cuGraphLaunch per step
 *   reinstantiate  capture, instantiate, launch once and destroy, every step
 *                  (what cuprof lint's graph-reinstantiate finds)
 *   update         capture every step, but update the one graph exec from
 *                  the new graph (cuGraphExecUpdate) and launch it
 *
 * and prints the time per step of each. The kernel is an empty PTX entry,
 * loaded with cuLibraryLoadData, so the program runs on a real GPU as on
 * cuprof's simulated driver.
 *
 *   graphs [-n STEPS] [-k KERNELS] [-variant all|eager|replay|reinstantiate|update]
 *
 * Build: cc -O2 -o graphs graphs.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The driver API types this program uses (cuda.h of CUDA 12 and 13). */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct {
	int result;
	CUgraphNode errorNode, errorFromNode;
} CUgraphExecUpdateResultInfo;

#define CU_STREAM_NON_BLOCKING 1
#define CU_STREAM_CAPTURE_MODE_GLOBAL 0

static struct {
	CUresult (*Init)(unsigned);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*StreamCreate)(CUstream *, unsigned);
	CUresult (*StreamDestroy)(CUstream);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*StreamIsCapturing)(CUstream, int *);
	CUresult (*StreamBeginCapture)(CUstream, int);
	CUresult (*StreamEndCapture)(CUstream, CUgraph *);
	CUresult (*LibraryLoadData)(CUlibrary *, const void *, void *, void **, unsigned, void *, void **, unsigned);
	CUresult (*LibraryUnload)(CUlibrary);
	CUresult (*LibraryGetKernel)(CUkernel *, CUlibrary, const char *);
	CUresult (*KernelGetFunction)(CUfunction *, CUkernel);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				 CUstream, void **, void **);
	CUresult (*GraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
	CUresult (*GraphLaunch)(CUgraphExec, CUstream);
	CUresult (*GraphExecUpdate)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *);
	CUresult (*GraphExecDestroy)(CUgraphExec);
	CUresult (*GraphDestroy)(CUgraph);
	CUresult (*GetErrorName)(CUresult, const char **);
} cu;

/* An empty kernel: PTX the driver compiles for the GPU it runs on. */
static const char ptx[] = ".version 7.0\n"
			  ".target sm_70\n"
			  ".address_size 64\n"
			  ".visible .entry noop()\n"
			  "{\n"
			  "\tret;\n"
			  "}\n";

static void check(CUresult rc, const char *what)
{
	if (rc == 0)
		return;
	const char *name = NULL;
	if (cu.GetErrorName)
		cu.GetErrorName(rc, &name);
	fprintf(stderr, "graphs: %s failed: %s (%d)\n", what, name ? name : "unknown error", rc);
	exit(1);
}

#define CU(call) check(cu.call, #call)

typedef CUresult (*proc_fn)(const char *, void **, int, unsigned long long, int *);

static void resolve(proc_fn proc, const char *name, int version, void **slot)
{
	int status = -1;
	if (proc(name, slot, version, 0, &status) != 0 || status != 0 || !*slot) {
		fprintf(stderr, "graphs: the driver has no %s at version %d\n", name, version);
		exit(1);
	}
}

static void open_driver(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "graphs: cannot open libcuda.so.1: %s\n", dlerror());
		exit(1);
	}
	proc_fn proc = (proc_fn)dlsym(lib, "cuGetProcAddress_v2");
	if (!proc) {
		fprintf(stderr, "graphs: libcuda.so.1 has no cuGetProcAddress_v2 (a CUDA 12 driver or newer is needed)\n");
		exit(1);
	}
#define R(field, name, version) resolve(proc, name, version, (void **)&cu.field)
	R(GetErrorName, "cuGetErrorName", 6000);
	R(Init, "cuInit", 2000);
	R(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000);
	R(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 11000);
	R(CtxSetCurrent, "cuCtxSetCurrent", 4000);
	R(StreamCreate, "cuStreamCreate", 2000);
	R(StreamDestroy, "cuStreamDestroy", 4000);
	R(StreamSynchronize, "cuStreamSynchronize", 2000);
	R(StreamIsCapturing, "cuStreamIsCapturing", 10000);
	R(StreamBeginCapture, "cuStreamBeginCapture", 10010);
	R(StreamEndCapture, "cuStreamEndCapture", 10000);
	R(LibraryLoadData, "cuLibraryLoadData", 12000);
	R(LibraryUnload, "cuLibraryUnload", 12000);
	R(LibraryGetKernel, "cuLibraryGetKernel", 12000);
	R(KernelGetFunction, "cuKernelGetFunction", 12000);
	R(LaunchKernel, "cuLaunchKernel", 4000);
	R(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 11040);
	R(GraphLaunch, "cuGraphLaunch", 10000);
	R(GraphExecUpdate, "cuGraphExecUpdate", 12000);
	R(GraphExecDestroy, "cuGraphExecDestroy", 10000);
	R(GraphDestroy, "cuGraphDestroy", 10000);
#undef R
}

static CUstream stream;
static CUfunction fn;
static int kernels = 20;

static void launch_all(void)
{
	for (int i = 0; i < kernels; i++)
		CU(LaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL));
}

static CUgraph capture(void)
{
	CUgraph g = NULL;
	CU(StreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
	launch_all();
	CU(StreamEndCapture(stream, &g));
	return g;
}

static void step_eager(void)
{
	for (int i = 0; i < kernels; i++) {
		int status = -1;
		CU(StreamIsCapturing(stream, &status));
		if (status != 0) {
			fprintf(stderr, "graphs: the stream is capturing in the eager variant\n");
			exit(1);
		}
		CU(LaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL));
	}
	CU(StreamSynchronize(stream));
}

static CUgraphExec exec_;

static void step_replay(void)
{
	CU(GraphLaunch(exec_, stream));
	CU(StreamSynchronize(stream));
}

static void step_reinstantiate(void)
{
	CUgraph g = capture();
	CUgraphExec x;
	CU(GraphInstantiateWithFlags(&x, g, 0));
	CU(GraphLaunch(x, stream));
	CU(StreamSynchronize(stream));
	CU(GraphExecDestroy(x));
	CU(GraphDestroy(g));
}

static void step_update(void)
{
	CUgraph g = capture();
	CUgraphExecUpdateResultInfo info;
	CU(GraphExecUpdate(exec_, g, &info));
	CU(GraphLaunch(exec_, stream));
	CU(StreamSynchronize(stream));
	CU(GraphDestroy(g));
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Runs step n times after 3 warm-up steps and prints mean, min, p50, p99. */
static void timed(const char *name, void (*step)(void), int n)
{
	double *t = malloc(sizeof *t * (size_t)n), sum = 0;
	if (!t) {
		fprintf(stderr, "graphs: out of memory\n");
		exit(1);
	}
	for (int i = 0; i < 3; i++)
		step();
	for (int i = 0; i < n; i++) {
		double t0 = now_us();
		step();
		t[i] = now_us() - t0;
		sum += t[i];
	}
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	printf("%-14s %6d %10.2fus %10.2fus %10.2fus %10.2fus\n", name, n, sum / n, t[0], t[n / 2],
	       t[(int)(n * 0.99) < n ? (int)(n * 0.99) : n - 1]);
	free(t);
}

int main(int argc, char **argv)
{
	int n = 200;
	const char *variant = "all";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-k") && i + 1 < argc)
			kernels = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-variant") && i + 1 < argc)
			variant = argv[++i];
		else {
			fprintf(stderr, "usage: graphs [-n STEPS] [-k KERNELS] [-variant all|eager|replay|reinstantiate|update]\n");
			return 2;
		}
	}
	if (n < 1 || kernels < 1) {
		fprintf(stderr, "graphs: -n and -k must be at least 1\n");
		return 2;
	}
	int all = !strcmp(variant, "all");
	if (!all && strcmp(variant, "eager") && strcmp(variant, "replay") && strcmp(variant, "reinstantiate") &&
	    strcmp(variant, "update")) {
		fprintf(stderr, "graphs: unknown variant %s (want all, eager, replay, reinstantiate or update)\n", variant);
		return 2;
	}
	open_driver();
	CUcontext ctx;
	CUlibrary lib;
	CUkernel k;
	CU(Init(0));
	CU(DevicePrimaryCtxRetain(&ctx, 0));
	CU(CtxSetCurrent(ctx));
	CU(StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	CU(LibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	CU(LibraryGetKernel(&k, lib, "noop"));
	CU(KernelGetFunction(&fn, k));

	printf("%d kernels per step\n%-14s %6s %12s %12s %12s %12s\n", kernels, "variant", "steps", "mean", "min",
	       "p50", "p99");
	if (all || !strcmp(variant, "eager"))
		timed("eager", step_eager, n);
	if (all || !strcmp(variant, "replay")) {
		CUgraph g = capture();
		CU(GraphInstantiateWithFlags(&exec_, g, 0));
		CU(GraphDestroy(g)); /* the exec does not need its graph */
		timed("replay", step_replay, n);
		CU(GraphExecDestroy(exec_));
	}
	if (all || !strcmp(variant, "reinstantiate"))
		timed("reinstantiate", step_reinstantiate, n);
	if (all || !strcmp(variant, "update")) {
		CUgraph g = capture();
		CU(GraphInstantiateWithFlags(&exec_, g, 0));
		CU(GraphDestroy(g));
		timed("update", step_update, n);
		CU(GraphExecDestroy(exec_));
	}
	CU(LibraryUnload(lib));
	CU(StreamDestroy(stream));
	CU(DevicePrimaryCtxRelease(0));
	return 0;
}
