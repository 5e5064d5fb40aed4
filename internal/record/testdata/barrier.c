/*
 * Starts N threads (argv[1], 2000) with small stacks that all stay alive:
 * they meet at a barrier, each makes C calls (argv[2], 10), and meet again
 * before any exits, so every thread holds what it took of the ring while
 * the others write. Prints "made N*C cpu_us U": U is the CPU time the
 * process used (user and system, microseconds; waiting for room in the
 * ring included).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);
CUresult cuCtxGetCurrent(CUcontext *);

static pthread_barrier_t start, done;
static long calls;

static void *worker(void *arg)
{
	CUcontext c;
	pthread_barrier_wait(&start);
	for (long i = 0; i < calls; i++)
		cuCtxGetCurrent(&c);
	pthread_barrier_wait(&done);
	return arg;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000;
	calls = argc > 2 ? atol(argv[2]) : 10;
	cuInit(0);
	pthread_barrier_init(&start, NULL, (unsigned)n);
	pthread_barrier_init(&done, NULL, (unsigned)n);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	pthread_t *t = calloc((size_t)n, sizeof *t);
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], &attr, worker, NULL) != 0) {
			printf("pthread_create failed at %ld\n", i);
			return 1;
		}
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	long cpu = (long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
	printf("made %ld cpu_us %ld\n", n * calls, cpu);
	return 0;
}
