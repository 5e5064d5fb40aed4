/*
 * Names strings (cuprof_intern, as every NVTX name is) in a loop while a
 * profiling timer's signal handler names strings too, as an NVTX-annotated
 * handler would: the handler often interrupts the shim inside its string
 * table. Prints "done N" when the loop finishes.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/time.h>

#include "sigtest.h"

static void on_prof(int sig)
{
	(void)sig;
	intern("in the handler");
	handled++;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	if (!find_cuprof())
		return 1;
	on_sigprof(on_prof, SA_RESTART);
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
