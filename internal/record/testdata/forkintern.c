/*
 * Forks while a signal handler names a string inside the fork: the
 * program's own fork-prepare handler, registered before the shim's (so run
 * after it, while the shim holds its locks for the fork), raises SIGPROF,
 * whose handler calls cuprof_intern, as an NVTX-annotated handler would.
 * Prints "forked, child 0" when the fork came back.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sigtest.h"

static void on_prof(int sig)
{
	(void)sig;
	intern("in the handler");
	handled++;
}

static void prepare(void)
{
	raise(SIGPROF);
}

int main(void)
{
	if (!find_cuprof())
		return 1;
	pthread_atfork(prepare, NULL, NULL); /* before the shim's: run after it */
	if (!active()) {
		printf("not recording\n");
		return 1;
	}
	on_sigprof(on_prof, 0);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int st = -1;
	if (pid > 0)
		waitpid(pid, &st, 0);
	printf("forked, child %d, handled %ld\n", st, handled);
	return 0;
}
