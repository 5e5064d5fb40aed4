/*
 * Exercises what Python bindings ask of the simulated driver beyond the
 * object families: device UUIDs and PCI ids, the attributes that gate their
 * code paths, context and stream queries, peer access, pointer attributes,
 * pool access, host functions and stream callbacks, and the call counters
 * (run with CUPROF_SIM_CALL_COUNTS set to a directory). Prints one line per
 * failed check and exits 1 when any failed; otherwise "uuid0 ..." (device
 * 0's UUID, to compare across processes), "calls API N" for the calls it
 * made of the counted APIs, and "simqueries: N checks passed".
 * Run with CUPROF_SIM_DEVICES=2.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuprof_cuda.h"
#include "cuprof_apis.h"
#include "sim_families.h"
#include "simcheck.h"

long long cuprofsim_call_count(const char *name);

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes);
CUresult cuGraphDestroy(CUgraph hGraph);

#define CU_STREAM_NON_BLOCKING_FLAG 1
#define CU_CTX_SCHED_BLOCKING_SYNC 4
#define ATTR_PCI_BUS 33
#define ATTR_PCI_DEVICE 34
#define ATTR_PCI_DOMAIN 50
#define CU_POINTER_ATTRIBUTE_CONTEXT 1
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CU_POINTER_ATTRIBUTE_IS_MANAGED 8
#define CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define CU_POINTER_ATTRIBUTE_RANGE_SIZE 12
#define CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE 17

/* Calls made of the APIs whose counts the Go test compares with the
 * driver's file. */
static int n_uuid, n_stream_flags, n_host_func;

static void test_uuid(void)
{
	CUuuid a, b, c, d;
	OK(cuDeviceGetUuid(&a, 0)); n_uuid++;
	OK(cuDeviceGetUuid_v2(&b, 0)); n_uuid++;
	OK(cuDeviceGetUuid_v2(&c, 1)); n_uuid++;
	OK(cuDeviceGetUuid_v2(&d, 0)); n_uuid++;
	CHECK(memcmp(a.bytes, b.bytes, 16) == 0);
	CHECK(memcmp(b.bytes, d.bytes, 16) == 0);
	CHECK(memcmp(a.bytes, c.bytes, 16) != 0);
	CHECK((a.bytes[6] & 0xf0) == 0x40); /* version 4 */
	CHECK((a.bytes[8] & 0xc0) == 0x80); /* RFC 4122 variant */
	EXPECT(cuDeviceGetUuid_v2(&a, 2), CUDA_ERROR_INVALID_DEVICE); n_uuid++;
	EXPECT(cuDeviceGetUuid_v2(NULL, 0), CUDA_ERROR_INVALID_VALUE); n_uuid++;
	printf("uuid0 ");
	for (int i = 0; i < 16; i++)
		printf("%02x", (unsigned char)b.bytes[i]);
	printf("\n");
}

static void test_pci(void)
{
	int v = -1;
	char id[32];
	CUdevice dev = -1;
	OK(cuDeviceGetAttribute(&v, ATTR_PCI_BUS, 0));
	CHECK_EQ(v, 0x19);
	OK(cuDeviceGetAttribute(&v, ATTR_PCI_BUS, 1));
	CHECK_EQ(v, 0x1a);
	OK(cuDeviceGetAttribute(&v, ATTR_PCI_DEVICE, 1));
	CHECK_EQ(v, 0);
	OK(cuDeviceGetAttribute(&v, ATTR_PCI_DOMAIN, 1));
	CHECK_EQ(v, 0);
	OK(cuDeviceGetPCIBusId(id, sizeof id, 1));
	CHECK(strcmp(id, "0000:1a:00.0") == 0);
	OK(cuDeviceGetByPCIBusId(&dev, id));
	CHECK_EQ(dev, 1);
	OK(cuDeviceGetByPCIBusId(&dev, "19:00.0"));
	CHECK_EQ(dev, 0);
	EXPECT(cuDeviceGetByPCIBusId(&dev, "0000:1b:00.0"), CUDA_ERROR_INVALID_DEVICE);
	EXPECT(cuDeviceGetByPCIBusId(&dev, "no bus"), CUDA_ERROR_INVALID_VALUE);
	EXPECT(cuDeviceGetPCIBusId(id, sizeof id, 2), CUDA_ERROR_INVALID_DEVICE);
	EXPECT(cuDeviceGetPCIBusId(id, 0, 0), CUDA_ERROR_INVALID_VALUE);
	OK(cuDeviceGetPCIBusId(id, 5, 0)); /* truncated, terminated */
	CHECK(strcmp(id, "0000") == 0);
}

static void test_attributes(void)
{
	static const struct {
		int attr, want;
	} rows[] = {
		{41, 1},  /* UNIFIED_ADDRESSING */
		{19, 1},  /* CAN_MAP_HOST_MEMORY */
		{89, 1},  /* CONCURRENT_MANAGED_ACCESS */
		{83, 1},  /* MANAGED_MEMORY */
		{102, 1}, /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
		{115, 1}, /* MEMORY_POOLS_SUPPORTED */
		{103, 0}, /* HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: no IPC here */
		{119, 0}, /* MEMPOOL_SUPPORTED_HANDLE_TYPES: none */
		{38, 52428800}, /* L2_CACHE_SIZE */
		{39, 2048},     /* MAX_THREADS_PER_MULTIPROCESSOR */
		{81, 233472},   /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
		{97, 232448},   /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
		{106, 32},      /* MAX_BLOCKS_PER_MULTIPROCESSOR */
		{12, 65536},    /* MAX_REGISTERS_PER_BLOCK */
		{9, 65536},     /* TOTAL_CONSTANT_MEMORY */
		{120, 1},       /* CLUSTER_LAUNCH */
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int v = -1;
		OK(cuDeviceGetAttribute(&v, rows[i].attr, 1));
		if (v != rows[i].want)
			printf("attribute %d: %d\n", rows[i].attr, v);
		CHECK_EQ(v, rows[i].want);
	}
}

static void test_peers(void)
{
	int can = -1;
	OK(cuDeviceCanAccessPeer(&can, 0, 1));
	CHECK_EQ(can, 1);
	OK(cuDeviceCanAccessPeer(&can, 1, 0));
	CHECK_EQ(can, 1);
	OK(cuDeviceCanAccessPeer(&can, 0, 0));
	CHECK_EQ(can, 0);
	EXPECT(cuDeviceCanAccessPeer(&can, 0, 2), CUDA_ERROR_INVALID_DEVICE);
	EXPECT(cuDeviceCanAccessPeer(NULL, 0, 1), CUDA_ERROR_INVALID_VALUE);
}

static void test_contexts(CUcontext primary)
{
	unsigned long long id1 = 0, id2 = 0, id3 = 0;
	unsigned flags = 99;
	CUcontext created, popped;
	OK(cuCtxGetId(primary, &id1));
	OK(cuCtxGetId(NULL, &id2)); /* the current one: the primary */
	CHECK(id1 != 0 && id1 == id2);
	OK(cuCtxCreate_v2(&created, CU_CTX_SCHED_BLOCKING_SYNC, 1));
	OK(cuCtxGetId(created, &id3));
	CHECK(id3 != 0 && id3 != id1);
	OK(cuCtxGetFlags(&flags)); /* the created context is current */
	CHECK_EQ(flags & 7, CU_CTX_SCHED_BLOCKING_SYNC);
	OK(cuCtxPopCurrent_v2(&popped));
	CHECK(popped == created);
	OK(cuCtxDestroy_v2(created));
	EXPECT(cuCtxGetId(created, &id3), CUDA_ERROR_INVALID_CONTEXT);
	EXPECT(cuCtxGetId(primary, NULL), CUDA_ERROR_INVALID_VALUE);
}

static void test_streams(CUcontext primary)
{
	CUstream s, t;
	CUcontext c = NULL;
	CUgreenCtx g = (CUgreenCtx)1;
	unsigned flags = 99;
	int prio = 99;
	CUdevice dev = -1;
	unsigned long long id_s = 0, id_s2 = 0, id_t = 0, id_legacy = 0, id_pt = 0;
	OK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING_FLAG, -3));
	OK(cuStreamCreate(&t, 0));
	OK(cuStreamGetFlags(s, &flags)); n_stream_flags++;
	CHECK_EQ(flags, CU_STREAM_NON_BLOCKING_FLAG);
	OK(cuStreamGetFlags(t, &flags)); n_stream_flags++;
	CHECK_EQ(flags, 0);
	OK(cuStreamGetFlags(CU_STREAM_LEGACY, &flags)); n_stream_flags++;
	CHECK_EQ(flags, 0);
	OK(cuStreamGetPriority(s, &prio));
	CHECK_EQ(prio, -3);
	OK(cuStreamGetPriority(NULL, &prio));
	CHECK_EQ(prio, 0);
	OK(cuStreamGetCtx(s, &c));
	CHECK(c == primary);
	c = NULL;
	OK(cuStreamGetCtx_v2(s, &c, &g));
	CHECK(c == primary && g == NULL);
	OK(cuStreamGetCtx(CU_STREAM_PER_THREAD, &c));
	CHECK(c == primary);
	OK(cuStreamGetDevice(s, &dev));
	CHECK_EQ(dev, 0);
	OK(cuStreamGetId(s, &id_s));
	OK(cuStreamGetId(s, &id_s2));
	OK(cuStreamGetId(t, &id_t));
	OK(cuStreamGetId(CU_STREAM_LEGACY, &id_legacy));
	OK(cuStreamGetId(CU_STREAM_PER_THREAD, &id_pt));
	CHECK(id_s != 0 && id_s == id_s2 && id_t != id_s);
	CHECK(id_legacy == 1 && id_pt != id_legacy && id_pt != id_s && id_pt != id_t);
	OK(cuStreamDestroy_v2(t));
	EXPECT(cuStreamGetFlags(t, &flags), CUDA_ERROR_INVALID_HANDLE); n_stream_flags++;
	EXPECT(cuStreamGetFlags(s, NULL), CUDA_ERROR_INVALID_VALUE); n_stream_flags++;
	OK(cuStreamDestroy_v2(s));
	/* with no current context, the default streams have none */
	CUcontext was;
	OK(cuCtxPopCurrent_v2(&was));
	EXPECT(cuStreamGetCtx(NULL, &c), CUDA_ERROR_INVALID_CONTEXT);
	OK(cuCtxPushCurrent_v2(was));
}

static void test_pointers(CUdevice d)
{
	CUdeviceptr p = 0, q = 0, m = 0, base = 0;
	void *h = NULL;
	CUcontext ctx = NULL, cur = NULL;
	unsigned type = 0;
	int ordinal = -5, managed = -1;
	size_t size = 0;
	unsigned long long start = 0, len = 0;
	CUmemoryPool pool = NULL, got_pool = NULL;
	CUstream s;
	OK(cuCtxGetCurrent(&cur));
	OK(cuMemAlloc_v2(&p, 100));
	OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 10));
	CHECK_EQ(type, 2); /* CU_MEMORYTYPE_DEVICE */
	OK(cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, p));
	CHECK(ctx == cur);
	OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
	CHECK_EQ(ordinal, d);
	OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 99));
	CHECK_EQ(start, p);
	OK(cuPointerGetAttribute(&len, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 99));
	CHECK_EQ(len, 100);
	OK(cuMemGetAddressRange_v2(&base, &size, p + 50));
	CHECK(base == p && size == 100);
	EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 100), CUDA_ERROR_INVALID_VALUE);
	EXPECT(cuPointerGetAttribute(&type, 999, p), CUDA_ERROR_INVALID_VALUE);

	/* several at once; foreign memory is no error there */
	CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
				       CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
	void *out[] = {&type, &managed, &ordinal};
	OK(cuMemAllocManaged(&m, 64, 1));
	OK(cuPointerGetAttributes(3, attrs, out, m));
	CHECK(type == 2 && managed == 1 && ordinal == d);
	int local = 0;
	OK(cuPointerGetAttributes(3, attrs, out, (CUdeviceptr)(uintptr_t)&local));
	CHECK(type == 0 && managed == 0);
	EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)&local),
	       CUDA_ERROR_INVALID_VALUE);

	OK(cuMemAllocHost_v2(&h, 32));
	OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)h));
	CHECK_EQ(type, 1); /* CU_MEMORYTYPE_HOST */

	OK(cuDeviceGetDefaultMemPool(&pool, d));
	OK(cuStreamCreate(&s, 0));
	OK(cuMemAllocFromPoolAsync(&q, 10, pool, s));
	OK(cuPointerGetAttribute(&got_pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, q));
	CHECK(got_pool == pool);
	OK(cuPointerGetAttribute(&got_pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
	CHECK(got_pool == NULL);

	/* pool access */
	CUmemAccessDesc rw = {.location = {.type = 1, .id = 1}, .flags = 3};
	CUmemAccessDesc own_none = {.location = {.type = 1, .id = d}, .flags = 0};
	CUmemAccessDesc bad = {.location = {.type = 1, .id = 1}, .flags = 2};
	CUmemAccessDesc nodev = {.location = {.type = 1, .id = 7}, .flags = 3};
	CUmemAccess_flags f = -1;
	CUmemLocation one = {.type = 1, .id = 1}, self = {.type = 1, .id = d};
	OK(cuMemPoolGetAccess(&f, pool, &one));
	CHECK_EQ(f, 0);
	OK(cuMemPoolSetAccess(pool, &rw, 1));
	OK(cuMemPoolGetAccess(&f, pool, &one));
	CHECK_EQ(f, 3);
	OK(cuMemPoolGetAccess(&f, pool, &self));
	CHECK_EQ(f, 3);
	EXPECT(cuMemPoolSetAccess(pool, &own_none, 1), CUDA_ERROR_INVALID_DEVICE);
	EXPECT(cuMemPoolSetAccess(pool, &bad, 1), CUDA_ERROR_INVALID_VALUE);
	EXPECT(cuMemPoolSetAccess(pool, &nodev, 1), CUDA_ERROR_INVALID_DEVICE);
	EXPECT(cuMemPoolSetAccess((CUmemoryPool)&local, &rw, 1), CUDA_ERROR_INVALID_VALUE);

	OK(cuMemFreeAsync(q, s));
	OK(cuStreamDestroy_v2(s));
	OK(cuMemFreeHost(h));
	OK(cuMemFree_v2(m));
	OK(cuMemFree_v2(p));
	EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p), CUDA_ERROR_INVALID_VALUE);
	EXPECT(cuMemGetAddressRange_v2(&base, &size, p), CUDA_ERROR_NOT_FOUND);
}

struct host_call {
	int runs;
	CUstream stream;
	CUresult status;
};

static void host_fn(void *user) { ((struct host_call *)user)->runs++; }

static void stream_cb(CUstream s, CUresult status, void *user)
{
	struct host_call *c = user;
	c->runs++;
	c->stream = s;
	c->status = status;
}

static void test_host_functions(void)
{
	CUstream s;
	CUgraph g;
	size_t nodes = 0;
	struct host_call hc = {0}, cb = {.status = (CUresult)-1};
	OK(cuStreamCreate(&s, 0));
	OK(cuLaunchHostFunc(s, (CUhostFn)host_fn, &hc)); n_host_func++;
	CHECK_EQ(hc.runs, 1); /* done when the launch returns */
	OK(cuLaunchHostFunc(NULL, (CUhostFn)host_fn, &hc)); n_host_func++;
	CHECK_EQ(hc.runs, 2);
	EXPECT(cuLaunchHostFunc(s, NULL, &hc), CUDA_ERROR_INVALID_VALUE); n_host_func++;
	OK(cuStreamAddCallback(s, (CUstreamCallback)stream_cb, &cb, 0));
	CHECK(cb.runs == 1 && cb.stream == s && cb.status == CUDA_SUCCESS);
	EXPECT(cuStreamAddCallback(s, (CUstreamCallback)stream_cb, &cb, 1), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ(cb.runs, 1);

	/* captured: a node of the graph, not run */
	OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	OK(cuLaunchHostFunc(s, (CUhostFn)host_fn, &hc)); n_host_func++;
	EXPECT(cuStreamAddCallback(s, (CUstreamCallback)stream_cb, &cb, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	OK(cuStreamEndCapture(s, &g));
	CHECK(hc.runs == 2 && cb.runs == 1);
	OK(cuGraphGetNodes(g, NULL, &nodes));
	CHECK_EQ(nodes, 1);
	OK(cuGraphDestroy(g));
	OK(cuStreamDestroy_v2(s));
	EXPECT(cuLaunchHostFunc(s, (CUhostFn)host_fn, &hc), CUDA_ERROR_INVALID_HANDLE); n_host_func++;
	CHECK_EQ(hc.runs, 2);
}

static void test_counts(void)
{
	int counted = getenv("CUPROF_SIM_CALL_COUNTS") != NULL;
	if (!counted) {
		CHECK_EQ(cuprofsim_call_count("cuInit"), (unsigned long long)-1);
		return;
	}
	CHECK_EQ(cuprofsim_call_count("cuDeviceGetUuid"), n_uuid);
	CHECK_EQ(cuprofsim_call_count("cuStreamGetFlags"), n_stream_flags);
	CHECK_EQ(cuprofsim_call_count("cuLaunchHostFunc"), n_host_func);
	CHECK_EQ(cuprofsim_call_count("cuInit"), 1);
	CHECK_EQ(cuprofsim_call_count("cuNoSuchCall"), (unsigned long long)-1);
	printf("calls cuDeviceGetUuid %d\ncalls cuStreamGetFlags %d\ncalls cuLaunchHostFunc %d\ncalls cuInit 1\n",
	       n_uuid, n_stream_flags, n_host_func);
}

int main(void)
{
	CUcontext primary;
	OK(cuInit(0));
	test_uuid();
	test_pci();
	test_attributes();
	test_peers();
	OK(cuDevicePrimaryCtxRetain(&primary, 0));
	OK(cuCtxSetCurrent(primary));
	test_contexts(primary);
	test_streams(primary);
	test_pointers(0);
	test_host_functions();
	test_counts();
	if (failures) {
		printf("simqueries: %d of %d checks failed\n", failures, checks);
		return 1;
	}
	printf("simqueries: %d checks passed\n", checks);
	return 0;
}
