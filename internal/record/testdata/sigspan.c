/*
 * Calls the driver in a loop while a profiling timer's signal handler
 * records a span (cuprof_span, as cudawrap does): most signals land inside
 * a wrapper, where the handler's record cannot be written. Prints
 * "handled H made N" (N driver calls, H spans, all recorded or counted).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);
CUresult cuCtxGetCurrent(CUcontext *);

static uint64_t (*now)(void);
static void (*span)(uint32_t, uint32_t, uint64_t, uint64_t);
static uint32_t name;
static volatile long handled;

static void on_prof(int sig)
{
	(void)sig;
	uint64_t t = now();
	span(0, name, t, t);
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
	cuInit(0);
	name = intern("tick");
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
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
