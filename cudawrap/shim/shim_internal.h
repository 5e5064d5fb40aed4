/*
 * What the shim's translation units share: the per-thread recording state and
 * the inline fast path that appends one record to the thread's chunk.
 */
#ifndef CUPROF_SHIM_INTERNAL_H
#define CUPROF_SHIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cuprof_ring.h"
#include "cuprof_apis.h"

#define CUPROF_HIDDEN __attribute__((visibility("hidden")))
#define CUPROF_EXPORT __attribute__((visibility("default")))
#define CUPROF_LIKELY(x) __builtin_expect(!!(x), 1)
#define CUPROF_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Per-thread state: kept small (initial-exec TLS must fit the static TLS
 * surplus when the shim is dlopen'ed as an NVTX injection library). */
struct cuprof_tls {
	struct cuprof_rec *cur;        /* next slot to write */
	struct cuprof_rec *lim;        /* end of the owned chunk (fewer slots left than a record needs: slow path) */
	struct cuprof_chunk_hdr *ch;   /* owned chunk */
	uint64_t last_end;             /* end of the last recorded call */
	uint32_t count;                /* slots committed to ch */
	uint32_t slot;                 /* thread slot index + 1, 0 when none */
	uint32_t depth;                /* reentrancy guard of the wrappers */
	uint32_t in_hook;              /* reentrancy guard of the resolvers */
	uint32_t locked;               /* this thread holds ring_mu or intern_mu */
	uint32_t seen_released;        /* hdr->released when the last claim failed */
	uint32_t failed;               /* the last claim found no free chunk: 1 all held by threads, 2 some full */
	uint32_t seen_segs;            /* runs of chunks the ring had then */
	uint32_t hint;                 /* where every claim starts scanning */
	uint32_t tid;
	uint32_t serial;               /* the order in which the thread took its slot (from 0; slot - 1 when it has one) */
	uint32_t stalled;              /* a wait gave up: the recorder did not poll */
	uint32_t stalled_polls;        /* hdr->polls when it gave up */
	uint32_t claims;               /* chunks claimed: with count, changes at every record */
	/* The wrapper's cost measured in place (inplace.c): recorded calls
	 * until the next shadow call, the schedule (whether the next shadow
	 * runs after its call (warm) or before (cold), and at what rate), and
	 * the shadows' measurements not yet added to the ring's header: per
	 * kind (0 cold, 1 warm) their count and ticks, each shadow counted as
	 * the intervals of CUPROF_SAMPLE_EVERY calls it stands for. */
	uint32_t sample_left;
	struct cuprof_sample_rate {
		uint8_t warm;        /* the next shadow runs after its call */
		uint8_t level;       /* shadows are CUPROF_SAMPLE_EVERY << level calls apart: one counts 1 << level */
		uint8_t taken;       /* shadows due at this level so far */
		uint8_t after_shift; /* what the warm shadow due after this call counts (its level: schedule may raise it) */
		uint8_t pinned;      /* cuprof_calibrate sets the level: it stays */
	} sample_rate;
	uint32_t sample_hold;  /* cuprof_calibrate runs: keep them out of the header */
	struct cuprof_samples {
		uint32_t n[2];
		uint64_t ticks[2];
	} samples;
};

extern __thread struct cuprof_tls cuprof_tls
	__attribute__((tls_model("initial-exec"))) CUPROF_HIDDEN;

/* 0 unknown yet, CUPROF_CLOCK_TSC or CUPROF_CLOCK_MONOTONIC. */
extern int cuprof_clock_kind CUPROF_HIDDEN;

/* Set (CUPROF_TIMING=end) to read the clock once per call, after it: calls
 * are recorded with start == end, at about half the cost. */
extern int cuprof_end_only CUPROF_HIDDEN;

/* 1 when a call's start is read with rdtsc (TSC clock, both ends timed):
 * the one flag a wrapper tests before the call. */
extern int cuprof_tsc_both CUPROF_HIDDEN;

CUPROF_HIDDEN uint64_t cuprof_clock_slow(void);
CUPROF_HIDDEN uint64_t cuprof_clock_start_slow(void);
CUPROF_HIDDEN struct cuprof_rec *cuprof_rec_slow(struct cuprof_tls *t);
CUPROF_HIDDEN void cuprof_record_call_detail(struct cuprof_tls *t, uint64_t s, uint64_t e, uint16_t api, int32_t res,
					     uint64_t h, unsigned has_args, uint64_t st, uint64_t ax, uint64_t sz,
					     uint64_t fl, int32_t dv, uint64_t caller);
/* cuprof_rec_slow for a Python frame: a drop is counted as a lost frame. */
CUPROF_HIDDEN struct cuprof_rec *cuprof_rec_slow_frame(struct cuprof_tls *t);
/* What the Python frame recorder (python.c, py_*.c) needs of the ring. */
CUPROF_HIDDEN void cuprof_py_count_drop(struct cuprof_tls *t, int code);
CUPROF_HIDDEN uint64_t cuprof_ticks_for(uint64_t ns);
/* The Python hooks' calibrated costs, in ring clock ticks x 1000 (0: not
 * measured): per event (entry or exit) of a written Python frame and of a
 * written C-level one; the part of a written frame's two events that lies
 * between its own start and end, Python and C-level; per Python and per
 * C-level activation pushed and not written; per hook call that pushed
 * nothing (python.c measures them at start). */
struct cuprof_py_costs {
	uint64_t event_mt, c_event_mt, inside_mt, c_inside_mt, hidden_mt, c_hidden_mt, lone_mt;
};
CUPROF_HIDDEN void cuprof_py_publish(const char *status, const struct cuprof_py_costs *costs);

/*
 * Lifecycle hooks: what a part of the shim does when the ring is opened
 * (the process's first, or a fork child's), at exit and around fork. A part
 * declares its hooks with CUPROF_LIFECYCLE(name) = {...}; ring.c runs every
 * declared set (a NULL hook is skipped), so it names none of them. The sets
 * are gathered by the linker into one section (its __start_ and __stop_
 * symbols bound the array), so they are known before any code runs, with
 * no constructor to order.
 *
 * ring_opened: after the ring is opened, its locks released.
 * at_exit: at exit, before the ring is marked exited.
 * fork_prepare: before fork, before the ring's locks are taken (in the
 *   reverse order of the sets); fork_parent: in the parent after they are
 *   released; fork_child: in the child once it is detached from the
 *   parent's ring.
 */
struct cuprof_lifecycle {
	void (*ring_opened)(void);
	void (*at_exit)(void);
	void (*fork_prepare)(void);
	void (*fork_parent)(void);
	void (*fork_child)(void);
};

#define CUPROF_LIFECYCLE(name)                                                                    \
	static const struct cuprof_lifecycle name                                                     \
		__attribute__((used, section("cuprof_lifecycle"), aligned(__alignof__(struct cuprof_lifecycle))))
CUPROF_HIDDEN uint32_t cuprof_intern_n(const char *s, uint32_t n);
/* cuprof_intern_cut interns s[0..n), its first CUPROF_STRING_MAX bytes when
 * it is longer, counting the cut (cuprof_count_cut: string_cuts). */
CUPROF_HIDDEN uint32_t cuprof_intern_cut(const char *s, size_t n);
CUPROF_HIDDEN void cuprof_count_cut(void);
CUPROF_HIDDEN void cuprof_count_nested(void);
/* Driver functions the API table does not know (unknown.c). */
CUPROF_HIDDEN void *cuprof_unknown_function(void *fn, const char *name);
CUPROF_HIDDEN void cuprof_emit(uint8_t kind, uint32_t name, uint32_t domain, uint64_t handle, uint8_t object);

/* cuprof_rdtsc reads the CPU's constant-rate tick counter (CUPROF_CLOCK_TSC):
 * the TSC on x86 (rdtsc), the generic timer's virtual count on aarch64
 * (cntvct_el0, readable at EL0 on Linux, constant rate by the architecture).
 * Neither read is ordered against the instructions around it, as the
 * recorder expects of a call's two ends. CUPROF_HAVE_TICKS is defined where
 * one exists; elsewhere the clock is CLOCK_MONOTONIC. */
#if defined(__x86_64__) || defined(__i386__)
#define CUPROF_HAVE_TICKS 1
static inline uint64_t cuprof_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
#elif defined(__aarch64__)
#define CUPROF_HAVE_TICKS 1
static inline uint64_t cuprof_rdtsc(void)
{
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}
#endif

static inline uint64_t cuprof_clock(void)
{
#ifdef CUPROF_HAVE_TICKS
	if (CUPROF_LIKELY(cuprof_clock_kind == CUPROF_CLOCK_TSC))
		return cuprof_rdtsc();
#endif
	return cuprof_clock_slow();
}

/* cuprof_clock_start reads the clock before a call: 0 when only the end is
 * read (CUPROF_TIMING=end, known once the first read initialised the clock).
 * The common case (TSC, both ends) is one load and one branch; the rest,
 * clock initialisation included, is cuprof_clock_start_slow's. */
static inline uint64_t cuprof_clock_start(void)
{
#ifdef CUPROF_HAVE_TICKS
	if (CUPROF_LIKELY(cuprof_tsc_both))
		return cuprof_rdtsc();
#endif
	if (cuprof_end_only) /* inline, as end-only's every call takes this path */
		return 0;
	return cuprof_clock_start_slow();
}

/*
 * The wrapper's cost in place (inplace.c): at one recorded call in
 * CUPROF_SAMPLE_EVERY of each thread's hot wrappers at first, fewer later
 * (and of the calibrator's wrapped no-op), a timed shadow of the calibrator's measured
 * body, alternately before the call (on the caches as the program left
 * them) and after it (on the lines the wrapper just touched). The recorder
 * turns the two means, less the calibrator's, into
 * trace.Meta.Overhead.InPlaceNs.
 */
#define CUPROF_SAMPLE_EVERY 64
/* The interval doubles after every CUPROF_SAMPLE_PER_LEVEL shadows of a
 * thread, up to CUPROF_SAMPLE_EVERY << CUPROF_SAMPLE_LEVELS (1 in 1024):
 * a short program is measured as densely as before, a long one pays a
 * sixteenth of the shadows' cost. */
#define CUPROF_SAMPLE_PER_LEVEL 64
#define CUPROF_SAMPLE_LEVELS 4
/* cuprof_sample_due runs the cold shadow (before the call) and returns 0,
 * or returns 1 for a warm one (cuprof_sample_after, after the call). */
CUPROF_HIDDEN int cuprof_sample_due(struct cuprof_tls *t);
CUPROF_HIDDEN void cuprof_sample_after(struct cuprof_tls *t);
/* cuprof_sample_flush adds the thread's measurements to the ring's header
 * (at thread exit, at exit, and every few measurements). */
CUPROF_HIDDEN void cuprof_sample_flush(struct cuprof_tls *t);
/* cuprof_ring_add_inplace adds to the ring's header (ring.c). */
CUPROF_HIDDEN void cuprof_ring_add_inplace(uint64_t cold_ticks, uint64_t warm_ticks, uint64_t counts);

/* cuprof_sample counts a call to be recorded, before its guard; it returns
 * 1 when cuprof_sample_after is to run once the call's record is done. */
static inline int cuprof_sample(struct cuprof_tls *t)
{
	if (CUPROF_LIKELY(t->sample_left != 0)) {
		t->sample_left--;
		return 0;
	}
	return cuprof_sample_due(t);
}

_Static_assert(sizeof(struct cuprof_rec) == CUPROF_SLOT_BYTES && sizeof(struct cuprof_rec_args) == CUPROF_SLOT_BYTES &&
		       sizeof(struct cuprof_rec_detail) == CUPROF_SLOT_BYTES,
	       "a record's slots are 32 bytes");

/* cuprof_rec_room says whether the thread's chunk has room for n slots
 * (never when it owns none: cur == lim == NULL). */
static inline int cuprof_rec_room(struct cuprof_tls *t, unsigned n)
{
	return (uintptr_t)t->lim - (uintptr_t)t->cur >= (uintptr_t)n * CUPROF_SLOT_BYTES;
}

/* cuprof_guard_enter and cuprof_guard_exit set and clear the thread's
 * re-entrancy guard (depth) around a record: a signal handler that finds it
 * set passes through (or counts its event as dropped) instead of writing
 * the slot being filled. The signal fences keep the compiler from reading
 * the thread's slot (cur, lim) before the guard is set, or clearing it
 * before the record is committed: without them gcc -O2 loaded cur and lim
 * above the guard's store in cuprof_span, and a handler landing there had
 * its span overwritten and the chunk's count run past its records. */
static inline void cuprof_guard_enter(struct cuprof_tls *t)
{
	t->depth = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void cuprof_guard_exit(struct cuprof_tls *t)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->depth = 0;
}

/* cuprof_rec_begin returns room for a record of n slots (1-3), or NULL when
 * the event was dropped (and counted) or recording is off. */
static inline struct cuprof_rec *cuprof_rec_begin(struct cuprof_tls *t, unsigned n)
{
	if (CUPROF_LIKELY(cuprof_rec_room(t, n)))
		return t->cur;
	return cuprof_rec_slow(t);
}

/* cuprof_rec_commit publishes a filled record of n slots to the recorder. */
static inline void cuprof_rec_commit(struct cuprof_tls *t, struct cuprof_rec *r, unsigned n)
{
	t->cur = r + n;
	t->count += n;
	__atomic_store_n(&t->ch->count, t->count, __ATOMIC_RELEASE);
}

/* cuprof_rec_tag is the head's api, kind and ext fields as one store. */
static inline void cuprof_rec_tag(struct cuprof_rec *r, uint16_t api, uint8_t kind, uint8_t ext)
{
	uint32_t w = (uint32_t)api | (uint32_t)kind << 16 | (uint32_t)ext << 24;
	__builtin_memcpy(&r->api, &w, sizeof w);
}

/* CUPROF_ZERO(x): x is a constant 0 (an API table column the API does not
 * record), known at compile time. */
#define CUPROF_ZERO(x) (__builtin_constant_p((x) == 0) && (x) == 0)

/*
 * cuprof_record_call writes one call's record: the head, the argument slot
 * when the API records any of stream/aux/size/flags (has_args: decided at
 * compile time from the API table, so an API's records have one length but
 * for the detail), and the detail slot (with the full end) when the call
 * failed, has a device or its duration does not fit 32 bits: that rare case
 * is out of line (cuprof_record_call_detail), the common one a constant
 * number of stores. Every wrapper and the calibrator's measured body use
 * it, so the calibration measures what a call costs.
 */
static inline __attribute__((always_inline)) void cuprof_record_call(struct cuprof_tls *t, uint64_t s, uint64_t e,
								    uint16_t api, int32_t res, uint64_t h,
								    unsigned has_args, uint64_t st, uint64_t ax,
								    uint64_t sz, uint64_t fl, int32_t dv,
								    uint64_t caller)
{
	uint64_t d = e - s;
	if (CUPROF_UNLIKELY(((uint64_t)(uint32_t)res | (uint64_t)(uint32_t)(dv + 1) | d >> 32) != 0)) {
		cuprof_record_call_detail(t, s, e, api, res, h, has_args, st, ax, sz, fl, dv, caller);
		return;
	}
	const unsigned n = 1 + has_args;
	struct cuprof_rec *r = t->cur;
	if (CUPROF_UNLIKELY(!cuprof_rec_room(t, n))) {
		r = cuprof_rec_slow(t);
		if (r == NULL)
			return;
	}
	r->start = s;
	r->handle = h;
	r->caller = caller;
	r->dur = (uint32_t)d;
	cuprof_rec_tag(r, api, CUPROF_REC_CALL, (uint8_t)has_args);
	if (has_args) {
		struct cuprof_rec_args *a = (struct cuprof_rec_args *)(r + 1);
		a->stream = st;
		a->aux = ax;
		a->size = sz;
		a->flags = fl;
	}
	cuprof_rec_commit(t, r, n);
	t->last_end = e;
}

/* cuprof_rec_fill3 fills the three slots at r of a record with both
 * extension slots (NVTX, spans, Python frames); nothing is committed. */
static inline void cuprof_rec_fill3(struct cuprof_rec *r, uint8_t kind, uint64_t start, uint64_t end, uint64_t handle,
				    uint64_t aux, uint64_t flags, uint64_t caller, uint32_t name, uint8_t object)
{
	r->start = start;
	r->handle = handle;
	r->caller = caller;
	r->dur = (uint32_t)(end - start);
	cuprof_rec_tag(r, 0, kind, CUPROF_EXT_ARGS | CUPROF_EXT_DETAIL);
	struct cuprof_rec_args *a = (struct cuprof_rec_args *)(r + 1);
	a->stream = 0;
	a->aux = aux;
	a->size = 0;
	a->flags = flags;
	struct cuprof_rec_detail *dt = (struct cuprof_rec_detail *)(r + 2);
	dt->end = end;
	dt->result = 0;
	dt->device = -1;
	dt->name = name;
	dt->object = object;
	dt->pad[0] = dt->pad[1] = dt->pad[2] = 0;
	dt->pad2 = 0;
}

/* cuprof_rec_full writes a record with both extension slots (NVTX, spans:
 * rare, and they carry names and domains). */
static inline void cuprof_rec_full(struct cuprof_tls *t, uint8_t kind, uint64_t start, uint64_t end, uint64_t handle,
				   uint64_t aux, uint64_t caller, uint32_t name, uint8_t object)
{
	struct cuprof_rec *r = cuprof_rec_begin(t, 3);
	if (CUPROF_UNLIKELY(r == NULL))
		return;
	cuprof_rec_fill3(r, kind, start, end, handle, aux, 0, caller, name, object);
	cuprof_rec_commit(t, r, 3);
}

/* ---- The capture gate (capture.c) ---- */

/* cuprof_gate: inside a capture range (or recording everything), outside
 * one, or not known yet in this process image (the first test reads the
 * environment). */
#define CUPROF_GATE_UNKNOWN 0 /* zero: what a fork's child finds (below) */
#define CUPROF_GATE_OPEN 1
#define CUPROF_GATE_CLOSED 2
/* Open, and some APIs pass through unrecorded (CUPROF_PASS_THROUGH): a
 * wrapper tests its API's byte of cuprof_pass inline and records the call
 * when it is 0; a passed-through API's calls go to cuprof_pass_call, which
 * counts them. */
#define CUPROF_GATE_SOME 3
/* The gate lies alone in a page that a fork's child gets zeroed
 * (MADV_WIPEONFORK, set when the ring opens): in a child made without
 * pthread_atfork's handlers (glibc's _Fork, syscall(SYS_fork)) the first
 * wrapper, NVTX event, span or Python frame then finds the gate unknown
 * and takes the slow path (cuprof_gate_init), which sees the pid changed
 * and detaches the child from its parent's ring (cuprof_fork_check)
 * before it writes a record there. No test is added to the hot path. */
struct cuprof_gate_page {
	int gate;
	char pad[4096 - sizeof(int)];
};
extern struct cuprof_gate_page cuprof_gate_page CUPROF_HIDDEN;
#define cuprof_gate (cuprof_gate_page.gate)
/* cuprof_fork_check detaches a child that a fork without pthread_atfork's
 * handlers made from its parent's ring (ring.c); it returns 1 when it did. */
CUPROF_HIDDEN int cuprof_fork_check(void);
/* cuprof_keep[api]: calls of api are recorded outside ranges too. */
extern unsigned char cuprof_keep[CUPROF_API_COUNT] CUPROF_HIDDEN;
/* cuprof_pass[api]: calls of api pass through unrecorded (passthrough.c). */
extern unsigned char cuprof_pass[CUPROF_API_COUNT] CUPROF_HIDDEN;
CUPROF_HIDDEN int cuprof_gate_init(int api);
CUPROF_HIDDEN int cuprof_gate_open_slow(void);
CUPROF_HIDDEN void cuprof_gate_profiler(int start);
/* The ring-clock time the current range opened (0 without ranges). */
extern uint64_t cuprof_gate_since CUPROF_HIDDEN;
/* Pass-through (passthrough.c): cuprof_pass_configure reads
 * CUPROF_PASS_THROUGH once (1 when it names any API); cuprof_pass_call
 * counts a call of a passed-through api and returns 0 (hand it to the
 * driver unrecorded), else returns 1 (record it). */
CUPROF_HIDDEN int cuprof_pass_configure(void);
CUPROF_HIDDEN int cuprof_pass_call(int api);
/* cuprof_pass_set makes names (base names of the API table, comma- or
 * space-separated; NULL or "" for none) the set passed through from now
 * on, after writing the counts so far as count events (capture.c's
 * cuprof_pass_through calls it with cap_mu held). It refuses an API that
 * cuprof_keep marks, and every API when keep_known is 0 (the recorder
 * handed no keep table), leaving the set as it was. It returns how many
 * APIs pass through now, or CUPROF_PASS_UNKNOWN / CUPROF_PASS_REFUSED.
 * cuprof_pass_get writes the set into buf (comma-separated, NUL-ended) and
 * returns how many, or -1 when size is too small. */
CUPROF_HIDDEN int cuprof_pass_set(const char *names, int keep_known);
CUPROF_HIDDEN int cuprof_pass_get(char *buf, size_t size);
/* cuprof_ring_pass_calls is the ring header's pass-through counters, by
 * API id (CUPROF_PASS_APIS), or NULL while no ring is open (ring.c). */
CUPROF_HIDDEN uint64_t *cuprof_ring_pass_calls(void);
/* cuprof_count_event writes one count event (unknown.c): name and calls. */
CUPROF_HIDDEN void cuprof_count_event(const char *name, uint64_t calls);
/* 1 when an NVTX range opens and closes capture ranges. */
extern int cuprof_capture_nvtx_mode CUPROF_HIDDEN;
enum { CUPROF_NVTX_PUSH, CUPROF_NVTX_POP, CUPROF_NVTX_START, CUPROF_NVTX_END };
/* cuprof_capture_nvtx follows the NVTX capture range (what, name, domain,
 * id of a start/end range) and says whether the gate is open after it. */
CUPROF_HIDDEN int cuprof_capture_nvtx(int what, uint32_t name, uint32_t domain, uint64_t id);

/*
 * cuprof_capturing(api) is the test at the top of every wrapper: 1 to
 * record the call, 0 to hand it to the driver untouched. Open (the common
 * case, and always without capture ranges): one load and one branch.
 * Closed: the same load, a second branch and the API's byte of cuprof_keep.
 * With APIs passed through (CUPROF_GATE_SOME): a third branch and the API's
 * byte of cuprof_pass, so a recorded call costs about what it costs
 * closed, and a passed-through one a call of cuprof_pass_call more, which
 * counts it. Before the first test, a call of cuprof_gate_init.
 * cuProfilerStart and cuProfilerStop move the gate and are not recorded as
 * calls themselves: the capture range they open or close is. api is a
 * constant in every wrapper, so the profiler tests fold away elsewhere.
 */
static inline __attribute__((always_inline)) int cuprof_capturing(int api)
{
	if (api == CUPROF_API_cuProfilerStart || api == CUPROF_API_cuProfilerStop) {
		cuprof_gate_profiler(api == CUPROF_API_cuProfilerStart);
		return 0;
	}
	int g = __atomic_load_n(&cuprof_gate, __ATOMIC_RELAXED);
	if (CUPROF_LIKELY(g == CUPROF_GATE_OPEN))
		return 1;
	if (CUPROF_LIKELY(g == CUPROF_GATE_CLOSED))
		return cuprof_keep[api];
	if (CUPROF_LIKELY(g == CUPROF_GATE_SOME) && (unsigned)api < CUPROF_API_COUNT)
		return __atomic_load_n(&cuprof_pass[api], __ATOMIC_RELAXED) ? cuprof_pass_call(api) : 1;
	return cuprof_gate_init(api);
}

/* cuprof_gate_open says whether events other than driver calls (NVTX
 * marks, spans, Python frames) are recorded now. */
static inline int cuprof_gate_open(void)
{
	int g = __atomic_load_n(&cuprof_gate, __ATOMIC_RELAXED);
	if (CUPROF_LIKELY(g == CUPROF_GATE_OPEN))
		return 1;
	if (g == CUPROF_GATE_CLOSED)
		return 0;
	return cuprof_gate_open_slow();
}

#endif /* CUPROF_SHIM_INTERNAL_H */
