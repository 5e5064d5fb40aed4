/* Threads (16, or argv[2] up to 256) calling cuCtxGetCurrent as fast as they
 * can, argv[1] calls each (20000); prints "made N". */
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
	int n = argc > 2 ? atoi(argv[2]) : 16;
	if (n < 1 || n > 256)
		n = 16;
	per_thread = argc > 1 ? atol(argv[1]) : 20000;
	cuInit(0);
	pthread_t t[256];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("made %ld\n", per_thread * n);
	return 0;
}
