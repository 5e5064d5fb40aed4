/*
 * Forks while a signal handler names a string inside the fork: the
 * program's own fork-prepare handler, registered before the shim's (so run
 * after it, while the shim holds its locks for the fork), raises SIGPROF,
 * whose handler calls cuprof_intern, as an NVTX-annotated handler would.
 * Prints "forked, child 0" when the fork came back.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static uint32_t (*intern)(const char *);
static volatile long handled;

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
	intern = (uint32_t(*)(const char *))dlsym(RTLD_DEFAULT, "cuprof_intern");
	int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cuprof_active");
	if (!intern || !active) {
		printf("no cuprof ABI\n");
		return 1;
	}
	pthread_atfork(prepare, NULL, NULL); /* before the shim's: run after it */
	if (!active()) {
		printf("not recording\n");
		return 1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sigaction(SIGPROF, &sa, NULL);
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
