/*
 * Records spans (cuprof_span) in a loop while a timer's signal handler on
 * the same thread records a span every 20 microseconds: a handler that lands while the loop's own
 * record is being written must pass (and be counted as dropped) or be
 * written whole, never overwrite the loop's slot or be overwritten by it.
 * Prints "handled H made N" (N spans of the loop, H of the handler).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t (*now)(void);
static void (*span)(uint32_t, uint32_t, uint64_t, uint64_t);
static uint32_t tick, loop;
static volatile long handled;

static void on_tick(int sig)
{
	(void)sig;
	uint64_t t = now();
	span(0, tick, t, t);
	handled++;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	now = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "cuprof_now");
	span = (void (*)(uint32_t, uint32_t, uint64_t, uint64_t))dlsym(RTLD_DEFAULT, "cuprof_span");
	uint32_t (*intern)(const char *) = (uint32_t(*)(const char *))dlsym(RTLD_DEFAULT, "cuprof_intern");
	if (!now || !span || !intern) {
		printf("no cuprof ABI\n");
		return 1;
	}
	tick = intern("tick");
	loop = intern("loop");
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGRTMIN, &sa, NULL);
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGRTMIN;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t timer;
	if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0) {
		printf("no timer\n");
		return 1;
	}
	struct itimerspec it = {{0, 20000}, {0, 20000}};
	timer_settime(timer, 0, &it, NULL);
	for (long i = 0; i < n; i++) {
		uint64_t t = now();
		span(0, loop, t, t);
	}
	struct itimerspec off;
	memset(&off, 0, sizeof off);
	timer_settime(timer, 0, &off, NULL);
	printf("handled %ld made %ld\n", (long)handled, n);
	return 0;
}
