/*
 * Contention: 4 threads spin for the whole run while C children (argv[1],
 * 200), forked at once, each make K calls (argv[2], 10000), so that the
 * recorder gets little of the machine's cores. Prints "made C*K" once
 * every child has exited 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);
CUresult cuCtxGetCurrent(CUcontext *);

static volatile int stop;

static void *spin(void *arg)
{
	while (!stop)
		;
	return arg;
}

int main(int argc, char **argv)
{
	long children = argc > 1 ? atol(argv[1]) : 200, calls = argc > 2 ? atol(argv[2]) : 10000;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, spin, NULL);
	for (long i = 0; i < children; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			printf("fork failed at %ld\n", i);
			return 1;
		}
		if (pid == 0) {
			CUcontext c;
			for (long k = 0; k < calls; k++)
				cuCtxGetCurrent(&c);
			_exit(0);
		}
	}
	int bad = 0, st;
	while (wait(&st) > 0)
		bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	stop = 1;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	if (bad) {
		printf("%d children failed\n", bad);
		return 1;
	}
	printf("made %ld\n", children * calls);
	return 0;
}
