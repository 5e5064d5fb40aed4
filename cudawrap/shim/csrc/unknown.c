/*
 * Driver functions the API table does not know (a driver newer than the
 * table): the dlsym and cuGetProcAddress hooks hand out, instead of the
 * driver's function, a counting trampoline that adds one to its counter and
 * jumps to the function with every register and the stack untouched, so the
 * call passes through as if made directly. At exit the counts are written to
 * the trace as count events (one per function: its name and calls), which
 * `cuprof report` lists.
 *
 * The pool is fixed (CUPROF_TRAMPOLINES); a function past it is handed out
 * untouched and counted as unknown_overflow, which is written too.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "shim_internal.h"

#define CUPROF_TRAMPOLINES 256
#define CUPROF_TRAMP_NAME 64

/* Read by the trampolines (RIP-relative, hidden so no GOT is involved). */
CUPROF_HIDDEN void *cuprof_tramp_target[CUPROF_TRAMPOLINES];
CUPROF_HIDDEN uint64_t cuprof_tramp_count[CUPROF_TRAMPOLINES];

static char tramp_name[CUPROF_TRAMPOLINES][CUPROF_TRAMP_NAME];
static int tramp_used;
static uint64_t unknown_overflow;
static pthread_mutex_t tramp_mu = PTHREAD_MUTEX_INITIALIZER;

#if defined(__x86_64__)
/* Trampoline i is at cuprof_tramp_base + 32 * i: endbr64 (a no-op without
 * CET, the landing pad with it), a locked increment of its counter and an
 * indirect jump through its target. */
__asm__(".text\n"
	".p2align 5\n"
	".globl cuprof_tramp_base\n"
	".hidden cuprof_tramp_base\n"
	".type cuprof_tramp_base, @function\n"
	"cuprof_tramp_base:\n"
	".set cuprof_tramp_i, 0\n"
	".rept 256\n"
	".p2align 5\n"
	"endbr64\n"
	"lock incq cuprof_tramp_count+8*cuprof_tramp_i(%rip)\n"
	"jmp *cuprof_tramp_target+8*cuprof_tramp_i(%rip)\n"
	".set cuprof_tramp_i, cuprof_tramp_i+1\n"
	".endr\n"
	".size cuprof_tramp_base, .-cuprof_tramp_base\n");
extern char cuprof_tramp_base[] CUPROF_HIDDEN;
_Static_assert(CUPROF_TRAMPOLINES == 256, "the .rept count above");
#define CUPROF_TRAMP_STRIDE 32
#define HAVE_TRAMPOLINES 1
#elif defined(__aarch64__)
/* Trampoline i is at cuprof_tramp_base + 64 * i: bti c (a no-op without
 * branch protection, the landing pad with it), an atomic increment of its
 * counter (an exclusive load/store loop: LSE's stadd is not on every ARMv8.0
 * CPU) and a branch through its target. It uses x16 and x17 (the scratch
 * registers a veneer may clobber) and x9 (a temporary no argument travels
 * in), so the arguments (x0-x8, v0-v7) and the stack reach the target as the
 * caller left them. */
__asm__(".text\n"
	".p2align 6\n"
	".globl cuprof_tramp_base\n"
	".hidden cuprof_tramp_base\n"
	".type cuprof_tramp_base, %function\n"
	"cuprof_tramp_base:\n"
	".set cuprof_tramp_i, 0\n"
	".rept 256\n"
	".p2align 6\n"
	"hint #34\n" /* bti c */
	"adrp x16, cuprof_tramp_count+8*cuprof_tramp_i\n"
	"add x16, x16, :lo12:cuprof_tramp_count+8*cuprof_tramp_i\n"
	"1: ldxr x17, [x16]\n"
	"add x17, x17, #1\n"
	"stxr w9, x17, [x16]\n"
	"cbnz w9, 1b\n"
	"adrp x16, cuprof_tramp_target+8*cuprof_tramp_i\n"
	"ldr x16, [x16, :lo12:cuprof_tramp_target+8*cuprof_tramp_i]\n"
	"br x16\n"
	".set cuprof_tramp_i, cuprof_tramp_i+1\n"
	".endr\n"
	".size cuprof_tramp_base, .-cuprof_tramp_base\n");
extern char cuprof_tramp_base[] CUPROF_HIDDEN;
_Static_assert(CUPROF_TRAMPOLINES == 256, "the .rept count above");
#define CUPROF_TRAMP_STRIDE 64
#define HAVE_TRAMPOLINES 1
#endif

/* cuprof_unknown_function returns what to hand out for fn, a driver function
 * named name that the table does not know: its trampoline (the same one for
 * the same function), or fn itself when there is no room or no trampolines
 * on this architecture. */
void *cuprof_unknown_function(void *fn, const char *name)
{
#ifdef HAVE_TRAMPOLINES
	pthread_mutex_lock(&tramp_mu);
	int i;
	for (i = 0; i < tramp_used; i++)
		if (cuprof_tramp_target[i] == fn)
			break;
	if (i == tramp_used) {
		if (tramp_used == CUPROF_TRAMPOLINES) {
			__atomic_add_fetch(&unknown_overflow, 1, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&tramp_mu);
			return fn;
		}
		strncpy(tramp_name[i], name ? name : "(unnamed)", CUPROF_TRAMP_NAME - 1);
		__atomic_store_n(&cuprof_tramp_target[i], fn, __ATOMIC_RELEASE);
		tramp_used++;
	}
	pthread_mutex_unlock(&tramp_mu);
	return cuprof_tramp_base + CUPROF_TRAMP_STRIDE * i;
#else
	(void)name;
	__atomic_add_fetch(&unknown_overflow, 1, __ATOMIC_RELAXED);
	return fn;
#endif
}

/* cuprof_count_event writes one count event: name and how many calls. */
void cuprof_count_event(const char *name, uint64_t calls)
{
	struct cuprof_tls *t = &cuprof_tls;
	uint32_t id = cuprof_intern_n(name, (uint32_t)strlen(name));
	uint64_t now = cuprof_clock();
	struct cuprof_rec *r = cuprof_rec_begin(t, 3);
	if (CUPROF_UNLIKELY(r == NULL))
		return;
	cuprof_rec_fill3(r, CUPROF_REC_COUNT, now, now, 0, 0, 0, 0, id, 0);
	((struct cuprof_rec_args *)(r + 1))->size = calls;
	cuprof_rec_commit(t, r, 3);
}

/* unknown_at_exit writes the counts (at exit, before the ring is marked
 * exited). */
static void unknown_at_exit(void)
{
	struct cuprof_tls *t = &cuprof_tls;
	if (t->depth)
		return;
	cuprof_guard_enter(t);
	int n = __atomic_load_n(&tramp_used, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		uint64_t c = __atomic_exchange_n(&cuprof_tramp_count[i], 0, __ATOMIC_RELAXED);
		if (c)
			cuprof_count_event(tramp_name[i], c);
	}
	uint64_t o = __atomic_exchange_n(&unknown_overflow, 0, __ATOMIC_RELAXED);
	if (o)
		cuprof_count_event("(functions past the trampoline pool: lookups not counted)", o);
	cuprof_guard_exit(t);
}

/* unknown_fork_child starts a forked child's counts at zero (its parent
 * writes what was counted before the fork). */
static void unknown_fork_child(void)
{
	pthread_mutex_init(&tramp_mu, NULL);
	for (int i = 0; i < CUPROF_TRAMPOLINES; i++)
		cuprof_tramp_count[i] = 0;
	unknown_overflow = 0;
}

CUPROF_LIFECYCLE(unknown_hooks) = {.at_exit = unknown_at_exit, .fork_child = unknown_fork_child};
