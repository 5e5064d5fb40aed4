/*
 * Exercises the simulated driver's graph, virtual-memory and library
 * families through a direct link (-lcuda) and cuGetProcAddress. Prints one
 * line per failed check and exits 1 when any failed; "simfamilies: N checks
 * passed" otherwise. Run with CUPROF_SIM_DEVICES=2 and CUPROF_SIM_MEM_BYTES=1 GiB.
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

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
CUresult cuStreamBeginCapture(CUstream hStream);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus);
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
			       size_t bufferSize);
CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus);
CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
				   CUgraph *graph_out, const CUgraphNode **dependencies_out,
				   const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out);
CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode);
CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags);
CUresult cuGraphDestroy(CUgraph hGraph);
CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags);
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo);
CUresult cuGraphExecDestroy(CUgraphExec hGraphExec);
CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
				       CUmemAllocationGranularity_flags option);
CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
		     unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
			     unsigned long long flags);
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
		  unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count);
CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,
			   unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,
			   unsigned int numLibraryOptions);
CUresult cuLibraryUnload(CUlibrary library);
CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name);
CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel);
CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name);
CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc);
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func, int blockSize,
							      size_t dynamicSMemSize, unsigned int flags);
CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
					  CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
					  int blockSizeLimit);
CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority);

static const char image[] = "cuprof simulated image";

static void launch(CUfunction f, CUstream s, CUresult want)
{
	EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL), want);
}

static size_t node_count(CUgraph g)
{
	size_t n = 12345;
	OK(cuGraphGetNodes(g, NULL, &n));
	return n;
}

static void test_capture(CUfunction f)
{
	CUstream s;
	CUgraph g = NULL, g2 = NULL;
	CUgraphExec x = NULL;
	CUstreamCaptureStatus st = 7;
	cuuint64_t id = 0;
	CUgraph in = NULL;
	OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	OK(cuStreamIsCapturing(s, &st));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
	EXPECT(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
	EXPECT(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	EXPECT(cuStreamBeginCapture_v2(s, (CUstreamCaptureMode)9), CUDA_ERROR_INVALID_VALUE);

	/* three launches and a copy, captured: four nodes, nothing run */
	OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	EXPECT(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
	OK(cuStreamIsCapturing(s, &st));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
	OK(cuStreamGetCaptureInfo_v3(s, &st, &id, &in, NULL, NULL, NULL));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0 && in != NULL);
	for (int i = 0; i < 3; i++)
		launch(f, s, CUDA_SUCCESS);
	OK(cuMemsetD8Async(0x1000, 0, 16, s));
	OK(cuStreamEndCapture(s, &g));
	CHECK(g != NULL && g == in);
	CHECK(node_count(g) == 4);
	OK(cuStreamIsCapturing(s, &st));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
	CUgraphNode nodes[6];
	size_t n = 6;
	OK(cuGraphGetNodes(g, nodes, &n));
	CHECK(n == 4 && nodes[3] != NULL && nodes[4] == NULL);

	/* instantiate, replay, update with a graph of the same shape */
	OK(cuGraphInstantiateWithFlags(&x, g, 0));
	for (int i = 0; i < 5; i++)
		OK(cuGraphLaunch(x, s));
	OK(cuStreamSynchronize(s));
	OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	for (int i = 0; i < 3; i++)
		launch(f, s, CUDA_SUCCESS);
	OK(cuMemsetD8Async(0x2000, 1, 16, s));
	OK(cuStreamEndCapture(s, &g2));
	CUgraphExecUpdateResultInfo info = {.result = 99};
	OK(cuGraphExecUpdate_v2(x, g2, &info));
	CHECK(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
	OK(cuGraphDestroy(g2));
	/* a graph of another shape does not update it */
	OK(cuGraphCreate(&g2, 0));
	CHECK(node_count(g2) == 0);
	EXPECT(cuGraphExecUpdate_v2(x, g2, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
	OK(cuGraphDestroy(g2));
	EXPECT(cuGraphDestroy(g2), CUDA_ERROR_INVALID_VALUE);

	/* a synchronize inside a capture invalidates it */
	OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	launch(f, s, CUDA_SUCCESS);
	EXPECT(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	OK(cuStreamIsCapturing(s, &st));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
	launch(f, s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	g2 = (CUgraph)0x1;
	EXPECT(cuStreamEndCapture(s, &g2), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	CHECK(g2 == NULL);
	/* and a context synchronize during a global capture */
	OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	EXPECT(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	EXPECT(cuStreamEndCapture(s, &g2), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	OK(cuCtxSynchronize());

	CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
	OK(cuThreadExchangeStreamCaptureMode(&m));
	CHECK(m == CU_STREAM_CAPTURE_MODE_GLOBAL);
	OK(cuThreadExchangeStreamCaptureMode(&m));
	CHECK(m == CU_STREAM_CAPTURE_MODE_RELAXED);

	OK(cuGraphExecDestroy(x));
	EXPECT(cuGraphLaunch(x, s), CUDA_ERROR_INVALID_VALUE);
	EXPECT(cuGraphExecDestroy(x), CUDA_ERROR_INVALID_VALUE);
	OK(cuGraphDestroy(g));
	/* a capture left open when its stream goes is dropped with it */
	OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	OK(cuStreamDestroy_v2(s));
	OK(cuCtxSynchronize());
}

static CUmemAllocationProp device_prop(int dev)
{
	CUmemAllocationProp p;
	memset(&p, 0, sizeof p);
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = dev;
	return p;
}

static size_t free_bytes(void)
{
	size_t f = 0, t = 0;
	OK(cuMemGetInfo_v2(&f, &t));
	return f;
}

static void test_vmm(void)
{
	CUmemAllocationProp prop = device_prop(0), bad = device_prop(9);
	size_t g = 0;
	OK(cuMemGetAllocationGranularity(&g, &prop, 0));
	CHECK(g == 2 << 20);
	EXPECT(cuMemGetAllocationGranularity(&g, &bad, 0), CUDA_ERROR_INVALID_VALUE);

	size_t before = free_bytes();
	CUmemGenericAllocationHandle h1, h2;
	EXPECT(cuMemCreate(&h1, g + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemCreate(&h1, 2 * g, &prop, 0));
	OK(cuMemCreate(&h2, g, &prop, 0));
	CHECK(free_bytes() == before - 3 * g);
	EXPECT(cuMemCreate(&h2, (size_t)4 << 30, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);

	CUdeviceptr base = 0;
	OK(cuMemAddressReserve(&base, 8 * g, 0, 0, 0));
	CHECK(base != 0 && base % g == 0);
	OK(cuMemMap(base, 2 * g, 0, h1, 0));
	EXPECT(cuMemMap(base + g, g, 0, h2, 0), CUDA_ERROR_ALREADY_MAPPED);
	OK(cuMemMap(base + 2 * g, g, 0, h2, 0));
	EXPECT(cuMemMap(base + 7 * g, 2 * g, 0, h1, 0), CUDA_ERROR_INVALID_VALUE); /* past the range */
	CUmemAccessDesc acc = {.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}, .flags = 3};
	OK(cuMemSetAccess(base, 3 * g, &acc, 1));
	EXPECT(cuMemSetAccess(base, 4 * g, &acc, 1), CUDA_ERROR_INVALID_VALUE); /* not all mapped */
	/* mapped memory is not cuMemAlloc memory */
	EXPECT(cuMemFree_v2(base), CUDA_ERROR_INVALID_VALUE);
	/* freeing the range while mapped fails; releasing a mapped handle defers it */
	EXPECT(cuMemAddressFree(base, 8 * g), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemRelease(h1));
	EXPECT(cuMemRelease(h1), CUDA_ERROR_INVALID_VALUE);
	CHECK(free_bytes() == before - 3 * g);
	EXPECT(cuMemUnmap(base, g), CUDA_ERROR_INVALID_VALUE); /* half a mapping */
	OK(cuMemUnmap(base, 3 * g)); /* both mappings at once */
	CHECK(free_bytes() == before - g);
	EXPECT(cuMemUnmap(base, g), CUDA_ERROR_INVALID_VALUE);
	/* the expandable-segment pattern: map, unmap, map again */
	for (int i = 0; i < 4; i++) {
		OK(cuMemMap(base + (size_t)i * g, g, 0, h2, 0));
		OK(cuMemSetAccess(base + (size_t)i * g, g, &acc, 1));
	}
	OK(cuMemUnmap(base, 4 * g));
	OK(cuMemAddressFree(base, 8 * g));
	EXPECT(cuMemAddressFree(base, 8 * g), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemRelease(h2));
	CHECK(free_bytes() == before);
}

static void test_libraries(CUcontext ctx)
{
	CUlibrary lib;
	CUkernel k1, k2, k3;
	CUfunction f1, f2;
	EXPECT(cuLibraryLoadData(&lib, NULL, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
	OK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
	OK(cuLibraryGetKernel(&k1, lib, "axpy"));
	OK(cuLibraryGetKernel(&k2, lib, "axpy"));
	OK(cuLibraryGetKernel(&k3, lib, "scale"));
	CHECK(k1 == k2 && k1 != k3);
	EXPECT(cuLibraryGetKernel(&k2, lib, ""), CUDA_ERROR_NOT_FOUND);
	OK(cuKernelGetFunction(&f1, k1));
	OK(cuKernelGetFunction(&f2, k1));
	CHECK(f1 == f2);
	int v = 0;
	OK(cuFuncGetAttribute(&v, 4, f1));
	CHECK(v == 32);
	OK(cuFuncGetAttribute(&v, 0, f1));
	CHECK(v == 1024);
	OK(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&v, f1, 256, 0, 0));
	CHECK(v == 8);
	int grid = 0, block = 0;
	OK(cuOccupancyMaxPotentialBlockSize(&grid, &block, f1, NULL, 0, 0));
	CHECK(block > 0 && block <= 1024 && grid > 0);
	launch(f1, NULL, CUDA_SUCCESS);
	launch((CUfunction)k3, NULL, CUDA_SUCCESS); /* a kernel launched as a function */
	int lo = 1, hi = 1;
	OK(cuCtxGetStreamPriorityRange(&lo, &hi));
	CHECK(lo == 0 && hi == -5);

	CUmodule mod;
	CUfunction mf1, mf2;
	CUdeviceptr gp = 0;
	size_t gb = 0;
	OK(cuModuleLoadData(&mod, image));
	OK(cuModuleGetFunction(&mf1, mod, "k"));
	OK(cuModuleGetFunction(&mf2, mod, "k"));
	CHECK(mf1 == mf2);
	OK(cuModuleGetGlobal_v2(&gp, &gb, mod, "table"));
	CHECK(gp != 0 && gb == 8);
	OK(cuModuleUnload(mod));
	EXPECT(cuFuncGetAttribute(&v, 4, mf1), CUDA_ERROR_INVALID_HANDLE);

	OK(cuLibraryUnload(lib));
	EXPECT(cuLibraryUnload(lib), CUDA_ERROR_INVALID_HANDLE);
	EXPECT(cuKernelGetFunction(&f2, k1), CUDA_ERROR_INVALID_HANDLE);
	launch(f1, NULL, CUDA_ERROR_INVALID_HANDLE);
	(void)ctx;
}

/* cuGetProcAddress hands out these functions at their versions. */
static void test_proc_address(void)
{
	static const struct {
		const char *name;
		int version;
		cuuint64_t flags;
		void *want;
	} rows[] = {
		{"cuStreamBeginCapture", 10000, 0, (void *)cuStreamBeginCapture},
		{"cuStreamBeginCapture", 10010, 0, (void *)cuStreamBeginCapture_v2},
		{"cuStreamBeginCapture", 12000, 2, (void *)cuStreamBeginCapture_v2_ptsz},
		{"cuStreamGetCaptureInfo", 12030, 0, (void *)cuStreamGetCaptureInfo_v3},
		{"cuStreamIsCapturing", 13000, 2, (void *)cuStreamIsCapturing_ptsz},
		{"cuGraphInstantiate", 11000, 0, (void *)cuGraphInstantiate_v2},
		{"cuGraphExecUpdate", 12000, 0, (void *)cuGraphExecUpdate_v2},
		{"cuGraphLaunch", 12000, 0, (void *)cuGraphLaunch},
		{"cuMemMap", 10020, 0, (void *)cuMemMap},
		{"cuLibraryLoadData", 12000, 0, (void *)cuLibraryLoadData},
		{"cuModuleGetGlobal", 3020, 0, (void *)cuModuleGetGlobal_v2},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		void *fn = NULL;
		CUdriverProcAddressQueryResult st = 9;
		OK(cuGetProcAddress_v2(rows[i].name, &fn, rows[i].version, rows[i].flags, &st));
		checks++;
		if (fn != rows[i].want || st != CU_GET_PROC_ADDRESS_SUCCESS) {
			failures++;
			printf("FAIL cuGetProcAddress_v2(%s, %d, %llu) = %p, want %p\n", rows[i].name, rows[i].version,
			       (unsigned long long)rows[i].flags, fn, rows[i].want);
		}
	}
	void *fn = (void *)1;
	CUdriverProcAddressQueryResult st = 9;
	OK(cuGetProcAddress_v2("cuLibraryLoadData", &fn, 11080, 0, &st));
	CHECK(fn == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

int main(void)
{
	CUcontext ctx;
	CUmodule mod;
	CUfunction f;
	OK(cuInit(0));
	OK(cuDevicePrimaryCtxRetain(&ctx, 0));
	OK(cuCtxSetCurrent(ctx));
	OK(cuModuleLoadData(&mod, image));
	OK(cuModuleGetFunction(&f, mod, "kernel"));
	test_proc_address();
	test_capture(f);
	test_vmm();
	test_libraries(ctx);
	OK(cuModuleUnload(mod));
	OK(cuDevicePrimaryCtxRelease_v2(0));
	if (failures) {
		printf("simfamilies: %d of %d checks failed\n", failures, checks);
		return 1;
	}
	printf("simfamilies: %d checks passed\n", checks);
	return 0;
}
