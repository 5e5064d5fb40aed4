/*
 * dlerr checks that dlsym and dlerror behave under the shim as without it,
 * before and after the driver is loaded, and calls a driver function the
 * API table does not know (the simulated driver's cuCuprofSimFuture) through
 * dlsym and cuGetProcAddress_v2.
 *
 * Output, one line per check: "NAME null=N error=MESSAGE" (N: the lookup
 * gave NULL; MESSAGE: dlerror()'s text, or (null)), then "future N" with
 * the sum of the future function's results.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*future_fn)(int);
typedef int (*gpa_fn)(const char *, void **, int, unsigned long long, int *);

static void check(const char *what, void *p)
{
	const char *e = dlerror();
	printf("%s null=%d error=%s\n", what, p == NULL, e ? e : "(null)");
}

int main(void)
{
	dlerror();
	check("default cuInit, no driver", dlsym(RTLD_DEFAULT, "cuInit"));
	check("default cuNoSuchFunction, no driver", dlsym(RTLD_DEFAULT, "cuNoSuchFunction"));
	check("next cuNoSuchFunction, no driver", dlsym(RTLD_NEXT, "cuNoSuchFunction"));
	void *self = dlopen(NULL, RTLD_NOW);
	check("program cuInit, no driver", dlsym(self, "cuInit"));
	check("program cuNoSuchFunction, no driver", dlsym(self, "cuNoSuchFunction"));
	dlsym(RTLD_DEFAULT, "cuInit");
	dlsym(RTLD_DEFAULT, "puts"); /* a lookup that succeeds clears the error */
	check("default cuInit then puts, no driver", (void *)1);
	dlsym(RTLD_DEFAULT, "cuInit");
	dlopen("/nonexistent/libnothing.so", RTLD_NOW); /* a later error is that one */
	check("default cuInit then a failed dlopen", (void *)1);
	/* the driver opened RTLD_LOCAL: not in the default scope, so
	 * RTLD_DEFAULT finds no cuInit (the shim's export used to be found) */
	void *local = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!local) {
		printf("dlopen libcuda.so.1 RTLD_LOCAL: %s\n", dlerror());
		return 1;
	}
	check("local driver: default cuInit", dlsym(RTLD_DEFAULT, "cuInit"));
	check("local driver: next cuInit", dlsym(RTLD_NEXT, "cuInit"));
	check("local driver: its own cuInit", dlsym(local, "cuInit") ? (void *)1 : NULL);
	void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!drv) {
		printf("dlopen libcuda.so.1: %s\n", dlerror());
		return 1;
	}
	check("default cuInit", dlsym(RTLD_DEFAULT, "cuInit"));
	check("default cuNoSuchFunction", dlsym(RTLD_DEFAULT, "cuNoSuchFunction"));
	check("driver cuNoSuchFunction", dlsym(drv, "cuNoSuchFunction"));
	check("next cuNoSuchFunction", dlsym(RTLD_NEXT, "cuNoSuchFunction"));
	check("program cuNoSuchFunction", dlsym(self, "cuNoSuchFunction"));
	future_fn f = (future_fn)dlsym(drv, "cuCuprofSimFuture");
	check("driver cuCuprofSimFuture", (void *)f);
	int sum = 0;
	for (int i = 0; f && i < 5; i++)
		sum += f(i); /* 1+2+3+4+5 */
	gpa_fn gpa = (gpa_fn)dlsym(drv, "cuGetProcAddress_v2");
	void *g = NULL;
	int status = -1;
	if (gpa && gpa("cuCuprofSimFuture", &g, 13000, 0, &status) == 0 && g) {
		for (int i = 0; i < 3; i++)
			sum += ((future_fn)g)(10 * i); /* 1+11+21 */
	}
	printf("same pointer %d\n", g == (void *)f);
	printf("future %d\n", sum);
	return 0;
}
