/* Makes N calls, says so with its pid, then waits to be killed. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);
CUresult cuCtxGetCurrent(CUcontext *);

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	cuInit(0);
	CUcontext c;
	for (long i = 0; i < n; i++)
		cuCtxGetCurrent(&c);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
