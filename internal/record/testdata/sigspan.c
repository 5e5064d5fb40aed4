/*
 *   sigspan N            calls the driver N times in a loop while a
 *                        profiling timer's signal handler records a span
 *                        (cuprof_span, as cudawrap does): most signals land
 *                        inside a wrapper, where the handler's record cannot
 *                        be written
 *   sigspan H spans      records spans itself in a loop while a 20 us
 *                        timer's handler on the same thread records spans,
 *                        until the handler has run H times (at most 50M
 *                        loop spans): a handler landing while the loop's own
 *                        span is being written must pass (counted as
 *                        dropped) or be written whole, never overwrite the
 *                        loop's slot or be overwritten by it
 *
 *   sigspan N calls      as the first, the handler making a driver call
 *                        (cuCtxGetCurrent) instead of a span: most land
 *                        inside a wrapped call, where they go to the driver
 *                        unrecorded and must be counted
 *
 * Prints "handled H made N" (N driver calls or loop spans, H handler spans
 * or calls, all recorded or counted).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);
CUresult cuCtxGetCurrent(CUcontext *);

static uint64_t (*now)(void);
static void (*span)(uint32_t, uint32_t, uint64_t, uint64_t);
static uint32_t tick, loop;
static volatile long handled;
static int handler_calls;

static void on_tick(int sig)
{
	(void)sig;
	if (handler_calls) {
		CUcontext c;
		cuCtxGetCurrent(&c);
	} else {
		uint64_t t = now();
		span(0, tick, t, t);
	}
	handled++;
}

/* every_20us arms a timer that signals this thread every 20 us. */
static int every_20us(timer_t *timer)
{
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGRTMIN;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &ev, timer) != 0)
		return -1;
	struct itimerspec it = {{0, 20000}, {0, 20000}};
	return timer_settime(*timer, 0, &it, NULL);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int spans = argc > 2 && strcmp(argv[2], "spans") == 0;
	handler_calls = argc > 2 && strcmp(argv[2], "calls") == 0;
	now = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "cuprof_now");
	span = (void (*)(uint32_t, uint32_t, uint64_t, uint64_t))dlsym(RTLD_DEFAULT, "cuprof_span");
	uint32_t (*intern)(const char *) = (uint32_t(*)(const char *))dlsym(RTLD_DEFAULT, "cuprof_intern");
	if (!now || !span || !intern) {
		printf("no cuprof ABI\n");
		return 1;
	}
	if (!spans)
		cuInit(0);
	tick = intern("tick");
	loop = intern("loop");
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	if (spans) {
		timer_t timer;
		sigaction(SIGRTMIN, &sa, NULL);
		if (every_20us(&timer) != 0) {
			printf("no timer\n");
			return 1;
		}
		long made = 0;
		while (handled < n && made < 50000000) {
			uint64_t t = now();
			span(0, loop, t, t);
			made++;
		}
		timer_delete(timer);
		printf("handled %ld made %ld\n", (long)handled, made);
		return 0;
	}
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval it = {{0, 100}, {0, 100}};
	setitimer(ITIMER_PROF, &it, NULL);
	CUcontext c;
	for (long i = 0; i < n; i++)
		cuCtxGetCurrent(&c);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &off, NULL);
	printf("handled %ld made %ld\n", (long)handled, n + 1);
	return 0;
}
