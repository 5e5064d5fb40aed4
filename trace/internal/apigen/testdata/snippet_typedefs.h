/* A snippet in the shape of cudaTypedefs.h, for apigen's parser tests. */
typedef CUresult (CUDAAPI *PFN_cuThingMake_v5000)(CUthing *phThing, unsigned int flags);
typedef CUresult (CUDAAPI *PFN_cuThingDestroy_v2000)(CUthing hThing);
typedef CUresult (CUDAAPI *PFN_cuThingDestroy_v4000)(CUthing hThing);
typedef CUresult (CUDAAPI *PFN_cuThingOld_v3000)(CUthing hThing, CUspot spot, const char *name);
typedef CUresult (CUDAAPI *PFN_cuCopy_v7000_ptds)(CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t ByteCount);
typedef CUresult (CUDAAPI *PFN_cuCopy_v3020)(CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t ByteCount);
typedef CUresult (CUDAAPI *PFN_cuQueueSync_v2000)(CUqueue hQueue);
typedef CUresult (CUDAAPI *PFN_cuQueueSync_v7000_ptsz)(CUqueue hQueue);
typedef CUresult (CUDAAPI *PFN_cuWidgetMakeWithFlags_v11040)(CUthing *phThing, unsigned long long flags);
typedef CUresult (CUDAAPI *PFN_cuWidgetMake_v12000)(CUthing *phThing, unsigned long long flags);
typedef CUresult (CUDAAPI *PFN_cuCallLater_v10000)(CUqueue hQueue, CUcallback fn, void *userData);
#if defined(__CUDA_API_VERSION_INTERNAL)
    typedef CUresult (CUDAAPI *PFN_cuCopy_v2000)(CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned int ByteCount);
#endif
