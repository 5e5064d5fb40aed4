/*
 * mapsplant makes a driver call (the shim opens its ring and saves its
 * mappings beside it), says "ready", waits for a line on stdin (a test
 * plants links beside the ring meanwhile) and exits normally (the exit
 * hook saves the mappings again).
 */
#include <stdio.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);

int main(void)
{
	if (cuInit(0) != CUDA_SUCCESS)
		return 1;
	printf("ready\n");
	fflush(stdout);
	char line[8];
	if (!fgets(line, sizeof line, stdin))
		return 2;
	return cuInit(0) == CUDA_SUCCESS ? 0 : 3;
}
