/*
 * What the signal-handler test programs (sigintern.c, forkintern.c,
 * sigalloc.c) share: the shim's C ABI looked up, and a SIGPROF handler
 * installed. Each program has its own handler and loop.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint32_t (*intern)(const char *);
static int (*active)(void);
static volatile long handled;

/* find_cuprof looks up cuprof_intern and cuprof_active, saying "no cuprof
 * ABI" and returning 0 when the shim is not loaded. */
static int find_cuprof(void)
{
	intern = (uint32_t(*)(const char *))dlsym(RTLD_DEFAULT, "cuprof_intern");
	active = (int (*)(void))dlsym(RTLD_DEFAULT, "cuprof_active");
	if (!intern || !active) {
		printf("no cuprof ABI\n");
		return 0;
	}
	return 1;
}

static void on_sigprof(void (*handler)(int), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = flags;
	sigaction(SIGPROF, &sa, NULL);
}
