/*
 * drivercost: what the CUDA driver's calls of the graph, stream-capture,
 * virtual-memory, library, module, occupancy, host-registration and IPC
 * families cost with no tool attached: the median ns per call.
 *
 * Cheap queries are timed in batches (BATCH calls between two clock reads,
 * the sample being the batch's time over BATCH); calls that create, change
 * or destroy something are timed one by one inside the sequence a program
 * makes them in (reserve, create, map, set access, unmap, release, free),
 * the clock's own cost (the median of back-to-back reads) subtracted. Each
 * row prints the median, 10th and 90th percentile over its samples, how many
 * calls failed and the first failure's code: a row that failed is reported,
 * never dropped.
 *
 * libcuda is opened with dlopen and its functions found with dlsym by their
 * exported (versioned) names, so this file needs no CUDA header;
 * CUPROF_BENCH_LIBCUDA names another library (the simulated driver). The
 * module image is a cubin or PTX file (--image; the kernel is named by
 * --kernel and takes no parameters); without --image a few bytes are passed,
 * which only the simulated driver accepts. cuIpcOpenMemHandle and
 * cuIpcOpenEventHandle cannot open a handle in the process that made it: a
 * child forked before the driver is initialized opens and closes them.
 *
 *   drivercost [--iters N] [--batches B] [--image FILE] [--kernel NAME]
 *              [--no-ipc] [--out FILE.json]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;

/* cuda.h's layouts of the structures these calls take. */
typedef struct {
	int type; /* CUmemLocationType: 1 device */
	int id;
} CUmemLocation;
typedef struct {
	int type;                 /* CUmemAllocationType: 1 pinned */
	int requestedHandleTypes; /* CUmemAllocationHandleType: 0 none */
	CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} CUmemAllocationProp;
typedef struct {
	CUmemLocation location;
	int flags; /* CUmemAccess_flags: 3 read-write */
} CUmemAccessDesc;
typedef struct {
	int id; /* CUlaunchAttributeID: 4 cluster dimension */
	char pad[4];
	union {
		char pad[64];
		struct {
			unsigned x, y, z;
		} clusterDim;
	} value;
} CUlaunchAttribute;
typedef struct {
	unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
	CUstream hStream;
	CUlaunchAttribute *attrs;
	unsigned numAttrs;
} CUlaunchConfig;
typedef struct {
	int result;
	void *errorNode, *errorFromNode;
} CUgraphExecUpdateResultInfo;
typedef struct {
	char reserved[64];
} CUipcHandle; /* CUipcMemHandle and CUipcEventHandle */

#define CU_STREAM_CAPTURE_MODE_GLOBAL 0
#define CU_EVENT_DISABLE_TIMING 2
#define CU_EVENT_INTERPROCESS 4
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 1

static struct {
	CUresult (*Init)(unsigned);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxGetDevice)(CUdevice *);
	CUresult (*CtxGetStreamPriorityRange)(int *, int *);
	CUresult (*StreamCreate)(CUstream *, unsigned);
	CUresult (*StreamDestroy)(CUstream);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*StreamBeginCapture)(CUstream, int);
	CUresult (*StreamEndCapture)(CUstream, CUgraph *);
	CUresult (*StreamIsCapturing)(CUstream, int *);
	CUresult (*ThreadExchangeStreamCaptureMode)(int *);
	CUresult (*GraphCreate)(CUgraph *, unsigned);
	CUresult (*GraphDestroy)(CUgraph);
	CUresult (*GraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
	CUresult (*GraphLaunch)(CUgraphExec, CUstream);
	CUresult (*GraphExecUpdate)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *);
	CUresult (*GraphExecDestroy)(CUgraphExec);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				 CUstream, void **, void **);
	CUresult (*MemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *, int);
	CUresult (*MemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
			      unsigned long long);
	CUresult (*MemRelease)(CUmemGenericAllocationHandle);
	CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
	CUresult (*MemAddressFree)(CUdeviceptr, size_t);
	CUresult (*MemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
	CUresult (*MemUnmap)(CUdeviceptr, size_t);
	CUresult (*MemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
	CUresult (*LibraryLoadData)(CUlibrary *, const void *, void *, void **, unsigned, void *, void **, unsigned);
	CUresult (*LibraryGetKernel)(CUkernel *, CUlibrary, const char *);
	CUresult (*LibraryUnload)(CUlibrary);
	CUresult (*KernelGetFunction)(CUfunction *, CUkernel);
	CUresult (*ModuleLoadData)(CUmodule *, const void *);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*ModuleUnload)(CUmodule);
	CUresult (*FuncGetAttribute)(int *, int, CUfunction);
	CUresult (*OccMaxActiveBlocks)(int *, CUfunction, int, size_t);
	CUresult (*OccMaxActiveBlocksFlags)(int *, CUfunction, int, size_t, unsigned);
	CUresult (*OccMaxPotentialBlockSize)(int *, int *, CUfunction, void *, size_t, int);
	CUresult (*OccAvailableDynamicSMem)(size_t *, CUfunction, int, int);
	CUresult (*OccMaxActiveClusters)(int *, CUfunction, const CUlaunchConfig *);
	CUresult (*MemHostRegister)(void *, size_t, unsigned);
	CUresult (*MemHostUnregister)(void *);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*EventCreate)(CUevent *, unsigned);
	CUresult (*EventDestroy)(CUevent);
	CUresult (*IpcGetMemHandle)(CUipcHandle *, CUdeviceptr);
	CUresult (*IpcOpenMemHandle)(CUdeviceptr *, CUipcHandle, unsigned);
	CUresult (*IpcCloseMemHandle)(CUdeviceptr);
	CUresult (*IpcGetEventHandle)(CUipcHandle *, CUevent);
	CUresult (*IpcOpenEventHandle)(CUevent *, CUipcHandle);
} cu;

/* The driver's exported name for each entry: the ABI the calls take. */
static const struct {
	void **slot;
	const char *name;
} syms[] = {
	{(void **)&cu.Init, "cuInit"},
	{(void **)&cu.DeviceGet, "cuDeviceGet"},
	{(void **)&cu.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
	{(void **)&cu.CtxSetCurrent, "cuCtxSetCurrent"},
	{(void **)&cu.CtxGetDevice, "cuCtxGetDevice"},
	{(void **)&cu.CtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange"},
	{(void **)&cu.StreamCreate, "cuStreamCreate"},
	{(void **)&cu.StreamDestroy, "cuStreamDestroy_v2"},
	{(void **)&cu.StreamSynchronize, "cuStreamSynchronize"},
	{(void **)&cu.StreamBeginCapture, "cuStreamBeginCapture_v2"},
	{(void **)&cu.StreamEndCapture, "cuStreamEndCapture"},
	{(void **)&cu.StreamIsCapturing, "cuStreamIsCapturing"},
	{(void **)&cu.ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode"},
	{(void **)&cu.GraphCreate, "cuGraphCreate"},
	{(void **)&cu.GraphDestroy, "cuGraphDestroy"},
	{(void **)&cu.GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"},
	{(void **)&cu.GraphLaunch, "cuGraphLaunch"},
	{(void **)&cu.GraphExecUpdate, "cuGraphExecUpdate_v2"},
	{(void **)&cu.GraphExecDestroy, "cuGraphExecDestroy"},
	{(void **)&cu.LaunchKernel, "cuLaunchKernel"},
	{(void **)&cu.MemGetAllocationGranularity, "cuMemGetAllocationGranularity"},
	{(void **)&cu.MemCreate, "cuMemCreate"},
	{(void **)&cu.MemRelease, "cuMemRelease"},
	{(void **)&cu.MemAddressReserve, "cuMemAddressReserve"},
	{(void **)&cu.MemAddressFree, "cuMemAddressFree"},
	{(void **)&cu.MemMap, "cuMemMap"},
	{(void **)&cu.MemUnmap, "cuMemUnmap"},
	{(void **)&cu.MemSetAccess, "cuMemSetAccess"},
	{(void **)&cu.LibraryLoadData, "cuLibraryLoadData"},
	{(void **)&cu.LibraryGetKernel, "cuLibraryGetKernel"},
	{(void **)&cu.LibraryUnload, "cuLibraryUnload"},
	{(void **)&cu.KernelGetFunction, "cuKernelGetFunction"},
	{(void **)&cu.ModuleLoadData, "cuModuleLoadData"},
	{(void **)&cu.ModuleGetFunction, "cuModuleGetFunction"},
	{(void **)&cu.ModuleUnload, "cuModuleUnload"},
	{(void **)&cu.FuncGetAttribute, "cuFuncGetAttribute"},
	{(void **)&cu.OccMaxActiveBlocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor"},
	{(void **)&cu.OccMaxActiveBlocksFlags, "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags"},
	{(void **)&cu.OccMaxPotentialBlockSize, "cuOccupancyMaxPotentialBlockSize"},
	{(void **)&cu.OccAvailableDynamicSMem, "cuOccupancyAvailableDynamicSMemPerBlock"},
	{(void **)&cu.OccMaxActiveClusters, "cuOccupancyMaxActiveClusters"},
	{(void **)&cu.MemHostRegister, "cuMemHostRegister_v2"},
	{(void **)&cu.MemHostUnregister, "cuMemHostUnregister"},
	{(void **)&cu.MemAlloc, "cuMemAlloc_v2"},
	{(void **)&cu.MemFree, "cuMemFree_v2"},
	{(void **)&cu.EventCreate, "cuEventCreate"},
	{(void **)&cu.EventDestroy, "cuEventDestroy_v2"},
	{(void **)&cu.IpcGetMemHandle, "cuIpcGetMemHandle"},
	{(void **)&cu.IpcOpenMemHandle, "cuIpcOpenMemHandle_v2"},
	{(void **)&cu.IpcCloseMemHandle, "cuIpcCloseMemHandle"},
	{(void **)&cu.IpcGetEventHandle, "cuIpcGetEventHandle"},
	{(void **)&cu.IpcOpenEventHandle, "cuIpcOpenEventHandle"},
};

#define BATCH 64
#define MAX_ROWS 64

/* One row of the output: an API (and how it was called) and its samples. */
struct row {
	const char *api;
	const char *how;
	double *ns;
	int n, cap;
	int errors;
	int first_error;
};

static struct row rows[MAX_ROWS];
static int nrows;
static double clock_ns; /* the median cost of one clock read pair */

static void die(const char *msg)
{
	fprintf(stderr, "drivercost: %s\n", msg);
	exit(1);
}

static struct row *row_of(const char *api, const char *how)
{
	for (int i = 0; i < nrows; i++)
		if (strcmp(rows[i].api, api) == 0 && strcmp(rows[i].how, how) == 0)
			return &rows[i];
	if (nrows == MAX_ROWS)
		die("too many rows (raise MAX_ROWS)");
	struct row *r = &rows[nrows++];
	r->api = api;
	r->how = how;
	return r;
}

static void add(struct row *r, double ns, CUresult rc)
{
	if (rc != 0) {
		if (!r->errors)
			r->first_error = rc;
		r->errors++;
		return;
	}
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 256;
		r->ns = realloc(r->ns, sizeof *r->ns * (size_t)r->cap);
		if (!r->ns)
			die("out of memory");
	}
	r->ns[r->n++] = ns;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	if (n == 0)
		return 0;
	int i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

/* ONEH(api, how, call): the call timed alone, added to the row (api, how);
 * ONE(api, call): the row (api, "single"). */
#define ONEH(api, how, call)                                                                       \
	do {                                                                                       \
		uint64_t t0_ = now_ns();                                                           \
		CUresult rc_ = (call);                                                             \
		uint64_t t1_ = now_ns();                                                           \
		double d_ = (double)(t1_ - t0_) - clock_ns;                                        \
		add(row_of(api, how), d_ < 0 ? 0 : d_, rc_);                                       \
	} while (0)
#define ONE(api, call) ONEH(api, "single", call)

/* MANY(api, call): batches of BATCH calls, each batch one sample of its
 * time per call (a failing call makes the sample a failure). */
#define MANY(api, batches, call)                                                                   \
	do {                                                                                       \
		struct row *r_ = row_of(api, "batch");                                             \
		for (int b_ = 0; b_ < (batches); b_++) {                                           \
			CUresult bad_ = 0;                                                         \
			uint64_t t0_ = now_ns();                                                   \
			for (int i_ = 0; i_ < BATCH; i_++) {                                       \
				CUresult rc_ = (call);                                             \
				if (rc_ && !bad_)                                                  \
					bad_ = rc_;                                                \
			}                                                                          \
			uint64_t t1_ = now_ns();                                                   \
			double d_ = ((double)(t1_ - t0_) - clock_ns) / BATCH;                      \
			add(r_, d_ < 0 ? 0 : d_, bad_);                                            \
		}                                                                                  \
	} while (0)

static void must(CUresult rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "drivercost: %s failed with CUresult %d\n", what, rc);
		exit(1);
	}
}

static void measure_clock(void)
{
	enum { N = 10001 };
	static double v[N];
	for (int i = 0; i < N; i++) {
		uint64_t a = now_ns(), b = now_ns();
		v[i] = (double)(b - a);
	}
	qsort(v, N, sizeof v[0], cmp_double);
	clock_ns = v[N / 2];
}

/* ---- IPC: the child that opens the parent's handles ---- */

struct ipc_msg {
	CUipcHandle mem, event;
	int n;
};
struct ipc_reply {
	double open_mem, close_mem, open_event;
	int rc_open_mem, rc_close_mem, rc_open_event;
};

static int to_child[2] = {-1, -1}, from_child[2] = {-1, -1};
static pid_t child = -1;

static int read_all(int fd, void *p, size_t n)
{
	char *c = p;
	while (n) {
		ssize_t k = read(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t k = write(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The child: waits for the first handles (or EOF: nothing to open), then
 * initializes the driver and opens and closes what each message holds. */
static void ipc_child(void)
{
	struct ipc_msg m;
	CUdevice dev;
	CUcontext ctx;
	int ready = 0;
	while (read_all(to_child[0], &m, sizeof m) == 0) {
		if (!ready) {
			must(cu.Init(0), "cuInit (IPC child)");
			must(cu.DeviceGet(&dev, 0), "cuDeviceGet (IPC child)");
			must(cu.DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain (IPC child)");
			must(cu.CtxSetCurrent(ctx), "cuCtxSetCurrent (IPC child)");
			ready = 1;
		}
		struct ipc_reply r = {0};
		CUdeviceptr p = 0;
		CUevent e = NULL;
		uint64_t t0 = now_ns();
		r.rc_open_mem = cu.IpcOpenMemHandle(&p, m.mem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
		uint64_t t1 = now_ns();
		r.open_mem = (double)(t1 - t0) - clock_ns;
		if (r.rc_open_mem == 0) {
			t0 = now_ns();
			r.rc_close_mem = cu.IpcCloseMemHandle(p);
			t1 = now_ns();
			r.close_mem = (double)(t1 - t0) - clock_ns;
		} else {
			r.rc_close_mem = -1;
		}
		t0 = now_ns();
		r.rc_open_event = cu.IpcOpenEventHandle(&e, m.event);
		t1 = now_ns();
		r.open_event = (double)(t1 - t0) - clock_ns;
		if (r.rc_open_event == 0)
			cu.EventDestroy(e);
		if (write_all(from_child[1], &r, sizeof r) != 0)
			break;
	}
	_exit(0);
}

static void ipc_fork(void)
{
	if (pipe(to_child) != 0 || pipe(from_child) != 0)
		die("pipe failed");
	child = fork();
	if (child < 0)
		die("fork failed");
	if (child == 0) {
		close(to_child[1]);
		close(from_child[0]);
		ipc_child();
	}
	close(to_child[0]);
	close(from_child[1]);
}

static void ipc_measure(int iters)
{
	CUdeviceptr d = 0;
	CUevent e = NULL;
	CUresult rc = cu.MemAlloc(&d, 2 << 20);
	if (rc == 0)
		rc = cu.EventCreate(&e, CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS);
	for (int i = 0; i < iters && rc == 0; i++) {
		struct ipc_msg m = {.n = i};
		ONE("cuIpcGetMemHandle", cu.IpcGetMemHandle(&m.mem, d));
		ONE("cuIpcGetEventHandle", cu.IpcGetEventHandle(&m.event, e));
		struct ipc_reply r;
		if (write_all(to_child[1], &m, sizeof m) != 0 || read_all(from_child[0], &r, sizeof r) != 0) {
			fprintf(stderr, "drivercost: the IPC child stopped answering\n");
			break;
		}
		add(row_of("cuIpcOpenMemHandle", "single, child process"), r.open_mem < 0 ? 0 : r.open_mem,
		    r.rc_open_mem);
		if (r.rc_close_mem != -1)
			add(row_of("cuIpcCloseMemHandle", "single, child process"),
			    r.close_mem < 0 ? 0 : r.close_mem, r.rc_close_mem);
		add(row_of("cuIpcOpenEventHandle", "single, child process"), r.open_event < 0 ? 0 : r.open_event,
		    r.rc_open_event);
	}
	if (rc != 0)
		add(row_of("cuIpcGetMemHandle", "single"), 0, rc);
	close(to_child[1]);
	int st;
	waitpid(child, &st, 0);
	if (e)
		cu.EventDestroy(e);
	if (d)
		cu.MemFree(d);
}

/* ---- the families ---- */

static CUstream stream;
static CUfunction func; /* the image's kernel, from a module loaded once */
static CUkernel kern;   /* the same kernel, from a library loaded once */
static CUlibrary library;
static const void *image;
static const char *kernel_name = "cuprof_empty";
static CUdevice device;

static CUresult capture_one(CUgraph *g)
{
	CUresult rc = cu.StreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
	if (rc)
		return rc;
	cu.LaunchKernel(func, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL);
	return cu.StreamEndCapture(stream, g);
}

static void graphs(int iters)
{
	for (int i = 0; i < iters; i++) {
		CUgraph g = NULL, g2 = NULL, e = NULL;
		CUgraphExec x = NULL;
		ONE("cuGraphCreate", cu.GraphCreate(&e, 0));
		if (e)
			ONEH("cuGraphDestroy", "single, empty graph", cu.GraphDestroy(e));
		ONE("cuStreamBeginCapture", cu.StreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
		int st = 0;
		ONEH("cuStreamIsCapturing", "single, capturing", cu.StreamIsCapturing(stream, &st));
		cu.LaunchKernel(func, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL);
		ONE("cuStreamEndCapture", cu.StreamEndCapture(stream, &g));
		if (!g)
			continue;
		ONE("cuGraphInstantiateWithFlags", cu.GraphInstantiateWithFlags(&x, g, 0));
		if (x) {
			for (int k = 0; k < 8; k++)
				ONE("cuGraphLaunch", cu.GraphLaunch(x, stream));
			cu.StreamSynchronize(stream);
			if (capture_one(&g2) == 0 && g2) {
				CUgraphExecUpdateResultInfo info;
				ONE("cuGraphExecUpdate", cu.GraphExecUpdate(x, g2, &info));
				cu.GraphDestroy(g2);
			}
			ONE("cuGraphExecDestroy", cu.GraphExecDestroy(x));
		}
		ONE("cuGraphDestroy", cu.GraphDestroy(g));
	}
}

static void vmm(int iters, int batches)
{
	CUmemAllocationProp prop = {.type = 1, .location = {.type = 1, .id = device}};
	CUmemAccessDesc acc = {.location = {.type = 1, .id = device}, .flags = 3};
	size_t gran = 0;
	MANY("cuMemGetAllocationGranularity", batches, cu.MemGetAllocationGranularity(&gran, &prop, 0));
	if (!gran)
		gran = 2 << 20;
	for (int i = 0; i < iters; i++) {
		CUdeviceptr p = 0;
		CUmemGenericAllocationHandle h = 0;
		CUresult rc;
		ONE("cuMemAddressReserve", rc = cu.MemAddressReserve(&p, gran, 0, 0, 0));
		if (rc)
			continue;
		ONE("cuMemCreate", rc = cu.MemCreate(&h, gran, &prop, 0));
		if (rc == 0) {
			ONE("cuMemMap", rc = cu.MemMap(p, gran, 0, h, 0));
			if (rc == 0) {
				ONE("cuMemSetAccess", cu.MemSetAccess(p, gran, &acc, 1));
				ONE("cuMemUnmap", cu.MemUnmap(p, gran));
			}
			ONE("cuMemRelease", cu.MemRelease(h));
		}
		ONE("cuMemAddressFree", cu.MemAddressFree(p, gran));
	}
}

static void libraries(int iters, int batches)
{
	for (int i = 0; i < iters; i++) {
		CUlibrary l = NULL;
		CUkernel k = NULL;
		CUfunction f = NULL;
		CUresult rc;
		ONE("cuLibraryLoadData", rc = cu.LibraryLoadData(&l, image, NULL, NULL, 0, NULL, NULL, 0));
		if (rc)
			continue;
		ONE("cuLibraryGetKernel", cu.LibraryGetKernel(&k, l, kernel_name));
		if (k)
			ONEH("cuKernelGetFunction", "single, first", cu.KernelGetFunction(&f, k));
		ONE("cuLibraryUnload", cu.LibraryUnload(l));
	}
	CUkernel k2;
	CUfunction f2;
	MANY("cuLibraryGetKernel", batches, cu.LibraryGetKernel(&k2, library, kernel_name));
	MANY("cuKernelGetFunction", batches, cu.KernelGetFunction(&f2, kern));
	for (int i = 0; i < iters; i++) {
		CUmodule m = NULL;
		CUfunction f = NULL;
		CUresult rc;
		ONE("cuModuleLoadData", rc = cu.ModuleLoadData(&m, image));
		if (rc)
			continue;
		ONEH("cuModuleGetFunction", "single, first", cu.ModuleGetFunction(&f, m, kernel_name));
		ONE("cuModuleUnload", cu.ModuleUnload(m));
	}
}

static void queries(int batches)
{
	int a, b, st;
	CUdevice d;
	size_t sz;
	CUfunction f;
	CUmodule m = NULL;
	MANY("cuCtxGetDevice", batches, cu.CtxGetDevice(&d));
	MANY("cuCtxGetStreamPriorityRange", batches, cu.CtxGetStreamPriorityRange(&a, &b));
	MANY("cuStreamIsCapturing", batches, cu.StreamIsCapturing(stream, &st));
	MANY("cuThreadExchangeStreamCaptureMode", batches, (st = 0, cu.ThreadExchangeStreamCaptureMode(&st)));
	MANY("cuFuncGetAttribute", batches, cu.FuncGetAttribute(&a, 0, func));
	MANY("cuOccupancyMaxActiveBlocksPerMultiprocessor", batches, cu.OccMaxActiveBlocks(&a, func, 128, 0));
	MANY("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", batches,
	     cu.OccMaxActiveBlocksFlags(&a, func, 128, 0, 0));
	MANY("cuOccupancyMaxPotentialBlockSize", batches, cu.OccMaxPotentialBlockSize(&a, &b, func, NULL, 0, 0));
	MANY("cuOccupancyAvailableDynamicSMemPerBlock", batches, cu.OccAvailableDynamicSMem(&sz, func, 1, 128));
	CUlaunchAttribute attr = {.id = 4, .value.clusterDim = {1, 1, 1}};
	CUlaunchConfig cfg = {1, 1, 1, 128, 1, 1, 0, stream, &attr, 1};
	MANY("cuOccupancyMaxActiveClusters", batches, cu.OccMaxActiveClusters(&a, func, &cfg));
	if (cu.ModuleLoadData(&m, image) == 0) {
		MANY("cuModuleGetFunction", batches, cu.ModuleGetFunction(&f, m, kernel_name));
		cu.ModuleUnload(m);
	}
}

static void host_register(int iters)
{
	size_t n = 2 << 20;
	void *p = NULL;
	if (posix_memalign(&p, 4096, n) != 0)
		die("out of memory");
	memset(p, 1, n);
	for (int i = 0; i < iters; i++) {
		CUresult rc;
		ONE("cuMemHostRegister", rc = cu.MemHostRegister(p, n, 0));
		if (rc == 0)
			ONE("cuMemHostUnregister", cu.MemHostUnregister(p));
	}
	free(p);
}

static char *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap + 1);
	size_t k;
	while (buf && (k = fread(buf + len, 1, cap - len, f)) > 0) {
		len += k;
		if (len == cap) {
			char *nb = realloc(buf, 2 * cap + 1);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (buf)
		buf[len] = 0; /* PTX is text: loaded NUL-terminated */
	*n = len;
	return buf;
}

static void usage(void)
{
	fprintf(stderr, "usage: drivercost [--iters N] [--batches B] [--image FILE] [--kernel NAME] [--no-ipc] "
			"[--out FILE.json]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int iters = 200, batches = 200, ipc = 1;
	const char *out = NULL, *image_path = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (strcmp(argv[i], "--batches") == 0 && i + 1 < argc)
			batches = atoi(argv[++i]);
		else if (strcmp(argv[i], "--image") == 0 && i + 1 < argc)
			image_path = argv[++i];
		else if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc)
			kernel_name = argv[++i];
		else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (strcmp(argv[i], "--no-ipc") == 0)
			ipc = 0;
		else
			usage();
	}
	if (iters < 1 || batches < 1)
		die("--iters and --batches want a number >= 1");
	if (image_path) {
		size_t n;
		image = read_file(image_path, &n);
		if (!image) {
			fprintf(stderr, "drivercost: cannot read the module image %s: %s\n", image_path, strerror(errno));
			return 1;
		}
	} else {
		image = "cuprof drivercost: no image (the simulated driver takes any bytes)";
	}
	const char *lib = getenv("CUPROF_BENCH_LIBCUDA");
	void *h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "drivercost: cannot open the driver: %s\n", dlerror());
		return 1;
	}
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot) {
			fprintf(stderr, "drivercost: the driver has no %s\n", syms[i].name);
			return 1;
		}
	}
	measure_clock();
	if (ipc)
		ipc_fork(); /* before the driver is initialized in this process */
	CUcontext ctx;
	CUmodule m;
	must(cu.Init(0), "cuInit");
	must(cu.DeviceGet(&device, 0), "cuDeviceGet");
	must(cu.DevicePrimaryCtxRetain(&ctx, device), "cuDevicePrimaryCtxRetain");
	must(cu.CtxSetCurrent(ctx), "cuCtxSetCurrent");
	must(cu.StreamCreate(&stream, 1), "cuStreamCreate");
	must(cu.ModuleLoadData(&m, image), "cuModuleLoadData of the image");
	must(cu.ModuleGetFunction(&func, m, kernel_name), "cuModuleGetFunction of the kernel");
	must(cu.LibraryLoadData(&library, image, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData of the image");
	must(cu.LibraryGetKernel(&kern, library, kernel_name), "cuLibraryGetKernel of the kernel");
	/* A warm-up pass of every family, then the measured one. */
	int wi = iters / 10 > 0 ? iters / 10 : 1, wb = batches / 10 > 0 ? batches / 10 : 1;
	queries(wb);
	graphs(wi);
	vmm(wi, wb);
	libraries(wi, wb);
	host_register(wi);
	for (int i = 0; i < nrows; i++) {
		rows[i].n = 0;
		rows[i].errors = 0;
		rows[i].first_error = 0;
	}
	queries(batches);
	graphs(iters);
	vmm(iters, batches);
	libraries(iters, batches);
	host_register(iters);
	if (ipc)
		ipc_measure(iters);
	cu.StreamSynchronize(stream);
	cu.LibraryUnload(library);
	cu.ModuleUnload(m);
	cu.StreamDestroy(stream);

	FILE *o = out ? fopen(out, "w") : NULL;
	if (out && !o) {
		fprintf(stderr, "drivercost: cannot write %s: %s\n", out, strerror(errno));
		return 1;
	}
	if (o)
		fprintf(o, "{\"clock_ns\": %.1f, \"batch\": %d, \"iters\": %d, \"batches\": %d, \"rows\": [\n", clock_ns,
			BATCH, iters, batches);
	printf("%-55s %-24s %6s %10s %10s %10s %6s\n", "api", "how", "n", "median_ns", "p10_ns", "p90_ns", "errors");
	for (int i = 0; i < nrows; i++) {
		struct row *r = &rows[i];
		qsort(r->ns, (size_t)r->n, sizeof r->ns[0], cmp_double);
		double med = pct(r->ns, r->n, 0.5), p10 = pct(r->ns, r->n, 0.1), p90 = pct(r->ns, r->n, 0.9);
		printf("%-55s %-24s %6d %10.1f %10.1f %10.1f %6d", r->api, r->how, r->n, med, p10, p90, r->errors);
		if (r->errors)
			printf(" (first: CUresult %d)", r->first_error);
		printf("\n");
		if (o)
			fprintf(o,
				"  {\"api\": \"%s\", \"how\": \"%s\", \"n\": %d, \"median_ns\": %.1f, \"p10_ns\": %.1f, "
				"\"p90_ns\": %.1f, \"errors\": %d, \"first_error\": %d}%s\n",
				r->api, r->how, r->n, med, p10, p90, r->errors, r->first_error, i + 1 < nrows ? "," : "");
	}
	if (o) {
		fprintf(o, "]}\n");
		if (fclose(o) != 0) {
			fprintf(stderr, "drivercost: writing %s failed\n", out);
			return 1;
		}
	}
	return 0;
}
