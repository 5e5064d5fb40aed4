/*
 * Types of the graph, virtual-memory and library families, for the
 * simulated driver (sim.c) and the programs that test it (testdata/).
 *
 * In the vocabulary of the generated cuprof_types.h (handles as pointers to
 * their struct, enums as int, callbacks as a generic function pointer), so
 * that these declarations repeat its typedefs exactly; layouts and values as
 * in cuda.h of CUDA 12 and 13 on 64-bit Linux. Include after cuprof_cuda.h.
 */
#ifndef CUPROF_SIM_FAMILIES_H
#define CUPROF_SIM_FAMILIES_H

typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUgraphEdgeData_st CUgraphEdgeData;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef int CUjit_option;
typedef int CUlibraryOption;
typedef int CUfunction_attribute;
typedef int CUmemAllocationGranularity_flags;
typedef int CUstreamCaptureMode;
typedef int CUstreamCaptureStatus;
typedef int CUgraphExecUpdateResult;
typedef void (*CUoccupancyB2DSize)(void); /* size_t (*)(int blockSize) */

#define CU_STREAM_CAPTURE_MODE_GLOBAL 0
#define CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1
#define CU_STREAM_CAPTURE_MODE_RELAXED 2
#define CU_STREAM_CAPTURE_STATUS_NONE 0
#define CU_STREAM_CAPTURE_STATUS_ACTIVE 1
#define CU_STREAM_CAPTURE_STATUS_INVALIDATED 2
#define CU_GRAPH_EXEC_UPDATE_SUCCESS 0
#define CU_GRAPH_EXEC_UPDATE_ERROR 1
#define CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED 2
#define CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED 3
#define CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED 4

typedef struct CUgraphExecUpdateResultInfo_st {
	CUgraphExecUpdateResult result;
	CUgraphNode errorNode;
	CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo;

typedef struct CUmemAllocationProp_st {
	CUmemAllocationType type;
	CUmemAllocationHandleType requestedHandleTypes;
	CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} CUmemAllocationProp;

typedef struct CUmemAccessDesc_st {
	CUmemLocation location;
	int flags; /* CUmemAccess_flags: 0 none, 1 read, 3 read-write */
} CUmemAccessDesc;

/* A device's UUID (cuDeviceGetUuid). */
struct CUuuid_st {
	char bytes[16];
};

/* Error codes of these families (cuda.h values). */
#define CUDA_ERROR_ALREADY_MAPPED 208
#define CUDA_ERROR_ILLEGAL_STATE 401
#define CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 900
#define CUDA_ERROR_STREAM_CAPTURE_INVALIDATED 901
#define CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE 910

#endif
