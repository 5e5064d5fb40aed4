/*
 * Pass-through (cuprof record --pass-through): calls of the APIs that
 * CUPROF_PASS_THROUGH names (API ids, comma-separated, as the recorder
 * hands them over) go to the driver unrecorded, however they were reached
 * (linked, dlsym, cuGetProcAddress: the same wrappers), and are counted per
 * API, in the ring's header once the ring is open (pass_calls: shared with
 * the recorder). At exit each count is written as one count event named by
 * the API's base name (an API of the table, unlike the untabled functions'
 * count events of unknown.c), which `cuprof report` lists as passed
 * through; a process that ends without its exit hooks (_exit, a Go
 * program, a forked multiprocessing child) leaves its counts in the header,
 * and the recorder writes them once it is gone.
 *
 * The program can change the set while it runs (cuprof_pass_through, the
 * C ABI of cuprof.h; the Python module's cuprof.pass_through): the counts
 * so far are then written first, each count event at the time of the
 * change, so the trace says how many calls passed through in each stretch.
 * An API that cuprof_keep marks (the calls the analysis follows objects and
 * contexts through, trace.API.KeptOutsideCapture) is refused there, as
 * --pass-through refuses it.
 *
 * With any API passed through the capture gate's open value is
 * CUPROF_GATE_SOME (capture.c): every wrapper then tests its API's byte of
 * cuprof_pass inline (cuprof_capturing), and only a passed-through API's
 * calls go on to cuprof_pass_call, which counts them; without, nothing of
 * this runs. Like every
 * recorded call, a passed-through one is counted only while the gate is
 * open (inside capture ranges, or always without them).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuprof.h"
#include "shim_internal.h"
#include "cuprof_apis.h"

unsigned char cuprof_pass[CUPROF_API_COUNT];
/* Counts before the ring opens (added to the ring's at its opening), and
 * the ring header's counters once it is. */
static uint64_t pass_calls[CUPROF_API_COUNT];
static uint64_t *ring_calls;

_Static_assert(CUPROF_API_COUNT <= CUPROF_PASS_APIS, "the ring header counts every API");

/* The API names by id, for the count events. */
#define X_API(sym, api, ...) {CUPROF_API_##api, #api},
static const struct {
	int id;
	const char *name;
} api_names[] = {CUPROF_SYMBOLS(X_API){CUPROF_API_cuGetProcAddress, "cuGetProcAddress"}};
#undef X_API

static const char *name_of(int api)
{
	for (size_t i = 0; i < sizeof api_names / sizeof api_names[0]; i++)
		if (api_names[i].id == api)
			return api_names[i].name;
	return NULL;
}

int cuprof_pass_configure(void)
{
	const char *s = getenv("CUPROF_PASS_THROUGH");
	int any = 0;
	while (s && *s) {
		char *end;
		unsigned long v = strtoul(s, &end, 10);
		if (end == s)
			break;
		if (v > 0 && v < CUPROF_API_COUNT && name_of((int)v)) {
			cuprof_pass[v] = 1;
			any = 1;
		}
		s = *end == ',' ? end + 1 : end;
	}
	return any;
}

int cuprof_pass_call(int api)
{
	if (api > 0 && api < CUPROF_API_COUNT && __atomic_load_n(&cuprof_pass[api], __ATOMIC_RELAXED)) {
		uint64_t *c = __atomic_load_n(&ring_calls, __ATOMIC_ACQUIRE);
		/* A process whose first calls pass through opens its ring now
		 * (its ring_opened hook sets ring_calls): counts kept only here
		 * would be lost with an exit that runs no hook. */
		if (CUPROF_UNLIKELY(!c) && cuprof_active())
			c = __atomic_load_n(&ring_calls, __ATOMIC_ACQUIRE);
		__atomic_add_fetch(c ? &c[api] : &pass_calls[api], 1, __ATOMIC_RELAXED);
		return 0;
	}
	return 1;
}

/* flush writes the counts so far as count events, now: at a change of the
 * set, and at exit (before the ring is marked exited). */
static void flush(void)
{
	struct cuprof_tls *t = &cuprof_tls;
	if (t->depth)
		return;
	cuprof_guard_enter(t);
	uint64_t *ring = __atomic_load_n(&ring_calls, __ATOMIC_ACQUIRE);
	for (int i = 1; i < CUPROF_API_COUNT; i++) {
		uint64_t c = __atomic_exchange_n(&pass_calls[i], 0, __ATOMIC_RELAXED);
		if (ring)
			c += __atomic_exchange_n(&ring[i], 0, __ATOMIC_RELAXED);
		if (c)
			cuprof_count_event(name_of(i), c);
	}
	cuprof_guard_exit(t);
}

/* id_of returns the id of the API whose base name is name[0..n), or 0. */
static int id_of(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof api_names / sizeof api_names[0]; i++)
		if (strlen(api_names[i].name) == n && memcmp(api_names[i].name, name, n) == 0)
			return api_names[i].id;
	return 0;
}

int cuprof_pass_set(const char *names, int keep_known)
{
	unsigned char want[CUPROF_API_COUNT] = {0};
	int n = 0;
	const char *s = names ? names : "";
	while (*s) {
		while (*s == ',' || *s == ' ')
			s++;
		const char *e = s;
		while (*e && *e != ',' && *e != ' ')
			e++;
		if (e == s)
			break;
		int id = id_of(s, (size_t)(e - s));
		if (!id)
			return CUPROF_PASS_UNKNOWN;
		if (!keep_known || cuprof_keep[id])
			return CUPROF_PASS_REFUSED;
		if (!want[id]) {
			want[id] = 1;
			n++;
		}
		s = e;
	}
	flush();
	for (int i = 1; i < CUPROF_API_COUNT; i++)
		__atomic_store_n(&cuprof_pass[i], want[i], __ATOMIC_RELAXED);
	return n;
}

int cuprof_pass_get(char *buf, size_t size)
{
	size_t len = 0;
	int n = 0;
	if (size)
		buf[0] = 0;
	for (int i = 1; i < CUPROF_API_COUNT; i++) {
		if (!__atomic_load_n(&cuprof_pass[i], __ATOMIC_RELAXED))
			continue;
		const char *name = name_of(i);
		size_t l = strlen(name);
		if (len + (len > 0) + l + 1 > size)
			return -1;
		if (len > 0)
			buf[len++] = ',';
		memcpy(buf + len, name, l + 1);
		len += l;
		n++;
	}
	return n;
}

/* pass_ring_opened counts in the ring from now on, what was counted
 * before added to it. */
static void pass_ring_opened(void)
{
	uint64_t *ring = cuprof_ring_pass_calls();
	if (!ring)
		return;
	__atomic_store_n(&ring_calls, ring, __ATOMIC_RELEASE);
	for (int i = 1; i < CUPROF_API_COUNT; i++) {
		uint64_t c = __atomic_exchange_n(&pass_calls[i], 0, __ATOMIC_RELAXED);
		if (c)
			__atomic_add_fetch(&ring[i], c, __ATOMIC_RELAXED);
	}
}

/* pass_fork_child starts a forked child's counts at zero (its parent
 * writes what was counted before the fork), off its parent's ring. */
static void pass_fork_child(void)
{
	__atomic_store_n(&ring_calls, NULL, __ATOMIC_RELEASE);
	for (int i = 0; i < CUPROF_API_COUNT; i++)
		pass_calls[i] = 0;
}

CUPROF_LIFECYCLE(pass_hooks) = {.ring_opened = pass_ring_opened, .at_exit = flush, .fork_child = pass_fork_child};
