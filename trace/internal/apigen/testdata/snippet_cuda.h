/* A snippet in the shape of cuda.h, written for apigen's parser tests. */
#ifndef __cuda_cuda_h__
#define __cuda_cuda_h__
#include <stdint.h>
typedef uint64_t cuuint64_t;
#if defined(__CUDA_API_VERSION_INTERNAL) || defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
    #define __CUDA_API_PER_THREAD_DEFAULT_STREAM
    #define __CUDA_API_PTDS(api) api ## _ptds
    #define __CUDA_API_PTSZ(api) api ## _ptsz
#else
    #define __CUDA_API_PTDS(api) api
    #define __CUDA_API_PTSZ(api) api
#endif
#define cuThingDestroy                    cuThingDestroy_v2
#define cuCopy                            __CUDA_API_PTDS(cuCopy_v2)
#define cuWidgetMake                      cuWidgetMakeWithFlags
#if defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)
    #define cuQueueSync                   __CUDA_API_PTSZ(cuQueueSync)
#endif
#ifdef __cplusplus
extern "C" {
#endif
#if defined(_WIN64) || defined(__LP64__)
typedef unsigned long long CUdeviceptr_v2;
#else
typedef unsigned int CUdeviceptr_v2;
#endif
typedef CUdeviceptr_v2 CUdeviceptr;
typedef int CUdevice;
typedef struct CUthing_st *CUthing;
typedef struct CUqueue_st *CUqueue;
typedef enum CUmode_enum {
    CU_MODE_A = 0, /**< a { brace in a comment } */
    CU_MODE_B = 1
} CUmode;
typedef struct CUspot_st {
    int kind;
    int id;
} CUspot_v1;
typedef CUspot_v1 CUspot;
typedef void (CUDA_CB *CUcallback)(void *userData);
/**
 * \\brief Makes a thing; cuThingMake(CUthing *out) in a comment is not a declaration.
 */
CUresult CUDAAPI cuThingMake(CUthing *phThing, unsigned int flags);
CUresult CUDAAPI cuThingDestroy(CUthing hThing);
__CUDA_DEPRECATED CUresult CUDAAPI cuThingOld(CUthing hThing,
    CUspot spot, const char *name);
CUresult CUDAAPI cuCopy(CUdeviceptr dst,
                        CUdeviceptr src, size_t ByteCount);
CUresult CUDAAPI cuQueueSync(CUqueue hQueue);
CUresult CUDAAPI cuWidgetMake(CUthing *phThing, unsigned long long flags);
CUresult CUDAAPI cuWidgetMakeWithFlags(CUthing *phThing, unsigned long long flags);
CUresult CUDAAPI cuCallLater(CUqueue hQueue, CUcallback fn, void *userData);
#if defined(__CUDA_API_VERSION_INTERNAL)
    #undef cuThingDestroy
    #undef cuCopy
    typedef unsigned int CUdeviceptr_v1;
    CUresult CUDAAPI cuThingDestroy(CUthing hThing);
    CUresult CUDAAPI cuCopy(CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned int ByteCount);
    CUresult CUDAAPI cuCopy_v2(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
#elif defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)
static inline CUresult cuQueueSync_v9_ptsz(CUqueue hQueue) { return 0; }
#endif
#ifdef __cplusplus
}
#endif
#endif
