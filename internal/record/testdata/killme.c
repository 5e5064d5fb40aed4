/*
 * Makes N calls, says so with its pid ("ready PID"), then waits to be
 * killed. Each SIGUSR1 makes it make N calls more and say "again N": a
 * test can tell that it still runs, and that its calls still return.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);
CUresult cuCtxGetCurrent(CUcontext *);

static volatile sig_atomic_t again;

static void on_usr1(int sig)
{
	(void)sig;
	again = 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	sigset_t usr1, old;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old); /* until sigsuspend: none is missed */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	cuInit(0);
	CUcontext c;
	for (long i = 0; i < n; i++)
		cuCtxGetCurrent(&c);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		sigsuspend(&old);
		if (!again)
			continue;
		again = 0;
		for (long i = 0; i < n; i++)
			cuCtxGetCurrent(&c);
		printf("again %ld\n", n);
		fflush(stdout);
	}
}
