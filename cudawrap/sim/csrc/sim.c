/*
 * cuprof's simulated CUDA driver: a libcuda.so.1 with no GPU behind it.
 *
 * It exports every symbol of CUPROF_SYMBOLS (cuprof_apis.h), each variant as a
 * function of its own (cuStreamSynchronize and cuStreamSynchronize_ptsz have
 * distinct addresses), plus cuGetProcAddress and cuGetProcAddress_v2, and keeps
 * enough state to behave like the real driver for the calls cuprof traces:
 * devices, primary and created contexts with a per-thread context stack,
 * streams, events, allocations, memory pools (with the release threshold and
 * its cost at synchronize), modules and functions. Launches, copies and sets
 * validate their handles and succeed without doing anything.
 *
 * Every call busy-waits (never sleeps) for a per-API cost so that traces of
 * simulated runs look like traces of a real GPU machine; the defaults are the
 * H200 figures of shared/reference/h200-measurements.md.
 *
 * Environment:
 *   CUPROF_SIM_DEVICES         number of devices (default 2, 0..64)
 *   CUPROF_SIM_MEM_BYTES       memory per device in bytes (default 80 GiB)
 *   CUPROF_SIM_DRIVER_VERSION  what cuDriverGetVersion says (default 13000)
 *   CUPROF_SIM_COSTS           per-API costs in ns, "cuCtxSynchronize=900,cuStreamCreate=3000";
 *                              names are API base names plus "cuGetProcAddress",
 *                              "poolRelease" (one pool release at a synchronize) and
 *                              "poolGrow" (an allocation that maps new memory into a pool) and
 *                              "syncPending" (what a synchronize adds when work was queued)
 *   CUPROF_SIM_COST_SCALE      multiplier for all costs (default 1; 0 disables them)
 *
 * Locking: the calls of the hot path (cuCtxGetCurrent, cuCtxSetCurrent,
 * cuCtxPushCurrent/PopCurrent, cuGetErrorName/String, cuDriverGetVersion)
 * use thread-local state and atomics only; every other call takes one global
 * mutex and releases it before it spends its cost.
 *
 * Checked against the real 13.0 driver on an H200 (testdata/simtest.c with
 * SIMTEST_REAL=1 passes there). Deliberate differences: NULL output pointers
 * and garbage, destroyed or double-freed handles get error codes here where
 * the real driver has undefined behaviour (it crashes on some); the pre-3.2
 * and pre-4.0 ABI entries (cuMemAlloc, cuMemFree, cuMemGetInfo,
 * cuCtxPushCurrent, cuCtxPopCurrent without _v2) work here while the real
 * driver answers them with CUDA_ERROR_INVALID_CONTEXT; no kernel runs and
 * no byte is copied.
 *
 * Build: gcc -shared -fPIC -O2 -fvisibility=hidden -fno-ipa-icf -pthread
 *        -Wl,-soname,libcuda.so.1 -Wl,--no-undefined -o libcuda.so.1 sim.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define SIM_HAVE_TSC 1
#endif

#include "cuprof_cuda.h"
#include "cuprof_apis.h"

#define SIM_EXPORT __attribute__((visibility("default")))

/* Prototypes of every exported symbol, from the shared table: a definition
 * below that disagrees with the table is a compile error. */
#define SIM_PROTO(sym, api, params, args, h, s, a, sz, fl, dv) SIM_EXPORT CUresult sym params;
CUPROF_SYMBOLS(SIM_PROTO)
#undef SIM_PROTO
SIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
SIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
					CUdriverProcAddressQueryResult *symbolStatus);
SIM_EXPORT unsigned long long cuprofsim_pool_releases(void);

/* ------------------------------------------------------------------------ */
/* Configuration and costs                                                   */
/* ------------------------------------------------------------------------ */

/* Cost slots: one per API id, then these two. */
enum {
	COST_PROC_ADDRESS = CUPROF_API_COUNT, /* cuGetProcAddress, both versions */
	COST_POOL_RELEASE,                    /* one pool release at a synchronize or trim */
	COST_POOL_GROW,                       /* an allocation that must reserve new pool memory */
	COST_SYNC_PENDING,                    /* a synchronize that waits for queued work */
	COST_SLOTS
};

/* Default costs in ns: H200 machine B of h200-measurements.md where measured,
 * plausible figures for the rest. */
static const struct {
	int slot;
	unsigned ns;
} default_costs[] = {
	{CUPROF_API_cuInit, 200000},
	{CUPROF_API_cuDriverGetVersion, 10},
	{CUPROF_API_cuDeviceGet, 10},
	{CUPROF_API_cuDeviceGetCount, 10},
	{CUPROF_API_cuDeviceGetName, 150},
	{CUPROF_API_cuDeviceGetAttribute, 15},
	{CUPROF_API_cuDeviceTotalMem, 30},
	{CUPROF_API_cuDevicePrimaryCtxRetain, 80},
	{CUPROF_API_cuDevicePrimaryCtxRelease, 80},
	{CUPROF_API_cuDevicePrimaryCtxReset, 50000},
	{CUPROF_API_cuDevicePrimaryCtxSetFlags, 40},
	{CUPROF_API_cuDevicePrimaryCtxGetState, 20},
	{CUPROF_API_cuCtxCreate, 100000}, /* also charged when a primary context activates */
	{CUPROF_API_cuCtxDestroy, 30000},
	{CUPROF_API_cuCtxPushCurrent, 25},
	{CUPROF_API_cuCtxPopCurrent, 25},
	{CUPROF_API_cuCtxSetCurrent, 21},   /* measured 20.7 */
	{CUPROF_API_cuCtxGetCurrent, 10},   /* measured 9.9 */
	{CUPROF_API_cuCtxGetDevice, 12},
	{CUPROF_API_cuCtxSynchronize, 368}, /* measured, idle */
	{CUPROF_API_cuStreamCreate, 2800},  /* create + destroy measured 4170 */
	{CUPROF_API_cuStreamCreateWithPriority, 2800},
	{CUPROF_API_cuStreamDestroy, 1370},
	{CUPROF_API_cuStreamSynchronize, 300},
	{CUPROF_API_cuStreamQuery, 100},
	{CUPROF_API_cuStreamWaitEvent, 150},
	{CUPROF_API_cuEventCreate, 100}, /* create + destroy measured 168 */
	{CUPROF_API_cuEventDestroy, 68},
	{CUPROF_API_cuEventRecord, 200},
	{CUPROF_API_cuEventRecordWithFlags, 200},
	{CUPROF_API_cuEventSynchronize, 250},
	{CUPROF_API_cuEventQuery, 80},
	{CUPROF_API_cuEventElapsedTime, 60},
	{CUPROF_API_cuMemAlloc, 3000},
	{CUPROF_API_cuMemFree, 2500},
	{CUPROF_API_cuMemAllocHost, 5000},
	{CUPROF_API_cuMemHostAlloc, 5000},
	{CUPROF_API_cuMemFreeHost, 4000},
	{CUPROF_API_cuMemAllocManaged, 8000},
	{CUPROF_API_cuMemAllocAsync, 360}, /* alloc async + free async measured 660 */
	{CUPROF_API_cuMemAllocFromPoolAsync, 360},
	{CUPROF_API_cuMemFreeAsync, 300},
	{CUPROF_API_cuMemGetInfo, 400},
	{CUPROF_API_cuMemPoolCreate, 2000},
	{CUPROF_API_cuMemPoolDestroy, 2000},
	{CUPROF_API_cuMemPoolTrimTo, 150},
	{CUPROF_API_cuMemPoolSetAttribute, 40},
	{CUPROF_API_cuMemPoolGetAttribute, 40},
	{CUPROF_API_cuDeviceGetDefaultMemPool, 15},
	{CUPROF_API_cuDeviceGetMemPool, 15},
	{CUPROF_API_cuDeviceSetMemPool, 40},
	{CUPROF_API_cuGetErrorName, 13}, /* measured 13.0 */
	{CUPROF_API_cuGetErrorString, 13},
	{CUPROF_API_cuLaunchKernel, 2500},
	{CUPROF_API_cuLaunchKernelEx, 2500},
	{CUPROF_API_cuMemcpy, 8000},
	{CUPROF_API_cuMemcpyAsync, 2000},
	{CUPROF_API_cuMemcpyHtoD, 8000},
	{CUPROF_API_cuMemcpyDtoH, 8000},
	{CUPROF_API_cuMemcpyDtoD, 8000},
	{CUPROF_API_cuMemcpyHtoDAsync, 2000},
	{CUPROF_API_cuMemcpyDtoHAsync, 2000},
	{CUPROF_API_cuMemcpyDtoDAsync, 2000},
	{CUPROF_API_cuMemsetD8, 5000},
	{CUPROF_API_cuMemsetD32, 5000},
	{CUPROF_API_cuMemsetD8Async, 1500},
	{CUPROF_API_cuMemsetD32Async, 1500},
	{CUPROF_API_cuModuleLoadData, 100000},
	{CUPROF_API_cuModuleUnload, 20000},
	{CUPROF_API_cuModuleGetFunction, 100},
	{COST_PROC_ADDRESS, 150},
	/* alloc + free + cuCtxSynchronize at threshold 0 measured 101000 against
	 * 1940 at UINT64_MAX on machine B. Traces on the lent H200 (2026-11-29)
	 * split it: the synchronize that releases ~61 us, the next allocation
	 * that maps memory again ~52 us. Here: 55 + 45 us. */
	{COST_POOL_RELEASE, 55000},
	{COST_POOL_GROW, 45000},
	/* alloc + free + cuCtxSynchronize at UINT64_MAX: 1940 against 659 for
	 * alloc + free and 368 for an idle synchronize. */
	{COST_SYNC_PENDING, 900},
};

/* Cost slot names for CUPROF_SIM_COSTS: one row per exported symbol (the
 * variants of an API repeat its name), then the two extra slots. */
static const struct {
	int slot;
	const char *name;
} cost_names[] = {
#define SIM_NAME(sym, api, ...) {CUPROF_API_##api, #api},
	CUPROF_SYMBOLS(SIM_NAME)
#undef SIM_NAME
	{COST_PROC_ADDRESS, "cuGetProcAddress"},
	{COST_POOL_RELEASE, "poolRelease"},
	{COST_POOL_GROW, "poolGrow"},
	{COST_SYNC_PENDING, "syncPending"},
};

static unsigned long long cost_ticks[COST_SLOTS]; /* cost minus clock overhead, in ticks */
static unsigned long cost_loops[COST_SLOTS];      /* the same as delay-loop iterations (hot calls) */
static double loops_per_ns;
static int costs_on;
static double ticks_per_ns = 1.0;
static int cfg_devices = 2;
static unsigned long long cfg_mem_bytes = 80ULL << 30;
static int cfg_driver_version = 13000;

static inline unsigned long long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static inline unsigned long long ticks(void)
{
#ifdef SIM_HAVE_TSC
	return __rdtsc();
#else
	return mono_ns();
#endif
}

static void calibrate(void)
{
#ifdef SIM_HAVE_TSC
	unsigned long long n0 = mono_ns(), t0 = ticks(), n1, t1;
	do {
		n1 = mono_ns();
	} while (n1 - n0 < 2000000); /* 2 ms */
	t1 = ticks();
	ticks_per_ns = (double)(t1 - t0) / (double)(n1 - n0);
	if (ticks_per_ns <= 0)
		ticks_per_ns = 1.0;
#endif
}

static unsigned long long clock_overhead_ticks(void)
{
	unsigned long long best = ~0ULL;
	for (int i = 0; i < 64; i++) {
		unsigned long long a = ticks(), b = ticks();
		if (b - a < best)
			best = b - a;
	}
	return best;
}

/* An empty loop of n iterations: the delay of the hot calls, whose costs
 * (10-40 ns) are too short to time with two clock reads. */
static void delay_loops(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		__asm__ volatile("" ::: "memory");
}

static void calibrate_loops(void)
{
	unsigned long long best = ~0ULL;
	for (int r = 0; r < 5; r++) {
		unsigned long long t0 = mono_ns();
		delay_loops(200000);
		unsigned long long t = mono_ns() - t0;
		if (t && t < best)
			best = t;
	}
	loops_per_ns = best ? 200000.0 / (double)best : 1.0;
}

/* Prints a one-line complaint about a CUPROF_SIM_COSTS entry, with its
 * unprintable bytes shown as '?'. */
static void complain(const char *fmt, const char *tok)
{
	char clean[128];
	size_t i = 0;
	for (; tok[i] && i < sizeof clean - 1; i++)
		clean[i] = (tok[i] >= 0x20 && tok[i] < 0x7f) ? tok[i] : '?';
	clean[i] = 0;
	fprintf(stderr, fmt, clean);
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Trims spaces at both ends of s in place. */
static char *trim(char *s)
{
	while (is_space(*s))
		s++;
	size_t n = strlen(s);
	while (n && is_space(s[n - 1]))
		s[--n] = 0;
	return s;
}

/* Parses "name=ns,name=ns" into ns[]; bad entries are reported and skipped. */
static void parse_costs(double *ns, const char *spec)
{
	char *copy = strdup(spec), *save = NULL;
	if (!copy)
		return;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		tok = trim(tok);
		if (!*tok)
			continue;
		char *eq = strchr(tok, '=');
		if (!eq) {
			complain("cuprof sim: ignoring CUPROF_SIM_COSTS entry %s (want name=ns)\n", tok);
			continue;
		}
		*eq = 0;
		char *name = trim(tok), *val = trim(eq + 1), *end;
		double v = strtod(val, &end);
		if (end == val || *end || v != v) {
			complain("cuprof sim: ignoring CUPROF_SIM_COSTS value for %s (want a number of ns)\n", name);
			continue;
		}
		int found = 0;
		for (size_t i = 0; i < sizeof cost_names / sizeof cost_names[0]; i++) {
			if (strcmp(cost_names[i].name, name) == 0) {
				ns[cost_names[i].slot] = v < 0 ? 0 : v > 1e12 ? 1e12 : v;
				found = 1;
			}
		}
		if (!found)
			complain("cuprof sim: unknown API %s in CUPROF_SIM_COSTS\n", name);
	}
	free(copy);
}

__attribute__((constructor)) static void sim_configure(void)
{
	const char *s;
	double ns[COST_SLOTS] = {0}, scale = 1.0;

	if ((s = getenv("CUPROF_SIM_DEVICES")) && *s) {
		int n = atoi(s);
		cfg_devices = n < 0 ? 0 : n > 64 ? 64 : n;
	}
	if ((s = getenv("CUPROF_SIM_MEM_BYTES")) && *s)
		cfg_mem_bytes = strtoull(s, NULL, 0);
	if ((s = getenv("CUPROF_SIM_DRIVER_VERSION")) && *s)
		cfg_driver_version = atoi(s);
	if ((s = getenv("CUPROF_SIM_COST_SCALE")) && *s)
		scale = strtod(s, NULL);

	for (size_t i = 0; i < sizeof default_costs / sizeof default_costs[0]; i++)
		ns[default_costs[i].slot] = default_costs[i].ns;
	if ((s = getenv("CUPROF_SIM_COSTS")) && *s)
		parse_costs(ns, s);
	if (!(scale > 0))
		return;
	calibrate();
	calibrate_loops();
	unsigned long long over = clock_overhead_ticks();
	for (int i = 0; i < COST_SLOTS; i++) {
		double t = ns[i] * scale * ticks_per_ns;
		cost_ticks[i] = t > (double)over ? (unsigned long long)t - over : 0;
		cost_loops[i] = (unsigned long)(ns[i] * scale * loops_per_ns);
		if (cost_ticks[i] || cost_loops[i])
			costs_on = 1;
	}
}

/* No pause instruction in the loop: on recent x86 it takes ~140 cycles,
 * longer than the cheapest costs. */
static inline void spin_until(unsigned long long until)
{
	while ((long long)(ticks() - until) < 0)
		;
}

/* Every exported call starts with SIM_BEGIN and returns through SIM_END
 * (or SIM_END_X, which adds the extra cost an operation accumulated in
 * tls_extra, such as pool releases). */
#define SIM_BEGIN unsigned long long t0_ = costs_on ? ticks() : 0
#define SIM_END(api, rc) return sim_finish(CUPROF_API_##api, t0_, (rc))
#define SIM_END_X(api, rc) return sim_finish_x(CUPROF_API_##api, t0_, (rc))

/* Hot calls (HOT_END) spend their cost as a calibrated delay loop and read
 * no clock. */
#define HOT_BEGIN
#define HOT_END(api, rc) return sim_hot(CUPROF_API_##api, (rc))

static inline CUresult sim_hot(int slot, CUresult rc)
{
	if (cost_loops[slot])
		delay_loops(cost_loops[slot]);
	return rc;
}

/* One exported variant whose whole body is BEGIN then END(api, call):
 *   SIM_FN(cuStreamQuery_ptsz, cuStreamQuery, (CUstream hStream), do_stream_check(hStream))
 * SIM_FN_X ends with SIM_END_X, HOT_FN with HOT_END. Each use is its own
 * function at its own address (the shim matches pointers exactly; -fno-ipa-icf
 * keeps gcc from folding twins), and SIM_PROTO above checks its parameters
 * against the CUPROF_SYMBOLS row. */
#define SIM_FN(sym, api, params, call)                                                              \
	CUresult sym params                                                                         \
	{                                                                                           \
		SIM_BEGIN;                                                                          \
		SIM_END(api, call);                                                                 \
	}
#define SIM_FN_X(sym, api, params, call)                                                            \
	CUresult sym params                                                                         \
	{                                                                                           \
		SIM_BEGIN;                                                                          \
		SIM_END_X(api, call);                                                               \
	}
#define HOT_FN(sym, api, params, call)                                                              \
	CUresult sym params                                                                         \
	{                                                                                           \
		HOT_BEGIN                                                                           \
		HOT_END(api, call);                                                                 \
	}

static __thread unsigned long long tls_extra;

static inline CUresult sim_finish(int slot, unsigned long long t0, CUresult rc)
{
	if (costs_on && cost_ticks[slot])
		spin_until(t0 + cost_ticks[slot]);
	return rc;
}

static CUresult sim_finish_x(int slot, unsigned long long t0, CUresult rc)
{
	unsigned long long extra = tls_extra;
	tls_extra = 0;
	if (costs_on && (cost_ticks[slot] || extra))
		spin_until(t0 + cost_ticks[slot] + extra);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Objects                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * Objects live in fixed slabs; a handle is the address of its slab entry, so
 * a handle is validated without a lock by a range check and its live flag.
 * Freed slots are reused round-robin so that a stale handle stays invalid for
 * as long as possible. Slots 0..devices-1 of the context slab are the primary
 * contexts and 0..devices-1 of the pool slab the default pools.
 */
#define MAX_CTX 1024
#define MAX_STREAMS 65536
#define MAX_EVENTS 65536
#define MAX_POOLS 1024
#define MAX_MODULES 1024
#define MAX_FUNCS 8192
#define MAX_DEVICES 64
#define CTX_STACK 128
#define ALLOC_ALIGN 512ULL
#define POOL_GRANULE (2ULL << 20)
#define DEVICE_VA_BASE 0x200000000000ULL
#define DEVICE_VA_SPAN (1ULL << 38)

struct CUctx_st {
	int live; /* read without the lock: __atomic */
	int dev;
	int primary;
	int refs; /* primary contexts: retain count */
	unsigned flags;
};

struct CUstream_st {
	int live;
	int freed; /* a cuMemFreeAsync was ordered on it: destroying it releases pool memory */
	unsigned flags;
	int priority;
	struct CUctx_st *ctx;
};

struct CUevent_st {
	int live;
	unsigned flags;
	int recorded;
	unsigned long long when_ns;
	struct CUctx_st *ctx;
};

struct CUmemPoolHandle_st {
	int live;
	int dev;
	unsigned gen;
	unsigned long long threshold, reserved, reserved_high, used, used_high;
	unsigned long long taken; /* used, rounded up to the allocation alignment */
	int reuse[4]; /* attributes 1..3 */
};

struct CUmod_st {
	int live;
	struct CUctx_st *ctx;
};

struct CUfunc_st {
	int live;
	struct CUmod_st *mod;
};

struct device {
	unsigned long long used;    /* bytes taken: allocations and pool reservations */
	unsigned long long next_va; /* bump pointer for device addresses */
	int pending;                /* stream-ordered work queued since the last synchronize */
	struct CUmemPoolHandle_st *current_pool;
};

static struct CUctx_st ctxs[MAX_CTX];
static struct CUstream_st streams[MAX_STREAMS];
static struct CUevent_st events[MAX_EVENTS];
static struct CUmemPoolHandle_st pools[MAX_POOLS];
static struct CUmod_st modules[MAX_MODULES];
static struct CUfunc_st funcs[MAX_FUNCS];
static struct device devices[MAX_DEVICES];
static int ndevices;
static int initialized; /* __atomic */
static unsigned long long pool_releases;
static unsigned rr_ctx, rr_stream, rr_event, rr_pool, rr_module, rr_func;
/* One past the highest slot ever used, per slab: bounds the teardown scans. */
static unsigned hw_ctx, hw_stream, hw_event, hw_pool, hw_module, hw_func;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static __thread struct CUctx_st *tls_stack[CTX_STACK];
static __thread int tls_depth;

#define LOCK() pthread_mutex_lock(&mu)
#define UNLOCK() pthread_mutex_unlock(&mu)

static inline int is_init(void) { return __atomic_load_n(&initialized, __ATOMIC_ACQUIRE); }
static inline int alive(const int *live) { return __atomic_load_n(live, __ATOMIC_ACQUIRE); }
static inline void set_live(int *live, int v) { __atomic_store_n(live, v, __ATOMIC_RELEASE); }

/* Slab lookups: the entry for handle h, or NULL when h is not one of ours. */
#define SLAB_LOOKUP(name, type, slab, n)                                                            \
	static inline type *name(const void *h)                                                     \
	{                                                                                           \
		uintptr_t p = (uintptr_t)h, b = (uintptr_t)slab;                                    \
		if (p < b || p >= b + sizeof slab || (p - b) % sizeof slab[0])                      \
			return NULL;                                                                \
		return (type *)h;                                                                   \
	}
SLAB_LOOKUP(ctx_of, struct CUctx_st, ctxs, MAX_CTX)
SLAB_LOOKUP(stream_of, struct CUstream_st, streams, MAX_STREAMS)
SLAB_LOOKUP(event_of, struct CUevent_st, events, MAX_EVENTS)
SLAB_LOOKUP(pool_of, struct CUmemPoolHandle_st, pools, MAX_POOLS)
SLAB_LOOKUP(module_of, struct CUmod_st, modules, MAX_MODULES)
SLAB_LOOKUP(func_of, struct CUfunc_st, funcs, MAX_FUNCS)

/* Slot allocation, with the lock held: the next free slot from the cursor. */
#define SLAB_ALLOC(name, type, slab, n, cursor, first, hw)                                          \
	static type *name(void)                                                                     \
	{                                                                                           \
		for (unsigned i = 0; i < (n); i++) {                                                \
			unsigned k = (cursor + i) % (n);                                            \
			if ((int)k < (int)(first))                                                  \
				continue;                                                           \
			if (!slab[k].live) {                                                        \
				cursor = k + 1;                                                     \
				if (k + 1 > hw)                                                     \
					hw = k + 1;                                                 \
				memset(&slab[k], 0, sizeof slab[k]);                                \
				return &slab[k];                                                    \
			}                                                                           \
		}                                                                                   \
		return NULL;                                                                        \
	}
SLAB_ALLOC(ctx_new, struct CUctx_st, ctxs, MAX_CTX, rr_ctx, ndevices, hw_ctx)
SLAB_ALLOC(stream_new, struct CUstream_st, streams, MAX_STREAMS, rr_stream, 0, hw_stream)
SLAB_ALLOC(event_new, struct CUevent_st, events, MAX_EVENTS, rr_event, 0, hw_event)
SLAB_ALLOC(module_new, struct CUmod_st, modules, MAX_MODULES, rr_module, 0, hw_module)
SLAB_ALLOC(func_new, struct CUfunc_st, funcs, MAX_FUNCS, rr_func, 0, hw_func)

static struct CUmemPoolHandle_st *pool_new(void)
{
	for (unsigned i = 0; i < MAX_POOLS; i++) {
		unsigned k = (rr_pool + i) % MAX_POOLS;
		if (k < (unsigned)ndevices || pools[k].live)
			continue;
		rr_pool = k + 1;
		if (k + 1 > hw_pool)
			hw_pool = k + 1;
		unsigned gen = pools[k].gen + 1;
		memset(&pools[k], 0, sizeof pools[k]);
		pools[k].gen = gen;
		return &pools[k];
	}
	return NULL;
}

static void pool_defaults(struct CUmemPoolHandle_st *p, int dev)
{
	p->dev = dev;
	p->threshold = 0;
	p->reuse[1] = p->reuse[2] = p->reuse[3] = 1;
	set_live(&p->live, 1);
}

/* ------------------------------------------------------------------------ */
/* Allocations: a hash map from address to record (linear probing with       */
/* backward-shift deletion), guarded by the lock.                             */
/* ------------------------------------------------------------------------ */

enum alloc_kind { ALLOC_DEVICE = 1, ALLOC_POOL, ALLOC_HOST, ALLOC_MANAGED };

struct alloc {
	unsigned long long addr; /* 0: empty slot */
	unsigned long long size; /* bytes charged to the device (or pool), rounded */
	unsigned long long req;  /* bytes asked for (a pool's USED_MEM counts these) */
	unsigned long long mapped; /* managed: bytes mmapped */
	struct CUctx_st *ctx;
	struct CUmemPoolHandle_st *pool;
	unsigned pool_gen;
	int dev;
	int kind;
};

static struct alloc *amap;
static size_t amap_cap, amap_len;

static inline size_t amap_hash(unsigned long long a)
{
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdULL;
	a ^= a >> 33;
	return (size_t)a & (amap_cap - 1);
}

static struct alloc *amap_find(unsigned long long addr)
{
	if (!amap_cap || !addr)
		return NULL;
	for (size_t i = amap_hash(addr);; i = (i + 1) & (amap_cap - 1)) {
		if (amap[i].addr == addr)
			return &amap[i];
		if (!amap[i].addr)
			return NULL;
	}
}

static int amap_put(const struct alloc *rec);

static int amap_grow(void)
{
	size_t old_cap = amap_cap;
	struct alloc *old = amap;
	size_t cap = old_cap ? old_cap * 2 : 1024;
	struct alloc *n = calloc(cap, sizeof *n);
	if (!n)
		return -1;
	amap = n;
	amap_cap = cap;
	amap_len = 0;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].addr)
			amap_put(&old[i]);
	free(old);
	return 0;
}

static int amap_put(const struct alloc *rec)
{
	if ((amap_len + 1) * 2 > amap_cap && amap_grow() < 0)
		return -1;
	size_t i = amap_hash(rec->addr);
	while (amap[i].addr)
		i = (i + 1) & (amap_cap - 1);
	amap[i] = *rec;
	amap_len++;
	return 0;
}

static void amap_del(struct alloc *slot)
{
	size_t i = (size_t)(slot - amap);
	amap[i].addr = 0;
	amap_len--;
	for (size_t j = (i + 1) & (amap_cap - 1); amap[j].addr; j = (j + 1) & (amap_cap - 1)) {
		size_t h = amap_hash(amap[j].addr);
		/* Move j back to i when its home h is not in (i, j]. */
		if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
			amap[i] = amap[j];
			amap[j].addr = 0;
			i = j;
		}
	}
}

static unsigned long long round_up(unsigned long long v, unsigned long long to)
{
	return (v + to - 1) / to * to;
}

/* A fresh device address range of size bytes on dev. */
static unsigned long long device_va(int dev, unsigned long long size)
{
	struct device *d = &devices[dev];
	unsigned long long base = DEVICE_VA_BASE + (unsigned long long)dev * DEVICE_VA_SPAN;
	size = round_up(size ? size : 1, ALLOC_ALIGN);
	for (;;) {
		if (d->next_va + size > DEVICE_VA_SPAN)
			d->next_va = 0;
		unsigned long long a = base + d->next_va + ALLOC_ALIGN;
		d->next_va += size + ALLOC_ALIGN;
		if (!amap_find(a))
			return a;
	}
}

/* ------------------------------------------------------------------------ */
/* Pools                                                                     */
/* ------------------------------------------------------------------------ */

static void bump_high(struct CUmemPoolHandle_st *p)
{
	if (p->reserved > p->reserved_high)
		p->reserved_high = p->reserved;
	if (p->used > p->used_high)
		p->used_high = p->used;
}

/* Releases p's unused reservation down to keep bytes (never below what is
 * used); adds the release cost to tls_extra. Lock held. */
static void pool_release_to(struct CUmemPoolHandle_st *p, unsigned long long keep)
{
	unsigned long long unused = p->reserved - p->taken;
	unsigned long long target = round_up(p->taken + (keep < unused ? keep : unused), POOL_GRANULE);
	if (target >= p->reserved)
		return;
	devices[p->dev].used -= p->reserved - target;
	p->reserved = target;
	pool_releases++;
	tls_extra += cost_ticks[COST_POOL_RELEASE];
}

/* A synchronize on dev: every pool of dev holding more unused memory than
 * its release threshold gives it back. Lock held. */
static void sync_device(int dev)
{
	if (devices[dev].pending) {
		devices[dev].pending = 0;
		tls_extra += cost_ticks[COST_SYNC_PENDING];
	}
	unsigned n = hw_pool > (unsigned)ndevices ? hw_pool : (unsigned)ndevices;
	for (unsigned i = 0; i < n; i++) {
		struct CUmemPoolHandle_st *p = &pools[i];
		if (p->live && p->dev == dev && p->reserved - p->taken > p->threshold)
			pool_release_to(p, p->threshold);
	}
}

static CUresult pool_alloc(struct CUmemPoolHandle_st *p, struct CUctx_st *ctx, size_t bytes, CUdeviceptr *out)
{
	unsigned long long size = round_up(bytes, ALLOC_ALIGN);
	struct device *d = &devices[p->dev];
	if (p->reserved - p->taken < size) {
		unsigned long long grow = round_up(size - (p->reserved - p->taken), POOL_GRANULE);
		if (d->used + grow > cfg_mem_bytes || d->used + grow < d->used)
			return CUDA_ERROR_OUT_OF_MEMORY;
		d->used += grow;
		p->reserved += grow;
		tls_extra += cost_ticks[COST_POOL_GROW];
	}
	struct alloc rec = {.addr = device_va(p->dev, size), .size = size, .req = bytes, .ctx = ctx, .pool = p,
			    .pool_gen = p->gen, .dev = p->dev, .kind = ALLOC_POOL};
	if (amap_put(&rec) < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p->taken += size;
	p->used += bytes;
	bump_high(p);
	devices[ctx->dev].pending = 1;
	*out = rec.addr;
	return CUDA_SUCCESS;
}

/* Frees the allocation in slot a (device, pool or managed). Lock held. */
static void alloc_release(struct alloc *a)
{
	if (a->kind == ALLOC_POOL) {
		if (a->pool->live && a->pool->gen == a->pool_gen) {
			a->pool->taken -= a->size; /* stays reserved until a synchronize */
			a->pool->used -= a->req;
		}
		else
			devices[a->dev].used -= a->size; /* its pool is gone */
	} else if (a->kind == ALLOC_HOST) {
		free((void *)(uintptr_t)a->addr);
	} else {
		devices[a->dev].used -= a->size;
		if (a->kind == ALLOC_MANAGED)
			munmap((void *)(uintptr_t)a->addr, a->mapped);
	}
	amap_del(a);
}

/* ------------------------------------------------------------------------ */
/* Contexts                                                                  */
/* ------------------------------------------------------------------------ */

static inline struct CUctx_st *current(void)
{
	return tls_depth ? tls_stack[tls_depth - 1] : NULL;
}

/* The current context, checked: NULL and *rc set when there is none usable. */
static struct CUctx_st *current_ctx(CUresult *rc)
{
	struct CUctx_st *c = current();
	if (!c) {
		*rc = CUDA_ERROR_INVALID_CONTEXT;
		return NULL;
	}
	if (!alive(&c->live)) { /* destroyed, or a released primary context */
		*rc = CUDA_ERROR_CONTEXT_IS_DESTROYED;
		return NULL;
	}
	return c;
}

/* Destroys everything ctx owns. Lock held. */
static void ctx_teardown(struct CUctx_st *c)
{
	for (unsigned i = 0; i < hw_stream; i++)
		if (streams[i].live && streams[i].ctx == c)
			set_live(&streams[i].live, 0);
	for (unsigned i = 0; i < hw_event; i++)
		if (events[i].live && events[i].ctx == c)
			set_live(&events[i].live, 0);
	for (unsigned i = 0; i < hw_module; i++)
		if (modules[i].live && modules[i].ctx == c)
			set_live(&modules[i].live, 0);
	for (unsigned i = 0; i < hw_func; i++)
		if (funcs[i].live && !funcs[i].mod->live)
			set_live(&funcs[i].live, 0);
	for (size_t i = 0; i < amap_cap;) {
		if (amap[i].addr && amap[i].ctx == c && amap[i].kind != ALLOC_HOST)
			alloc_release(&amap[i]); /* may shift a later entry into i */
		else
			i++;
	}
	sync_device(c->dev);
}

static inline CUresult check_dev(CUdevice dev)
{
	return dev >= 0 && dev < ndevices ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* Resolves a stream argument to its context (the current one for the default
 * streams). Lock held or not. */
static struct CUctx_st *stream_ctx(CUstream h, CUresult *rc)
{
	if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD)
		return current_ctx(rc);
	struct CUstream_st *s = stream_of(h);
	if (!s || !alive(&s->live)) {
		*rc = CUDA_ERROR_INVALID_HANDLE;
		return NULL;
	}
	if (!alive(&s->ctx->live)) {
		*rc = CUDA_ERROR_CONTEXT_IS_DESTROYED;
		return NULL;
	}
	return s->ctx;
}

#define NEED_INIT()                                                                                 \
	do {                                                                                        \
		if (!is_init())                                                                     \
			return CUDA_ERROR_NOT_INITIALIZED;                                          \
	} while (0)

/* ------------------------------------------------------------------------ */
/* Init, version, devices                                                    */
/* ------------------------------------------------------------------------ */

static CUresult do_init(unsigned flags)
{
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	if (!initialized) {
		ndevices = cfg_devices;
		for (int d = 0; d < ndevices; d++) {
			ctxs[d].dev = d;
			ctxs[d].primary = 1;
			pool_defaults(&pools[d], d);
			devices[d].current_pool = &pools[d];
		}
		rr_ctx = rr_pool = (unsigned)ndevices;
		__atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
	}
	UNLOCK();
	return ndevices ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

SIM_FN(cuInit, cuInit, (unsigned int Flags), do_init(Flags))

CUresult cuDriverGetVersion(int *driverVersion)
{
	HOT_BEGIN
	if (!driverVersion)
		HOT_END(cuDriverGetVersion, CUDA_ERROR_INVALID_VALUE);
	*driverVersion = cfg_driver_version;
	HOT_END(cuDriverGetVersion, CUDA_SUCCESS);
}

static CUresult do_device_get(CUdevice *device, int ordinal)
{
	NEED_INIT();
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(ordinal))
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

HOT_FN(cuDeviceGet, cuDeviceGet, (CUdevice *device, int ordinal), do_device_get(device, ordinal))

static CUresult do_device_count(int *count)
{
	NEED_INIT();
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = ndevices;
	return CUDA_SUCCESS;
}

HOT_FN(cuDeviceGetCount, cuDeviceGetCount, (int *count), do_device_count(count))

static CUresult do_device_name(char *name, int len, CUdevice dev)
{
	NEED_INIT();
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "cuprof simulated GPU %d", dev);
	return CUDA_SUCCESS;
}

SIM_FN(cuDeviceGetName, cuDeviceGetName, (char *name, int len, CUdevice dev), do_device_name(name, len, dev))

/* Attribute values of an H200-like device; unlisted attributes in range are 0. */
static int attribute_value(int attr)
{
	switch (attr) {
	case 1: return 1024;      /* MAX_THREADS_PER_BLOCK */
	case 2: return 1024;      /* MAX_BLOCK_DIM_X */
	case 3: return 1024;      /* MAX_BLOCK_DIM_Y */
	case 4: return 64;        /* MAX_BLOCK_DIM_Z */
	case 5: return 2147483647; /* MAX_GRID_DIM_X */
	case 6: return 65535;     /* MAX_GRID_DIM_Y */
	case 7: return 65535;     /* MAX_GRID_DIM_Z */
	case 8: return 49152;     /* MAX_SHARED_MEMORY_PER_BLOCK */
	case 10: return 32;       /* WARP_SIZE */
	case 13: return 1980000;  /* CLOCK_RATE (kHz) */
	case 16: return 132;      /* MULTIPROCESSOR_COUNT */
	case 36: return 2619000;  /* MEMORY_CLOCK_RATE */
	case 37: return 6144;     /* GLOBAL_MEMORY_BUS_WIDTH */
	case 75: return 9;        /* COMPUTE_CAPABILITY_MAJOR */
	case 76: return 0;        /* COMPUTE_CAPABILITY_MINOR */
	case 83: return 1;        /* MANAGED_MEMORY */
	case 115: return 1;       /* MEMORY_POOLS_SUPPORTED */
	default: return 0;
	}
}

static CUresult do_device_attribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	NEED_INIT();
	if (!pi || (int)attrib < 1 || (int)attrib > 160)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*pi = attribute_value((int)attrib);
	return CUDA_SUCCESS;
}

HOT_FN(cuDeviceGetAttribute, cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev),
	do_device_attribute(pi, attrib, dev))

static CUresult do_total_mem(size_t *bytes, CUdevice dev)
{
	NEED_INIT();
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*bytes = (size_t)cfg_mem_bytes;
	return CUDA_SUCCESS;
}

SIM_FN(cuDeviceTotalMem_v2, cuDeviceTotalMem, (size_t *bytes, CUdevice dev), do_total_mem(bytes, dev))

/* ------------------------------------------------------------------------ */
/* Primary contexts                                                          */
/* ------------------------------------------------------------------------ */

static CUresult do_primary_retain(CUcontext *pctx, CUdevice dev)
{
	NEED_INIT();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	LOCK();
	struct CUctx_st *c = &ctxs[dev];
	if (c->refs++ == 0) {
		set_live(&c->live, 1);
		tls_extra += cost_ticks[CUPROF_API_cuCtxCreate]; /* activation */
	}
	UNLOCK();
	*pctx = c;
	return CUDA_SUCCESS;
}

SIM_FN_X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice dev),
	do_primary_retain(pctx, dev))

static CUresult do_primary_release(CUdevice dev)
{
	NEED_INIT();
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUctx_st *c = &ctxs[dev];
	if (c->refs == 0) {
		rc = CUDA_ERROR_INVALID_CONTEXT;
	} else if (--c->refs == 0) {
		ctx_teardown(c);
		set_live(&c->live, 0);
	}
	UNLOCK();
	return rc;
}

SIM_FN_X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, (CUdevice dev), do_primary_release(dev))
SIM_FN_X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, (CUdevice dev), do_primary_release(dev))

static CUresult do_primary_reset(CUdevice dev)
{
	NEED_INIT();
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	LOCK();
	struct CUctx_st *c = &ctxs[dev];
	if (c->live)
		ctx_teardown(c);
	c->flags = 0;
	UNLOCK();
	return CUDA_SUCCESS;
}

SIM_FN_X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, (CUdevice dev), do_primary_reset(dev))
SIM_FN_X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, (CUdevice dev), do_primary_reset(dev))

static CUresult do_primary_set_flags(CUdevice dev, unsigned flags)
{
	NEED_INIT();
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	if (flags & ~0x1fu)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	ctxs[dev].flags = flags;
	UNLOCK();
	return CUDA_SUCCESS;
}

SIM_FN(cuDevicePrimaryCtxSetFlags, cuDevicePrimaryCtxSetFlags, (CUdevice dev, unsigned int flags),
	do_primary_set_flags(dev, flags))
SIM_FN(cuDevicePrimaryCtxSetFlags_v2, cuDevicePrimaryCtxSetFlags, (CUdevice dev, unsigned int flags),
	do_primary_set_flags(dev, flags))

static CUresult do_primary_state(CUdevice dev, unsigned *flags, int *active)
{
	NEED_INIT();
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	LOCK();
	*flags = ctxs[dev].flags;
	*active = ctxs[dev].refs > 0;
	UNLOCK();
	return CUDA_SUCCESS;
}

SIM_FN(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState, (CUdevice dev, unsigned int *flags, int *active),
	do_primary_state(dev, flags, active))

/* ------------------------------------------------------------------------ */
/* Contexts and the per-thread context stack                                 */
/* ------------------------------------------------------------------------ */

static CUresult do_ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
	NEED_INIT();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	if (tls_depth >= CTX_STACK)
		return CUDA_ERROR_OUT_OF_MEMORY;
	LOCK();
	struct CUctx_st *c = ctx_new();
	if (c) {
		c->dev = dev;
		c->flags = flags;
		set_live(&c->live, 1);
	}
	UNLOCK();
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	tls_stack[tls_depth++] = c;
	*pctx = c;
	return CUDA_SUCCESS;
}

SIM_FN(cuCtxCreate, cuCtxCreate, (CUcontext *pctx, unsigned int flags, CUdevice dev), do_ctx_create(pctx, flags, dev))
SIM_FN(cuCtxCreate_v2, cuCtxCreate, (CUcontext *pctx, unsigned int flags, CUdevice dev),
	do_ctx_create(pctx, flags, dev))

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags,
			CUdevice dev)
{
	SIM_BEGIN;
	if (numParams < 0 || (numParams > 0 && !paramsArray))
		SIM_END(cuCtxCreate, CUDA_ERROR_INVALID_VALUE);
	SIM_END(cuCtxCreate, do_ctx_create(pctx, flags, dev));
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev)
{
	SIM_BEGIN;
	(void)ctxCreateParams;
	SIM_END(cuCtxCreate, do_ctx_create(pctx, flags, dev));
}

static CUresult do_ctx_destroy(CUcontext ctx)
{
	NEED_INIT();
	struct CUctx_st *c = ctx_of(ctx);
	CUresult rc = CUDA_SUCCESS;
	if (!c || c->primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	LOCK();
	if (!c->live) {
		rc = CUDA_ERROR_INVALID_CONTEXT;
	} else {
		ctx_teardown(c);
		set_live(&c->live, 0);
	}
	UNLOCK();
	if (rc == CUDA_SUCCESS && current() == c)
		tls_depth--; /* popped from the calling thread's stack */
	return rc;
}

SIM_FN_X(cuCtxDestroy, cuCtxDestroy, (CUcontext ctx), do_ctx_destroy(ctx))
SIM_FN_X(cuCtxDestroy_v2, cuCtxDestroy, (CUcontext ctx), do_ctx_destroy(ctx))

/* Lock-free: a context handle is usable when it is in the slab and live. */
static inline struct CUctx_st *live_ctx(CUcontext ctx)
{
	struct CUctx_st *c = ctx_of(ctx);
	return c && alive(&c->live) ? c : NULL;
}

static CUresult do_ctx_push(CUcontext ctx)
{
	NEED_INIT();
	struct CUctx_st *c = live_ctx(ctx);
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (tls_depth >= CTX_STACK)
		return CUDA_ERROR_OUT_OF_MEMORY;
	tls_stack[tls_depth++] = c;
	return CUDA_SUCCESS;
}

HOT_FN(cuCtxPushCurrent, cuCtxPushCurrent, (CUcontext ctx), do_ctx_push(ctx))
HOT_FN(cuCtxPushCurrent_v2, cuCtxPushCurrent, (CUcontext ctx), do_ctx_push(ctx))

static CUresult do_ctx_pop(CUcontext *pctx)
{
	NEED_INIT();
	if (!tls_depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	struct CUctx_st *c = tls_stack[--tls_depth];
	if (pctx)
		*pctx = c;
	return CUDA_SUCCESS;
}

HOT_FN(cuCtxPopCurrent, cuCtxPopCurrent, (CUcontext *pctx), do_ctx_pop(pctx))
HOT_FN(cuCtxPopCurrent_v2, cuCtxPopCurrent, (CUcontext *pctx), do_ctx_pop(pctx))

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	HOT_BEGIN
	if (!is_init())
		HOT_END(cuCtxSetCurrent, CUDA_ERROR_NOT_INITIALIZED);
	if (!ctx) { /* pops the top, if any */
		if (tls_depth)
			tls_depth--;
		HOT_END(cuCtxSetCurrent, CUDA_SUCCESS);
	}
	/* An inactive primary context can be made current (as on the real
	 * driver); calls that need it then fail with CUDA_ERROR_INVALID_CONTEXT. */
	struct CUctx_st *c = ctx_of(ctx);
	if (!c || (!c->primary && !alive(&c->live)))
		HOT_END(cuCtxSetCurrent, CUDA_ERROR_INVALID_CONTEXT);
	if (tls_depth)
		tls_stack[tls_depth - 1] = c;
	else
		tls_stack[tls_depth++] = c;
	HOT_END(cuCtxSetCurrent, CUDA_SUCCESS);
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	HOT_BEGIN
	if (!is_init())
		HOT_END(cuCtxGetCurrent, CUDA_ERROR_NOT_INITIALIZED);
	if (!pctx)
		HOT_END(cuCtxGetCurrent, CUDA_ERROR_INVALID_VALUE);
	*pctx = current();
	HOT_END(cuCtxGetCurrent, CUDA_SUCCESS);
}

static CUresult do_ctx_get_device(CUdevice *device, CUcontext ctx)
{
	NEED_INIT();
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUctx_st *c;
	CUresult rc = CUDA_SUCCESS;
	if (ctx) {
		if (!(c = live_ctx(ctx)))
			return CUDA_ERROR_INVALID_CONTEXT;
	} else if (!(c = current_ctx(&rc))) {
		return rc;
	}
	*device = c->dev;
	return CUDA_SUCCESS;
}

HOT_FN(cuCtxGetDevice, cuCtxGetDevice, (CUdevice *device), do_ctx_get_device(device, NULL))
HOT_FN(cuCtxGetDevice_v2, cuCtxGetDevice, (CUdevice *device, CUcontext ctx), do_ctx_get_device(device, ctx))

static CUresult do_ctx_sync(CUcontext ctx)
{
	NEED_INIT();
	struct CUctx_st *c;
	CUresult rc = CUDA_SUCCESS;
	if (ctx) {
		if (!(c = live_ctx(ctx)))
			return CUDA_ERROR_INVALID_CONTEXT;
	} else if (!(c = current_ctx(&rc))) {
		return rc;
	}
	LOCK();
	sync_device(c->dev);
	UNLOCK();
	return CUDA_SUCCESS;
}

SIM_FN_X(cuCtxSynchronize, cuCtxSynchronize, (void), do_ctx_sync(NULL))
SIM_FN_X(cuCtxSynchronize_v2, cuCtxSynchronize, (CUcontext ctx), do_ctx_sync(ctx))

/* ------------------------------------------------------------------------ */
/* Streams                                                                   */
/* ------------------------------------------------------------------------ */

static CUresult do_stream_create(CUstream *ph, unsigned flags, int priority)
{
	NEED_INIT();
	if (!ph || (flags & ~CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	struct CUctx_st *c = current_ctx(&rc);
	if (!c)
		return rc;
	/* Priorities range from 0 (least) to -5 (greatest), as on the H200;
	 * values outside are clamped. */
	if (priority > 0)
		priority = 0;
	if (priority < -5)
		priority = -5;
	LOCK();
	struct CUstream_st *s = stream_new();
	if (s) {
		s->flags = flags;
		s->priority = priority;
		s->ctx = c;
		set_live(&s->live, 1);
	}
	UNLOCK();
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*ph = s;
	return CUDA_SUCCESS;
}

SIM_FN(cuStreamCreate, cuStreamCreate, (CUstream *phStream, unsigned int Flags), do_stream_create(phStream, Flags, 0))
SIM_FN(cuStreamCreateWithPriority, cuStreamCreateWithPriority, (CUstream *phStream, unsigned int flags, int priority),
	do_stream_create(phStream, flags, priority))

static CUresult do_stream_destroy(CUstream h)
{
	NEED_INIT();
	struct CUstream_st *s = stream_of(h);
	CUresult rc = CUDA_SUCCESS;
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	LOCK();
	if (!s->live) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		/* Destroying a stream waits for its work: when frees were ordered
		 * on it, its device's pools give back memory above their release
		 * threshold, as at a synchronize (seen on the H200: ~60 us). */
		if (s->freed && alive(&s->ctx->live))
			sync_device(s->ctx->dev);
		set_live(&s->live, 0);
	}
	UNLOCK();
	return rc;
}

SIM_FN_X(cuStreamDestroy, cuStreamDestroy, (CUstream hStream), do_stream_destroy(hStream))
SIM_FN_X(cuStreamDestroy_v2, cuStreamDestroy, (CUstream hStream), do_stream_destroy(hStream))

static CUresult do_stream_sync(CUstream h)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUctx_st *c = stream_ctx(h, &rc);
	if (c)
		sync_device(c->dev);
	UNLOCK();
	return rc;
}

SIM_FN_X(cuStreamSynchronize, cuStreamSynchronize, (CUstream hStream), do_stream_sync(hStream))
SIM_FN_X(cuStreamSynchronize_ptsz, cuStreamSynchronize, (CUstream hStream), do_stream_sync(hStream))

static CUresult do_stream_check(CUstream h)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	stream_ctx(h, &rc);
	UNLOCK();
	return rc;
}

SIM_FN(cuStreamQuery, cuStreamQuery, (CUstream hStream), do_stream_check(hStream))
SIM_FN(cuStreamQuery_ptsz, cuStreamQuery, (CUstream hStream), do_stream_check(hStream))

static CUresult do_stream_wait_event(CUstream h, CUevent e, unsigned flags)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	if (flags & ~1u)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	if (stream_ctx(h, &rc)) {
		struct CUevent_st *ev = event_of(e);
		if (!ev || !ev->live)
			rc = CUDA_ERROR_INVALID_HANDLE;
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuStreamWaitEvent, cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags),
	do_stream_wait_event(hStream, hEvent, Flags))
SIM_FN(cuStreamWaitEvent_ptsz, cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags),
	do_stream_wait_event(hStream, hEvent, Flags))

/* ------------------------------------------------------------------------ */
/* Events                                                                    */
/* ------------------------------------------------------------------------ */

static CUresult do_event_create(CUevent *ph, unsigned flags)
{
	NEED_INIT();
	if (!ph || (flags & ~0xfu))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	struct CUctx_st *c = current_ctx(&rc);
	if (!c)
		return rc;
	LOCK();
	struct CUevent_st *e = event_new();
	if (e) {
		e->flags = flags;
		e->ctx = c;
		set_live(&e->live, 1);
	}
	UNLOCK();
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*ph = e;
	return CUDA_SUCCESS;
}

SIM_FN(cuEventCreate, cuEventCreate, (CUevent *phEvent, unsigned int Flags), do_event_create(phEvent, Flags))

static CUresult do_event_destroy(CUevent h)
{
	NEED_INIT();
	struct CUevent_st *e = event_of(h);
	CUresult rc = CUDA_SUCCESS;
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	LOCK();
	if (!e->live)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		set_live(&e->live, 0);
	UNLOCK();
	return rc;
}

SIM_FN(cuEventDestroy, cuEventDestroy, (CUevent hEvent), do_event_destroy(hEvent))
SIM_FN(cuEventDestroy_v2, cuEventDestroy, (CUevent hEvent), do_event_destroy(hEvent))

static CUresult do_event_record(CUevent h, CUstream s, unsigned flags)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	if (flags & ~1u)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct CUevent_st *e = event_of(h);
	if (!e || !e->live) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else if (stream_ctx(s, &rc)) {
		devices[e->ctx->dev].pending = 1;
		e->recorded = 1;
		e->when_ns = mono_ns();
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuEventRecord, cuEventRecord, (CUevent hEvent, CUstream hStream), do_event_record(hEvent, hStream, 0))
SIM_FN(cuEventRecord_ptsz, cuEventRecord, (CUevent hEvent, CUstream hStream), do_event_record(hEvent, hStream, 0))
SIM_FN(cuEventRecordWithFlags, cuEventRecordWithFlags, (CUevent hEvent, CUstream hStream, unsigned int flags),
	do_event_record(hEvent, hStream, flags))
SIM_FN(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags, (CUevent hEvent, CUstream hStream, unsigned int flags),
	do_event_record(hEvent, hStream, flags))

static CUresult do_event_sync(CUevent h, int sync)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUevent_st *e = event_of(h);
	if (!e || !e->live)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (sync)
		sync_device(e->ctx->dev);
	UNLOCK();
	return rc;
}

SIM_FN_X(cuEventSynchronize, cuEventSynchronize, (CUevent hEvent), do_event_sync(hEvent, 1))
SIM_FN(cuEventQuery, cuEventQuery, (CUevent hEvent), do_event_sync(hEvent, 0))

static CUresult do_event_elapsed(float *ms, CUevent hs, CUevent he)
{
	NEED_INIT();
	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUevent_st *a = event_of(hs), *b = event_of(he);
	if (!a || !b || !a->live || !b->live || !a->recorded || !b->recorded ||
	    ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		*ms = (float)((double)((long long)(b->when_ns - a->when_ns)) / 1e6);
	UNLOCK();
	return rc;
}

SIM_FN(cuEventElapsedTime, cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd),
	do_event_elapsed(pMilliseconds, hStart, hEnd))
SIM_FN(cuEventElapsedTime_v2, cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd),
	do_event_elapsed(pMilliseconds, hStart, hEnd))

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */
/* ------------------------------------------------------------------------ */

static CUresult do_mem_alloc(CUdeviceptr *dptr, size_t bytes)
{
	NEED_INIT();
	if (!dptr || !bytes)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	struct CUctx_st *c = current_ctx(&rc);
	if (!c)
		return rc;
	unsigned long long size = round_up(bytes, ALLOC_ALIGN);
	LOCK();
	struct device *d = &devices[c->dev];
	if (d->used + size > cfg_mem_bytes || d->used + size < d->used) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		struct alloc rec = {.addr = device_va(c->dev, size), .size = size, .ctx = c, .dev = c->dev,
				    .kind = ALLOC_DEVICE};
		if (amap_put(&rec) < 0) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			d->used += size;
			*dptr = rec.addr;
		}
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemAlloc, cuMemAlloc, (CUdeviceptr *dptr, size_t bytesize), do_mem_alloc(dptr, bytesize))
SIM_FN(cuMemAlloc_v2, cuMemAlloc, (CUdeviceptr *dptr, size_t bytesize), do_mem_alloc(dptr, bytesize))

/* Frees a device, pool or managed allocation (not host memory). */
static CUresult do_mem_free(CUdeviceptr p)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	if (!p)
		return CUDA_SUCCESS; /* freeing NULL is a no-op, as in the driver */
	LOCK();
	struct alloc *a = amap_find(p);
	if (!a || a->kind == ALLOC_HOST)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		alloc_release(a);
	UNLOCK();
	return rc;
}

SIM_FN(cuMemFree, cuMemFree, (CUdeviceptr dptr), do_mem_free(dptr))
SIM_FN(cuMemFree_v2, cuMemFree, (CUdeviceptr dptr), do_mem_free(dptr))

static CUresult do_host_alloc(void **pp, size_t bytes, unsigned flags)
{
	NEED_INIT();
	if (!pp || !bytes || (flags & ~0xfu))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	struct CUctx_st *c = current_ctx(&rc);
	if (!c)
		return rc;
	void *mem = NULL;
	if (posix_memalign(&mem, 4096, bytes) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	LOCK();
	struct alloc rec = {.addr = (uintptr_t)mem, .size = bytes, .ctx = c, .dev = c->dev, .kind = ALLOC_HOST};
	if (amap_put(&rec) < 0) {
		free(mem);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		*pp = mem;
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemAllocHost, cuMemAllocHost, (void **pp, size_t bytesize), do_host_alloc(pp, bytesize, 0))
SIM_FN(cuMemAllocHost_v2, cuMemAllocHost, (void **pp, size_t bytesize), do_host_alloc(pp, bytesize, 0))
SIM_FN(cuMemHostAlloc, cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags),
	do_host_alloc(pp, bytesize, Flags))

static CUresult do_host_free(void *p)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct alloc *a = amap_find((uintptr_t)p);
	if (!a || a->kind != ALLOC_HOST)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		alloc_release(a);
	UNLOCK();
	return rc;
}

SIM_FN(cuMemFreeHost, cuMemFreeHost, (void *p), do_host_free(p))

static CUresult do_managed_alloc(CUdeviceptr *dptr, size_t bytes, unsigned flags)
{
	NEED_INIT();
	if (!dptr || !bytes || (flags != 1 && flags != 2))
		return CUDA_ERROR_INVALID_VALUE; /* CU_MEM_ATTACH_GLOBAL or _HOST */
	CUresult rc = CUDA_SUCCESS;
	struct CUctx_st *c = current_ctx(&rc);
	if (!c)
		return rc;
	unsigned long long size = round_up(bytes, ALLOC_ALIGN);
	LOCK();
	struct device *d = &devices[c->dev];
	if (d->used + size > cfg_mem_bytes || d->used + size < d->used) {
		UNLOCK();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED) {
		UNLOCK();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	struct alloc rec = {.addr = (uintptr_t)mem, .size = size, .mapped = bytes, .ctx = c, .dev = c->dev,
			    .kind = ALLOC_MANAGED};
	if (amap_put(&rec) < 0) {
		munmap(mem, bytes);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		d->used += size;
		*dptr = rec.addr;
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemAllocManaged, cuMemAllocManaged, (CUdeviceptr *dptr, size_t bytesize, unsigned int flags),
	do_managed_alloc(dptr, bytesize, flags))

/* Stream-ordered allocation from pool p (NULL: the stream's device's current pool). */
static CUresult do_alloc_async(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream h, int from_pool)
{
	NEED_INIT();
	if (!dptr || !bytes)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUctx_st *c = stream_ctx(h, &rc);
	if (c) {
		struct CUmemPoolHandle_st *p;
		if (from_pool) {
			p = pool_of(pool);
			if (!p || !p->live)
				rc = CUDA_ERROR_INVALID_VALUE;
		} else {
			p = devices[c->dev].current_pool;
		}
		if (rc == CUDA_SUCCESS)
			rc = pool_alloc(p, c, bytes, dptr);
	}
	UNLOCK();
	return rc;
}

SIM_FN_X(cuMemAllocAsync, cuMemAllocAsync, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream),
	do_alloc_async(dptr, bytesize, NULL, hStream, 0))
SIM_FN_X(cuMemAllocAsync_ptsz, cuMemAllocAsync, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream),
	do_alloc_async(dptr, bytesize, NULL, hStream, 0))
SIM_FN_X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
	do_alloc_async(dptr, bytesize, pool, hStream, 1))
SIM_FN_X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
	do_alloc_async(dptr, bytesize, pool, hStream, 1))

static CUresult do_free_async(CUdeviceptr p, CUstream h)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	if (stream_ctx(h, &rc)) {
		struct alloc *a = amap_find(p);
		if (!a || a->kind == ALLOC_HOST) {
			rc = CUDA_ERROR_INVALID_VALUE;
		} else {
			devices[a->dev].pending = 1;
			alloc_release(a);
			struct CUstream_st *s = stream_of(h);
			if (s)
				s->freed = 1;
		}
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemFreeAsync, cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), do_free_async(dptr, hStream))
SIM_FN(cuMemFreeAsync_ptsz, cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), do_free_async(dptr, hStream))

static CUresult do_mem_info(size_t *free_bytes, size_t *total)
{
	NEED_INIT();
	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	struct CUctx_st *c = current_ctx(&rc);
	if (!c)
		return rc;
	LOCK();
	*free_bytes = (size_t)(cfg_mem_bytes - devices[c->dev].used);
	*total = (size_t)cfg_mem_bytes;
	UNLOCK();
	return CUDA_SUCCESS;
}

SIM_FN(cuMemGetInfo, cuMemGetInfo, (size_t *free, size_t *total), do_mem_info(free, total))
SIM_FN(cuMemGetInfo_v2, cuMemGetInfo, (size_t *free, size_t *total), do_mem_info(free, total))

/* ------------------------------------------------------------------------ */
/* Pools                                                                     */
/* ------------------------------------------------------------------------ */

static CUresult do_pool_create(CUmemoryPool *out, const CUmemPoolProps *props)
{
	NEED_INIT();
	if (!out || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(props->location.id))
		return CUDA_ERROR_INVALID_VALUE; /* as the real driver answers */
	LOCK();
	struct CUmemPoolHandle_st *p = pool_new();
	if (p)
		pool_defaults(p, props->location.id);
	UNLOCK();
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = p;
	return CUDA_SUCCESS;
}

SIM_FN(cuMemPoolCreate, cuMemPoolCreate, (CUmemoryPool *pool, const CUmemPoolProps *poolProps),
	do_pool_create(pool, poolProps))

static CUresult do_pool_destroy(CUmemoryPool pool)
{
	NEED_INIT();
	struct CUmemPoolHandle_st *p = pool_of(pool);
	CUresult rc = CUDA_SUCCESS;
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (p - pools < ndevices)
		return CUDA_ERROR_INVALID_VALUE; /* a default pool */
	LOCK();
	if (!p->live) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		/* Unused reservation goes back now; used bytes when freed. */
		devices[p->dev].used -= p->reserved - p->taken;
		if (devices[p->dev].current_pool == p)
			devices[p->dev].current_pool = &pools[p->dev];
		set_live(&p->live, 0);
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemPoolDestroy, cuMemPoolDestroy, (CUmemoryPool pool), do_pool_destroy(pool))

static CUresult do_pool_trim(CUmemoryPool pool, size_t keep)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUmemPoolHandle_st *p = pool_of(pool);
	if (!p || !p->live)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		pool_release_to(p, keep);
	UNLOCK();
	return rc;
}

SIM_FN_X(cuMemPoolTrimTo, cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep),
	do_pool_trim(pool, minBytesToKeep))

static CUresult do_pool_attr(CUmemoryPool pool, CUmemPool_attribute attr, void *value, int set)
{
	NEED_INIT();
	int a = (int)attr;
	if (!value || a < 1 || a > 8)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUmemPoolHandle_st *p = pool_of(pool);
	if (!p || !p->live) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (a <= 3) {
		if (set)
			p->reuse[a] = *(int *)value != 0;
		else
			*(int *)value = p->reuse[a];
	} else if (!set) {
		cuuint64_t v = 0;
		switch (a) {
		case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: v = p->threshold; break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: v = p->reserved; break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: v = p->reserved_high; break;
		case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: v = p->used; break;
		case CU_MEMPOOL_ATTR_USED_MEM_HIGH: v = p->used_high; break;
		}
		*(cuuint64_t *)value = v;
	} else {
		cuuint64_t v = *(cuuint64_t *)value;
		switch (a) {
		case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p->threshold = v; break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: /* only a reset to 0 */
			if (v)
				rc = CUDA_ERROR_INVALID_VALUE;
			else
				p->reserved_high = p->reserved;
			break;
		case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
			if (v)
				rc = CUDA_ERROR_INVALID_VALUE;
			else
				p->used_high = p->used;
			break;
		default: rc = CUDA_ERROR_INVALID_VALUE; /* the CURRENT figures are read-only */
		}
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemPoolSetAttribute, cuMemPoolSetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value),
	do_pool_attr(pool, attr, value, 1))
SIM_FN(cuMemPoolGetAttribute, cuMemPoolGetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value),
	do_pool_attr(pool, attr, value, 0))

static CUresult do_get_pool(CUmemoryPool *out, CUdevice dev, int current_one)
{
	NEED_INIT();
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	LOCK();
	*out = current_one ? devices[dev].current_pool : &pools[dev];
	UNLOCK();
	return CUDA_SUCCESS;
}

SIM_FN(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, (CUmemoryPool *pool_out, CUdevice dev),
	do_get_pool(pool_out, dev, 0))
SIM_FN(cuDeviceGetMemPool, cuDeviceGetMemPool, (CUmemoryPool *pool, CUdevice dev), do_get_pool(pool, dev, 1))

static CUresult do_set_pool(CUdevice dev, CUmemoryPool pool)
{
	NEED_INIT();
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_VALUE; /* as the real driver answers */
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUmemPoolHandle_st *p = pool_of(pool);
	if (!p || !p->live)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (p->dev != dev)
		rc = CUDA_ERROR_INVALID_DEVICE;
	else
		devices[dev].current_pool = p;
	UNLOCK();
	return rc;
}

SIM_FN(cuDeviceSetMemPool, cuDeviceSetMemPool, (CUdevice dev, CUmemoryPool pool), do_set_pool(dev, pool))

/* ------------------------------------------------------------------------ */
/* Error names and texts (no cuInit needed, no lock)                         */
/* ------------------------------------------------------------------------ */

static const struct {
	int code;
	const char *name, *text;
} errors[] = {
	{0, "CUDA_SUCCESS", "no error"},
	{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
	{5, "CUDA_ERROR_PROFILER_DISABLED", "profiler disabled while using external profiling tool"},
	{34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
	{46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
	{100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{102, "CUDA_ERROR_DEVICE_NOT_LICENSED", "device doesn't have valid Grid license"},
	{200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	{201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", "context already current"},
	{205, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
	{206, "CUDA_ERROR_UNMAP_FAILED", "unmapping of buffer object failed"},
	{208, "CUDA_ERROR_ALREADY_MAPPED", "resource already mapped"},
	{209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
	{210, "CUDA_ERROR_ALREADY_ACQUIRED", "resource already acquired"},
	{211, "CUDA_ERROR_NOT_MAPPED", "resource not mapped"},
	{214, "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered"},
	{215, "CUDA_ERROR_UNSUPPORTED_LIMIT", "limit is not supported on this architecture"},
	{216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", "exclusive-thread device already in use by a different thread"},
	{218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	{300, "CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"},
	{301, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
	{400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
	{500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{600, "CUDA_ERROR_NOT_READY", "device not ready"},
	{700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	{701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	{702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
	{708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", "cannot set while device is active in this process"},
	{709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
	{719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
	{800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
	{801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
	{900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
	{999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static int error_index(CUresult e)
{
	for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
		if (errors[i].code == e)
			return (int)i;
	return -1;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	HOT_BEGIN
	int i = error_index(error);
	if (!pStr)
		HOT_END(cuGetErrorName, CUDA_ERROR_INVALID_VALUE);
	*pStr = i >= 0 ? errors[i].name : NULL;
	HOT_END(cuGetErrorName, i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	HOT_BEGIN
	int i = error_index(error);
	if (!pStr)
		HOT_END(cuGetErrorString, CUDA_ERROR_INVALID_VALUE);
	*pStr = i >= 0 ? errors[i].text : NULL;
	HOT_END(cuGetErrorString, i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

/* ------------------------------------------------------------------------ */
/* Launches, copies, sets: validation only                                   */
/* ------------------------------------------------------------------------ */

static CUresult do_launch(CUfunction f, CUstream h)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUfunc_st *fn = func_of(f);
	struct CUctx_st *c = stream_ctx(h, &rc);
	if (c && (!fn || !fn->live))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (c)
		devices[c->dev].pending = 1;
	UNLOCK();
	return rc;
}

/* A launch: every grid and block dimension must be non-zero. */
static CUresult do_launch_grid(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			       unsigned bz, CUstream h)
{
	if (!gx || !gy || !gz || !bx || !by || !bz)
		return CUDA_ERROR_INVALID_VALUE;
	return do_launch(f, h);
}

/* A launch whose stream is in its config. */
static CUresult do_launch_config(const CUlaunchConfig *config, CUfunction f)
{
	if (!config)
		return CUDA_ERROR_INVALID_VALUE;
	return do_launch(f, config->hStream);
}

#define LAUNCH_PARAMS                                                                               \
	(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,          \
	 unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                     \
	 unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
#define LAUNCH_GRID do_launch_grid(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream)
#define LAUNCH_EX_PARAMS (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)

SIM_FN(cuLaunchKernel, cuLaunchKernel, LAUNCH_PARAMS, LAUNCH_GRID)
SIM_FN(cuLaunchKernel_ptsz, cuLaunchKernel, LAUNCH_PARAMS, LAUNCH_GRID)
SIM_FN(cuLaunchKernelEx, cuLaunchKernelEx, LAUNCH_EX_PARAMS, do_launch_config(config, f))
SIM_FN(cuLaunchKernelEx_ptsz, cuLaunchKernelEx, LAUNCH_EX_PARAMS, do_launch_config(config, f))

/* A copy or set: the addresses must be non-NULL, the stream valid. */
static CUresult do_copy(unsigned long long dst, unsigned long long src, CUstream h)
{
	NEED_INIT();
	if (!dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUctx_st *c = stream_ctx(h, &rc);
	if (c)
		devices[c->dev].pending = 1;
	UNLOCK();
	return rc;
}

#define COPY_FN(sym, api, dst, src, stream, ...)                                                    \
	SIM_FN(sym, api, (__VA_ARGS__),                                                             \
	       do_copy((unsigned long long)(uintptr_t)(dst), (unsigned long long)(uintptr_t)(src), stream))

COPY_FN(cuMemcpy, cuMemcpy, dst, src, NULL, CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
COPY_FN(cuMemcpy_ptds, cuMemcpy, dst, src, CU_STREAM_PER_THREAD, CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
COPY_FN(cuMemcpyAsync, cuMemcpyAsync, dst, src, hStream, CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
	CUstream hStream)
COPY_FN(cuMemcpyAsync_ptsz, cuMemcpyAsync, dst, src, hStream, CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
	CUstream hStream)
COPY_FN(cuMemcpyHtoD, cuMemcpyHtoD, dstDevice, srcHost, NULL, CUdeviceptr dstDevice, const void *srcHost,
	size_t ByteCount)
COPY_FN(cuMemcpyHtoD_v2, cuMemcpyHtoD, dstDevice, srcHost, NULL, CUdeviceptr dstDevice, const void *srcHost,
	size_t ByteCount)
COPY_FN(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD, dstDevice, srcHost, CU_STREAM_PER_THREAD, CUdeviceptr dstDevice,
	const void *srcHost, size_t ByteCount)
COPY_FN(cuMemcpyDtoH, cuMemcpyDtoH, dstHost, srcDevice, NULL, void *dstHost, CUdeviceptr srcDevice,
	size_t ByteCount)
COPY_FN(cuMemcpyDtoH_v2, cuMemcpyDtoH, dstHost, srcDevice, NULL, void *dstHost, CUdeviceptr srcDevice,
	size_t ByteCount)
COPY_FN(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH, dstHost, srcDevice, CU_STREAM_PER_THREAD, void *dstHost,
	CUdeviceptr srcDevice, size_t ByteCount)
COPY_FN(cuMemcpyDtoD, cuMemcpyDtoD, dstDevice, srcDevice, NULL, CUdeviceptr dstDevice, CUdeviceptr srcDevice,
	size_t ByteCount)
COPY_FN(cuMemcpyDtoD_v2, cuMemcpyDtoD, dstDevice, srcDevice, NULL, CUdeviceptr dstDevice, CUdeviceptr srcDevice,
	size_t ByteCount)
COPY_FN(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD, dstDevice, srcDevice, CU_STREAM_PER_THREAD, CUdeviceptr dstDevice,
	CUdeviceptr srcDevice, size_t ByteCount)
COPY_FN(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync, dstDevice, srcHost, hStream, CUdeviceptr dstDevice,
	const void *srcHost, size_t ByteCount, CUstream hStream)
COPY_FN(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, dstDevice, srcHost, hStream, CUdeviceptr dstDevice,
	const void *srcHost, size_t ByteCount, CUstream hStream)
COPY_FN(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync, dstDevice, srcHost, hStream, CUdeviceptr dstDevice,
	const void *srcHost, size_t ByteCount, CUstream hStream)
COPY_FN(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync, dstHost, srcDevice, hStream, void *dstHost, CUdeviceptr srcDevice,
	size_t ByteCount, CUstream hStream)
COPY_FN(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, dstHost, srcDevice, hStream, void *dstHost,
	CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
COPY_FN(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync, dstHost, srcDevice, hStream, void *dstHost,
	CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
COPY_FN(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync, dstDevice, srcDevice, hStream, CUdeviceptr dstDevice,
	CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
COPY_FN(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, dstDevice, srcDevice, hStream, CUdeviceptr dstDevice,
	CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
COPY_FN(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync, dstDevice, srcDevice, hStream, CUdeviceptr dstDevice,
	CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)

/* Sets: the "source" is the destination itself (non-NULL check only). */
#define SET_FN(sym, api, stream, ...) SIM_FN(sym, api, (__VA_ARGS__), do_copy(dstDevice, dstDevice, stream))

SET_FN(cuMemsetD8, cuMemsetD8, NULL, CUdeviceptr dstDevice, unsigned char uc, size_t N)
SET_FN(cuMemsetD8_v2, cuMemsetD8, NULL, CUdeviceptr dstDevice, unsigned char uc, size_t N)
SET_FN(cuMemsetD8_v2_ptds, cuMemsetD8, CU_STREAM_PER_THREAD, CUdeviceptr dstDevice, unsigned char uc, size_t N)
SET_FN(cuMemsetD32, cuMemsetD32, NULL, CUdeviceptr dstDevice, unsigned int ui, size_t N)
SET_FN(cuMemsetD32_v2, cuMemsetD32, NULL, CUdeviceptr dstDevice, unsigned int ui, size_t N)
SET_FN(cuMemsetD32_v2_ptds, cuMemsetD32, CU_STREAM_PER_THREAD, CUdeviceptr dstDevice, unsigned int ui, size_t N)
SET_FN(cuMemsetD8Async, cuMemsetD8Async, hStream, CUdeviceptr dstDevice, unsigned char uc, size_t N,
       CUstream hStream)
SET_FN(cuMemsetD8Async_ptsz, cuMemsetD8Async, hStream, CUdeviceptr dstDevice, unsigned char uc, size_t N,
       CUstream hStream)
SET_FN(cuMemsetD32Async, cuMemsetD32Async, hStream, CUdeviceptr dstDevice, unsigned int ui, size_t N,
       CUstream hStream)
SET_FN(cuMemsetD32Async_ptsz, cuMemsetD32Async, hStream, CUdeviceptr dstDevice, unsigned int ui, size_t N,
       CUstream hStream)

/* ------------------------------------------------------------------------ */
/* Modules and functions                                                     */
/* ------------------------------------------------------------------------ */

static CUresult do_module_load(CUmodule *out, const void *image)
{
	NEED_INIT();
	if (!out || !image)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	struct CUctx_st *c = current_ctx(&rc);
	if (!c)
		return rc;
	LOCK();
	struct CUmod_st *m = module_new();
	if (m) {
		m->ctx = c;
		set_live(&m->live, 1);
	}
	UNLOCK();
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = m;
	return CUDA_SUCCESS;
}

SIM_FN(cuModuleLoadData, cuModuleLoadData, (CUmodule *module, const void *image), do_module_load(module, image))

static CUresult do_module_unload(CUmodule h)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUmod_st *m = module_of(h);
	if (!m || !m->live) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		set_live(&m->live, 0);
		for (unsigned i = 0; i < hw_func; i++)
			if (funcs[i].live && funcs[i].mod == m)
				set_live(&funcs[i].live, 0);
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuModuleUnload, cuModuleUnload, (CUmodule hmod), do_module_unload(hmod))

static CUresult do_module_function(CUfunction *out, CUmodule h, const char *name)
{
	NEED_INIT();
	if (!out || !name)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUmod_st *m = module_of(h);
	struct CUfunc_st *f = NULL;
	if (!m || !m->live) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else if (!*name) {
		rc = CUDA_ERROR_NOT_FOUND;
	} else if (!(f = func_new())) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		f->mod = m;
		set_live(&f->live, 1);
		*out = f;
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuModuleGetFunction, cuModuleGetFunction, (CUfunction *hfunc, CUmodule hmod, const char *name),
	do_module_function(hfunc, hmod, name))

/* The profiler API: the real driver starts and stops its own profiler
 * (CUPTI, nsys); here there is none, and both succeed. */
SIM_FN(cuProfilerStart, cuProfilerStart, (void), CUDA_SUCCESS)
SIM_FN(cuProfilerStop, cuProfilerStop, (void), CUDA_SUCCESS)

/* ------------------------------------------------------------------------ */
/* cuGetProcAddress                                                          */
/* ------------------------------------------------------------------------ */

/*
 * The version table: for each base name, the exported variants and the
 * lowest cudaVersion that gets each (the PFN_<name>_v<N> of cudaTypedefs.h).
 * A lookup of (name, version, flags) returns the row of that name with the
 * highest min_version <= version. With CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 * in flags, a name that has per-thread (ptds) rows is looked up among those
 * only (so cuStreamSynchronize at 6050 with that flag is VERSION_NOT_SUFFICIENT,
 * as on the real driver); other names use their ordinary rows.
 * No row of that name: SYMBOL_NOT_FOUND; rows but all newer than version:
 * VERSION_NOT_SUFFICIENT. As the real 13.0 driver does (checked on the H200):
 * cuGetProcAddress returns CUDA_ERROR_NOT_FOUND and leaves *pfn alone;
 * cuGetProcAddress_v2 returns CUDA_SUCCESS with *pfn NULL and the reason in
 * *symbolStatus (CUDA_ERROR_NOT_FOUND when symbolStatus is NULL).
 */
static const struct proc {
	const char *name;
	int min_version;
	int ptds; /* 1: only with the per-thread-default-stream flag */
	void *fn;
} procs[] = {
#define P(name, ver, fn) {#name, ver, 0, (void *)fn}
#define T(name, ver, fn) {#name, ver, 1, (void *)fn}
	P(cuInit, 2000, cuInit),
	P(cuDriverGetVersion, 2020, cuDriverGetVersion),
	P(cuDeviceGet, 2000, cuDeviceGet),
	P(cuDeviceGetCount, 2000, cuDeviceGetCount),
	P(cuDeviceGetName, 2000, cuDeviceGetName),
	P(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute),
	P(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2), /* the v1 (2000) is not simulated */
	P(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain),
	P(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease),
	P(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2),
	P(cuDevicePrimaryCtxReset, 7000, cuDevicePrimaryCtxReset),
	P(cuDevicePrimaryCtxReset, 11000, cuDevicePrimaryCtxReset_v2),
	P(cuDevicePrimaryCtxSetFlags, 7000, cuDevicePrimaryCtxSetFlags),
	P(cuDevicePrimaryCtxSetFlags, 11000, cuDevicePrimaryCtxSetFlags_v2),
	P(cuDevicePrimaryCtxGetState, 7000, cuDevicePrimaryCtxGetState),
	P(cuCtxCreate, 2000, cuCtxCreate),
	P(cuCtxCreate, 3020, cuCtxCreate_v2),
	P(cuCtxCreate, 11040, cuCtxCreate_v3),
	P(cuCtxCreate, 12050, cuCtxCreate_v4),
	P(cuCtxDestroy, 2000, cuCtxDestroy),
	P(cuCtxDestroy, 4000, cuCtxDestroy_v2),
	P(cuCtxPushCurrent, 2000, cuCtxPushCurrent),
	P(cuCtxPushCurrent, 4000, cuCtxPushCurrent_v2),
	P(cuCtxPopCurrent, 2000, cuCtxPopCurrent),
	P(cuCtxPopCurrent, 4000, cuCtxPopCurrent_v2),
	P(cuCtxSetCurrent, 4000, cuCtxSetCurrent),
	P(cuCtxGetCurrent, 4000, cuCtxGetCurrent),
	P(cuCtxGetDevice, 2000, cuCtxGetDevice),
	P(cuCtxGetDevice, 13000, cuCtxGetDevice_v2),
	P(cuCtxSynchronize, 2000, cuCtxSynchronize),
	P(cuCtxSynchronize, 13000, cuCtxSynchronize_v2),
	P(cuStreamCreate, 2000, cuStreamCreate),
	P(cuStreamCreateWithPriority, 5050, cuStreamCreateWithPriority),
	P(cuStreamDestroy, 2000, cuStreamDestroy),
	P(cuStreamDestroy, 4000, cuStreamDestroy_v2),
	P(cuStreamSynchronize, 2000, cuStreamSynchronize),
	T(cuStreamSynchronize, 7000, cuStreamSynchronize_ptsz),
	P(cuStreamQuery, 2000, cuStreamQuery),
	T(cuStreamQuery, 7000, cuStreamQuery_ptsz),
	P(cuStreamWaitEvent, 3020, cuStreamWaitEvent),
	T(cuStreamWaitEvent, 7000, cuStreamWaitEvent_ptsz),
	P(cuEventCreate, 2000, cuEventCreate),
	P(cuEventDestroy, 2000, cuEventDestroy),
	P(cuEventDestroy, 4000, cuEventDestroy_v2),
	P(cuEventRecord, 2000, cuEventRecord),
	T(cuEventRecord, 7000, cuEventRecord_ptsz),
	P(cuEventRecordWithFlags, 11010, cuEventRecordWithFlags),
	T(cuEventRecordWithFlags, 11010, cuEventRecordWithFlags_ptsz),
	P(cuEventSynchronize, 2000, cuEventSynchronize),
	P(cuEventQuery, 2000, cuEventQuery),
	P(cuEventElapsedTime, 2000, cuEventElapsedTime),
	P(cuEventElapsedTime, 12080, cuEventElapsedTime_v2),
	P(cuMemAlloc, 2000, cuMemAlloc),
	P(cuMemAlloc, 3020, cuMemAlloc_v2),
	P(cuMemFree, 2000, cuMemFree),
	P(cuMemFree, 3020, cuMemFree_v2),
	P(cuMemAllocHost, 2000, cuMemAllocHost),
	P(cuMemAllocHost, 3020, cuMemAllocHost_v2),
	P(cuMemHostAlloc, 2020, cuMemHostAlloc),
	P(cuMemFreeHost, 2000, cuMemFreeHost),
	P(cuMemAllocManaged, 6000, cuMemAllocManaged),
	P(cuMemAllocAsync, 11020, cuMemAllocAsync),
	T(cuMemAllocAsync, 11020, cuMemAllocAsync_ptsz),
	P(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync),
	T(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync_ptsz),
	P(cuMemFreeAsync, 11020, cuMemFreeAsync),
	T(cuMemFreeAsync, 11020, cuMemFreeAsync_ptsz),
	P(cuMemGetInfo, 2000, cuMemGetInfo),
	P(cuMemGetInfo, 3020, cuMemGetInfo_v2),
	P(cuMemPoolCreate, 11020, cuMemPoolCreate),
	P(cuMemPoolDestroy, 11020, cuMemPoolDestroy),
	P(cuMemPoolTrimTo, 11020, cuMemPoolTrimTo),
	P(cuMemPoolSetAttribute, 11020, cuMemPoolSetAttribute),
	P(cuMemPoolGetAttribute, 11020, cuMemPoolGetAttribute),
	P(cuDeviceGetDefaultMemPool, 11020, cuDeviceGetDefaultMemPool),
	P(cuDeviceGetMemPool, 11020, cuDeviceGetMemPool),
	P(cuDeviceSetMemPool, 11020, cuDeviceSetMemPool),
	P(cuGetErrorName, 6000, cuGetErrorName),
	P(cuGetErrorString, 6000, cuGetErrorString),
	P(cuLaunchKernel, 4000, cuLaunchKernel),
	T(cuLaunchKernel, 7000, cuLaunchKernel_ptsz),
	P(cuLaunchKernelEx, 11060, cuLaunchKernelEx),
	T(cuLaunchKernelEx, 11060, cuLaunchKernelEx_ptsz),
	P(cuMemcpy, 4000, cuMemcpy),
	T(cuMemcpy, 7000, cuMemcpy_ptds),
	P(cuMemcpyAsync, 4000, cuMemcpyAsync),
	T(cuMemcpyAsync, 7000, cuMemcpyAsync_ptsz),
	P(cuMemcpyHtoD, 2000, cuMemcpyHtoD),
	P(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2),
	T(cuMemcpyHtoD, 7000, cuMemcpyHtoD_v2_ptds),
	P(cuMemcpyDtoH, 2000, cuMemcpyDtoH),
	P(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2),
	T(cuMemcpyDtoH, 7000, cuMemcpyDtoH_v2_ptds),
	P(cuMemcpyDtoD, 2000, cuMemcpyDtoD),
	P(cuMemcpyDtoD, 3020, cuMemcpyDtoD_v2),
	T(cuMemcpyDtoD, 7000, cuMemcpyDtoD_v2_ptds),
	P(cuMemcpyHtoDAsync, 2000, cuMemcpyHtoDAsync),
	P(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2),
	T(cuMemcpyHtoDAsync, 7000, cuMemcpyHtoDAsync_v2_ptsz),
	P(cuMemcpyDtoHAsync, 2000, cuMemcpyDtoHAsync),
	P(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2),
	T(cuMemcpyDtoHAsync, 7000, cuMemcpyDtoHAsync_v2_ptsz),
	P(cuMemcpyDtoDAsync, 3000, cuMemcpyDtoDAsync),
	P(cuMemcpyDtoDAsync, 3020, cuMemcpyDtoDAsync_v2),
	T(cuMemcpyDtoDAsync, 7000, cuMemcpyDtoDAsync_v2_ptsz),
	P(cuMemsetD8, 2000, cuMemsetD8),
	P(cuMemsetD8, 3020, cuMemsetD8_v2),
	T(cuMemsetD8, 7000, cuMemsetD8_v2_ptds),
	P(cuMemsetD32, 2000, cuMemsetD32),
	P(cuMemsetD32, 3020, cuMemsetD32_v2),
	T(cuMemsetD32, 7000, cuMemsetD32_v2_ptds),
	P(cuMemsetD8Async, 3020, cuMemsetD8Async),
	T(cuMemsetD8Async, 7000, cuMemsetD8Async_ptsz),
	P(cuMemsetD32Async, 3020, cuMemsetD32Async),
	T(cuMemsetD32Async, 7000, cuMemsetD32Async_ptsz),
	P(cuModuleLoadData, 2000, cuModuleLoadData),
	P(cuModuleUnload, 2000, cuModuleUnload),
	P(cuModuleGetFunction, 2000, cuModuleGetFunction),
	P(cuProfilerStart, 4000, cuProfilerStart),
	P(cuProfilerStop, 4000, cuProfilerStop),
	P(cuGetProcAddress, 11030, cuGetProcAddress),
	P(cuGetProcAddress, 12000, cuGetProcAddress_v2),
#undef P
#undef T
};

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
		       CUdriverProcAddressQueryResult *status, int v2)
{
	if (status)
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (!symbol || !pfn ||
	    (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
		return CUDA_ERROR_INVALID_VALUE;
	int want_ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	int has_ptds = 0, known = 0;
	for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++)
		if (procs[i].ptds && strcmp(procs[i].name, symbol) == 0)
			has_ptds = 1;
	const struct proc *best = NULL;
	for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
		const struct proc *p = &procs[i];
		if (strcmp(p->name, symbol) != 0)
			continue;
		known = 1;
		if (p->ptds != (want_ptds && has_ptds) || p->min_version > version)
			continue;
		if (!best || p->min_version > best->min_version)
			best = p;
	}
	if (!best) {
		if (status && known)
			*status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
		if (v2)
			*pfn = NULL;
		return v2 && status ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
	}
	*pfn = best->fn;
	if (status)
		*status = CU_GET_PROC_ADDRESS_SUCCESS;
	return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	unsigned long long t0_ = costs_on ? ticks() : 0;
	return sim_finish(COST_PROC_ADDRESS, t0_, lookup(symbol, pfn, cudaVersion, flags, NULL, 0));
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus)
{
	unsigned long long t0_ = costs_on ? ticks() : 0;
	return sim_finish(COST_PROC_ADDRESS, t0_, lookup(symbol, pfn, cudaVersion, flags, symbolStatus, 1));
}

/* How many pool releases synchronizes and trims have done in this process:
 * for tests (not part of the CUDA API). */
unsigned long long cuprofsim_pool_releases(void)
{
	LOCK();
	unsigned long long n = pool_releases;
	UNLOCK();
	return n;
}
