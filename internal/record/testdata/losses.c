/*
 * Ways a program used to lose events without a word (issue 47), one per
 * mode (argv[1]), each printing what it made:
 *
 *   backspan N   one cuprof_span whose end precedes its start, then N calls:
 *                "made N"
 *   names N      N spans, each named by a distinct 64-byte name (N x 72
 *                bytes past the 1 MiB string area): "made N"
 *   longname     one span named by a 2 MiB string: "made 1"
 *   fork MODE N  N calls in the parent, a child made by MODE (_Fork or
 *                syscall: glibc's _Fork, syscall(SYS_fork), neither running
 *                pthread_atfork handlers) making N calls, then N more in
 *                the parent after the child exited: "parent 2N child N"
 *   passexit N   N calls of cuCtxGetDevice (passed through), a fork() child
 *                making N more, both ending with _exit: "made 2N"
 *   setuid N     N calls, then a fork() child that becomes uid and gid 65534
 *                (root only) and makes N calls: "parent N child N"
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);
CUresult cuCtxGetCurrent(CUcontext *);
CUresult cuCtxGetDevice(CUdevice *);

static uint64_t (*now)(void);
static uint32_t (*intern)(const char *);
static void (*span)(uint32_t, uint32_t, uint64_t, uint64_t);

static void find_cuprof(void)
{
	now = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "cuprof_now");
	intern = (uint32_t(*)(const char *))dlsym(RTLD_DEFAULT, "cuprof_intern");
	span = (void (*)(uint32_t, uint32_t, uint64_t, uint64_t))dlsym(RTLD_DEFAULT, "cuprof_span");
	if (!now || !intern || !span) {
		printf("no cuprof\n");
		exit(2);
	}
}

static void calls(long n)
{
	CUcontext c;
	for (long i = 0; i < n; i++)
		cuCtxGetCurrent(&c);
}

#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
pid_t _Fork(void);
#define HAVE_UNDERSCORE_FORK 1
#endif

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[argc - 1]) : 1000;
	cuInit(0);
	find_cuprof();
	if (strcmp(mode, "backspan") == 0) {
		uint64_t t = now();
		span(intern("domain"), intern("backwards"), t, t - 1000);
		calls(n);
		printf("made %ld\n", n);
	} else if (strcmp(mode, "names") == 0) {
		uint32_t d = intern("domain");
		for (long i = 0; i < n; i++) {
			char name[65];
			snprintf(name, sizeof name, "%063ld", i);
			uint64_t t = now();
			span(d, intern(name), t, t);
		}
		printf("made %ld\n", n);
	} else if (strcmp(mode, "longname") == 0) {
		size_t len = 2u << 20;
		char *s = malloc(len + 1);
		memset(s, 'x', len);
		s[len] = 0;
		uint64_t t = now();
		span(intern("domain"), intern(s), t, t);
		printf("made 1\n");
	} else if (strcmp(mode, "fork") == 0 && argc > 3) {
		calls(n);
		pid_t pid = -1;
		if (strcmp(argv[2], "syscall") == 0)
#ifdef SYS_fork
			pid = (pid_t)syscall(SYS_fork);
#else /* aarch64 has no fork system call: clone with fork's flags */
			pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
#ifdef HAVE_UNDERSCORE_FORK
		else if (strcmp(argv[2], "_Fork") == 0)
			pid = _Fork();
#endif
		if (pid < 0) {
			printf("cannot fork with %s\n", argv[2]);
			return 1;
		}
		if (pid == 0) {
			calls(n);
			fflush(stdout);
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		calls(n);
		printf("parent %ld child %ld\n", 2 * n, n);
	} else if (strcmp(mode, "setuid") == 0) {
		calls(n);
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			if (setgid(65534) != 0 || setuid(65534) != 0) {
				printf("cannot become 65534\n");
				_exit(1);
			}
			calls(n);
			exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 1;
		printf("parent %ld child %ld\n", n, n);
	} else if (strcmp(mode, "passexit") == 0) {
		CUdevice d;
		for (long i = 0; i < n; i++)
			cuCtxGetDevice(&d);
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			for (long i = 0; i < n; i++)
				cuCtxGetDevice(&d);
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		printf("made %ld\n", 2 * n);
		fflush(stdout);
		_exit(0);
	} else {
		printf("unknown mode %s\n", mode);
		return 1;
	}
	return 0;
}
