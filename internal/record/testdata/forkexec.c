/* Makes calls, forks; the child makes calls, then execs this program with
 * "child", which makes more. Prints "pid N" for each process image. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);
CUresult cuStreamCreate(CUstream *, unsigned int);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuEventCreate(CUevent *, unsigned int);
CUresult cuEventDestroy_v2(CUevent);
CUresult cuDeviceGetCount(int *);

int main(int argc, char **argv)
{
	int n;
	if (argc > 1 && strcmp(argv[1], "child") == 0) {
		cuInit(0);
		for (int i = 0; i < 5; i++)
			cuDeviceGetCount(&n);
		printf("exec'd %d\n", (int)getpid());
		return 0;
	}
	cuInit(0);
	CUstream s;
	cuStreamCreate(&s, 0);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		CUevent e;
		cuEventCreate(&e, 0);
		cuEventDestroy_v2(e);
		fflush(stdout);
		execl("/proc/self/exe", argv[0], "child", (char *)NULL);
		return 127;
	}
	int st;
	waitpid(pid, &st, 0);
	cuStreamDestroy_v2(s);
	printf("parent %d child %d status %d\n", (int)getpid(), (int)pid, WEXITSTATUS(st));
	return 0;
}
