/*
 * The wrapper's cost measured in place: how much more recording a call
 * costs the program between its own statements than the calibrator's
 * tight loop measures on warm caches (shim_internal.h, cuprof_sample).
 *
 * At one recorded call in CUPROF_SAMPLE_EVERY of each thread's, a shadow
 * call runs the calibrator's measured body on a no-op: the guard, the two
 * clock reads, the record's stores into the thread's next slot and the
 * commit's store of the chunk's count, but with the count unchanged, so the
 * recorder never reads the slot, which the next real record overwrites. It
 * is timed between a clock read behind an lfence (what came before has
 * executed) and one with rdtscp (the shadow has executed). The shadows
 * alternate: one runs before its call, with the thread's caches as the
 * program left them (cold), the next after its call, once the wrapper has
 * touched the same lines (warm). Both run the shadow's code as rarely, so
 * their difference is what the data the wrapper touches (its thread state,
 * the gate, the ring's slot and count) cost it for being cold at a real
 * call. The calibrator's wrapped no-op takes the same shadows in its tight
 * loop, where both are warm; the recorder adds the program's difference
 * less the calibrator's to the calibrated cost (trace.Meta.Overhead.
 * InPlaceNs). A shadow over the cap (a preemption, a signal handler) is
 * left out; a cold one with no room left in the thread's chunk runs at the
 * next call instead, a warm one is skipped.
 *
 * The rate falls as a thread goes on: the interval between its shadows
 * doubles after every CUPROF_SAMPLE_PER_LEVEL of them, up to
 * CUPROF_SAMPLE_EVERY << CUPROF_SAMPLE_LEVELS calls. Each measurement
 * counts for the calls it stands for, 1 << level intervals of
 * CUPROF_SAMPLE_EVERY, in its kind's sum and count, so the means weigh
 * every stretch of the program by its calls, not by its shadows. The
 * first CUPROF_SAMPLE_PER_LEVEL / 2 of each kind count one each, so a
 * count of at least that many is that many real shadows.
 *
 * Each thread sums its measurements and adds them to the ring's header
 * every CUPROF_SAMPLE_FLUSH of them, at its exit and at the process's.
 */
#define _GNU_SOURCE
#include <stdint.h>

#include "cuprof.h"
#include "cuprof_cuda.h"
#include "shim_internal.h"

#define CUPROF_SAMPLE_FLUSH 16
/* The cap: 2 us, in ticks once the ring knows its clock's rate (a shadow
 * takes tens of ns). */
#define CUPROF_SAMPLE_CAP_NS 2000
/* Before then: as many ticks as 2 us of a 4 GHz clock. */
#define CUPROF_SAMPLE_CAP_EARLY 8000

static uint64_t sample_cap;

static uint64_t clock_fenced_entry(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (CUPROF_LIKELY(cuprof_clock_kind == CUPROF_CLOCK_TSC)) {
		__asm__ __volatile__("lfence" ::: "memory");
		return cuprof_rdtsc();
	}
#elif defined(__aarch64__)
	/* isb: the counter is read after the instructions before it retire. */
	if (CUPROF_LIKELY(cuprof_clock_kind == CUPROF_CLOCK_TSC)) {
		__asm__ __volatile__("isb" ::: "memory");
		return cuprof_rdtsc();
	}
#endif
	return cuprof_clock();
}

static uint64_t clock_fenced_exit(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (CUPROF_LIKELY(cuprof_clock_kind == CUPROF_CLOCK_TSC)) {
		uint32_t lo, hi, aux;
		__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
		return ((uint64_t)hi << 32) | lo;
	}
#elif defined(__aarch64__)
	if (CUPROF_LIKELY(cuprof_clock_kind == CUPROF_CLOCK_TSC)) {
		__asm__ __volatile__("isb" ::: "memory");
		uint64_t v = cuprof_rdtsc();
		__asm__ __volatile__("isb" ::: "memory");
		return v;
	}
#endif
	return cuprof_clock();
}

static uint64_t cap_ticks(void)
{
	uint64_t c = __atomic_load_n(&sample_cap, __ATOMIC_RELAXED);
	if (CUPROF_LIKELY(c != 0))
		return c;
	c = cuprof_ticks_for(CUPROF_SAMPLE_CAP_NS);
	if (c == 0)
		return CUPROF_SAMPLE_CAP_EARLY;
	__atomic_store_n(&sample_cap, c, __ATOMIC_RELAXED);
	return c;
}

static CUresult shadow_noop(void)
{
	__asm__ __volatile__("" ::: "memory");
	return CUDA_SUCCESS;
}

static CUresult (*volatile shadow_fn)(void) = shadow_noop;

/* shadow runs one shadow call and returns its ticks, or 0 when there is no
 * room for its record or it ran over the cap. */
static uint64_t shadow(struct cuprof_tls *t)
{
	if (!cuprof_rec_room(t, 1))
		return 0;
	uint64_t a = clock_fenced_entry();
	cuprof_guard_enter(t);
	uint64_t s = cuprof_clock_start();
	CUresult res = shadow_fn();
	uint64_t e = cuprof_clock();
	struct cuprof_rec *r = t->cur;
	r->start = s;
	r->handle = 0;
	r->caller = (uint64_t)(uintptr_t)__builtin_return_address(0);
	r->dur = (uint32_t)(e - s);
	cuprof_rec_tag(r, 0, CUPROF_REC_CALL, (uint8_t)res);
	__atomic_store_n(&t->ch->count, t->count, __ATOMIC_RELEASE); /* unchanged: nothing published */
	cuprof_guard_exit(t);
	uint64_t b = clock_fenced_exit();
	if (CUPROF_UNLIKELY(b <= a || b - a > cap_ticks()))
		return 0;
	return b - a;
}

/* add counts a measurement as 1 << shift intervals of CUPROF_SAMPLE_EVERY
 * calls; the sums reach the header once they hold CUPROF_SAMPLE_FLUSH
 * shadows at the rate of the latest. */
static void add(struct cuprof_tls *t, int warm, uint64_t ticks, unsigned shift)
{
	if (ticks == 0)
		return;
	t->samples.ticks[warm] += ticks << shift;
	t->samples.n[warm] += 1u << shift;
	if (CUPROF_UNLIKELY(t->samples.n[0] + t->samples.n[1] >= (uint32_t)CUPROF_SAMPLE_FLUSH << shift) && !t->sample_hold)
		cuprof_sample_flush(t);
}

/* schedule sets the calls until the next shadow, a level further once
 * this one has had its CUPROF_SAMPLE_PER_LEVEL. */
static void schedule(struct cuprof_tls *t)
{
	struct cuprof_sample_rate *r = &t->sample_rate;
	if (r->level < CUPROF_SAMPLE_LEVELS && !r->pinned && ++r->taken == CUPROF_SAMPLE_PER_LEVEL) {
		r->level++;
		r->taken = 0;
	}
	t->sample_left = ((uint32_t)CUPROF_SAMPLE_EVERY << r->level) - 1;
}

__attribute__((noinline)) int cuprof_sample_due(struct cuprof_tls *t)
{
	struct cuprof_sample_rate *r = &t->sample_rate;
	if (r->warm) {
		r->warm = 0;
		r->after_shift = r->level;
		schedule(t);
		return 1; /* the shadow after this call */
	}
	if (!cuprof_rec_room(t, 1))
		return 0; /* no chunk, or this call claims the next one: the next call's */
	unsigned shift = r->level;
	schedule(t);
	r->warm = 1;
	add(t, 0, shadow(t), shift);
	return 0;
}

__attribute__((noinline)) void cuprof_sample_after(struct cuprof_tls *t)
{
	add(t, 1, shadow(t), t->sample_rate.after_shift);
}

void cuprof_sample_flush(struct cuprof_tls *t)
{
	struct cuprof_samples *m = &t->samples;
	if (t->sample_hold || (m->n[0] == 0 && m->n[1] == 0))
		return;
	cuprof_ring_add_inplace(m->ticks[0], m->ticks[1], (uint64_t)m->n[0] | (uint64_t)m->n[1] << 32);
	*m = (struct cuprof_samples){0};
}

static void inplace_at_exit(void)
{
	cuprof_sample_flush(&cuprof_tls);
}

/* A fork child's thread starts over: what it holds is the parent's, which
 * the parent adds to its own ring. */
static void inplace_fork_child(void)
{
	cuprof_tls.samples = (struct cuprof_samples){0};
	cuprof_tls.sample_rate = (struct cuprof_sample_rate){0}; /* and is measured densely again */
	cuprof_tls.sample_left = 0;
}

CUPROF_LIFECYCLE(inplace_hooks) = {.at_exit = inplace_at_exit, .fork_child = inplace_fork_child};
