/* One thread calling cuCtxGetCurrent 2 x argv[1] times (200000), counting
 * the clock reads the shim makes in the second half: run with CUPROF_CLOCK=monotonic,
 * every read is a clock_gettime, which this program defines (built with
 * -rdynamic, so the shim's calls resolve to it). A recorded call reads the
 * clock twice, a shadow call (inplace.c) four times. Prints "calls N
 * reads R". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);
CUresult cuCtxGetCurrent(CUcontext *);

static long reads;
static int (*real_clock_gettime)(clockid_t, struct timespec *);

/* Counted, then the C library's (the vDSO's: as fast as the shim's own
 * reads, so that shadows stay under inplace.c's cap). */
int clock_gettime(clockid_t c, struct timespec *ts)
{
	__atomic_add_fetch(&reads, 1, __ATOMIC_RELAXED);
	if (!real_clock_gettime)
		real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	return real_clock_gettime(c, ts);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	CUcontext c;
	cuInit(0);
	/* The first n calls' reads include the shim's setting up (the
	 * shadows' cap needs the ring open a millisecond): only the next n's
	 * are counted. */
	for (long i = 0; i < n; i++)
		cuCtxGetCurrent(&c);
	long before = __atomic_load_n(&reads, __ATOMIC_RELAXED);
	for (long i = 0; i < n; i++)
		cuCtxGetCurrent(&c);
	long after = __atomic_load_n(&reads, __ATOMIC_RELAXED);
	printf("calls %ld reads %ld\n", n, after - before);
	return 0;
}
