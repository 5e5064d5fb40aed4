/*
 * A plugin the dlnext program dlopen's (RTLD_LOCAL), linked to libdlpdep.so:
 * its dlsym(RTLD_NEXT, ...) lookups search its own scope (its dependencies,
 * libc), which only the loader knows.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int dlpdep_value(void);

void plugin_report(void)
{
	int (*dep)(void) = (int (*)(void))dlsym(RTLD_NEXT, "dlpdep_value");
	void *p = dlsym(RTLD_NEXT, "puts");
	printf("plugin: next dlpdep_value %d (%d), next puts is libc's %d\n", dep != NULL, dep ? dep() : -1,
	       p != NULL && p == dlsym(RTLD_DEFAULT, "puts"));
}
