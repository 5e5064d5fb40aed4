/*
 * What the shim's translation units share: the per-thread recording state and
 * the inline fast path that appends one record to the thread's chunk.
 */
#ifndef CUPROF_SHIM_INTERNAL_H
#define CUPROF_SHIM_INTERNAL_H

#include <stdint.h>
#include <time.h>

#include "cuprof_ring.h"

#define CUPROF_HIDDEN __attribute__((visibility("hidden")))
#define CUPROF_EXPORT __attribute__((visibility("default")))
#define CUPROF_LIKELY(x) __builtin_expect(!!(x), 1)
#define CUPROF_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Per-thread state: kept small (initial-exec TLS must fit the static TLS
 * surplus when the shim is dlopen'ed as an NVTX injection library). */
struct cuprof_tls {
	struct cuprof_rec *cur;        /* next record to write */
	struct cuprof_rec *lim;        /* end of the owned chunk (cur == lim: slow path) */
	struct cuprof_chunk_hdr *ch;   /* owned chunk */
	uint64_t last_end;             /* end of the last recorded call */
	uint32_t count;                /* records committed to ch */
	uint32_t slot;                 /* thread slot index + 1, 0 when none */
	uint32_t depth;                /* reentrancy guard of the wrappers */
	uint32_t in_hook;              /* reentrancy guard of the resolvers */
	uint32_t locked;               /* this thread holds ring_mu or intern_mu */
	uint32_t seen_released;        /* hdr->released when the last claim failed */
	uint32_t failed;               /* the last claim found no free chunk */
	uint32_t hint;                 /* where every claim starts scanning */
	uint32_t tid;
	uint32_t stalled;              /* a wait gave up: the recorder did not poll */
	uint32_t stalled_polls;        /* hdr->polls when it gave up */
};

extern __thread struct cuprof_tls cuprof_tls
	__attribute__((tls_model("initial-exec"))) CUPROF_HIDDEN;

/* 0 unknown yet, CUPROF_CLOCK_TSC or CUPROF_CLOCK_MONOTONIC. */
extern int cuprof_clock_kind CUPROF_HIDDEN;

/* Set (CUPROF_TIMING=end) to read the clock once per call, after it: calls
 * are recorded with start == end, at about half the cost. */
extern int cuprof_end_only CUPROF_HIDDEN;

CUPROF_HIDDEN uint64_t cuprof_clock_slow(void);
CUPROF_HIDDEN struct cuprof_rec *cuprof_rec_slow(struct cuprof_tls *t);
CUPROF_HIDDEN uint32_t cuprof_intern_n(const char *s, uint32_t n);
CUPROF_HIDDEN void cuprof_emit(uint8_t kind, uint32_t name, uint32_t domain, uint64_t handle, uint8_t object);

static inline uint64_t cuprof_clock(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (CUPROF_LIKELY(cuprof_clock_kind == CUPROF_CLOCK_TSC)) {
		uint32_t lo, hi;
		__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
		return ((uint64_t)hi << 32) | lo;
	}
#endif
	return cuprof_clock_slow();
}

/* cuprof_clock_start reads the clock before a call: 0 when only the end is
 * read (CUPROF_TIMING=end, known once the first read initialised the clock). */
static inline uint64_t cuprof_clock_start(void)
{
	if (CUPROF_UNLIKELY(cuprof_end_only))
		return 0;
	uint64_t t = cuprof_clock();
	return CUPROF_UNLIKELY(cuprof_end_only) ? 0 : t;
}

/* cuprof_rec_begin returns the record to fill, or NULL when the event was
 * dropped (and counted) or recording is off. */
static inline struct cuprof_rec *cuprof_rec_begin(struct cuprof_tls *t)
{
	struct cuprof_rec *r = t->cur;
	if (CUPROF_UNLIKELY(r == t->lim))
		r = cuprof_rec_slow(t);
	return r;
}

/* cuprof_rec_commit publishes a filled record to the recorder. */
static inline void cuprof_rec_commit(struct cuprof_tls *t, struct cuprof_rec *r)
{
	t->cur = r + 1;
	__atomic_store_n(&t->ch->count, ++t->count, __ATOMIC_RELEASE);
}

#endif /* CUPROF_SHIM_INTERNAL_H */
