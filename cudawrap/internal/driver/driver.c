#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuprof_cuda.h"
#include "driver.h"

/* The driver functions cudawrap calls, with the ABI version each is
 * resolved at (cuGetProcAddress semantics; the fallback is dlsym of the
 * exported variant that version names). */
#define CW_FUNCS(X)                                                                                 \
	X(cuInit, 2000, "cuInit", CUresult, (unsigned))                                             \
	X(cuDriverGetVersion, 2020, "cuDriverGetVersion", CUresult, (int *))                        \
	X(cuDeviceGet, 2000, "cuDeviceGet", CUresult, (CUdevice *, int))                            \
	X(cuDeviceGetCount, 2000, "cuDeviceGetCount", CUresult, (int *))                            \
	X(cuDeviceGetName, 2000, "cuDeviceGetName", CUresult, (char *, int, CUdevice))              \
	X(cuDeviceGetAttribute, 2000, "cuDeviceGetAttribute", CUresult, (int *, int, CUdevice))     \
	X(cuDeviceTotalMem, 3020, "cuDeviceTotalMem_v2", CUresult, (size_t *, CUdevice))            \
	X(cuDevicePrimaryCtxRetain, 7000, "cuDevicePrimaryCtxRetain", CUresult, (CUcontext *, CUdevice)) \
	X(cuDevicePrimaryCtxRelease, 11000, "cuDevicePrimaryCtxRelease_v2", CUresult, (CUdevice))   \
	X(cuCtxCreate, 3020, "cuCtxCreate_v2", CUresult, (CUcontext *, unsigned, CUdevice))         \
	X(cuCtxDestroy, 4000, "cuCtxDestroy_v2", CUresult, (CUcontext))                             \
	X(cuCtxPopCurrent, 4000, "cuCtxPopCurrent_v2", CUresult, (CUcontext *))                     \
	X(cuCtxSetCurrent, 4000, "cuCtxSetCurrent", CUresult, (CUcontext))                          \
	X(cuCtxGetCurrent, 4000, "cuCtxGetCurrent", CUresult, (CUcontext *))                        \
	X(cuCtxSynchronize, 2000, "cuCtxSynchronize", CUresult, (void))                             \
	X(cuStreamCreate, 2000, "cuStreamCreate", CUresult, (CUstream *, unsigned))                 \
	X(cuStreamCreateWithPriority, 5050, "cuStreamCreateWithPriority", CUresult, (CUstream *, unsigned, int)) \
	X(cuStreamDestroy, 4000, "cuStreamDestroy_v2", CUresult, (CUstream))                        \
	X(cuStreamSynchronize, 2000, "cuStreamSynchronize", CUresult, (CUstream))                   \
	X(cuStreamQuery, 2000, "cuStreamQuery", CUresult, (CUstream))                               \
	X(cuEventCreate, 2000, "cuEventCreate", CUresult, (CUevent *, unsigned))                    \
	X(cuEventDestroy, 4000, "cuEventDestroy_v2", CUresult, (CUevent))                           \
	X(cuEventRecord, 2000, "cuEventRecord", CUresult, (CUevent, CUstream))                      \
	X(cuEventSynchronize, 2000, "cuEventSynchronize", CUresult, (CUevent))                      \
	X(cuEventQuery, 2000, "cuEventQuery", CUresult, (CUevent))                                  \
	X(cuEventElapsedTime, 2000, "cuEventElapsedTime", CUresult, (float *, CUevent, CUevent))    \
	X(cuMemAllocAsync, 11020, "cuMemAllocAsync", CUresult, (CUdeviceptr *, size_t, CUstream))   \
	X(cuMemAllocFromPoolAsync, 11020, "cuMemAllocFromPoolAsync", CUresult, (CUdeviceptr *, size_t, CUmemoryPool, CUstream)) \
	X(cuMemFreeAsync, 11020, "cuMemFreeAsync", CUresult, (CUdeviceptr, CUstream))               \
	X(cuMemGetInfo, 3020, "cuMemGetInfo_v2", CUresult, (size_t *, size_t *))                    \
	X(cuMemPoolCreate, 11020, "cuMemPoolCreate", CUresult, (CUmemoryPool *, const CUmemPoolProps *)) \
	X(cuMemPoolDestroy, 11020, "cuMemPoolDestroy", CUresult, (CUmemoryPool))                    \
	X(cuMemPoolTrimTo, 11020, "cuMemPoolTrimTo", CUresult, (CUmemoryPool, size_t))              \
	X(cuMemPoolSetAttribute, 11020, "cuMemPoolSetAttribute", CUresult, (CUmemoryPool, int, void *)) \
	X(cuMemPoolGetAttribute, 11020, "cuMemPoolGetAttribute", CUresult, (CUmemoryPool, int, void *)) \
	X(cuDeviceGetDefaultMemPool, 11020, "cuDeviceGetDefaultMemPool", CUresult, (CUmemoryPool *, CUdevice)) \
	X(cuDeviceGetMemPool, 11020, "cuDeviceGetMemPool", CUresult, (CUmemoryPool *, CUdevice))    \
	X(cuGetErrorName, 6000, "cuGetErrorName", CUresult, (CUresult, const char **))              \
	X(cuGetErrorString, 6000, "cuGetErrorString", CUresult, (CUresult, const char **))

static struct {
#define CW_FIELD(name, ver, sym, ret, params) ret(*name) params;
	CW_FUNCS(CW_FIELD)
#undef CW_FIELD
} fn;

static void *lib;

/* cuprof's span ABI, when the shim is loaded. */
static struct {
	int (*active)(void);
	uint64_t (*now)(void);
	uint32_t (*intern)(const char *);
	void (*span)(uint32_t, uint32_t, uint64_t, uint64_t);
	uint64_t (*last_call_end)(void);
} shim;
static uint32_t domain_id, check_id;

int cw_open(const char *path, cw_name *err)
{
	if (lib)
		return 0;
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(err->s, sizeof err->s, "%s", e ? e : "dlopen failed");
		return -1;
	}
	cuGetProcAddress_v2_fn gpa2 = (cuGetProcAddress_v2_fn)dlsym(h, "cuGetProcAddress_v2");
	cuGetProcAddress_fn gpa = (cuGetProcAddress_fn)dlsym(h, "cuGetProcAddress");
	void *p;
#define CW_RESOLVE(name, ver, sym, ret, params)                                                     \
	p = NULL;                                                                                   \
	if (gpa2) {                                                                                 \
		CUdriverProcAddressQueryResult st;                                                  \
		if (gpa2(#name, &p, ver, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS)         \
			p = NULL;                                                                   \
	} else if (gpa) {                                                                           \
		if (gpa(#name, &p, ver, CU_GET_PROC_ADDRESS_DEFAULT) != CUDA_SUCCESS)               \
			p = NULL;                                                                   \
	}                                                                                           \
	if (!p)                                                                                     \
		p = dlsym(h, sym);                                                                  \
	if (!p) {                                                                                   \
		snprintf(err->s, sizeof err->s, "%s: no %s", path, sym);                            \
		dlclose(h);                                                                         \
		return -1;                                                                          \
	}                                                                                           \
	*(void **)&fn.name = p;
	CW_FUNCS(CW_RESOLVE)
#undef CW_RESOLVE
	*(void **)&shim.active = dlsym(RTLD_DEFAULT, "cuprof_active");
	*(void **)&shim.now = dlsym(RTLD_DEFAULT, "cuprof_now");
	*(void **)&shim.intern = dlsym(RTLD_DEFAULT, "cuprof_intern");
	*(void **)&shim.span = dlsym(RTLD_DEFAULT, "cuprof_span");
	*(void **)&shim.last_call_end = dlsym(RTLD_DEFAULT, "cuprof_last_call_end");
	if (!shim.active || !shim.now || !shim.intern || !shim.span || !shim.last_call_end)
		memset(&shim, 0, sizeof shim);
	lib = h;
	return 0;
}

int cw_spans_available(void) { return shim.active != NULL; }

uint32_t cw_intern(const char *s) { return shim.intern ? shim.intern(s) : 0; }

void cw_set_ids(uint32_t domain, uint32_t check)
{
	domain_id = domain;
	check_id = check;
}

static inline uint64_t op_start(void)
{
	return shim.active && shim.active() ? shim.now() : 0;
}

static inline void op_called(cw_res *r)
{
	if (r->start)
		r->call_end = shim.last_call_end();
}

/* Ends an operation: its span [start, now] and, inside it, the check span
 * from its last driver call's end to the same end. */
void cw_op_end(uint64_t start, uint64_t call_end, uint32_t name)
{
	if (!start || !shim.span)
		return;
	uint64_t end = shim.now();
	shim.span(domain_id, name, start, end);
	if (call_end >= start && call_end <= end)
		shim.span(domain_id, check_id, call_end, end);
}

uint64_t cw_now(void) { return op_start(); }

void cw_span(uint32_t name, uint64_t start, uint64_t end)
{
	if (start && shim.span)
		shim.span(domain_id, name, start, end);
}

const char *cw_error_name(int32_t rc)
{
	const char *s = NULL;
	if (fn.cuGetErrorName(rc, &s) != CUDA_SUCCESS)
		return NULL;
	return s;
}

const char *cw_error_string(int32_t rc)
{
	const char *s = NULL;
	if (fn.cuGetErrorString(rc, &s) != CUDA_SUCCESS)
		return NULL;
	return s;
}

#define H(x) ((void *)(uintptr_t)(x))
#define BEGIN cw_res r = {0}; r.start = op_start()
#define CALL(expr)                                                                                  \
	do {                                                                                        \
		r.rc = (expr);                                                                      \
		op_called(&r);                                                                      \
	} while (0)

/* A wrapper whose whole body is one driver call and its result:
 *   CW_OP(cw_stream_query, (uint64_t s), cuStreamQuery(H(s)))
 * defines cw_res cw_stream_query(uint64_t s). */
#define CW_OP(name, params, call)                                                                   \
	cw_res name params                                                                          \
	{                                                                                           \
		BEGIN;                                                                              \
		CALL(fn.call);                                                                      \
		return r;                                                                           \
	}

/* Makes ctx current on this thread unless it already is. */
static CUresult ensure_ctx(uint64_t ctx)
{
	CUcontext cur = NULL;
	CUresult rc = fn.cuCtxGetCurrent(&cur);
	if (rc != CUDA_SUCCESS || (uint64_t)(uintptr_t)cur == ctx)
		return rc;
	return fn.cuCtxSetCurrent(H(ctx));
}

#define ENSURE(ctx)                                                                                 \
	do {                                                                                        \
		if ((r.rc = ensure_ctx(ctx)) != CUDA_SUCCESS) {                                     \
			op_called(&r);                                                              \
			return r;                                                                   \
		}                                                                                   \
	} while (0)

CW_OP(cw_init, (void), cuInit(0))

cw_res cw_driver_version(void)
{
	BEGIN;
	int v = 0;
	CALL(fn.cuDriverGetVersion(&v));
	r.v = (uint64_t)v;
	return r;
}

cw_res cw_device_get(int ordinal)
{
	BEGIN;
	CUdevice d = -1;
	CALL(fn.cuDeviceGet(&d, ordinal));
	r.v = (uint64_t)(int64_t)d;
	return r;
}

cw_res cw_device_count(void)
{
	BEGIN;
	int n = 0;
	CALL(fn.cuDeviceGetCount(&n));
	r.v = (uint64_t)n;
	return r;
}

cw_res cw_device_name(int dev, cw_name *out)
{
	BEGIN;
	out->s[0] = 0;
	CALL(fn.cuDeviceGetName(out->s, (int)sizeof out->s, dev));
	return r;
}

cw_res cw_device_attribute(int dev, int attr)
{
	BEGIN;
	int v = 0;
	CALL(fn.cuDeviceGetAttribute(&v, attr, dev));
	r.v = (uint64_t)(int64_t)v;
	return r;
}

cw_res cw_device_total_mem(int dev)
{
	BEGIN;
	size_t v = 0;
	CALL(fn.cuDeviceTotalMem(&v, dev));
	r.v = v;
	return r;
}

/* Device.SetCurrent: retains the primary context the first time (cached
 * is 0), then makes it current. r.v is the primary context. */
cw_res cw_device_set_current(int dev, uint64_t cached)
{
	BEGIN;
	if (!cached) {
		CUcontext c = NULL;
		CALL(fn.cuDevicePrimaryCtxRetain(&c, dev));
		if (r.rc != CUDA_SUCCESS)
			return r;
		cached = (uint64_t)(uintptr_t)c;
	}
	r.v = cached;
	CALL(fn.cuCtxSetCurrent(H(cached)));
	return r;
}

cw_res cw_primary_retain(int dev)
{
	BEGIN;
	CUcontext c = NULL;
	CALL(fn.cuDevicePrimaryCtxRetain(&c, dev));
	r.v = (uint64_t)(uintptr_t)c;
	return r;
}

CW_OP(cw_primary_release, (int dev), cuDevicePrimaryCtxRelease(dev))

/* A new context, made current on this thread (as cuCtxCreate does). */
cw_res cw_ctx_create(int dev, unsigned flags)
{
	BEGIN;
	CUcontext c = NULL;
	CALL(fn.cuCtxCreate(&c, flags, dev));
	r.v = (uint64_t)(uintptr_t)c;
	return r;
}

CW_OP(cw_ctx_destroy, (uint64_t ctx), cuCtxDestroy(H(ctx)))
CW_OP(cw_ctx_set_current, (uint64_t ctx), cuCtxSetCurrent(H(ctx)))

cw_res cw_ctx_get_current(void)
{
	BEGIN;
	CUcontext c = NULL;
	CALL(fn.cuCtxGetCurrent(&c));
	r.v = (uint64_t)(uintptr_t)c;
	return r;
}

cw_res cw_ctx_sync(uint64_t ctx)
{
	BEGIN;
	ENSURE(ctx);
	CALL(fn.cuCtxSynchronize());
	return r;
}

cw_res cw_stream_create(uint64_t ctx, unsigned flags, int priority, int with_priority)
{
	BEGIN;
	ENSURE(ctx);
	CUstream s = NULL;
	if (with_priority)
		CALL(fn.cuStreamCreateWithPriority(&s, flags, priority));
	else
		CALL(fn.cuStreamCreate(&s, flags));
	r.v = (uint64_t)(uintptr_t)s;
	return r;
}

CW_OP(cw_stream_destroy, (uint64_t s), cuStreamDestroy(H(s)))
CW_OP(cw_stream_sync, (uint64_t s), cuStreamSynchronize(H(s)))
CW_OP(cw_stream_query, (uint64_t s), cuStreamQuery(H(s)))

cw_res cw_event_create(uint64_t ctx, unsigned flags)
{
	BEGIN;
	ENSURE(ctx);
	CUevent e = NULL;
	CALL(fn.cuEventCreate(&e, flags));
	r.v = (uint64_t)(uintptr_t)e;
	return r;
}

CW_OP(cw_event_destroy, (uint64_t e), cuEventDestroy(H(e)))
CW_OP(cw_event_record, (uint64_t e, uint64_t s), cuEventRecord(H(e), H(s)))
CW_OP(cw_event_sync, (uint64_t e), cuEventSynchronize(H(e)))
CW_OP(cw_event_query, (uint64_t e), cuEventQuery(H(e)))

cw_res cw_event_elapsed(uint64_t a, uint64_t b)
{
	BEGIN;
	float ms = 0;
	CALL(fn.cuEventElapsedTime(&ms, H(a), H(b)));
	r.f = ms;
	return r;
}

/* A stream-ordered allocation: from pool, or the device's current pool when
 * pool is 0. The stream's context is made current first when it is not. */
cw_res cw_alloc_async(uint64_t ctx, uint64_t size, uint64_t pool, uint64_t s)
{
	BEGIN;
	ENSURE(ctx);
	CUdeviceptr p = 0;
	if (pool)
		CALL(fn.cuMemAllocFromPoolAsync(&p, (size_t)size, H(pool), H(s)));
	else
		CALL(fn.cuMemAllocAsync(&p, (size_t)size, H(s)));
	r.v = p;
	return r;
}

cw_res cw_free_async(uint64_t ctx, uint64_t ptr, uint64_t s)
{
	BEGIN;
	ENSURE(ctx);
	CALL(fn.cuMemFreeAsync(ptr, H(s)));
	return r;
}

cw_res cw_mem_info(uint64_t ctx)
{
	BEGIN;
	ENSURE(ctx);
	size_t f = 0, t = 0;
	CALL(fn.cuMemGetInfo(&f, &t));
	r.v = f;
	r.v2 = t;
	return r;
}

cw_res cw_pool_default(int dev)
{
	BEGIN;
	CUmemoryPool p = NULL;
	CALL(fn.cuDeviceGetDefaultMemPool(&p, dev));
	r.v = (uint64_t)(uintptr_t)p;
	return r;
}

cw_res cw_pool_current(int dev)
{
	BEGIN;
	CUmemoryPool p = NULL;
	CALL(fn.cuDeviceGetMemPool(&p, dev));
	r.v = (uint64_t)(uintptr_t)p;
	return r;
}

cw_res cw_pool_create(int dev)
{
	BEGIN;
	CUmemPoolProps props;
	memset(&props, 0, sizeof props);
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = dev;
	CUmemoryPool p = NULL;
	CALL(fn.cuMemPoolCreate(&p, &props));
	r.v = (uint64_t)(uintptr_t)p;
	return r;
}

CW_OP(cw_pool_destroy, (uint64_t p), cuMemPoolDestroy(H(p)))
CW_OP(cw_pool_trim, (uint64_t p, uint64_t keep), cuMemPoolTrimTo(H(p), (size_t)keep))

/* Pool attributes: 1..3 are ints, the others 64-bit. */
cw_res cw_pool_set(uint64_t p, int attr, uint64_t v)
{
	BEGIN;
	int i = (int)v;
	cuuint64_t u = v;
	CALL(fn.cuMemPoolSetAttribute(H(p), attr, attr <= 3 ? (void *)&i : (void *)&u));
	return r;
}

cw_res cw_pool_get(uint64_t p, int attr)
{
	BEGIN;
	int i = 0;
	cuuint64_t u = 0;
	CALL(fn.cuMemPoolGetAttribute(H(p), attr, attr <= 3 ? (void *)&i : (void *)&u));
	r.v = attr <= 3 ? (uint64_t)(int64_t)i : u;
	return r;
}
