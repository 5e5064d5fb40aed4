/*
 * cuprof's simulated CUDA driver: a libcuda.so.1 with no GPU behind it.
 *
 * It exports every symbol of CUPROF_SYMBOLS (cuprof_apis.h), each variant as a
 * function of its own (cuStreamSynchronize and cuStreamSynchronize_ptsz have
 * distinct addresses), plus cuGetProcAddress and cuGetProcAddress_v2, and keeps
 * enough state to behave like the real driver for the calls cuprof traces:
 * devices, primary and created contexts with a per-thread context stack,
 * streams, events, allocations, memory pools (with the release threshold and
 * its cost at synchronize), modules and functions, and the families frameworks
 * cut host overhead with: stream capture into graphs, graph instantiation,
 * replay and update, virtual memory (physical handles, reserved ranges,
 * mappings, access), libraries and kernels, module globals, function
 * attributes and occupancy queries. Launches, copies and sets validate their
 * handles and succeed without doing anything (on a capturing stream they
 * become nodes of its graph).
 *
 * Every call busy-waits (never sleeps) for a per-API cost so that traces of
 * simulated runs look like traces of a real GPU machine; the defaults are an
 * H200's (the H200 column of docs/benchmarks.md section 6).
 *
 * Environment:
 *   CUPROF_SIM_DEVICES         number of devices (default 2, 0..64)
 *   CUPROF_SIM_MEM_BYTES       memory per device in bytes (default 80 GiB)
 *   CUPROF_SIM_DRIVER_VERSION  what cuDriverGetVersion says (default 13000)
 *   CUPROF_SIM_COSTS           per-API costs in ns, "cuCtxSynchronize=900,cuStreamCreate=3000";
 *                              names are API base names plus "cuGetProcAddress",
 *                              "poolRelease" (one pool release at a synchronize) and
 *                              "poolGrow" (an allocation that maps new memory into a pool) and
 *                              "syncPending" (what a synchronize adds when work was queued),
 *                              "graphNodeCapture", "graphNodeInstantiate", "graphNodeLaunch",
 *                              "graphNodeUpdate", "graphNodeDestroy" (per node of a graph)
 *   CUPROF_SIM_COST_SCALE      multiplier for all costs (default 1; 0 disables them)
 *   CUPROF_SIM_CALL_COUNTS     a directory: count the calls of every API (one relaxed
 *                              atomic add a call) and write them, "API count" a line, to
 *                              DIR/sim-calls-PID at exit (a new file, 0600; a child after
 *                              fork counts from zero); cuprofsim_call_count reads them
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
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
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

#include "sim_families.h"

/* ------------------------------------------------------------------------ */
/* Configuration and costs                                                   */
/* ------------------------------------------------------------------------ */

/* Cost slots: one per API id (the table's cost column), then the costs of
 * work inside a call that no single API's cost covers. */
enum {
	COST_POOL_RELEASE = CUPROF_API_COUNT, /* one pool release at a synchronize or trim */
	COST_POOL_GROW,                       /* an allocation that must reserve new pool memory */
	COST_SYNC_PENDING,                    /* a synchronize that waits for queued work */
	COST_GRAPH_NODE_CAPTURE,              /* per node, at the end of a capture */
	COST_GRAPH_NODE_INSTANTIATE,          /* per node, at instantiation */
	COST_GRAPH_NODE_LAUNCH,               /* per node, at a graph launch */
	COST_GRAPH_NODE_UPDATE,               /* per node, at cuGraphExecUpdate */
	COST_GRAPH_NODE_DESTROY,              /* per node, at cuGraphDestroy */
	COST_SLOTS
};

/* Default costs in ns: the cost column of the API table (trace/spec/
 * driver_apis.txt: H200 machine B of h200-measurements.md where measured,
 * plausible figures for the rest), then the extra slots. */
static const struct {
	int slot;
	unsigned ns;
} default_costs[] = {
#define SIM_COST(api, ns) {CUPROF_API_##api, ns},
	CUPROF_COSTS(SIM_COST)
#undef SIM_COST
	/* alloc + free + cuCtxSynchronize at threshold 0 measured 101000 against
	 * 1940 at UINT64_MAX on machine B. Traces on the lent H200 (2026-11-29)
	 * split it: the synchronize that releases ~61 us, the next allocation
	 * that maps memory again ~52 us. Here: 55 + 45 us. */
	{COST_POOL_RELEASE, 55000},
	{COST_POOL_GROW, 45000},
	/* alloc + free + cuCtxSynchronize at UINT64_MAX: 1940 against 659 for
	 * alloc + free and 368 for an idle synchronize. */
	{COST_SYNC_PENDING, 900},
	/* Graphs: per node past the first, on top of the call's own cost (the
	 * table's graph costs are the H200's for a graph of one kernel node;
	 * these per-node figures are estimates, not measured). A graph
	 * launch's call cost is one submission, so that replaying n kernels
	 * costs far less than n launches, as graphs are used for. */
	{COST_GRAPH_NODE_CAPTURE, 200},
	{COST_GRAPH_NODE_INSTANTIATE, 1000},
	{COST_GRAPH_NODE_LAUNCH, 150},
	{COST_GRAPH_NODE_UPDATE, 300},
	{COST_GRAPH_NODE_DESTROY, 50},
};

/* Cost slot names for CUPROF_SIM_COSTS: one row per exported symbol (the
 * variants of an API repeat its name), cuGetProcAddress, then the extra
 * slots. */
static const struct {
	int slot;
	const char *name;
} cost_names[] = {
#define SIM_NAME(sym, api, ...) {CUPROF_API_##api, #api},
	CUPROF_SYMBOLS(SIM_NAME)
#undef SIM_NAME
	{CUPROF_API_cuGetProcAddress, "cuGetProcAddress"},
	{COST_POOL_RELEASE, "poolRelease"},
	{COST_POOL_GROW, "poolGrow"},
	{COST_SYNC_PENDING, "syncPending"},
	{COST_GRAPH_NODE_CAPTURE, "graphNodeCapture"},
	{COST_GRAPH_NODE_INSTANTIATE, "graphNodeInstantiate"},
	{COST_GRAPH_NODE_LAUNCH, "graphNodeLaunch"},
	{COST_GRAPH_NODE_UPDATE, "graphNodeUpdate"},
	{COST_GRAPH_NODE_DESTROY, "graphNodeDestroy"},
};

static unsigned long long cost_ticks[COST_SLOTS]; /* cost minus clock overhead, in ticks */
static unsigned long cost_loops[COST_SLOTS];      /* the same as delay-loop iterations (hot calls) */
static double loops_per_ns;
static int costs_on;
static double ticks_per_ns = 1.0;
static int cfg_devices = 2;
static unsigned long long cfg_mem_bytes = 80ULL << 30;
static int cfg_driver_version = 13000;
static char cfg_counts_dir[4096]; /* CUPROF_SIM_CALL_COUNTS */

/* Calls per API (CUPROF_SIM_CALL_COUNTS): every exported call ends in
 * sim_finish, sim_finish_x or sim_hot with its API's slot. */
static unsigned long long call_counts[CUPROF_API_COUNT];
static int counting;

static inline void count_call(int slot)
{
	if (counting && slot >= 0 && slot < CUPROF_API_COUNT)
		__atomic_fetch_add(&call_counts[slot], 1, __ATOMIC_RELAXED);
}


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

/* A child after fork counts its own calls. */
static void counts_forked(void)
{
	memset(call_counts, 0, sizeof call_counts);
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
	if ((s = getenv("CUPROF_SIM_CALL_COUNTS")) && *s) {
		if (strlen(s) < sizeof cfg_counts_dir - 32) {
			strcpy(cfg_counts_dir, s);
			pthread_atfork(NULL, NULL, counts_forked);
			counting = 1;
		} else {
			complain("cuprof sim: CUPROF_SIM_CALL_COUNTS %s is too long: calls not counted\n", s);
		}
	}

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
	count_call(slot);
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
	count_call(slot);
	if (costs_on && cost_ticks[slot])
		spin_until(t0 + cost_ticks[slot]);
	return rc;
}

static CUresult sim_finish_x(int slot, unsigned long long t0, CUresult rc)
{
	count_call(slot);
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
 * contexts and 0..devices-1 of the pool slab the default pools. One struct
 * slab (below) per kind of object holds its cursor and high-water mark, and
 * the same code looks handles up, makes, interns and scans entries of every
 * kind; SLAB_TYPE gives each kind its typed names (event_of, live_event,
 * event_add, event_make).
 */
#define MAX_CTX 1024
#define MAX_STREAMS 65536
#define MAX_EVENTS 65536
#define MAX_POOLS 1024
#define MAX_MODULES 1024
#define MAX_FUNCS 8192
#define NAME_MAX_LEN 128 /* a function's or kernel's name, with its NUL */
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
	unsigned long long id; /* cuCtxGetId's, given at the first query */
};

struct CUstream_st {
	int live;
	int freed; /* a cuMemFreeAsync was ordered on it: destroying it releases pool memory */
	unsigned flags;
	int priority;
	struct CUctx_st *ctx;
	/* stream capture: CU_STREAM_CAPTURE_STATUS_*, its mode, id and graph */
	int cap_status, cap_mode;
	unsigned long long cap_id;
	struct CUgraph_st *cap_graph;
	unsigned long long id; /* cuStreamGetId's, given at the first query */
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
	unsigned char access[MAX_DEVICES]; /* cuMemPoolSetAccess's flags per peer device */
};

struct CUmod_st {
	int live;
	struct CUctx_st *ctx;
};

struct CUfunc_st {
	int live;
	struct CUmod_st *mod;     /* cuModuleGetFunction's, or NULL */
	struct CUkern_st *kernel; /* cuKernelGetFunction's: the kernel loaded into ctx */
	struct CUctx_st *ctx;
	char name[NAME_MAX_LEN];  /* cuModuleGetFunction's name */
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
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static __thread struct CUctx_st *tls_stack[CTX_STACK];
static __thread int tls_depth;

#define LOCK() pthread_mutex_lock(&mu)
#define UNLOCK() pthread_mutex_unlock(&mu)

static inline int is_init(void) { return __atomic_load_n(&initialized, __ATOMIC_ACQUIRE); }
static inline int alive(const int *live) { return __atomic_load_n(live, __ATOMIC_ACQUIRE); }
static inline void set_live(int *live, int v) { __atomic_store_n(live, v, __ATOMIC_RELEASE); }

/* A slab: the fixed array of one kind of object, and where its next free
 * entry is searched for. Every object struct starts with its int live. */
struct slab {
	void *entries;
	size_t size;      /* of one entry */
	unsigned n;       /* entries */
	unsigned first;   /* entries below it are never handed out (primary contexts, default pools) */
	unsigned cursor;  /* where the search for a free entry starts */
	unsigned hw;      /* one past the highest entry ever handed out: bounds the scans */
	int (*held)(const void *e); /* where set: whether an entry that is not live is still taken */
};
#define SLAB_OVER(array) {array, sizeof array[0], sizeof array / sizeof array[0], 0, 0, 0, NULL}

static struct slab ctx_slab = SLAB_OVER(ctxs), stream_slab = SLAB_OVER(streams), event_slab = SLAB_OVER(events),
		   pool_slab = SLAB_OVER(pools), module_slab = SLAB_OVER(modules), func_slab = SLAB_OVER(funcs);

/* The entry handle h names, or NULL when h is not one of s's entries. */
static inline void *slab_entry(const struct slab *s, const void *h)
{
	uintptr_t p = (uintptr_t)h, b = (uintptr_t)s->entries;
	if (p < b || p >= b + (uintptr_t)s->n * s->size || (p - b) % s->size)
		return NULL;
	return (void *)h;
}

/* The live entry handle h names, or NULL. Lock held or not. */
static inline void *slab_live(const struct slab *s, const void *h)
{
	int *e = slab_entry(s, h);
	return e && alive(e) ? e : NULL;
}

/* The next free entry from the cursor, taken (the cursor and the
 * high-water mark move past it) but not cleared; NULL when s is full. Lock
 * held. */
static void *slab_claim(struct slab *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		unsigned k = (s->cursor + i) % s->n;
		char *e = (char *)s->entries + (size_t)k * s->size;
		if (k < s->first || *(int *)e || (s->held && s->held(e)))
			continue;
		s->cursor = k + 1;
		if (k + 1 > s->hw)
			s->hw = k + 1;
		return e;
	}
	return NULL;
}

/* A new live entry of s, a copy of *tmpl (whose live is 0); NULL when s is
 * full. Lock held. */
static void *slab_add(struct slab *s, const void *tmpl)
{
	int *e = slab_claim(s);
	if (e) {
		memcpy(e, tmpl, s->size);
		set_live(e, 1);
	}
	return e;
}

/* The live entry of s that same() finds equal to *tmpl, else a new one made
 * from *tmpl: lookups that give the same handle for the same key. NULL when
 * s is full. Lock held. */
static void *slab_intern(struct slab *s, const void *tmpl, int (*same)(const void *e, const void *tmpl))
{
	for (unsigned i = 0; i < s->hw; i++) {
		int *e = (int *)((char *)s->entries + (size_t)i * s->size);
		if (*e && same(e, tmpl))
			return e;
	}
	return slab_add(s, tmpl);
}

/* A call's answer for a new handle e: e in *out, or CUDA_ERROR_OUT_OF_MEMORY
 * when its slab was full (e NULL). e is evaluated twice: pass a variable. */
#define HAND_OUT(out, e) ((e) ? (*(out) = (e), CUDA_SUCCESS) : CUDA_ERROR_OUT_OF_MEMORY)

/* A slab's typed face: name_of(h), the entry h names or NULL; live_name(h),
 * the same if live (lock held or not); name_add(tmpl), slab_add (lock
 * held); name_make(out, tmpl), slab_add under the lock with its answer as
 * by HAND_OUT. */
#define SLAB_TYPE(name, type, slab)                                                                 \
	static inline type *name##_of(const void *h) { return slab_entry(&slab, h); }               \
	static inline type *live_##name(const void *h) { return slab_live(&slab, h); }              \
	static inline type *name##_add(const type *tmpl) { return slab_add(&slab, tmpl); }          \
	static inline CUresult name##_make(type **out, const type *tmpl)                            \
	{                                                                                           \
		LOCK();                                                                             \
		type *e = slab_add(&slab, tmpl);                                                    \
		UNLOCK();                                                                           \
		return HAND_OUT(out, e);                                                            \
	}
SLAB_TYPE(ctx, struct CUctx_st, ctx_slab)
SLAB_TYPE(stream, struct CUstream_st, stream_slab)
SLAB_TYPE(event, struct CUevent_st, event_slab)
SLAB_TYPE(pool, struct CUmemPoolHandle_st, pool_slab)
SLAB_TYPE(module, struct CUmod_st, module_slab)
SLAB_TYPE(func, struct CUfunc_st, func_slab)

/* Runs the statement that follows for every live entry e, of type, of
 * slab s (below its high-water mark); break ends the loop. */
#define EACH_LIVE(type, e, s)                                                                       \
	for (type *e = (s).entries, *e##_end_ = e + (s).hw; e < e##_end_; e++)                      \
		if (!e->live) {                                                                     \
		} else

/* A new pool: a cleared entry that keeps the generation of the slot, one
 * up, so that allocations of the pool that was there before can tell. Lock
 * held. */
static struct CUmemPoolHandle_st *pool_new(void)
{
	struct CUmemPoolHandle_st *p = slab_claim(&pool_slab);
	if (p) {
		unsigned gen = p->gen + 1;
		memset(p, 0, sizeof *p);
		p->gen = gen;
	}
	return p;
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

enum alloc_kind { ALLOC_DEVICE = 1, ALLOC_POOL, ALLOC_HOST, ALLOC_MANAGED, ALLOC_MAPPING };

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
	struct phys *phys; /* a mapping's physical allocation */
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
	unsigned n = pool_slab.hw > (unsigned)ndevices ? pool_slab.hw : (unsigned)ndevices;
	for (unsigned i = 0; i < n; i++) {
		struct CUmemPoolHandle_st *p = &pools[i];
		if (p->live && p->dev == dev && p->reserved - p->taken > p->threshold)
			pool_release_to(p, p->threshold);
	}
}

/* Whether dev has bytes more of memory to give. */
static int device_has(int dev, unsigned long long bytes)
{
	struct device *d = &devices[dev];
	return d->used + bytes <= cfg_mem_bytes && d->used + bytes >= d->used;
}

static CUresult pool_alloc(struct CUmemPoolHandle_st *p, struct CUctx_st *ctx, size_t bytes, CUdeviceptr *out)
{
	unsigned long long size = round_up(bytes, ALLOC_ALIGN);
	struct device *d = &devices[p->dev];
	if (p->reserved - p->taken < size) {
		unsigned long long grow = round_up(size - (p->reserved - p->taken), POOL_GRANULE);
		if (!device_has(p->dev, grow))
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

/* Declares c, the current context, or returns current_ctx's error from
 * the caller when there is none usable. */
#define NEED_CURRENT(c)                                                                             \
	struct CUctx_st *c;                                                                         \
	do {                                                                                        \
		CUresult rc_;                                                                       \
		if (!(c = current_ctx(&rc_)))                                                       \
			return rc_;                                                                 \
	} while (0)

static void ctx_teardown_families(struct CUctx_st *c);
static CUresult capture_forbids_sync(struct CUstream_st *s, struct CUctx_st *ctx);
static int captured(CUstream h, int kind, CUresult *rc);
static void capture_end(struct CUstream_st *s, int keep);
enum node_kind { NODE_KERNEL = 1, NODE_COPY, NODE_EVENT, NODE_GRAPH };

/* Destroys everything ctx owns. Lock held. */
static void ctx_teardown(struct CUctx_st *c)
{
	EACH_LIVE(struct CUstream_st, s, stream_slab)
		if (s->ctx == c)
			set_live(&s->live, 0);
	EACH_LIVE(struct CUevent_st, e, event_slab)
		if (e->ctx == c)
			set_live(&e->live, 0);
	EACH_LIVE(struct CUmod_st, m, module_slab)
		if (m->ctx == c)
			set_live(&m->live, 0);
	EACH_LIVE(struct CUfunc_st, f, func_slab)
		if (f->mod ? !f->mod->live : f->ctx == c)
			set_live(&f->live, 0);
	ctx_teardown_families(c);
	for (size_t i = 0; i < amap_cap;) {
		if (amap[i].addr && amap[i].ctx == c && amap[i].kind != ALLOC_HOST && amap[i].kind != ALLOC_MAPPING)
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
	struct CUstream_st *s = live_stream(h);
	if (!s) {
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
		ctx_slab.first = ctx_slab.cursor = (unsigned)ndevices;
		pool_slab.first = pool_slab.cursor = (unsigned)ndevices;
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

/* The first device's PCI bus; device n is on bus SIM_PCI_BUS0 + n. */
#define SIM_PCI_BUS0 0x19

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
	case 9: return 65536;     /* TOTAL_CONSTANT_MEMORY */
	case 10: return 32;       /* WARP_SIZE */
	case 11: return 2147483647; /* MAX_PITCH */
	case 12: return 65536;    /* MAX_REGISTERS_PER_BLOCK */
	case 13: return 1980000;  /* CLOCK_RATE (kHz) */
	case 14: return 512;      /* TEXTURE_ALIGNMENT */
	case 15: return 1;        /* GPU_OVERLAP */
	case 16: return 132;      /* MULTIPROCESSOR_COUNT */
	case 19: return 1;        /* CAN_MAP_HOST_MEMORY */
	case 31: return 1;        /* CONCURRENT_KERNELS */
	case 32: return 1;        /* ECC_ENABLED */
	case 36: return 2619000;  /* MEMORY_CLOCK_RATE */
	case 37: return 6144;     /* GLOBAL_MEMORY_BUS_WIDTH */
	case 38: return 52428800; /* L2_CACHE_SIZE */
	case 39: return 2048;     /* MAX_THREADS_PER_MULTIPROCESSOR */
	case 40: return 3;        /* ASYNC_ENGINE_COUNT */
	case 41: return 1;        /* UNIFIED_ADDRESSING */
	case 75: return 9;        /* COMPUTE_CAPABILITY_MAJOR */
	case 76: return 0;        /* COMPUTE_CAPABILITY_MINOR */
	case 78: return 1;        /* STREAM_PRIORITIES_SUPPORTED */
	case 79: return 1;        /* GLOBAL_L1_CACHE_SUPPORTED */
	case 80: return 1;        /* LOCAL_L1_CACHE_SUPPORTED */
	case 81: return 233472;   /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
	case 82: return 65536;    /* MAX_REGISTERS_PER_MULTIPROCESSOR */
	case 83: return 1;        /* MANAGED_MEMORY */
	case 89: return 1;        /* CONCURRENT_MANAGED_ACCESS */
	case 90: return 1;        /* COMPUTE_PREEMPTION_SUPPORTED */
	case 95: return 1;        /* COOPERATIVE_LAUNCH */
	case 97: return 232448;   /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
	case 102: return 1;       /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED (cuMemCreate/Map are simulated) */
	case 106: return 32;      /* MAX_BLOCKS_PER_MULTIPROCESSOR */
	case 115: return 1;       /* MEMORY_POOLS_SUPPORTED */
	case 120: return 1;       /* CLUSTER_LAUNCH */
	/* 0 on purpose: 103 HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED and 119
	 * MEMPOOL_SUPPORTED_HANDLE_TYPES (no IPC or memory export here, so
	 * libraries skip those paths as on a driver without them); 34 and 50,
	 * the PCI device and domain ids. 33, the PCI bus id, is per device
	 * (do_device_attribute). */
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
	*pi = (int)attrib == 33 ? SIM_PCI_BUS0 + dev : attribute_value((int)attrib); /* 33: PCI_BUS_ID */
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
	CUresult rc = ctx_make(pctx, &(struct CUctx_st){.dev = dev, .flags = flags});
	if (rc == CUDA_SUCCESS)
		tls_stack[tls_depth++] = *pctx;
	return rc;
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

/* The context ctx names (NULL: the current one), checked: NULL and *rc set
 * when it is not usable. Lock-free. */
static struct CUctx_st *ctx_or_current(CUcontext ctx, CUresult *rc)
{
	if (!ctx)
		return current_ctx(rc);
	struct CUctx_st *c = live_ctx(ctx);
	if (!c)
		*rc = CUDA_ERROR_INVALID_CONTEXT;
	return c;
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
	CUresult rc = CUDA_SUCCESS;
	struct CUctx_st *c = ctx_or_current(ctx, &rc);
	if (!c)
		return rc;
	*device = c->dev;
	return CUDA_SUCCESS;
}

HOT_FN(cuCtxGetDevice, cuCtxGetDevice, (CUdevice *device), do_ctx_get_device(device, NULL))
HOT_FN(cuCtxGetDevice_v2, cuCtxGetDevice, (CUdevice *device, CUcontext ctx), do_ctx_get_device(device, ctx))

static CUresult do_ctx_sync(CUcontext ctx)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	struct CUctx_st *c = ctx_or_current(ctx, &rc);
	if (!c)
		return rc;
	LOCK();
	rc = capture_forbids_sync(NULL, c);
	if (rc == CUDA_SUCCESS)
		sync_device(c->dev);
	UNLOCK();
	return rc;
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
	NEED_CURRENT(c);
	/* Priorities range from 0 (least) to -5 (greatest), as on the H200;
	 * values outside are clamped. */
	if (priority > 0)
		priority = 0;
	if (priority < -5)
		priority = -5;
	return stream_make(ph, &(struct CUstream_st){.flags = flags, .priority = priority, .ctx = c});
}

SIM_FN(cuStreamCreate, cuStreamCreate, (CUstream *phStream, unsigned int Flags), do_stream_create(phStream, Flags, 0))
SIM_FN(cuStreamCreateWithPriority, cuStreamCreateWithPriority, (CUstream *phStream, unsigned int flags, int priority),
	do_stream_create(phStream, flags, priority))

static CUresult do_stream_destroy(CUstream h)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUstream_st *s = live_stream(h);
	if (!s) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		/* Destroying a stream waits for its work: when frees were ordered
		 * on it, its device's pools give back memory above their release
		 * threshold, as at a synchronize (seen on the H200: ~60 us). */
		if (s->freed && alive(&s->ctx->live))
			sync_device(s->ctx->dev);
		if (s->cap_status != CU_STREAM_CAPTURE_STATUS_NONE)
			capture_end(s, 0); /* its capture is abandoned */
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
	if (c && (rc = capture_forbids_sync(stream_of(h), NULL)) == CUDA_SUCCESS)
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
	if (stream_ctx(h, &rc) && !live_event(e))
		rc = CUDA_ERROR_INVALID_HANDLE;
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
	NEED_CURRENT(c);
	return event_make(ph, &(struct CUevent_st){.flags = flags, .ctx = c});
}

SIM_FN(cuEventCreate, cuEventCreate, (CUevent *phEvent, unsigned int Flags), do_event_create(phEvent, Flags))

static CUresult do_event_destroy(CUevent h)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUevent_st *e = live_event(h);
	if (!e)
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
	struct CUevent_st *e = live_event(h);
	if (!e) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else if (stream_ctx(s, &rc) && captured(s, NODE_EVENT, &rc) == 0) {
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
	struct CUevent_st *e = live_event(h);
	if (!e)
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
	struct CUevent_st *a = live_event(hs), *b = live_event(he);
	if (!a || !b || !a->recorded || !b->recorded ||

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
	NEED_CURRENT(c);
	CUresult rc = CUDA_SUCCESS;
	unsigned long long size = round_up(bytes, ALLOC_ALIGN);
	LOCK();
	if (!device_has(c->dev, size)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		struct alloc rec = {.addr = device_va(c->dev, size), .size = size, .req = bytes, .ctx = c, .dev = c->dev,
				    .kind = ALLOC_DEVICE};
		if (amap_put(&rec) < 0) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			devices[c->dev].used += size;
			*dptr = rec.addr;
		}
	}
	UNLOCK();
	return rc;
}

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
	if (!a || a->kind == ALLOC_HOST || a->kind == ALLOC_MAPPING)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		alloc_release(a);
	UNLOCK();
	return rc;
}

SIM_FN(cuMemFree_v2, cuMemFree, (CUdeviceptr dptr), do_mem_free(dptr))

static CUresult do_host_alloc(void **pp, size_t bytes, unsigned flags)
{
	NEED_INIT();
	if (!pp || !bytes || (flags & ~0xfu))
		return CUDA_ERROR_INVALID_VALUE;
	NEED_CURRENT(c);
	CUresult rc = CUDA_SUCCESS;
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
	NEED_CURRENT(c);
	CUresult rc = CUDA_SUCCESS;
	unsigned long long size = round_up(bytes, ALLOC_ALIGN);
	LOCK();
	if (!device_has(c->dev, size)) {
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
		devices[c->dev].used += size;
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
			p = live_pool(pool);
			if (!p)
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
		if (!a || a->kind == ALLOC_HOST || a->kind == ALLOC_MAPPING) {
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
	NEED_CURRENT(c);
	LOCK();
	*free_bytes = (size_t)(cfg_mem_bytes - devices[c->dev].used);
	*total = (size_t)cfg_mem_bytes;
	UNLOCK();
	return CUDA_SUCCESS;
}

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
	return HAND_OUT(out, p);
}

SIM_FN(cuMemPoolCreate, cuMemPoolCreate, (CUmemoryPool *pool, const CUmemPoolProps *poolProps),
	do_pool_create(pool, poolProps))

static CUresult do_pool_destroy(CUmemoryPool pool)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUmemPoolHandle_st *p = live_pool(pool);
	if (!p || p - pools < ndevices) { /* not a pool, or a default one */
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
	struct CUmemPoolHandle_st *p = live_pool(pool);
	if (!p)
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
	struct CUmemPoolHandle_st *p = live_pool(pool);
	if (!p) {
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
	struct CUmemPoolHandle_st *p = live_pool(pool);
	if (!p)
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
	{901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
	{902, "CUDA_ERROR_STREAM_CAPTURE_MERGE", "operation would result in a merge of separate capture sequences"},
	{903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "capture was not ended in the same stream as it began"},
	{904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "capturing stream has unjoined work"},
	{905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", "dependency created on uncaptured work in another stream"},
	{906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "operation would make the legacy stream depend on a capturing blocking stream"},
	{907, "CUDA_ERROR_CAPTURED_EVENT", "operation not permitted on an event last recorded in a capturing stream"},
	{908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "attempt to terminate a thread-local capture sequence from another thread"},
	{910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"},
	{999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static int error_index(CUresult e)
{
	for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
		if (errors[i].code == e)
			return (int)i;
	return -1;
}

/* The name (text 0) or text of error in *p: NULL and CUDA_ERROR_INVALID_VALUE
 * for a code the table does not have. */
static CUresult error_words(CUresult error, const char **p, int text)
{
	int i = error_index(error);
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	*p = i < 0 ? NULL : text ? errors[i].text : errors[i].name;
	return i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

HOT_FN(cuGetErrorName, cuGetErrorName, (CUresult error, const char **pStr), error_words(error, pStr, 0))
HOT_FN(cuGetErrorString, cuGetErrorString, (CUresult error, const char **pStr), error_words(error, pStr, 1))


/* ------------------------------------------------------------------------ */
/* Stream capture and graphs                                                 */
/* ------------------------------------------------------------------------ */

/*
 * A capture records the stream-ordered work queued on its stream (launches,
 * copies, sets, event records, graph launches) as nodes of a graph instead
 * of running it. cuStreamEndCapture hands the graph over. A synchronize of a
 * capturing stream, or of its context while a capture in global mode is
 * active, fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates
 * the capture, as on the real driver. Graphs hold their nodes in a list; an
 * executable graph keeps the kinds of its graph's nodes at instantiation,
 * against which cuGraphExecUpdate checks the topology.
 */
#define MAX_GRAPHS 4096
#define MAX_EXECS 4096
#define MAX_NODES 65536

struct CUgraphNode_st {
	int live;
	int kind;
	struct CUgraph_st *graph;
	struct CUgraphNode_st *next;
};

struct CUgraph_st {
	int live;
	int captured; /* made by a capture: still owned by it while it runs */
	unsigned nodes;
	struct CUgraphNode_st *first, *last;
};

struct CUgraphExec_st {
	int live;
	struct CUctx_st *ctx;
	unsigned nodes;
	unsigned char *kinds; /* the node kinds at instantiation, in order */
};

static struct CUgraph_st graphs[MAX_GRAPHS];
static struct CUgraphExec_st execs[MAX_EXECS];
static struct CUgraphNode_st nodes[MAX_NODES];

/* The nodes a graph has past its first: what its per-node costs count (the
 * table's cost of a graph call is that of a graph of one node). */
static inline unsigned long long nodes_past_first(unsigned n)
{
	return n > 1 ? n - 1 : 0;
}
static unsigned long long capture_ids;
static int global_captures; /* captures in global mode now active */
static __thread int tls_capture_mode; /* CU_STREAM_CAPTURE_MODE_*: this thread's */

static struct slab graph_slab = SLAB_OVER(graphs), exec_slab = SLAB_OVER(execs), node_slab = SLAB_OVER(nodes);
SLAB_TYPE(graph, struct CUgraph_st, graph_slab)
SLAB_TYPE(exec, struct CUgraphExec_st, exec_slab)
SLAB_TYPE(node, struct CUgraphNode_st, node_slab)

/* Appends a node of kind to g. Lock held. */
static CUresult graph_append(struct CUgraph_st *g, int kind)
{
	struct CUgraphNode_st *n = node_add(&(struct CUgraphNode_st){.kind = kind, .graph = g});
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (g->last)
		g->last->next = n;
	else
		g->first = n;
	g->last = n;
	g->nodes++;
	return CUDA_SUCCESS;
}

static void graph_free(struct CUgraph_st *g)
{
	for (struct CUgraphNode_st *n = g->first, *next; n; n = next) {
		next = n->next;
		n->live = 0;
	}
	g->first = g->last = NULL;
	g->nodes = 0;
	set_live(&g->live, 0);
}

static void exec_free(struct CUgraphExec_st *x)
{
	free(x->kinds);
	x->kinds = NULL;
	set_live(&x->live, 0);
}

/* Ends s's capture (status back to none), dropping its graph unless keep. */
static void capture_end(struct CUstream_st *s, int keep)
{
	if (s->cap_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && global_captures > 0)
		global_captures--;
	if (!keep && s->cap_graph)
		graph_free(s->cap_graph);
	s->cap_status = CU_STREAM_CAPTURE_STATUS_NONE;
	s->cap_graph = NULL;
}

/*
 * Stream-ordered work on h: recorded as a node of kind when h is capturing
 * (1), else nothing to do here (0); a negative value is an error to return:
 * work on an invalidated capture fails with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
 * Lock held.
 */
static int captured(CUstream h, int kind, CUresult *rc)
{
	struct CUstream_st *s = live_stream(h);
	if (!s || s->cap_status == CU_STREAM_CAPTURE_STATUS_NONE)
		return 0;
	if (s->cap_status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
		*rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		return -1;
	}
	if ((*rc = graph_append(s->cap_graph, kind)) != CUDA_SUCCESS)
		return -1;
	return 1;
}

/* A synchronize of s (NULL: of a context) while captures run: the capture of
 * s, or with a context every capture in global mode, is invalidated and the
 * call fails. Lock held. */
static CUresult capture_forbids_sync(struct CUstream_st *s, struct CUctx_st *ctx)
{
	if (s && s->cap_status != CU_STREAM_CAPTURE_STATUS_NONE) {
		s->cap_status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	if (!s && global_captures > 0) {
		EACH_LIVE(struct CUstream_st, c, stream_slab)
			if (c->ctx == ctx && c->cap_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
			    c->cap_status == CU_STREAM_CAPTURE_STATUS_ACTIVE)
				c->cap_status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	return CUDA_SUCCESS;
}

/* The capturing stream h, checked: its state, or NULL with *rc set. */
static struct CUstream_st *capture_stream(CUstream h, CUresult *rc)
{
	if (h == NULL || h == CU_STREAM_LEGACY) {
		*rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream cannot be captured */
		return NULL;
	}
	if (h == CU_STREAM_PER_THREAD) {
		*rc = CUDA_ERROR_NOT_SUPPORTED; /* not simulated */
		return NULL;
	}
	if (!stream_ctx(h, rc))
		return NULL;
	return stream_of(h);
}

static CUresult do_begin_capture(CUstream h, int mode)
{
	NEED_INIT();
	if (mode < CU_STREAM_CAPTURE_MODE_GLOBAL || mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUstream_st *s = capture_stream(h, &rc);
	if (s && s->cap_status != CU_STREAM_CAPTURE_STATUS_NONE) {
		rc = CUDA_ERROR_ILLEGAL_STATE;
	} else if (s) {
		struct CUgraph_st *g = graph_add(&(struct CUgraph_st){.captured = 1});
		if (!g) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			s->cap_graph = g;
			s->cap_status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
			s->cap_mode = mode;
			s->cap_id = ++capture_ids;
			if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
				global_captures++;
		}
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuStreamBeginCapture, cuStreamBeginCapture, (CUstream hStream),
       do_begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL))
SIM_FN(cuStreamBeginCapture_ptsz, cuStreamBeginCapture, (CUstream hStream),
       do_begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL))
SIM_FN(cuStreamBeginCapture_v2, cuStreamBeginCapture, (CUstream hStream, CUstreamCaptureMode mode),
       do_begin_capture(hStream, (int)mode))
SIM_FN(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, (CUstream hStream, CUstreamCaptureMode mode),
       do_begin_capture(hStream, (int)mode))

static CUresult do_end_capture(CUstream h, CUgraph *out)
{
	NEED_INIT();
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUstream_st *s = capture_stream(h, &rc);
	if (s && s->cap_status == CU_STREAM_CAPTURE_STATUS_NONE) {
		rc = CUDA_ERROR_ILLEGAL_STATE;
	} else if (s && s->cap_status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
		capture_end(s, 0);
		*out = NULL;
		rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	} else if (s) {
		struct CUgraph_st *g = s->cap_graph;
		/* the end costs per node captured, like instantiation does */
		tls_extra += nodes_past_first(g->nodes) * cost_ticks[COST_GRAPH_NODE_CAPTURE];
		g->captured = 0;
		capture_end(s, 1);
		*out = g;
	}
	UNLOCK();
	return rc;
}

SIM_FN_X(cuStreamEndCapture, cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph), do_end_capture(hStream, phGraph))
SIM_FN_X(cuStreamEndCapture_ptsz, cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph),
	 do_end_capture(hStream, phGraph))

static CUresult do_capture_info(CUstream h, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
				const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps)
{
	NEED_INIT();
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
		/* the default streams are never captured here */
		*status = CU_STREAM_CAPTURE_STATUS_NONE;
		return CUDA_SUCCESS;
	}
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUstream_st *s = stream_ctx(h, &rc) ? stream_of(h) : NULL;
	if (s) {
		*status = (CUstreamCaptureStatus)s->cap_status;
		if (s->cap_status != CU_STREAM_CAPTURE_STATUS_NONE) {
			if (id)
				*id = s->cap_id;
			if (graph)
				*graph = s->cap_graph;
			if (deps)
				*deps = NULL;
			if (edges)
				*edges = NULL;
			if (ndeps)
				*ndeps = 0;
		}
	}
	UNLOCK();
	return rc;
}

HOT_FN(cuStreamIsCapturing, cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus),
	do_capture_info(hStream, captureStatus, NULL, NULL, NULL, NULL, NULL))
HOT_FN(cuStreamIsCapturing_ptsz, cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus),
	do_capture_info(hStream, captureStatus, NULL, NULL, NULL, NULL, NULL))
HOT_FN(cuStreamGetCaptureInfo, cuStreamGetCaptureInfo,
	(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out),
	do_capture_info(hStream, captureStatus_out, id_out, NULL, NULL, NULL, NULL))
HOT_FN(cuStreamGetCaptureInfo_ptsz, cuStreamGetCaptureInfo,
	(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out),
	do_capture_info(hStream, captureStatus_out, id_out, NULL, NULL, NULL, NULL))
HOT_FN(cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo,
	(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out,
	 const CUgraphNode **dependencies_out, size_t *numDependencies_out),
	do_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, NULL, numDependencies_out))
HOT_FN(cuStreamGetCaptureInfo_v2_ptsz, cuStreamGetCaptureInfo,
	(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out,
	 const CUgraphNode **dependencies_out, size_t *numDependencies_out),
	do_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, NULL, numDependencies_out))
HOT_FN(cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo,
	(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out,
	 const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out),
	do_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
			numDependencies_out))
HOT_FN(cuStreamGetCaptureInfo_v3_ptsz, cuStreamGetCaptureInfo,
	(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out,
	 const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out),
	do_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
			numDependencies_out))

static CUresult do_exchange_mode(CUstreamCaptureMode *mode)
{
	if (!mode || (int)*mode < CU_STREAM_CAPTURE_MODE_GLOBAL || (int)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	int old = tls_capture_mode;
	tls_capture_mode = (int)*mode;
	*mode = (CUstreamCaptureMode)old;
	return CUDA_SUCCESS;
}

HOT_FN(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode *mode),
	do_exchange_mode(mode))

static CUresult do_graph_create(CUgraph *out, unsigned flags)
{
	NEED_INIT();
	if (!out || flags)
		return CUDA_ERROR_INVALID_VALUE;
	return graph_make(out, &(struct CUgraph_st){0});
}

SIM_FN(cuGraphCreate, cuGraphCreate, (CUgraph *phGraph, unsigned int flags), do_graph_create(phGraph, flags))

/* A live graph no capture is building, or NULL. Lock held. */
static struct CUgraph_st *usable_graph(CUgraph h)
{
	struct CUgraph_st *g = live_graph(h);
	return g && !g->captured ? g : NULL;
}

static CUresult do_graph_destroy(CUgraph h)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUgraph_st *g = usable_graph(h);
	if (!g) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		tls_extra += nodes_past_first(g->nodes) * cost_ticks[COST_GRAPH_NODE_DESTROY];
		graph_free(g);
	}
	UNLOCK();
	return rc;
}

SIM_FN_X(cuGraphDestroy, cuGraphDestroy, (CUgraph hGraph), do_graph_destroy(hGraph))

static CUresult do_graph_nodes(CUgraph h, CUgraphNode *out, size_t *n)
{
	NEED_INIT();
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUgraph_st *g = usable_graph(h);
	if (!g) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!out) {
		*n = g->nodes;
	} else {
		size_t i = 0;
		for (struct CUgraphNode_st *nd = g->first; nd && i < *n; nd = nd->next)
			out[i++] = nd;
		for (size_t j = i; j < *n; j++)
			out[j] = NULL;
		*n = i;
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuGraphGetNodes, cuGraphGetNodes, (CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes),
       do_graph_nodes(hGraph, nodes, numNodes))

/* Instantiation costs per node (COST_GRAPH_NODE_INSTANTIATE). */
static CUresult do_instantiate(CUgraphExec *out, CUgraph h, unsigned long long flags)
{
	NEED_INIT();
	if (!out || (flags & ~0xfULL))
		return CUDA_ERROR_INVALID_VALUE;
	NEED_CURRENT(c);
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUgraph_st *g = usable_graph(h);
	struct CUgraphExec_st *x = NULL;
	unsigned char *kinds = NULL;
	if (!g) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if ((g->nodes && !(kinds = malloc(g->nodes))) ||
		   !(x = exec_add(&(struct CUgraphExec_st){.ctx = c, .nodes = g->nodes, .kinds = kinds}))) {
		free(kinds);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		unsigned i = 0;
		for (struct CUgraphNode_st *nd = g->first; nd; nd = nd->next)
			kinds[i++] = (unsigned char)nd->kind;
		tls_extra += nodes_past_first(g->nodes) * cost_ticks[COST_GRAPH_NODE_INSTANTIATE];
		*out = x;
	}
	UNLOCK();
	return rc;
}

SIM_FN_X(cuGraphInstantiate, cuGraphInstantiate,
	 (CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize),
	 do_instantiate(phGraphExec, hGraph, 0))
SIM_FN_X(cuGraphInstantiate_v2, cuGraphInstantiate,
	 (CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize),
	 do_instantiate(phGraphExec, hGraph, 0))
SIM_FN_X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags,
	 (CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags), do_instantiate(phGraphExec, hGraph, flags))

/* A launch runs every node: it costs per node (COST_GRAPH_NODE_LAUNCH) on top
 * of the call's own cost. Captured into another graph, it is one node. */
static CUresult do_graph_launch(CUgraphExec hx, CUstream h)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUgraphExec_st *x = live_exec(hx);
	struct CUctx_st *c = stream_ctx(h, &rc);
	if (c && !x) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (c && captured(h, NODE_GRAPH, &rc) == 0) {
		devices[c->dev].pending = 1;
		tls_extra += nodes_past_first(x->nodes) * cost_ticks[COST_GRAPH_NODE_LAUNCH];
	}
	UNLOCK();
	return rc;
}

SIM_FN_X(cuGraphLaunch, cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream), do_graph_launch(hGraphExec, hStream))
SIM_FN_X(cuGraphLaunch_ptsz, cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream),
	 do_graph_launch(hGraphExec, hStream))

/* An update succeeds when the graph has the exec's nodes, of the same kinds
 * in the same order (the parameters of kernels may differ); it costs per node. */
static CUresult do_exec_update(CUgraphExec hx, CUgraph h, CUgraphExecUpdateResult *result)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUgraphExec_st *x = live_exec(hx);
	struct CUgraph_st *g = usable_graph(h);
	if (!x || !g) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		CUgraphExecUpdateResult r = CU_GRAPH_EXEC_UPDATE_SUCCESS;
		if (g->nodes != x->nodes) {
			r = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
		} else {
			unsigned i = 0;
			for (struct CUgraphNode_st *nd = g->first; nd; nd = nd->next, i++)
				if (nd->kind != x->kinds[i]) {
					r = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
					break;
				}
		}
		tls_extra += nodes_past_first(g->nodes) * cost_ticks[COST_GRAPH_NODE_UPDATE];
		if (result)
			*result = r;
		if (r != CU_GRAPH_EXEC_UPDATE_SUCCESS)
			rc = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
	}
	UNLOCK();
	return rc;
}

static CUresult do_exec_update_v2(CUgraphExec hx, CUgraph h, CUgraphExecUpdateResultInfo *info)
{
	if (!info)
		return CUDA_ERROR_INVALID_VALUE;
	CUgraphExecUpdateResult r = CU_GRAPH_EXEC_UPDATE_ERROR;
	CUresult rc = do_exec_update(hx, h, &r);
	info->result = r;
	info->errorNode = info->errorFromNode = NULL;
	return rc;
}

SIM_FN_X(cuGraphExecUpdate, cuGraphExecUpdate,
	 (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out, CUgraphExecUpdateResult *updateResult_out),
	 (hErrorNode_out ? (void)(*hErrorNode_out = NULL) : (void)0, do_exec_update(hGraphExec, hGraph, updateResult_out)))
SIM_FN_X(cuGraphExecUpdate_v2, cuGraphExecUpdate,
	 (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo),
	 do_exec_update_v2(hGraphExec, hGraph, resultInfo))

static CUresult do_exec_destroy(CUgraphExec hx)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUgraphExec_st *x = live_exec(hx);
	if (!x)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		exec_free(x);
	UNLOCK();
	return rc;
}

SIM_FN(cuGraphExecDestroy, cuGraphExecDestroy, (CUgraphExec hGraphExec), do_exec_destroy(hGraphExec))

/* ------------------------------------------------------------------------ */
/* Virtual memory management                                                 */
/* ------------------------------------------------------------------------ */

/*
 * Physical allocations (cuMemCreate) are charged to their device; address
 * ranges (cuMemAddressReserve) are reserved in a region of their own, above
 * every device's allocations, each with a bitmap of the granules mapped in
 * it; a mapping (cuMemMap) is an entry of the allocation map of kind
 * ALLOC_MAPPING, keyed by its address. A physical allocation released while
 * mapped is freed when its last mapping goes, as on the real driver. The
 * granularity is 2 MiB, the H200's minimum and recommended one.
 */
#define MAX_PHYS 65536
#define MAX_VRANGES 4096
#define VMM_GRANULE (2ULL << 20)
#define VMM_VA_BASE 0x600000000000ULL
#define VMM_VA_SPAN (1ULL << 44)

struct phys {
	int live;     /* created and not released */
	int released; /* released while mapped: freed at the last unmap */
	int dev;
	unsigned maps;
	unsigned long long size;
};

struct vrange {
	int live;
	unsigned long long base, size;
	unsigned char *mapped; /* one bit per granule */
};

static struct phys physs[MAX_PHYS];
static struct vrange vranges[MAX_VRANGES];
static struct slab vrange_slab = SLAB_OVER(vranges); /* the lowest free entry is taken: see do_address_reserve */
static unsigned long long vmm_next_va;

/* A released physical allocation keeps its entry until its last unmap. */
static int phys_held(const void *e) { return ((const struct phys *)e)->released; }
static struct slab phys_slab = {physs, sizeof physs[0], MAX_PHYS, 0, 0, 0, phys_held};
SLAB_TYPE(phys, struct phys, phys_slab)

/* The reservation holding [p, p+size), or NULL. Lock held. */
static struct vrange *vrange_at(unsigned long long p, unsigned long long size)
{
	EACH_LIVE(struct vrange, r, vrange_slab)
		if (p >= r->base && p - r->base <= r->size && size <= r->size - (p - r->base))
			return r;
	return NULL;
}

static int granule_bit(struct vrange *r, unsigned long long g) { return r->mapped[g / 8] >> (g % 8) & 1; }

static void granule_set(struct vrange *r, unsigned long long g, int on)
{
	if (on)
		r->mapped[g / 8] |= (unsigned char)(1u << (g % 8));
	else
		r->mapped[g / 8] &= (unsigned char)~(1u << (g % 8));
}

/* Whether prop names a pinned allocation on a device that exists. */
static int prop_ok(const CUmemAllocationProp *prop)
{
	return prop && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
	       check_dev(prop->location.id) == CUDA_SUCCESS;
}

static CUresult do_granularity(size_t *g, const CUmemAllocationProp *prop, int option)
{
	NEED_INIT();
	if (!g || !prop_ok(prop) || option < 0 || option > 1)
		return CUDA_ERROR_INVALID_VALUE;
	*g = (size_t)VMM_GRANULE;
	return CUDA_SUCCESS;
}

HOT_FN(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity,
	(size_t *granularity, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags option),
	do_granularity(granularity, prop, (int)option))

static CUresult do_mem_create(CUmemGenericAllocationHandle *out, size_t size, const CUmemAllocationProp *prop,
			      unsigned long long flags)
{
	NEED_INIT();
	if (!out || !prop_ok(prop) || !size || size % VMM_GRANULE || flags)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	int dev = prop->location.id;
	LOCK();
	struct phys *p = NULL;
	if (!device_has(dev, size) || !(p = phys_add(&(struct phys){.dev = dev, .size = size}))) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		devices[dev].used += size;
		*out = (CUmemGenericAllocationHandle)(uintptr_t)p;
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemCreate, cuMemCreate,
       (CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop, unsigned long long flags),
       do_mem_create(handle, size, prop, flags))

static void phys_free(struct phys *p)
{
	devices[p->dev].used -= p->size;
	p->live = p->released = 0;
}

static CUresult do_mem_release(CUmemGenericAllocationHandle h)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct phys *p = live_phys((void *)(uintptr_t)h);
	if (!p) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (p->maps) {
		p->live = 0;
		p->released = 1;
	} else {
		phys_free(p);
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemRelease, cuMemRelease, (CUmemGenericAllocationHandle handle), do_mem_release(handle))

static CUresult do_address_reserve(CUdeviceptr *out, size_t size, size_t align, CUdeviceptr addr,
				   unsigned long long flags)
{
	NEED_INIT();
	if (!out || !size || size % VMM_GRANULE || (align & (align - 1)) || flags || size > VMM_VA_SPAN / 4)
		return CUDA_ERROR_INVALID_VALUE;
	(void)addr; /* a hint: never honoured here */
	unsigned long long a = align > VMM_GRANULE ? align : VMM_GRANULE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	/* Ranges are found by address, not by handle: the lowest free entry
	 * serves, and keeps the scans of vrange_at short. When the reservation
	 * fails, the entry claimed stays free (not live). */
	vrange_slab.cursor = 0;
	struct vrange *r = slab_claim(&vrange_slab);
	unsigned long long base = round_up(VMM_VA_BASE + vmm_next_va, a);
	unsigned char *bits = NULL;
	if (!r || base - VMM_VA_BASE + size > VMM_VA_SPAN || !(bits = calloc(size / VMM_GRANULE / 8 + 1, 1))) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		vmm_next_va = base - VMM_VA_BASE + size + VMM_GRANULE; /* a gap between ranges */
		r->base = base;
		r->size = size;
		r->mapped = bits;
		set_live(&r->live, 1);
		*out = base;
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemAddressReserve, cuMemAddressReserve,
       (CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags),
       do_address_reserve(ptr, size, alignment, addr, flags))

static CUresult do_address_free(CUdeviceptr p, size_t size)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct vrange *r = vrange_at(p, size);
	if (!r || r->base != p || r->size != size) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		for (unsigned long long g = 0; g < size / VMM_GRANULE; g++)
			if (granule_bit(r, g)) {
				rc = CUDA_ERROR_INVALID_VALUE; /* still mapped: unmap first */
				break;
			}
		if (rc == CUDA_SUCCESS) {
			free(r->mapped);
			memset(r, 0, sizeof *r);
		}
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemAddressFree, cuMemAddressFree, (CUdeviceptr ptr, size_t size), do_address_free(ptr, size))

static CUresult do_mem_map(CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle h,
			   unsigned long long flags)
{
	NEED_INIT();
	if (!size || size % VMM_GRANULE || p % VMM_GRANULE || offset % VMM_GRANULE || flags)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct vrange *r = vrange_at(p, size);
	struct phys *ph = live_phys((void *)(uintptr_t)h);
	if (!r || !ph || offset > ph->size || size > ph->size - offset) {

		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		unsigned long long g0 = (p - r->base) / VMM_GRANULE, n = size / VMM_GRANULE;
		for (unsigned long long g = g0; g < g0 + n; g++)
			if (granule_bit(r, g)) {
				rc = CUDA_ERROR_ALREADY_MAPPED;
				break;
			}
		struct alloc rec = {.addr = p, .size = size, .req = size, .dev = ph->dev, .kind = ALLOC_MAPPING, .phys = ph};
		if (rc == CUDA_SUCCESS && amap_put(&rec) < 0)
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		if (rc == CUDA_SUCCESS) {
			for (unsigned long long g = g0; g < g0 + n; g++)
				granule_set(r, g, 1);
			ph->maps++;
		}
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemMap, cuMemMap,
       (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags),
       do_mem_map(ptr, size, offset, handle, flags))

/* Unmaps every mapping in [p, p+size); a mapping that starts in the range
 * must end in it, and the range must start at a mapping. */
static CUresult do_mem_unmap(CUdeviceptr p, size_t size)
{
	NEED_INIT();
	if (!size || size % VMM_GRANULE || p % VMM_GRANULE)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct vrange *r = vrange_at(p, size);
	struct alloc *first = amap_find(p);
	if (!r || !first || first->kind != ALLOC_MAPPING) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		/* check, then unmap: a bad range changes nothing */
		for (unsigned long long a = p; a < p + size;) {
			struct alloc *m = amap_find(a);
			if (m && m->kind == ALLOC_MAPPING) {
				if (m->size > p + size - a) {
					rc = CUDA_ERROR_INVALID_VALUE;
					break;
				}
				a += m->size;
			} else {
				a += VMM_GRANULE;
			}
		}
		for (unsigned long long a = p; rc == CUDA_SUCCESS && a < p + size;) {
			struct alloc *m = amap_find(a);
			if (!m || m->kind != ALLOC_MAPPING) {
				a += VMM_GRANULE;
				continue;
			}
			unsigned long long g0 = (a - r->base) / VMM_GRANULE, n = m->size / VMM_GRANULE;
			for (unsigned long long g = g0; g < g0 + n; g++)
				granule_set(r, g, 0);
			struct phys *ph = m->phys;
			a += m->size;
			amap_del(m);
			if (--ph->maps == 0 && ph->released)
				phys_free(ph);
		}
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemUnmap, cuMemUnmap, (CUdeviceptr ptr, size_t size), do_mem_unmap(ptr, size))

/* The range must be mapped throughout; each descriptor must name a device. */
static CUresult do_set_access(CUdeviceptr p, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	NEED_INIT();
	if (!size || !desc || !count || p % VMM_GRANULE || size % VMM_GRANULE)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count; i++)
		if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || check_dev(desc[i].location.id) ||
		    desc[i].flags < 0 || desc[i].flags > 3 || desc[i].flags == 2)
			return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct vrange *r = vrange_at(p, size);
	if (!r) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		unsigned long long g0 = (p - r->base) / VMM_GRANULE, n = size / VMM_GRANULE;
		for (unsigned long long g = g0; g < g0 + n; g++)
			if (!granule_bit(r, g)) {
				rc = CUDA_ERROR_INVALID_VALUE;
				break;
			}
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemSetAccess, cuMemSetAccess, (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count),
       do_set_access(ptr, size, desc, count))

/* ------------------------------------------------------------------------ */
/* Libraries and kernels                                                     */
/* ------------------------------------------------------------------------ */

/*
 * A library holds kernels by name: cuLibraryGetKernel returns the same
 * kernel for the same name, and cuKernelGetFunction the same function for
 * the same kernel and current context (the kernel loaded into it), as
 * cuModuleGetFunction does for a module. Any non-empty name is found; the
 * image only has to be non-NULL. Unloading a library ends its kernels and
 * their functions.
 */
#define MAX_LIBS 1024
#define MAX_KERNELS 8192

struct CUlib_st {
	int live;
};

struct CUkern_st {
	int live;
	struct CUlib_st *lib;
	char name[NAME_MAX_LEN];
};

static struct CUlib_st libs[MAX_LIBS];
static struct CUkern_st kernels[MAX_KERNELS];
static struct slab lib_slab = SLAB_OVER(libs), kernel_slab = SLAB_OVER(kernels);
SLAB_TYPE(lib, struct CUlib_st, lib_slab)
SLAB_TYPE(kernel, struct CUkern_st, kernel_slab)

/* Kernels are interned by library and name. */
static int same_kernel(const void *e, const void *tmpl)
{
	const struct CUkern_st *a = e, *b = tmpl;
	return a->lib == b->lib && strcmp(a->name, b->name) == 0;
}

/* Functions are interned by module and name (cuModuleGetFunction's, whose
 * kernel and context are NULL) or by kernel and context (cuKernelGetFunction's,
 * whose module is NULL and name empty). */
static int same_func(const void *e, const void *tmpl)
{
	const struct CUfunc_st *a = e, *b = tmpl;
	return a->mod == b->mod && a->kernel == b->kernel && a->ctx == b->ctx && strcmp(a->name, b->name) == 0;
}

/* The checks of a lookup by name in owner, a library or module: it must be
 * live (CUDA_ERROR_INVALID_HANDLE), the name not empty and shorter than
 * NAME_MAX_LEN (CUDA_ERROR_NOT_FOUND). */
static CUresult name_in(const void *owner, const char *name)
{
	if (!owner)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!*name || strlen(name) >= NAME_MAX_LEN)
		return CUDA_ERROR_NOT_FOUND;
	return CUDA_SUCCESS;
}

/* Ends the functions of module m, or of kernel k when m is NULL. Lock held. */
static void end_funcs(const struct CUmod_st *m, const struct CUkern_st *k)
{
	EACH_LIVE(struct CUfunc_st, f, func_slab)
		if (m ? f->mod == m : f->kernel == k)
			set_live(&f->live, 0);
}


static CUresult do_library_load(CUlibrary *out, const void *code, unsigned njit, CUjit_option *jit, void **jitv,
				unsigned nlib, CUlibraryOption *libo, void **libv)
{
	NEED_INIT();
	if (!out || !code || (njit && (!jit || !jitv)) || (nlib && (!libo || !libv)))
		return CUDA_ERROR_INVALID_VALUE;
	return lib_make(out, &(struct CUlib_st){0});
}

SIM_FN(cuLibraryLoadData, cuLibraryLoadData,
       (CUlibrary *library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,
	unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,
	unsigned int numLibraryOptions),
       do_library_load(library, code, numJitOptions, jitOptions, jitOptionsValues, numLibraryOptions, libraryOptions,
		       libraryOptionValues))

static CUresult do_library_unload(CUlibrary h)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUlib_st *l = live_lib(h);
	if (!l) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		set_live(&l->live, 0);
		EACH_LIVE(struct CUkern_st, k, kernel_slab)
			if (k->lib == l) {
				set_live(&k->live, 0);
				end_funcs(NULL, k);
			}
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuLibraryUnload, cuLibraryUnload, (CUlibrary library), do_library_unload(library))

static CUresult do_library_kernel(CUkernel *out, CUlibrary h, const char *name)
{
	NEED_INIT();
	if (!out || !name)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct CUlib_st *l = live_lib(h);
	CUresult rc = name_in(l, name);
	if (rc == CUDA_SUCCESS) {
		struct CUkern_st t = {.lib = l};
		strcpy(t.name, name);
		struct CUkern_st *k = slab_intern(&kernel_slab, &t, same_kernel);
		rc = HAND_OUT(out, k);
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuLibraryGetKernel, cuLibraryGetKernel, (CUkernel *pKernel, CUlibrary library, const char *name),
       do_library_kernel(pKernel, library, name))

static CUresult do_kernel_function(CUfunction *out, CUkernel h)
{
	NEED_INIT();
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	NEED_CURRENT(c);
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUkern_st *k = live_kernel(h);
	if (!k) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		struct CUfunc_st *f = slab_intern(&func_slab, &(struct CUfunc_st){.kernel = k, .ctx = c}, same_func);
		rc = HAND_OUT(out, f);
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuKernelGetFunction, cuKernelGetFunction, (CUfunction *pFunc, CUkernel kernel), do_kernel_function(pFunc, kernel))

/* A module's globals: any non-empty name is an 8-byte global at an address
 * of the module's own (the same for the same module and name). */
static CUresult do_module_global(CUdeviceptr *dptr, size_t *bytes, CUmodule h, const char *name)
{
	NEED_INIT();
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUmod_st *m = live_module(h);
	if (!m) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else if (!*name) {
		rc = CUDA_ERROR_NOT_FOUND;
	} else {
		unsigned long long hsh = 1469598103934665603ULL;
		for (const char *s = name; *s; s++)
			hsh = (hsh ^ (unsigned char)*s) * 1099511628211ULL;
		if (dptr)
			*dptr = 0x7e0000000000ULL + (unsigned long long)(m - modules) * 0x100000ULL + (hsh % 0x10000) * 16;
		if (bytes)
			*bytes = 8;
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuModuleGetGlobal_v2, cuModuleGetGlobal, (CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name),
       do_module_global(dptr, bytes, hmod, name))

/* Attributes of every simulated kernel: 32 registers a thread, no static
 * shared or local memory, compiled for compute capability 9.0. */
static int func_attribute(int attr, int *out)
{
	switch (attr) {
	case 0: *out = 1024; return 1;   /* MAX_THREADS_PER_BLOCK */
	case 1: *out = 0; return 1;      /* SHARED_SIZE_BYTES */
	case 2: *out = 0; return 1;      /* CONST_SIZE_BYTES */
	case 3: *out = 0; return 1;      /* LOCAL_SIZE_BYTES */
	case 4: *out = 32; return 1;     /* NUM_REGS */
	case 5: *out = 90; return 1;     /* PTX_VERSION */
	case 6: *out = 90; return 1;     /* BINARY_VERSION */
	case 7: *out = 0; return 1;      /* CACHE_MODE_CA */
	case 8: *out = 49152; return 1;  /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
	case 9: *out = -1; return 1;     /* PREFERRED_SHARED_MEMORY_CARVEOUT */
	default:
		if (attr > 9 && attr < 20) {
			*out = 0;
			return 1;
		}
		return 0;
	}
}


static CUresult do_func_attribute(int *pi, int attr, CUfunction f)
{
	NEED_INIT();
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (!live_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	return func_attribute(attr, pi) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

HOT_FN(cuFuncGetAttribute, cuFuncGetAttribute, (int *pi, CUfunction_attribute attrib, CUfunction hfunc),
	do_func_attribute(pi, (int)attrib, hfunc))

static CUresult do_kernel_attribute(int *pi, int attr, CUkernel k, CUdevice dev)
{
	NEED_INIT();
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	if (!live_kernel(k))
		return CUDA_ERROR_INVALID_HANDLE;
	return func_attribute(attr, pi) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

HOT_FN(cuKernelGetAttribute, cuKernelGetAttribute, (int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev),
	do_kernel_attribute(pi, (int)attrib, kernel, dev))

/* Occupancy on an H200 SM (2048 threads, 32 blocks, 65536 registers, 228 KiB
 * of shared memory with 1 KiB reserved per block) of a kernel with the
 * attributes above. */
static int blocks_per_sm(int block, size_t smem)
{
	if (block <= 0 || block > 1024)
		return 0;
	int warps = (block + 31) / 32;
	int by_threads = 64 / warps;
	int by_regs = 65536 / (32 * warps * 32);
	int by_smem = (int)((228u << 10) / (smem + 1024));
	int n = by_threads < by_regs ? by_threads : by_regs;
	n = n < by_smem ? n : by_smem;
	return n < 32 ? n : 32;
}

static CUresult do_occupancy(int *n, CUfunction f, int block, size_t smem, unsigned flags)
{
	NEED_INIT();
	if (!n || block <= 0 || flags > 1)
		return CUDA_ERROR_INVALID_VALUE;
	if (!live_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	*n = blocks_per_sm(block, smem);
	return CUDA_SUCCESS;
}

SIM_FN(cuOccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor,
       (int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize),
       do_occupancy(numBlocks, func, blockSize, dynamicSMemSize, 0))
SIM_FN(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
       (int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags),
       do_occupancy(numBlocks, func, blockSize, dynamicSMemSize, flags))

static CUresult do_potential_block(int *grid, int *block, CUfunction f, CUoccupancyB2DSize smem_of, size_t smem,
				   int limit)
{
	NEED_INIT();
	if (!grid || !block)
		return CUDA_ERROR_INVALID_VALUE;
	if (!live_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	int best = 0, best_threads = 0;
	int top = limit > 0 && limit < 1024 ? limit : 1024;
	for (int b = 32; b <= top; b += 32) {
		int t = blocks_per_sm(b, smem_of ? ((size_t(*)(int))smem_of)(b) : smem) * b;
		if (t > best_threads) {
			best_threads = t;
			best = b;
		}
	}
	*block = best;
	*grid = best ? best_threads / best * attribute_value(16) : 0;
	return CUDA_SUCCESS;
}

SIM_FN(cuOccupancyMaxPotentialBlockSize, cuOccupancyMaxPotentialBlockSize,
       (int *minGridSize, int *blockSize, CUfunction func, CUoccupancyB2DSize blockSizeToDynamicSMemSize,
	size_t dynamicSMemSize, int blockSizeLimit),
       do_potential_block(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize, blockSizeLimit))

static CUresult do_dynamic_smem(size_t *out, CUfunction f, int nblocks, int block)
{
	NEED_INIT();
	if (!out || nblocks <= 0 || block <= 0 || block > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	if (!live_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	size_t per = (228u << 10) / (size_t)nblocks;
	*out = per > 1024 ? per - 1024 : 0;
	if (*out > (227u << 10))
		*out = 227u << 10;
	return CUDA_SUCCESS;
}

SIM_FN(cuOccupancyAvailableDynamicSMemPerBlock, cuOccupancyAvailableDynamicSMemPerBlock,
       (size_t *dynamicSmemSize, CUfunction func, int numBlocks, int blockSize),
       do_dynamic_smem(dynamicSmemSize, func, numBlocks, blockSize))

static CUresult do_active_clusters(int *n, CUfunction f, const CUlaunchConfig *config)
{
	NEED_INIT();
	if (!n || !config)
		return CUDA_ERROR_INVALID_VALUE;
	if (!live_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	/* without a cluster dimension attribute: clusters of one block */
	*n = blocks_per_sm((int)(config->blockDimX * config->blockDimY * config->blockDimZ), config->sharedMemBytes) *
	     attribute_value(16);
	return CUDA_SUCCESS;
}

SIM_FN(cuOccupancyMaxActiveClusters, cuOccupancyMaxActiveClusters,
       (int *numClusters, CUfunction func, const CUlaunchConfig *config), do_active_clusters(numClusters, func, config))

static CUresult do_priority_range(int *least, int *greatest)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	if (!current_ctx(&rc))
		return rc;
	if (least)
		*least = 0;
	if (greatest)
		*greatest = -5;
	return CUDA_SUCCESS;
}

HOT_FN(cuCtxGetStreamPriorityRange, cuCtxGetStreamPriorityRange, (int *leastPriority, int *greatestPriority),
	do_priority_range(leastPriority, greatestPriority))

/* Ends what a destroyed context owns among the families: its executable
 * graphs (functions of kernels go with the other functions). Lock held. */
static void ctx_teardown_families(struct CUctx_st *c)
{
	EACH_LIVE(struct CUgraphExec_st, x, exec_slab)
		if (x->ctx == c)
			exec_free(x);
}


/* ------------------------------------------------------------------------ */
/* Launches, copies, sets: validation only                                   */
/* ------------------------------------------------------------------------ */

static CUresult do_launch(CUfunction f, CUstream h)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUctx_st *c = stream_ctx(h, &rc);
	if (c && !live_func(f) && !live_kernel(f)) /* a CUkernel may be launched as a CUfunction */
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (c && captured(h, NODE_KERNEL, &rc) == 0)
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
	if (c && captured(h, NODE_COPY, &rc) == 0)
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
COPY_FN(cuMemcpyHtoD_v2, cuMemcpyHtoD, dstDevice, srcHost, NULL, CUdeviceptr dstDevice, const void *srcHost,
	size_t ByteCount)
COPY_FN(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD, dstDevice, srcHost, CU_STREAM_PER_THREAD, CUdeviceptr dstDevice,
	const void *srcHost, size_t ByteCount)
COPY_FN(cuMemcpyDtoH_v2, cuMemcpyDtoH, dstHost, srcDevice, NULL, void *dstHost, CUdeviceptr srcDevice,
	size_t ByteCount)
COPY_FN(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH, dstHost, srcDevice, CU_STREAM_PER_THREAD, void *dstHost,
	CUdeviceptr srcDevice, size_t ByteCount)
COPY_FN(cuMemcpyDtoD_v2, cuMemcpyDtoD, dstDevice, srcDevice, NULL, CUdeviceptr dstDevice, CUdeviceptr srcDevice,
	size_t ByteCount)
COPY_FN(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD, dstDevice, srcDevice, CU_STREAM_PER_THREAD, CUdeviceptr dstDevice,
	CUdeviceptr srcDevice, size_t ByteCount)
COPY_FN(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, dstDevice, srcHost, hStream, CUdeviceptr dstDevice,
	const void *srcHost, size_t ByteCount, CUstream hStream)
COPY_FN(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync, dstDevice, srcHost, hStream, CUdeviceptr dstDevice,
	const void *srcHost, size_t ByteCount, CUstream hStream)
COPY_FN(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, dstHost, srcDevice, hStream, void *dstHost,
	CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
COPY_FN(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync, dstHost, srcDevice, hStream, void *dstHost,
	CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
COPY_FN(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, dstDevice, srcDevice, hStream, CUdeviceptr dstDevice,
	CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
COPY_FN(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync, dstDevice, srcDevice, hStream, CUdeviceptr dstDevice,
	CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)

/* Sets: the "source" is the destination itself (non-NULL check only). */
#define SET_FN(sym, api, stream, ...) SIM_FN(sym, api, (__VA_ARGS__), do_copy(dstDevice, dstDevice, stream))

SET_FN(cuMemsetD8_v2, cuMemsetD8, NULL, CUdeviceptr dstDevice, unsigned char uc, size_t N)
SET_FN(cuMemsetD8_v2_ptds, cuMemsetD8, CU_STREAM_PER_THREAD, CUdeviceptr dstDevice, unsigned char uc, size_t N)
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
	NEED_CURRENT(c);
	return module_make(out, &(struct CUmod_st){.ctx = c});
}

SIM_FN(cuModuleLoadData, cuModuleLoadData, (CUmodule *module, const void *image), do_module_load(module, image))

static CUresult do_module_unload(CUmodule h)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUmod_st *m = live_module(h);
	if (!m) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		set_live(&m->live, 0);
		end_funcs(m, NULL);
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
	LOCK();
	struct CUmod_st *m = live_module(h);
	CUresult rc = name_in(m, name);
	if (rc == CUDA_SUCCESS) {
		/* the same name gives the same function, as on the real driver */
		struct CUfunc_st t = {.mod = m};
		strcpy(t.name, name);
		struct CUfunc_st *f = slab_intern(&func_slab, &t, same_func);
		rc = HAND_OUT(out, f);
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
/* The pre-3.2 ABI entries                                                   */
/* ------------------------------------------------------------------------ */

/* The 32-bit entry points of the first driver API (cuMemAlloc, cuMemcpyHtoD,
 * ... without _v2: 32-bit device pointers and sizes) answer
 * CUDA_ERROR_INVALID_CONTEXT, as the real 13.0 driver does. */
#define LEGACY_FN(sym, api, params)                                                                 \
	CUresult sym params                                                                         \
	{                                                                                           \
		SIM_BEGIN;                                                                          \
		SIM_END(api, CUDA_ERROR_INVALID_CONTEXT);                                           \
	}
LEGACY_FN(cuMemAlloc, cuMemAlloc, (CUdeviceptr_v1 * dptr, unsigned int bytesize))
LEGACY_FN(cuMemFree, cuMemFree, (CUdeviceptr_v1 dptr))
LEGACY_FN(cuMemAllocHost, cuMemAllocHost, (void **pp, unsigned int bytesize))
LEGACY_FN(cuMemGetInfo, cuMemGetInfo, (unsigned int *free, unsigned int *total))
LEGACY_FN(cuMemcpyHtoD, cuMemcpyHtoD, (CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount))
LEGACY_FN(cuMemcpyDtoH, cuMemcpyDtoH, (void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount))
LEGACY_FN(cuMemcpyDtoD, cuMemcpyDtoD, (CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount))
LEGACY_FN(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync,
	  (CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount, CUstream hStream))
LEGACY_FN(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync,
	  (void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream))
LEGACY_FN(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync,
	  (CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream))
LEGACY_FN(cuMemsetD8, cuMemsetD8, (CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N))
LEGACY_FN(cuMemsetD32, cuMemsetD32, (CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N))

/* ------------------------------------------------------------------------ */
/* Identity and small queries: what Python bindings ask of a device, a       */
/* context, a stream or a pointer (cuda.core's Device.uuid and properties,    */
/* foreign streams, Buffer.from_handle; numba-cuda's device objects)          */
/* ------------------------------------------------------------------------ */

/* A device's UUID: the same 16 bytes for the same ordinal in every process,
 * different between ordinals, shaped as an RFC 4122 version 4 UUID. */
static void device_uuid(int dev, unsigned char out[16])
{
	unsigned long long h = 0x9e3779b97f4a7c15ULL ^ (unsigned long long)(dev + 1);
	for (int i = 0; i < 16; i++) {
		h ^= h >> 31;
		h *= 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 29;
		out[i] = (unsigned char)(h >> 24);
	}
	out[6] = (out[6] & 0x0f) | 0x40;
	out[8] = (out[8] & 0x3f) | 0x80;
}

static CUresult do_device_uuid(CUuuid *uuid, CUdevice dev)
{
	NEED_INIT();
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	device_uuid(dev, (unsigned char *)uuid->bytes);
	return CUDA_SUCCESS;
}

SIM_FN(cuDeviceGetUuid, cuDeviceGetUuid, (CUuuid *uuid, CUdevice dev), do_device_uuid(uuid, dev))
SIM_FN(cuDeviceGetUuid_v2, cuDeviceGetUuid, (CUuuid *uuid, CUdevice dev), do_device_uuid(uuid, dev))

/* PCI location of device dev: domain 0, bus SIM_PCI_BUS0 + dev, device 0,
 * as the attributes 50, 33 and 34 say. */
static CUresult do_pci_bus_id(char *out, int len, CUdevice dev)
{
	NEED_INIT();
	if (!out || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(out, (size_t)len, "%04x:%02x:%02x.0", 0, SIM_PCI_BUS0 + dev, 0);
	return CUDA_SUCCESS;
}

SIM_FN(cuDeviceGetPCIBusId, cuDeviceGetPCIBusId, (char *pciBusId, int len, CUdevice dev),
	do_pci_bus_id(pciBusId, len, dev))

/* Accepts "domain:bus:device.function" and "bus:device.function" (hex). */
static CUresult do_device_by_pci(CUdevice *dev, const char *id)
{
	NEED_INIT();
	unsigned domain = 0, bus, device, function;
	char tail;
	if (!dev || !id)
		return CUDA_ERROR_INVALID_VALUE;
	if (sscanf(id, "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4) {
		domain = 0;
		if (sscanf(id, "%x:%x.%x%c", &bus, &device, &function, &tail) != 3)
			return CUDA_ERROR_INVALID_VALUE;
	}
	if (domain != 0 || device != 0 || function != 0 || bus < SIM_PCI_BUS0 || bus >= SIM_PCI_BUS0 + (unsigned)ndevices)
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = (CUdevice)(bus - SIM_PCI_BUS0);
	return CUDA_SUCCESS;
}

SIM_FN(cuDeviceGetByPCIBusId, cuDeviceGetByPCIBusId, (CUdevice *dev, const char *pciBusId),
	do_device_by_pci(dev, pciBusId))

/* Every pair of distinct simulated devices can access each other (NVLink
 * peers, as on an 8-GPU H200 board); a device is not its own peer. */
static CUresult do_can_access_peer(int *can, CUdevice dev, CUdevice peer)
{
	NEED_INIT();
	if (!can)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev) || check_dev(peer))
		return CUDA_ERROR_INVALID_DEVICE;
	*can = dev != peer;
	return CUDA_SUCCESS;
}

SIM_FN(cuDeviceCanAccessPeer, cuDeviceCanAccessPeer, (int *canAccessPeer, CUdevice dev, CUdevice peerDev),
	do_can_access_peer(canAccessPeer, dev, peerDev))

/* Ids of contexts and streams: unique in the process, given at the first
 * query (a slot reused by a new object starts without one). */
static unsigned long long object_ids;

static unsigned long long object_id(unsigned long long *id)
{
	unsigned long long v = __atomic_load_n(id, __ATOMIC_ACQUIRE);
	if (v)
		return v;
	unsigned long long fresh = __atomic_add_fetch(&object_ids, 1, __ATOMIC_RELAXED);
	if (__atomic_compare_exchange_n(id, &v, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return fresh;
	return v; /* another thread gave it one first */
}

static __thread unsigned long long tls_per_thread_stream_id;

static CUresult do_ctx_id(CUcontext ctx, unsigned long long *id)
{
	NEED_INIT();
	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	struct CUctx_st *c = ctx_or_current(ctx, &rc);
	if (!c)
		return rc;
	*id = object_id(&c->id);
	return CUDA_SUCCESS;
}

SIM_FN(cuCtxGetId, cuCtxGetId, (CUcontext ctx, unsigned long long *ctxId), do_ctx_id(ctx, ctxId))

static CUresult do_ctx_flags(unsigned *flags)
{
	NEED_INIT();
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	NEED_CURRENT(c);
	*flags = c->flags;
	return CUDA_SUCCESS;
}

SIM_FN(cuCtxGetFlags, cuCtxGetFlags, (unsigned int *flags), do_ctx_flags(flags))

static inline int default_stream(CUstream h)
{
	return h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
}

/* What a stream query needs: the stream's context, and the stream itself
 * (NULL for the default streams, whose flags and priority are 0). */
static CUresult stream_query(CUstream h, struct CUctx_st **ctx, struct CUstream_st **s)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	if (!(*ctx = stream_ctx(h, &rc)))
		return rc;
	*s = default_stream(h) ? NULL : live_stream(h);
	return CUDA_SUCCESS;
}

static CUresult do_stream_get_ctx(CUstream h, CUcontext *pctx, CUgreenCtx *green)
{
	struct CUctx_st *c;
	struct CUstream_st *s;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = stream_query(h, &c, &s);
	if (rc)
		return rc;
	*pctx = c;
	if (green)
		*green = NULL; /* no green contexts here */
	return CUDA_SUCCESS;
}

SIM_FN(cuStreamGetCtx, cuStreamGetCtx, (CUstream hStream, CUcontext *pctx), do_stream_get_ctx(hStream, pctx, NULL))
SIM_FN(cuStreamGetCtx_ptsz, cuStreamGetCtx, (CUstream hStream, CUcontext *pctx), do_stream_get_ctx(hStream, pctx, NULL))
SIM_FN(cuStreamGetCtx_v2, cuStreamGetCtx, (CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx),
	do_stream_get_ctx(hStream, pCtx, pGreenCtx))
SIM_FN(cuStreamGetCtx_v2_ptsz, cuStreamGetCtx, (CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx),
	do_stream_get_ctx(hStream, pCtx, pGreenCtx))

enum stream_field { STREAM_FLAGS, STREAM_PRIORITY, STREAM_ID, STREAM_DEVICE };

static CUresult do_stream_field(CUstream h, void *out, enum stream_field field)
{
	struct CUctx_st *c;
	struct CUstream_st *s;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = stream_query(h, &c, &s);
	if (rc)
		return rc;
	switch (field) {
	case STREAM_FLAGS:
		*(unsigned *)out = s ? s->flags : 0;
		break;
	case STREAM_PRIORITY:
		*(int *)out = s ? s->priority : 0;
		break;
	case STREAM_ID: /* the legacy stream 1, each thread's per-thread stream its own */
		*(unsigned long long *)out = s ? object_id(&s->id)
				: h == CU_STREAM_PER_THREAD ? object_id(&tls_per_thread_stream_id) : 1;
		break;
	case STREAM_DEVICE:
		*(CUdevice *)out = c->dev;
		break;
	}
	return CUDA_SUCCESS;
}

#define STREAM_FIELD_FN(sym, api, type, field)                                                      \
	SIM_FN(sym, api, (CUstream hStream, type *out), do_stream_field(hStream, out, field))
STREAM_FIELD_FN(cuStreamGetFlags, cuStreamGetFlags, unsigned int, STREAM_FLAGS)
STREAM_FIELD_FN(cuStreamGetFlags_ptsz, cuStreamGetFlags, unsigned int, STREAM_FLAGS)
STREAM_FIELD_FN(cuStreamGetPriority, cuStreamGetPriority, int, STREAM_PRIORITY)
STREAM_FIELD_FN(cuStreamGetPriority_ptsz, cuStreamGetPriority, int, STREAM_PRIORITY)
STREAM_FIELD_FN(cuStreamGetId, cuStreamGetId, unsigned long long, STREAM_ID)
STREAM_FIELD_FN(cuStreamGetId_ptsz, cuStreamGetId, unsigned long long, STREAM_ID)
STREAM_FIELD_FN(cuStreamGetDevice, cuStreamGetDevice, CUdevice, STREAM_DEVICE)
STREAM_FIELD_FN(cuStreamGetDevice_ptsz, cuStreamGetDevice, CUdevice, STREAM_DEVICE)

/*
 * Host functions and stream callbacks. Work queued here is complete when it
 * is queued, so the function runs before the call returns, on the calling
 * thread (the real driver runs it later, on a thread of its own, in stream
 * order). It runs without the simulator's lock held. What differs: a
 * function that waits for something its caller does after the launch waits
 * forever here; the driver forbids CUDA calls inside it, and here they work.
 * On a capturing stream the function becomes a node of the graph and does
 * not run.
 */
static CUresult do_launch_host_func(CUstream h, CUhostFn fn, void *user)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	if (!stream_ctx(h, &rc))
		return rc;
	int cap = captured(h, NODE_KERNEL, &rc); /* a host node, in the graph's count */
	if (cap < 0)
		return rc;
	if (!cap)
		((void (*)(void *))fn)(user);
	return CUDA_SUCCESS;
}

SIM_FN(cuLaunchHostFunc, cuLaunchHostFunc, (CUstream hStream, CUhostFn fn, void *userData),
	do_launch_host_func(hStream, fn, userData))
SIM_FN(cuLaunchHostFunc_ptsz, cuLaunchHostFunc, (CUstream hStream, CUhostFn fn, void *userData),
	do_launch_host_func(hStream, fn, userData))

static CUresult do_stream_add_callback(CUstream h, CUstreamCallback cb, void *user, unsigned flags)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	if (!cb || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!stream_ctx(h, &rc))
		return rc;
	struct CUstream_st *s = default_stream(h) ? NULL : live_stream(h);
	if (s && s->cap_status != CU_STREAM_CAPTURE_STATUS_NONE)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* callbacks cannot be captured */
	((void (*)(CUstream, CUresult, void *))cb)(h, CUDA_SUCCESS, user);
	return CUDA_SUCCESS;
}

SIM_FN(cuStreamAddCallback, cuStreamAddCallback, (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags),
	do_stream_add_callback(hStream, callback, userData, flags))
SIM_FN(cuStreamAddCallback_ptsz, cuStreamAddCallback,
	(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags),
	do_stream_add_callback(hStream, callback, userData, flags))

/* The allocation that holds addr: its record, found by its start or, for an
 * address inside it, by a scan of the map (O(allocations): queries of
 * interior pointers are rare). Lock held. */
static struct alloc *alloc_holding(unsigned long long addr)
{
	struct alloc *a = amap_find(addr);
	if (a || !addr)
		return a;
	for (size_t i = 0; i < amap_cap; i++) {
		struct alloc *e = &amap[i];
		unsigned long long len = e->req ? e->req : e->size;
		if (e->addr && addr > e->addr && addr - e->addr < len)
			return e;
	}
	return NULL;
}

/* CUpointer_attribute values (cuda.h). */
enum {
	PTR_CONTEXT = 1, PTR_MEMORY_TYPE, PTR_DEVICE_POINTER, PTR_HOST_POINTER, PTR_P2P_TOKENS,
	PTR_SYNC_MEMOPS, PTR_BUFFER_ID, PTR_IS_MANAGED, PTR_DEVICE_ORDINAL, PTR_IS_LEGACY_IPC_CAPABLE,
	PTR_RANGE_START_ADDR, PTR_RANGE_SIZE, PTR_MAPPED, PTR_ALLOWED_HANDLE_TYPES,
	PTR_IS_GPU_DIRECT_RDMA_CAPABLE, PTR_ACCESS_FLAGS, PTR_MEMPOOL_HANDLE, PTR_MAPPING_SIZE,
	PTR_MAPPING_BASE_ADDR, PTR_MEMORY_BLOCK_ID, PTR_IS_HW_DECOMPRESS_CAPABLE,
};
#define CU_MEMORYTYPE_HOST 1
#define CU_MEMORYTYPE_DEVICE 2

/* One attribute of the allocation a (NULL: addr is no CUDA memory) into out.
 * Lock held. CUDA_ERROR_INVALID_VALUE for an unknown attribute or, with
 * known set, for memory the driver does not know. */
static CUresult pointer_attribute(const struct alloc *a, unsigned long long addr, int attr, void *out)
{
	if (!a) {
		switch (attr) { /* what cuPointerGetAttributes answers for foreign memory */
		case PTR_CONTEXT: *(CUcontext *)out = NULL; return CUDA_SUCCESS;
		case PTR_MEMORY_TYPE: *(unsigned *)out = 0; return CUDA_SUCCESS;
		case PTR_DEVICE_ORDINAL: *(int *)out = -2; return CUDA_SUCCESS;
		case PTR_DEVICE_POINTER: case PTR_RANGE_START_ADDR: case PTR_HOST_POINTER:
		case PTR_MAPPING_BASE_ADDR: *(void **)out = NULL; return CUDA_SUCCESS;
		case PTR_IS_MANAGED: case PTR_MAPPED: case PTR_SYNC_MEMOPS: case PTR_IS_LEGACY_IPC_CAPABLE:
		case PTR_IS_GPU_DIRECT_RDMA_CAPABLE: case PTR_IS_HW_DECOMPRESS_CAPABLE: case PTR_ACCESS_FLAGS:
			*(int *)out = 0; return CUDA_SUCCESS;
		case PTR_BUFFER_ID: case PTR_ALLOWED_HANDLE_TYPES: case PTR_RANGE_SIZE: case PTR_MAPPING_SIZE:
		case PTR_MEMORY_BLOCK_ID:
			*(unsigned long long *)out = 0; return CUDA_SUCCESS;
		case PTR_MEMPOOL_HANDLE: *(CUmemoryPool *)out = NULL; return CUDA_SUCCESS;
		default: return CUDA_ERROR_INVALID_VALUE;
		}
	}
	int host = a->kind == ALLOC_HOST;
	unsigned long long len = a->req ? a->req : a->size;
	switch (attr) {
	case PTR_CONTEXT: *(CUcontext *)out = a->ctx; break;
	case PTR_MEMORY_TYPE: *(unsigned *)out = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE; break;
	case PTR_DEVICE_POINTER: *(unsigned long long *)out = addr; break; /* unified addressing */
	case PTR_HOST_POINTER:
		if (!host && a->kind != ALLOC_MANAGED)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)out = (void *)(uintptr_t)addr;
		break;
	case PTR_SYNC_MEMOPS: *(int *)out = 0; break;
	case PTR_BUFFER_ID: /* unique while the allocation lives */
		*(unsigned long long *)out = (unsigned long long)(a - amap) + 1 + ((unsigned long long)a->pool_gen << 32);
		break;
	case PTR_IS_MANAGED: *(int *)out = a->kind == ALLOC_MANAGED; break;
	case PTR_DEVICE_ORDINAL: *(int *)out = host ? -1 : a->dev; break;
	case PTR_IS_LEGACY_IPC_CAPABLE: *(int *)out = a->kind == ALLOC_DEVICE; break;
	case PTR_RANGE_START_ADDR: *(unsigned long long *)out = a->addr; break;
	case PTR_RANGE_SIZE: *(unsigned long long *)out = len; break;
	case PTR_MAPPED: *(int *)out = 1; break;
	case PTR_ALLOWED_HANDLE_TYPES: *(unsigned long long *)out = 0; break;
	case PTR_IS_GPU_DIRECT_RDMA_CAPABLE: *(int *)out = 0; break;
	case PTR_ACCESS_FLAGS: *(int *)out = 3; break; /* read-write */
	case PTR_MEMPOOL_HANDLE: *(CUmemoryPool *)out = a->kind == ALLOC_POOL ? a->pool : NULL; break;
	case PTR_MAPPING_SIZE: *(unsigned long long *)out = len; break;
	case PTR_MAPPING_BASE_ADDR: *(unsigned long long *)out = a->addr; break;
	case PTR_MEMORY_BLOCK_ID: *(unsigned long long *)out = (unsigned long long)(a - amap) + 1; break;
	case PTR_IS_HW_DECOMPRESS_CAPABLE: *(int *)out = 0; break;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static CUresult do_pointer_attribute(void *data, int attr, CUdeviceptr ptr)
{
	NEED_INIT();
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct alloc *a = alloc_holding(ptr);
	CUresult rc = a ? pointer_attribute(a, ptr, attr, data) : CUDA_ERROR_INVALID_VALUE;
	UNLOCK();
	return rc;
}

SIM_FN(cuPointerGetAttribute, cuPointerGetAttribute, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr),
	do_pointer_attribute(data, attribute, ptr))

/* Unlike cuPointerGetAttribute, memory the driver does not know is no
 * error: its attributes read as empty. */
static CUresult do_pointer_attributes(unsigned n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr)
{
	NEED_INIT();
	if (!attrs || !data)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct alloc *a = alloc_holding(ptr);
	for (unsigned i = 0; i < n && rc == CUDA_SUCCESS; i++)
		rc = data[i] ? pointer_attribute(a, ptr, attrs[i], data[i]) : CUDA_ERROR_INVALID_VALUE;
	UNLOCK();
	return rc;
}

SIM_FN(cuPointerGetAttributes, cuPointerGetAttributes,
	(unsigned int numAttributes, CUpointer_attribute *attributes, void **data, CUdeviceptr ptr),
	do_pointer_attributes(numAttributes, attributes, data, ptr))

static CUresult do_address_range(CUdeviceptr *base, size_t *size, CUdeviceptr ptr)
{
	NEED_INIT();
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct alloc *a = alloc_holding(ptr);
	if (!a || a->kind == ALLOC_HOST) {
		rc = CUDA_ERROR_NOT_FOUND;
	} else {
		if (base)
			*base = a->addr;
		if (size)
			*size = a->req ? a->req : a->size;
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemGetAddressRange_v2, cuMemGetAddressRange, (CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr),
	do_address_range(pbase, psize, dptr))

/* Peer access to a pool's memory: per device, none (0), read (1) or
 * read-write (3); the pool's own device is always read-write. */
#define CU_MEM_LOCATION_TYPE_DEVICE 1

static CUresult do_pool_set_access(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
	NEED_INIT();
	if (!map && count)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count; i++) {
		if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || (map[i].flags != 0 && map[i].flags != 1 && map[i].flags != 3))
			return CUDA_ERROR_INVALID_VALUE;
		if (check_dev(map[i].location.id))
			return CUDA_ERROR_INVALID_DEVICE;
	}
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUmemPoolHandle_st *p = live_pool(pool);
	if (!p) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		for (size_t i = 0; i < count && rc == CUDA_SUCCESS; i++)
			if (map[i].location.id == p->dev && map[i].flags != 3)
				rc = CUDA_ERROR_INVALID_DEVICE; /* its own device keeps read-write */
		for (size_t i = 0; i < count && rc == CUDA_SUCCESS; i++)
			p->access[map[i].location.id] = (unsigned char)map[i].flags;
	}
	UNLOCK();
	return rc;
}

SIM_FN(cuMemPoolSetAccess, cuMemPoolSetAccess, (CUmemoryPool pool, const CUmemAccessDesc *map, size_t count),
	do_pool_set_access(pool, map, count))

static CUresult do_pool_get_access(CUmemAccess_flags *flags, CUmemoryPool pool, CUmemLocation *loc)
{
	NEED_INIT();
	if (!flags || !loc || loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(loc->id))
		return CUDA_ERROR_INVALID_DEVICE;
	CUresult rc = CUDA_SUCCESS;
	LOCK();
	struct CUmemPoolHandle_st *p = live_pool(pool);
	if (!p)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		*flags = loc->id == p->dev ? 3 : p->access[loc->id];
	UNLOCK();
	return rc;
}

SIM_FN(cuMemPoolGetAccess, cuMemPoolGetAccess, (CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location),
	do_pool_get_access(flags, memPool, location))

/* ------------------------------------------------------------------------ */
/* Call counts (CUPROF_SIM_CALL_COUNTS)                                      */
/* ------------------------------------------------------------------------ */

/* The calls of API name (a base name, as in the trace: "cuStreamDestroy"
 * counts cuStreamDestroy and cuStreamDestroy_v2) counted so far in this
 * process; -1 when calls are not counted or the name is no API's. Not part
 * of the CUDA API. */
SIM_EXPORT long long cuprofsim_call_count(const char *name)
{
	if (!counting || !name)
		return -1;
	for (size_t i = 0; i < sizeof cost_names / sizeof cost_names[0]; i++)
		if (cost_names[i].slot < CUPROF_API_COUNT && strcmp(cost_names[i].name, name) == 0)
			return (long long)__atomic_load_n(&call_counts[cost_names[i].slot], __ATOMIC_RELAXED);
	return -1;
}

/* At exit: DIR/sim-calls-PID, one "API count" line per API called. */
__attribute__((destructor)) static void write_call_counts(void)
{
	if (!counting)
		return;
	char path[sizeof cfg_counts_dir + 32];
	snprintf(path, sizeof path, "%s/sim-calls-%ld", cfg_counts_dir, (long)getpid());
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		complain("cuprof sim: call counts not written: cannot create %s\n", path);
		return;
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return;
	}
	unsigned char done[CUPROF_API_COUNT] = {0};
	for (size_t i = 0; i < sizeof cost_names / sizeof cost_names[0]; i++) {
		int slot = cost_names[i].slot;
		unsigned long long n;
		if (slot >= CUPROF_API_COUNT || done[slot] || !(n = __atomic_load_n(&call_counts[slot], __ATOMIC_RELAXED)))
			continue;
		done[slot] = 1;
		fprintf(f, "%s %llu\n", cost_names[i].name, n);
	}
	fclose(f);
}

/* What an API the simulator does not implement does (stubs_gen.c): spend
 * its cost and answer CUDA_ERROR_NOT_SUPPORTED. */
__attribute__((visibility("hidden"))) CUresult cuprofsim_stub(int api)
{
	SIM_BEGIN;
	return sim_finish(api, t0_, CUDA_ERROR_NOT_SUPPORTED);
}

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
/* A function the API table does not know (as one newer than the table
 * would be): exported and returned by cuGetProcAddress, it returns its
 * argument plus one, so a test can tell it was really called. */
SIM_EXPORT int cuCuprofSimFuture(int x);
int cuCuprofSimFuture(int x) { return x + 1; }

static const struct proc {
	const char *name;
	int min_version;
	int ptds; /* 1: only with the per-thread-default-stream flag */
	void *fn;
} procs[] = {
#define P(name, ver, ptds, fn) {name, ver, ptds, (void *)fn},
	CUPROF_PROCS(P)
#undef P
	/* Not in the API table: a function newer than the table, for the
	 * shim's unknown-function counting. */
	{"cuCuprofSimFuture", 13000, 0, (void *)cuCuprofSimFuture},
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
	return sim_finish(CUPROF_API_cuGetProcAddress, t0_, lookup(symbol, pfn, cudaVersion, flags, NULL, 0));
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus)
{
	unsigned long long t0_ = costs_on ? ticks() : 0;
	return sim_finish(CUPROF_API_cuGetProcAddress, t0_, lookup(symbol, pfn, cudaVersion, flags, symbolStatus, 1));
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
