/*
 * Names strings (cuprof_intern, as every NVTX name is) in a loop while a
 * profiling timer's signal handler names strings too, as an NVTX-annotated
 * handler would: the handler often interrupts the shim inside its string
 * table. Prints "done N" when the loop finishes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static uint32_t (*intern)(const char *);
static volatile long handled;

static void on_prof(int sig)
{
	(void)sig;
	intern("in the handler");
	handled++;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	intern = (uint32_t(*)(const char *))dlsym(RTLD_DEFAULT, "cuprof_intern");
	if (!intern) {
		printf("no cuprof ABI\n");
		return 1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval it = {{0, 50}, {0, 50}};
	setitimer(ITIMER_PROF, &it, NULL);
	char name[32];
	for (long i = 0; i < n; i++) {
		snprintf(name, sizeof name, "loop %ld", i % 64);
		intern(name);
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &off, NULL);
	printf("done %ld\n", n);
	return 0;
}
