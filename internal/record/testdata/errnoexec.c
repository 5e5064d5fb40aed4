/*
 * Makes a call (its ring is <pid>-0), then execs itself with "again": the
 * new image's first event, a cuprof_intern, opens the next ring file of the
 * same pid. errno must come out of it as the program left it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "again") == 0) {
		uint32_t (*intern)(const char *) = (uint32_t(*)(const char *))dlsym(RTLD_DEFAULT, "cuprof_intern");
		int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cuprof_active");
		if (!intern || !active) {
			printf("no cuprof ABI\n");
			return 1;
		}
		errno = 77;
		uint32_t id = intern("after exec");
		int e1 = errno;
		errno = 78;
		int on = active();
		printf("id %u errno %d, active %d errno %d\n", id, e1, on, errno);
		return 0;
	}
	cuInit(0);
	fflush(stdout);
	execl("/proc/self/exe", argv[0], "again", (char *)NULL);
	return 127;
}
