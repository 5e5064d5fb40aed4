/*
 * NVTX v3 injection: with NVTX_INJECTION64_PATH pointing at the shim, the
 * NVTX client in the program (torch.cuda.nvtx, cupy.cuda.nvtx, the nvtx
 * package, C/C++ nvtx3 headers) calls InitializeInjectionNvtx2 on its first
 * NVTX call; we fill the CORE, CORE2, CUDA and CUDART slots we record.
 *
 * The declarations below are the minimal subset of the public NVTX v3
 * injection ABI (nvtxDetail/nvtxTypes.h): module ids, slot ids and the
 * layout of nvtxEventAttributes_t version 3.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <wchar.h>

#include "shim_internal.h"

typedef uint64_t nvtxRangeId_t;
typedef struct nvtxDomainRegistration_st *nvtxDomainHandle_t;
typedef struct nvtxStringRegistration_st *nvtxStringHandle_t;
typedef void (*NvtxFunctionPointer)(void);
typedef NvtxFunctionPointer **NvtxFunctionTable;

enum {
	NVTX_CB_MODULE_CORE = 1,
	NVTX_CB_MODULE_CUDA = 2,
	NVTX_CB_MODULE_CUDART = 4,
	NVTX_CB_MODULE_CORE2 = 5,
};

enum {
	NVTX_CBID_CORE_MarkEx = 1,
	NVTX_CBID_CORE_MarkA = 2,
	NVTX_CBID_CORE_MarkW = 3,
	NVTX_CBID_CORE_RangeStartEx = 4,
	NVTX_CBID_CORE_RangeStartA = 5,
	NVTX_CBID_CORE_RangeStartW = 6,
	NVTX_CBID_CORE_RangeEnd = 7,
	NVTX_CBID_CORE_RangePushEx = 8,
	NVTX_CBID_CORE_RangePushA = 9,
	NVTX_CBID_CORE_RangePushW = 10,
	NVTX_CBID_CORE_RangePop = 11,
};

enum {
	NVTX_CBID_CORE2_DomainMarkEx = 1,
	NVTX_CBID_CORE2_DomainRangeStartEx = 2,
	NVTX_CBID_CORE2_DomainRangeEnd = 3,
	NVTX_CBID_CORE2_DomainRangePushEx = 4,
	NVTX_CBID_CORE2_DomainRangePop = 5,
	NVTX_CBID_CORE2_DomainRegisterStringA = 10,
	NVTX_CBID_CORE2_DomainRegisterStringW = 11,
	NVTX_CBID_CORE2_DomainCreateA = 12,
	NVTX_CBID_CORE2_DomainCreateW = 13,
	NVTX_CBID_CORE2_DomainDestroy = 14,
	NVTX_CBID_CORE2_Initialize = 15,
};

enum {
	NVTX_CBID_CUDA_NameCuDeviceA = 1,
	NVTX_CBID_CUDA_NameCuDeviceW = 2,
	NVTX_CBID_CUDA_NameCuContextA = 3,
	NVTX_CBID_CUDA_NameCuContextW = 4,
	NVTX_CBID_CUDA_NameCuStreamA = 5,
	NVTX_CBID_CUDA_NameCuStreamW = 6,
	NVTX_CBID_CUDA_NameCuEventA = 7,
	NVTX_CBID_CUDA_NameCuEventW = 8,
};

enum {
	NVTX_CBID_CUDART_NameCudaDeviceA = 1,
	NVTX_CBID_CUDART_NameCudaDeviceW = 2,
	NVTX_CBID_CUDART_NameCudaStreamA = 3,
	NVTX_CBID_CUDART_NameCudaStreamW = 4,
	NVTX_CBID_CUDART_NameCudaEventA = 5,
	NVTX_CBID_CUDART_NameCudaEventW = 6,
};

#define NVTX_ETID_CALLBACKS 1
#define NVTX_MESSAGE_TYPE_ASCII 1
#define NVTX_MESSAGE_TYPE_UNICODE 2
#define NVTX_MESSAGE_TYPE_REGISTERED 3

typedef struct {
	uint16_t version;
	uint16_t size;
	uint32_t category;
	int32_t colorType;
	uint32_t color;
	int32_t payloadType;
	int32_t reserved0;
	union {
		uint64_t ullValue;
		int64_t llValue;
		double dValue;
	} payload;
	int32_t messageType;
	union {
		const char *ascii;
		const wchar_t *unicode;
		nvtxStringHandle_t registered;
	} message;
} nvtxEventAttributes_t;

typedef struct {
	size_t struct_size;
	int (*GetModuleFunctionTable)(int module, NvtxFunctionTable *out_table, unsigned int *out_size);
} NvtxExportTableCallbacks;

typedef const void *(*NvtxGetExportTableFunc_t)(uint32_t exportTableId);

/* trace.Object values. */
enum { OBJ_DEVICE = 1, OBJ_CONTEXT = 2, OBJ_STREAM = 3, OBJ_EVENT = 4 };

static __thread int push_depth;
static uint64_t next_range_id;

static uint32_t intern_a(const char *s)
{
	if (!s)
		return 0;
	return cuprof_intern_cut(s, strlen(s));
}

/* intern_w converts a wide string to UTF-8 (best effort; cut, and counted,
 * past 1 KiB). */
static uint32_t intern_w(const wchar_t *w)
{
	if (!w)
		return 0;
	char buf[1024];
	size_t n = 0;
	for (; *w && n + 4 < sizeof buf; w++) {
		uint32_t c = (uint32_t)*w;
		if (c < 0x80) {
			buf[n++] = (char)c;
		} else if (c < 0x800) {
			buf[n++] = (char)(0xc0 | (c >> 6));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			buf[n++] = (char)(0xe0 | (c >> 12));
			buf[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x110000) {
			buf[n++] = (char)(0xf0 | (c >> 18));
			buf[n++] = (char)(0x80 | ((c >> 12) & 0x3f));
			buf[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else {
			buf[n++] = '?';
		}
	}
	if (*w)
		cuprof_count_cut();
	return cuprof_intern_n(buf, (uint32_t)n);
}

static uint32_t attr_name(const nvtxEventAttributes_t *a)
{
	if (!a || a->size < 48)
		return 0;
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		return intern_a(a->message.ascii);
	case NVTX_MESSAGE_TYPE_UNICODE:
		return intern_w(a->message.unicode);
	case NVTX_MESSAGE_TYPE_REGISTERED:
		return (uint32_t)(uintptr_t)a->message.registered;
	}
	return 0;
}

#define DOMAIN_NONE ((uintptr_t)0xffffffffu)

static uint32_t domain_id(nvtxDomainHandle_t d)
{
	uintptr_t v = (uintptr_t)d;
	return v == DOMAIN_NONE ? 0 : (uint32_t)v;
}

static nvtxDomainHandle_t domain_handle(uint32_t id)
{
	return (nvtxDomainHandle_t)(id ? (uintptr_t)id : DOMAIN_NONE);
}

/* Ranges and marks are recorded inside capture ranges only (always without
 * them); the NVTX capture range is followed through cuprof_capture_nvtx: an
 * opening is recorded after it (it opens the range), a closing before it.
 * Object names are recorded everywhere: the analysis keeps them. */
static int nvtx_gated(void)
{
	return cuprof_gate != CUPROF_GATE_OPEN || cuprof_capture_nvtx_mode;
}

static int push(uint32_t name, uint32_t domain)
{
	if (CUPROF_LIKELY(!nvtx_gated()) || cuprof_capture_nvtx(CUPROF_NVTX_PUSH, name, domain, 0))
		cuprof_emit(CUPROF_REC_PUSH, name, domain, 0, 0);
	return push_depth++;
}

static int pop(uint32_t domain)
{
	if (push_depth == 0)
		return -2;
	if (CUPROF_LIKELY(!nvtx_gated())) {
		cuprof_emit(CUPROF_REC_POP, 0, domain, 0, 0);
	} else {
		/* recorded when inside a range, before it may close it */
		if (cuprof_gate_open())
			cuprof_emit(CUPROF_REC_POP, 0, domain, 0, 0);
		cuprof_capture_nvtx(CUPROF_NVTX_POP, 0, domain, 0);
	}
	return --push_depth;
}

static nvtxRangeId_t start(uint32_t name, uint32_t domain)
{
	nvtxRangeId_t id = __atomic_add_fetch(&next_range_id, 1, __ATOMIC_RELAXED);
	if (CUPROF_LIKELY(!nvtx_gated()) || cuprof_capture_nvtx(CUPROF_NVTX_START, name, domain, id))
		cuprof_emit(CUPROF_REC_START, name, domain, id, 0);
	return id;
}

static void end(nvtxRangeId_t id, uint32_t domain)
{
	if (CUPROF_LIKELY(!nvtx_gated())) {
		cuprof_emit(CUPROF_REC_END, 0, domain, id, 0);
	} else {
		if (cuprof_gate_open())
			cuprof_emit(CUPROF_REC_END, 0, domain, id, 0);
		cuprof_capture_nvtx(CUPROF_NVTX_END, 0, domain, id);
	}
}

static void mark(uint32_t name, uint32_t domain)
{
	if (cuprof_gate_open())
		cuprof_emit(CUPROF_REC_MARK, name, domain, 0, 0);
}

/* CORE */
static void MarkEx(const nvtxEventAttributes_t *a) { mark(attr_name(a), 0); }
static void MarkA(const char *m) { mark(intern_a(m), 0); }
static void MarkW(const wchar_t *m) { mark(intern_w(m), 0); }
static nvtxRangeId_t RangeStartEx(const nvtxEventAttributes_t *a) { return start(attr_name(a), 0); }
static nvtxRangeId_t RangeStartA(const char *m) { return start(intern_a(m), 0); }
static nvtxRangeId_t RangeStartW(const wchar_t *m) { return start(intern_w(m), 0); }
static void RangeEnd(nvtxRangeId_t id) { end(id, 0); }
static int RangePushEx(const nvtxEventAttributes_t *a) { return push(attr_name(a), 0); }
static int RangePushA(const char *m) { return push(intern_a(m), 0); }
static int RangePushW(const wchar_t *m) { return push(intern_w(m), 0); }
static int RangePop(void) { return pop(0); }

/* CORE2 */
static void DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	mark(attr_name(a), domain_id(d));
}
static nvtxRangeId_t DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return start(attr_name(a), domain_id(d));
}
static void DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id) { end(id, domain_id(d)); }
static int DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return push(attr_name(a), domain_id(d));
}
static int DomainRangePop(nvtxDomainHandle_t d) { return pop(domain_id(d)); }
static nvtxStringHandle_t DomainRegisterStringA(nvtxDomainHandle_t d, const char *s)
{
	(void)d;
	return (nvtxStringHandle_t)(uintptr_t)intern_a(s);
}
static nvtxStringHandle_t DomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t *s)
{
	(void)d;
	return (nvtxStringHandle_t)(uintptr_t)intern_w(s);
}
static nvtxDomainHandle_t DomainCreateA(const char *name) { return domain_handle(intern_a(name)); }
static nvtxDomainHandle_t DomainCreateW(const wchar_t *name) { return domain_handle(intern_w(name)); }
static void DomainDestroy(nvtxDomainHandle_t d) { (void)d; }
static void Initialize(const void *reserved) { (void)reserved; }

/* CUDA and CUDART naming */
static void name_obj(uint64_t handle, uint8_t obj, uint32_t name)
{
	cuprof_emit(CUPROF_REC_NAME, name, 0, handle, obj);
}
static void NameCuDeviceA(int dev, const char *n) { name_obj((uint64_t)(int64_t)dev, OBJ_DEVICE, intern_a(n)); }
static void NameCuDeviceW(int dev, const wchar_t *n) { name_obj((uint64_t)(int64_t)dev, OBJ_DEVICE, intern_w(n)); }
static void NameCuContextA(void *c, const char *n) { name_obj((uintptr_t)c, OBJ_CONTEXT, intern_a(n)); }
static void NameCuContextW(void *c, const wchar_t *n) { name_obj((uintptr_t)c, OBJ_CONTEXT, intern_w(n)); }
static void NameCuStreamA(void *s, const char *n) { name_obj((uintptr_t)s, OBJ_STREAM, intern_a(n)); }
static void NameCuStreamW(void *s, const wchar_t *n) { name_obj((uintptr_t)s, OBJ_STREAM, intern_w(n)); }
static void NameCuEventA(void *e, const char *n) { name_obj((uintptr_t)e, OBJ_EVENT, intern_a(n)); }
static void NameCuEventW(void *e, const wchar_t *n) { name_obj((uintptr_t)e, OBJ_EVENT, intern_w(n)); }

struct slot {
	unsigned id;
	NvtxFunctionPointer fn;
};

#define FN(f) ((NvtxFunctionPointer)(void (*)(void))(f))

static const struct slot core_slots[] = {
	{NVTX_CBID_CORE_MarkEx, FN(MarkEx)},
	{NVTX_CBID_CORE_MarkA, FN(MarkA)},
	{NVTX_CBID_CORE_MarkW, FN(MarkW)},
	{NVTX_CBID_CORE_RangeStartEx, FN(RangeStartEx)},
	{NVTX_CBID_CORE_RangeStartA, FN(RangeStartA)},
	{NVTX_CBID_CORE_RangeStartW, FN(RangeStartW)},
	{NVTX_CBID_CORE_RangeEnd, FN(RangeEnd)},
	{NVTX_CBID_CORE_RangePushEx, FN(RangePushEx)},
	{NVTX_CBID_CORE_RangePushA, FN(RangePushA)},
	{NVTX_CBID_CORE_RangePushW, FN(RangePushW)},
	{NVTX_CBID_CORE_RangePop, FN(RangePop)},
	{0, 0},
};

static const struct slot core2_slots[] = {
	{NVTX_CBID_CORE2_DomainMarkEx, FN(DomainMarkEx)},
	{NVTX_CBID_CORE2_DomainRangeStartEx, FN(DomainRangeStartEx)},
	{NVTX_CBID_CORE2_DomainRangeEnd, FN(DomainRangeEnd)},
	{NVTX_CBID_CORE2_DomainRangePushEx, FN(DomainRangePushEx)},
	{NVTX_CBID_CORE2_DomainRangePop, FN(DomainRangePop)},
	{NVTX_CBID_CORE2_DomainRegisterStringA, FN(DomainRegisterStringA)},
	{NVTX_CBID_CORE2_DomainRegisterStringW, FN(DomainRegisterStringW)},
	{NVTX_CBID_CORE2_DomainCreateA, FN(DomainCreateA)},
	{NVTX_CBID_CORE2_DomainCreateW, FN(DomainCreateW)},
	{NVTX_CBID_CORE2_DomainDestroy, FN(DomainDestroy)},
	{NVTX_CBID_CORE2_Initialize, FN(Initialize)},
	{0, 0},
};

static const struct slot cuda_slots[] = {
	{NVTX_CBID_CUDA_NameCuDeviceA, FN(NameCuDeviceA)},
	{NVTX_CBID_CUDA_NameCuDeviceW, FN(NameCuDeviceW)},
	{NVTX_CBID_CUDA_NameCuContextA, FN(NameCuContextA)},
	{NVTX_CBID_CUDA_NameCuContextW, FN(NameCuContextW)},
	{NVTX_CBID_CUDA_NameCuStreamA, FN(NameCuStreamA)},
	{NVTX_CBID_CUDA_NameCuStreamW, FN(NameCuStreamW)},
	{NVTX_CBID_CUDA_NameCuEventA, FN(NameCuEventA)},
	{NVTX_CBID_CUDA_NameCuEventW, FN(NameCuEventW)},
	{0, 0},
};

/* The runtime's handles are the driver's: cudaStream_t is a CUstream. */
static const struct slot cudart_slots[] = {
	{NVTX_CBID_CUDART_NameCudaDeviceA, FN(NameCuDeviceA)},
	{NVTX_CBID_CUDART_NameCudaDeviceW, FN(NameCuDeviceW)},
	{NVTX_CBID_CUDART_NameCudaStreamA, FN(NameCuStreamA)},
	{NVTX_CBID_CUDART_NameCudaStreamW, FN(NameCuStreamW)},
	{NVTX_CBID_CUDART_NameCudaEventA, FN(NameCuEventA)},
	{NVTX_CBID_CUDART_NameCudaEventW, FN(NameCuEventW)},
	{0, 0},
};

static void fill(const NvtxExportTableCallbacks *cb, int module, const struct slot *slots)
{
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;
	if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
		return;
	for (const struct slot *s = slots; s->id; s++)
		if (s->id < size && table[s->id])
			*table[s->id] = s->fn;
}

CUPROF_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable)
{
	if (!getExportTable)
		return 0;
	const NvtxExportTableCallbacks *cb = getExportTable(NVTX_ETID_CALLBACKS);
	if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
		return 0;
	fill(cb, NVTX_CB_MODULE_CORE, core_slots);
	fill(cb, NVTX_CB_MODULE_CORE2, core2_slots);
	fill(cb, NVTX_CB_MODULE_CUDA, cuda_slots);
	fill(cb, NVTX_CB_MODULE_CUDART, cudart_slots);
	return 1;
}
