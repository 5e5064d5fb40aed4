/*
 * Runs N short-lived threads one after the other (more than the ring's
 * CUPROF_MAX_THREADS slots), each making one call and exiting; prints
 * "made N".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);
CUresult cuCtxGetCurrent(CUcontext *);

static void *worker(void *arg)
{
	CUcontext c;
	cuCtxGetCurrent(&c);
	return arg;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000;
	cuInit(0);
	for (long i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, NULL) != 0) {
			printf("pthread_create failed at %ld\n", i);
			return 1;
		}
		pthread_join(t, NULL);
	}
	printf("made %ld\n", n);
	return 0;
}
