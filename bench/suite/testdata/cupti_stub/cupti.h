/*
 * Declarations of the few CUPTI entry points the suite's tools use, written
 * from CUPTI's public API documentation, so that selftest.sh can compile
 * cupti_callback.c and cupti_activity.c (and catch mistakes in them) on a
 * machine without the CUDA toolkit. Never used for the real build, which
 * takes cupti.h from the toolkit; values here need not match it.
 */
#ifndef CUPROF_BENCH_CUPTI_STUB_H
#define CUPROF_BENCH_CUPTI_STUB_H
#include <stddef.h>
#include <stdint.h>

#define CUPTIAPI
typedef struct CUctx_st *CUcontext;
typedef enum { CUPTI_SUCCESS = 0, CUPTI_ERROR_MAX_LIMIT_REACHED = 12 } CUptiResult;
typedef enum {
	CUPTI_CB_DOMAIN_DRIVER_API = 1,
	CUPTI_CB_DOMAIN_RUNTIME_API = 2
} CUpti_CallbackDomain;
typedef uint32_t CUpti_CallbackId;
typedef enum { CUPTI_API_ENTER = 0, CUPTI_API_EXIT = 1 } CUpti_ApiCallbackSite;
typedef struct {
	CUpti_ApiCallbackSite callbackSite;
	const char *functionName;
	const void *functionParams;
	void *functionReturnValue;
	const char *symbolName;
	CUcontext context;
	uint32_t contextUid;
	uint64_t *correlationData;
	uint32_t correlationId;
} CUpti_CallbackData;
typedef struct CUpti_Subscriber_st *CUpti_SubscriberHandle;
typedef void(CUPTIAPI *CUpti_CallbackFunc)(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
					     const void *cbdata);
typedef enum {
	CUPTI_ACTIVITY_KIND_INVALID = 0,
	CUPTI_ACTIVITY_KIND_DRIVER = 5,
	CUPTI_ACTIVITY_KIND_RUNTIME = 6
} CUpti_ActivityKind;
typedef struct {
	CUpti_ActivityKind kind;
} CUpti_Activity;
typedef enum { CUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1 << 0 } CUpti_ActivityFlag;
typedef void(CUPTIAPI *CUpti_BuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size, size_t *maxNumRecords);
typedef void(CUPTIAPI *CUpti_BuffersCallbackCompleteFunc)(CUcontext context, uint32_t streamId, uint8_t *buffer,
							   size_t size, size_t validSize);

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str);
CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
				    void *userdata);
CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
				       CUpti_CallbackDomain domain);
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind);
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
						    CUpti_BuffersCallbackCompleteFunc funcBufferCompleted);
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
						CUpti_Activity **record);
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId, size_t *dropped);
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag);
#endif
