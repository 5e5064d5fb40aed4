/*
 * Looks symbols up with dlsym(RTLD_NEXT, ...) from the program itself, as
 * interposers and allocators do: the shim's dlsym must answer what the
 * loader would (the next definition after the program), not crash, and
 * leave dlerror() as the real dlsym leaves it. Prints only what is the same
 * with and without the shim. With a plugin's path as argument, dlopen's it
 * and has it look symbols up the same way (dlplugin.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);

typedef CUresult (*init_t)(unsigned int);
typedef CUresult (*count_t)(int *);

int main(int argc, char **argv)
{
	cuInit(0);
	void *p = dlsym(RTLD_NEXT, "puts");
	printf("next puts is libc's %d\n", p != NULL && p == dlsym(RTLD_DEFAULT, "puts"));
	dlerror();
	void *m = dlsym(RTLD_NEXT, "cuprof_no_such_symbol");
	const char *err = dlerror();
	printf("next missing %p, error set %d\n", m, err != NULL && strstr(err, "cuprof_no_such_symbol") != NULL);
	dlerror();
	p = dlsym(RTLD_NEXT, "strlen");
	printf("next strlen found %d, error after %d\n", p != NULL, dlerror() != NULL);
	/* Defined by a library preloaded before the shim, when the test does. */
	int (*dep)(void) = (int (*)(void))dlsym(RTLD_NEXT, "dlpdep_value");
	printf("next dlpdep_value %d\n", dep ? dep() : -1);
	init_t in = (init_t)dlsym(RTLD_NEXT, "cuInit");
	count_t cnt = (count_t)dlsym(RTLD_NEXT, "cuDeviceGetCount");
	printf("next cuInit found %d cuDeviceGetCount found %d\n", in != NULL, cnt != NULL);
	int n = -1;
	if (in && cnt) {
		CUresult r1 = in(0), r2 = cnt(&n);
		printf("through them: %d %d count %d\n", r1, r2, n);
	}
	if (argc > 1) {
		void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
		void (*report)(void) = h ? (void (*)(void))dlsym(h, "plugin_report") : NULL;
		if (!report) {
			printf("dlopen %s: %s\n", argv[1], dlerror());
			return 1;
		}
		report();
	}
	return 0;
}
