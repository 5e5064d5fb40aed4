/* 16 threads calling cuCtxGetCurrent as fast as they can; prints "made N". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);
CUresult cuCtxGetCurrent(CUcontext *);

static long per_thread;

static void *worker(void *arg)
{
	CUcontext c;
	for (long i = 0; i < per_thread; i++)
		cuCtxGetCurrent(&c);
	return arg;
}

int main(int argc, char **argv)
{
	int n = 16;
	per_thread = argc > 1 ? atol(argv[1]) : 20000;
	cuInit(0);
	pthread_t t[16];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("made %ld\n", per_thread * n);
	return 0;
}
