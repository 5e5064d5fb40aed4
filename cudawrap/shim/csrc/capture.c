/*
 * The capture gate: which stretches of the program the shim records
 * (cuprof record --capture-range, --delay, --duration, --capture-count).
 *
 * One word, cuprof_gate, says whether the process is inside a capture range.
 * Every wrapper tests it first (cuprof_capturing in shim_internal.h): open,
 * the call is recorded as always; closed, it goes straight to the driver
 * unless its API is one the analysis needs to follow objects and contexts
 * (cuprof_keep, the set trace.API.KeptOutsideCapture says, handed over by
 * the recorder in CUPROF_CAPTURE_KEEP): those are recorded outside ranges
 * too, and the analysis marks them Outside. A call's fate is decided once,
 * before it runs, so a call in flight when a range opens or closes is
 * recorded whole or not at all.
 *
 * A range opens and closes with what CUPROF_CAPTURE names:
 *   api   cuProfilerStart / cuProfilerStop (torch.cuda.profiler, CuPy's
 *         profiler, C code) and cuprof_capture_start / _stop (the Python
 *         module);
 *   nvtx  the NVTX range CUPROF_CAPTURE_NVTX in domain
 *         CUPROF_CAPTURE_NVTX_DOMAIN (push/pop or start/end; nested, the
 *         outermost one counts; repeated, each is a range);
 *   none  nothing but the window;
 * always within the window CUPROF_CAPTURE_WINDOW ("START END", absolute
 * CLOCK_MONOTONIC nanoseconds, END 0 for none), and at most
 * CUPROF_CAPTURE_COUNT ranges per process (0: no limit). Each range is
 * written when it closes (or at exit) as one CUPROF_REC_CAPTURE record:
 * start, end and what opened it.
 *
 * The window is kept by a thread the shim starts only when a window was
 * asked for: it sleeps until the window's edges and opens or closes the gate
 * there. Nothing else of the program changes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuprof.h"
#include "shim_internal.h"

struct cuprof_gate_page cuprof_gate_page __attribute__((aligned(4096))); /* .bss: the gate starts UNKNOWN */
unsigned char cuprof_keep[CUPROF_API_COUNT];
uint64_t cuprof_gate_since;
int cuprof_capture_nvtx_mode;

enum { MODE_NONE, MODE_API, MODE_NVTX };

static pthread_mutex_t cap_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int in_cap; /* this thread holds cap_mu (a signal handler skips) */

static struct {
	int configured; /* the environment was read */
	int gated;      /* a capture range was asked for: else the gate stays open */
	int mode;
	uint64_t win_start, win_end; /* CLOCK_MONOTONIC ns, 0 for none */
	int window_ok;               /* inside the window (or there is none) */
	int timer;                   /* the window's thread runs in this process */
	uint64_t count_max;
	uint64_t ranges;   /* ranges closed so far */
	int exhausted;     /* count_max reached: closed for good */
	int pass;          /* some APIs pass through: the open gate is CUPROF_GATE_SOME */
	int keep_known;    /* the recorder handed CUPROF_CAPTURE_KEEP */
	int api_on;        /* cuProfilerStart seen, no stop since */
	uint64_t depth;    /* NVTX capture ranges open, all threads */
	int open;          /* the gate is open */
	uint32_t opener;   /* string id of what opened it */
	char nvtx_name[256], nvtx_domain[256];
	uint32_t nvtx_name_id, nvtx_domain_id; /* interned once a ring is open */
	uint64_t ids[64]; /* NVTX start/end capture ranges open */
	unsigned nids;
} C;

/* Per thread: NVTX push levels in the capture domain, and which of them are
 * capture ranges (levels past 64 never are). */
static __thread uint32_t nvtx_level;
static __thread uint64_t nvtx_bits;

/* The gate's value when open: with APIs passed through, the one that has
 * every wrapper test its API's byte of cuprof_pass (cuprof_capturing). */
static int open_value(void)
{
	return C.pass ? CUPROF_GATE_SOME : CUPROF_GATE_OPEN;
}

static int is_open(int g)
{
	return g == CUPROF_GATE_OPEN || g == CUPROF_GATE_SOME;
}

static uint64_t mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t intern_s(const char *s)
{
	return s && s[0] ? cuprof_intern(s) : 0;
}

/* emit_range writes the range [since, end] that just closed. */
static void emit_range(uint64_t since, uint64_t end, uint32_t opener)
{
	struct cuprof_tls *t = &cuprof_tls;
	if (t->depth)
		return; /* a signal handler inside a record: cannot happen from the callers below */
	cuprof_guard_enter(t);
	cuprof_rec_full(t, CUPROF_REC_CAPTURE, since, end, 0, 0, 0, opener, 0);
	cuprof_guard_exit(t);
}

/* update opens or closes the gate to match the state (cap_mu held);
 * opener names what opened it when it opens now. */
static void update(const char *opener)
{
	int want = !C.exhausted && C.window_ok &&
		   (C.mode == MODE_NONE || (C.mode == MODE_API && C.api_on) || (C.mode == MODE_NVTX && C.depth > 0));
	if (want && !C.open) {
		C.open = 1;
		C.opener = intern_s(opener);
		__atomic_store_n(&cuprof_gate_since, cuprof_clock(), __ATOMIC_RELAXED);
		__atomic_store_n(&cuprof_gate, open_value(), __ATOMIC_SEQ_CST);
	} else if (!want && C.open) {
		__atomic_store_n(&cuprof_gate, CUPROF_GATE_CLOSED, __ATOMIC_SEQ_CST);
		uint64_t end = cuprof_clock();
		C.open = 0;
		emit_range(cuprof_gate_since, end, C.opener);
		C.ranges++;
		if (C.count_max && C.ranges >= C.count_max)
			C.exhausted = 1;
	}
}

static int lock(void)
{
	if (in_cap)
		return 0;
	in_cap = 1;
	pthread_mutex_lock(&cap_mu);
	return 1;
}

static void unlock(void)
{
	pthread_mutex_unlock(&cap_mu);
	in_cap = 0;
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
	}
}

static void *window_thread(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "cuprof-window");
	if (C.win_start && mono_now() < C.win_start)
		sleep_until(C.win_start);
	if (lock()) {
		C.window_ok = !C.win_end || mono_now() < C.win_end;
		update("window");
		unlock();
	}
	if (!C.win_end)
		return NULL;
	sleep_until(C.win_end);
	if (lock()) {
		C.window_ok = 0;
		update(NULL);
		unlock();
	}
	return NULL;
}

/* start_timer starts the window's thread (cap_mu held), with every signal
 * blocked so that none of the program's is delivered to it. */
static void start_timer(void)
{
	uint64_t now = mono_now();
	C.window_ok = (!C.win_start || now >= C.win_start) && (!C.win_end || now < C.win_end);
	if (C.win_end && now >= C.win_end)
		return; /* over already: no thread needed */
	if (C.win_start && now >= C.win_start && !C.win_end)
		return; /* open already, for good */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 << 10);
	pthread_t th;
	int saved = errno;
	C.timer = pthread_create(&th, &a, window_thread, NULL) == 0;
	errno = saved;
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void parse_keep(const char *s)
{
	while (s && *s) {
		char *end;
		unsigned long v = strtoul(s, &end, 10);
		if (end == s)
			break;
		if (v < CUPROF_API_COUNT)
			cuprof_keep[v] = 1;
		s = *end == ',' ? end + 1 : end;
	}
}

static void copy_env(char *dst, size_t n, const char *name)
{
	const char *v = getenv(name);
	dst[0] = 0;
	if (v) {
		strncpy(dst, v, n - 1);
		dst[n - 1] = 0;
	}
}

/* configure reads the environment, once per process image (cap_mu held). */
static void configure(void)
{
	int saved = errno;
	C.configured = 1;
	C.pass = cuprof_pass_configure();
	/* the keep table, with capture ranges or without: cuprof_pass_through
	 * refuses its APIs */
	const char *keep = getenv("CUPROF_CAPTURE_KEEP");
	C.keep_known = keep != NULL;
	parse_keep(keep);
	const char *mode = getenv("CUPROF_CAPTURE");
	C.gated = mode && mode[0];
	C.window_ok = 1;
	if (!C.gated)
		goto out;
	C.mode = strcmp(mode, "api") == 0 ? MODE_API : strcmp(mode, "nvtx") == 0 ? MODE_NVTX : MODE_NONE;
	cuprof_capture_nvtx_mode = C.mode == MODE_NVTX;
	copy_env(C.nvtx_name, sizeof C.nvtx_name, "CUPROF_CAPTURE_NVTX");
	copy_env(C.nvtx_domain, sizeof C.nvtx_domain, "CUPROF_CAPTURE_NVTX_DOMAIN");
	const char *w = getenv("CUPROF_CAPTURE_WINDOW");
	if (w) {
		char *end;
		C.win_start = strtoull(w, &end, 10);
		C.win_end = strtoull(end, NULL, 10);
	}
	const char *n = getenv("CUPROF_CAPTURE_COUNT");
	if (n)
		C.count_max = strtoull(n, NULL, 10);
out:
	errno = saved;
}

/* settle makes the gate known (cap_mu held): configured, the window's
 * thread started where one is needed, the gate stored. */
static void settle(void)
{
	if (!C.configured)
		configure();
	if (!C.gated) {
		__atomic_store_n(&cuprof_gate, open_value(), __ATOMIC_SEQ_CST);
		return;
	}
	if ((C.win_start || C.win_end) && !C.timer)
		start_timer();
	__atomic_store_n(&cuprof_gate, C.open ? open_value() : CUPROF_GATE_CLOSED, __ATOMIC_SEQ_CST);
	update(C.mode == MODE_NONE ? "window" : NULL);
}

int cuprof_gate_init(int api)
{
	/* A child of a fork that ran no atfork handler finds the gate
	 * zeroed (UNKNOWN): off its parent's ring first, then the gate is
	 * settled again from the state it inherited. */
	cuprof_fork_check();
	if (__atomic_load_n(&cuprof_gate, __ATOMIC_ACQUIRE) == CUPROF_GATE_SOME)
		return cuprof_pass_call(api); /* the gate became SOME since the caller read it: no lock */
	if (lock()) {
		if (__atomic_load_n(&cuprof_gate, __ATOMIC_ACQUIRE) == CUPROF_GATE_UNKNOWN)
			settle();
		unlock();
	}
	int g = __atomic_load_n(&cuprof_gate, __ATOMIC_ACQUIRE);
	if (g == CUPROF_GATE_OPEN)
		return 1;
	if (g == CUPROF_GATE_SOME)
		return cuprof_pass_call(api);
	if (g == CUPROF_GATE_CLOSED)
		return api > 0 && api < CUPROF_API_COUNT && cuprof_keep[api];
	return 1; /* a signal handler during the first call: recorded as before gating */
}

int cuprof_gate_open_slow(void)
{
	int g = __atomic_load_n(&cuprof_gate, __ATOMIC_ACQUIRE);
	if (g == CUPROF_GATE_UNKNOWN) {
		cuprof_gate_init(0);
		g = __atomic_load_n(&cuprof_gate, __ATOMIC_ACQUIRE);
	}
	/* Still unknown: a signal handler interrupted its thread's first test
	 * (cap_mu is that thread's): its event is recorded, as before gating
	 * (cuprof_gate_init says the same of a call), not lost uncounted. */
	return g != CUPROF_GATE_CLOSED;
}

/* api_edge is a profiler-API start (on) or stop from the program. */
static int api_edge(int on, const char *opener)
{
	int done = 0;
	if (lock()) {
		if (__atomic_load_n(&cuprof_gate, __ATOMIC_ACQUIRE) == CUPROF_GATE_UNKNOWN)
			settle();
		if (C.gated && C.mode == MODE_API) {
			C.api_on = on;
			update(opener);
			done = 1;
		}
		unlock();
	}
	return done;
}

void cuprof_gate_profiler(int start)
{
	api_edge(start, "cuProfilerStart");
}

CUPROF_EXPORT int cuprof_capture_start(const char *name)
{
	if (!cuprof_active())
		return -1;
	return api_edge(1, name && name[0] ? name : "cuprof.start");
}

CUPROF_EXPORT int cuprof_capture_stop(void)
{
	if (!cuprof_active())
		return -1;
	return api_edge(0, NULL);
}

CUPROF_EXPORT int cuprof_capture_mode(void)
{
	if (__atomic_load_n(&cuprof_gate, __ATOMIC_ACQUIRE) == CUPROF_GATE_UNKNOWN)
		cuprof_gate_init(0);
	if (!C.gated)
		return 0;
	return C.mode == MODE_API ? 1 : C.mode == MODE_NVTX ? 2 : 3;
}

/* pass_begin is what both pass-through calls do first: refuse when not
 * recorded or when the lock cannot be had, else take it (0) with the gate
 * settled. */
static int pass_begin(void)
{
	if (!cuprof_active())
		return CUPROF_PASS_NOT_RECORDED;
	if (!lock())
		return CUPROF_PASS_BUSY;
	if (__atomic_load_n(&cuprof_gate, __ATOMIC_ACQUIRE) == CUPROF_GATE_UNKNOWN)
		settle();
	return 0;
}

CUPROF_EXPORT int cuprof_pass_through(const char *names)
{
	int rc = pass_begin();
	if (rc < 0)
		return rc;
	int n = cuprof_pass_set(names, C.keep_known);
	if (n >= 0) {
		C.pass = n > 0;
		/* open: the gate's value follows the set (a call already past the
		 * test keeps the fate it was given); closed, update() gives it
		 * when the next range opens */
		if (is_open(__atomic_load_n(&cuprof_gate, __ATOMIC_ACQUIRE)))
			__atomic_store_n(&cuprof_gate, open_value(), __ATOMIC_SEQ_CST);
	}
	unlock();
	return n;
}

CUPROF_EXPORT int cuprof_pass_through_list(char *buf, size_t size)
{
	int rc = pass_begin();
	if (rc < 0)
		return rc;
	int n = cuprof_pass_get(buf, size);
	unlock();
	return n < 0 ? CUPROF_PASS_TOO_SMALL : n;
}

/* nvtx_ids interns the capture range's name and domain (cap_mu held):
 * NVTX names and domains are ids of the ring's string table, which interns
 * by content (registered strings too), so ids are compared. */
static int nvtx_ids(void)
{
	if (!C.nvtx_name_id)
		C.nvtx_name_id = intern_s(C.nvtx_name);
	if (C.nvtx_domain[0] && !C.nvtx_domain_id)
		C.nvtx_domain_id = intern_s(C.nvtx_domain);
	return C.nvtx_name_id && (!C.nvtx_domain[0] || C.nvtx_domain_id);
}

int cuprof_capture_nvtx(int what, uint32_t name, uint32_t domain, uint64_t id)
{
	if (__atomic_load_n(&cuprof_gate, __ATOMIC_ACQUIRE) == CUPROF_GATE_UNKNOWN)
		cuprof_gate_init(0);
	if (!C.gated || C.mode != MODE_NVTX)
		return is_open(__atomic_load_n(&cuprof_gate, __ATOMIC_ACQUIRE));
	if (!lock())
		return is_open(__atomic_load_n(&cuprof_gate, __ATOMIC_ACQUIRE));
	int ok = nvtx_ids();
	switch (what) {
	case CUPROF_NVTX_PUSH:
		if (ok && domain == C.nvtx_domain_id) {
			uint32_t lv = nvtx_level++;
			if (name == C.nvtx_name_id && lv < 64) {
				nvtx_bits |= 1ull << lv;
				C.depth++;
				update(C.nvtx_name);
			}
		}
		break;
	case CUPROF_NVTX_POP:
		if (ok && domain == C.nvtx_domain_id && nvtx_level > 0) {
			uint32_t lv = --nvtx_level;
			if (lv < 64 && (nvtx_bits >> lv & 1)) {
				nvtx_bits &= ~(1ull << lv);
				C.depth--;
				update(NULL);
			}
		}
		break;
	case CUPROF_NVTX_START:
		if (ok && name == C.nvtx_name_id && domain == C.nvtx_domain_id && C.nids < 64) {
			C.ids[C.nids++] = id;
			C.depth++;
			update(C.nvtx_name);
		}
		break;
	case CUPROF_NVTX_END:
		for (unsigned i = 0; i < C.nids; i++) {
			if (C.ids[i] == id) {
				C.ids[i] = C.ids[--C.nids];
				C.depth--;
				update(NULL);
				break;
			}
		}
		break;
	}
	int after = is_open(__atomic_load_n(&cuprof_gate, __ATOMIC_ACQUIRE));
	unlock();
	return after;
}

static void capture_at_exit(void)
{
	if (!C.gated || !lock())
		return;
	if (C.open) {
		/* The range still open at exit ends here; the gate stays open for
		 * what the exit handlers still do. */
		uint64_t end = cuprof_clock();
		emit_range(cuprof_gate_since, end, C.opener);
		cuprof_gate_since = end;
	}
	unlock();
}

/* capture_fork_child runs in a fork's child: the window's thread did not
 * come along, so the next gate test starts another one. */
static void capture_fork_child(void)
{
	pthread_mutex_init(&cap_mu, NULL);
	in_cap = 0;
	if (C.gated && C.timer) {
		C.timer = 0;
		__atomic_store_n(&cuprof_gate, CUPROF_GATE_UNKNOWN, __ATOMIC_SEQ_CST);
	}
}

CUPROF_LIFECYCLE(capture_lifecycle) = {
	.at_exit = capture_at_exit,
	.fork_child = capture_fork_child,
};
