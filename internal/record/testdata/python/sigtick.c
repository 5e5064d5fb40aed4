/*
 * A native library whose timer signal handler records a span (cuprof_span,
 * as a sampling tool or cudawrap would) every few microseconds, on the
 * thread that called tick_start: loaded by sigframes.py with ctypes, so
 * that signals land while the shim writes the thread's Python frames.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t (*now)(void);
static void (*span)(uint32_t, uint32_t, uint64_t, uint64_t);
static uint32_t name;
/* Read by sigframes.py (ctypes in_dll) to stop its loop. */
volatile long tick_handled;
static timer_t timer;

static void on_tick(int sig)
{
	(void)sig;
	uint64_t t = now();
	span(0, name, t, t);
	tick_handled++;
}

/* tick_start arms the timer (every us microseconds); it returns 0, or -1
 * without cuprof's ABI. */
int tick_start(long us)
{
	now = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "cuprof_now");
	span = (void (*)(uint32_t, uint32_t, uint64_t, uint64_t))dlsym(RTLD_DEFAULT, "cuprof_span");
	uint32_t (*intern)(const char *) = (uint32_t(*)(const char *))dlsym(RTLD_DEFAULT, "cuprof_intern");
	if (!now || !span || !intern)
		return -1;
	name = intern("tick");
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
	if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0)
		return -1;
	struct itimerspec it = {{0, us * 1000}, {0, us * 1000}};
	return timer_settime(timer, 0, &it, NULL);
}

/* tick_stop disarms the timer and returns how many spans the handler
 * recorded (or had counted as dropped). */
long tick_stop(void)
{
	struct itimerspec off;
	memset(&off, 0, sizeof off);
	timer_settime(timer, 0, &off, NULL);
	timer_delete(timer);
	return tick_handled;
}
