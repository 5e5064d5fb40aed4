/*
 * A signal handler names strings (cuprof_intern, as an NVTX-annotated
 * handler would) that are new to the string table, the first of them the
 * process's first: a handler can interrupt its thread inside malloc (the
 * program's, or the shim's own dlsym when the ring opens), and the
 * allocator re-entered there blocks on the lock the thread holds (glibc's
 * arena lock: sigintern hung so). The program replaces malloc, calloc,
 * realloc and free, glibc's own behind them, and counts the calls made
 * inside the handler. Prints "handled H ids I allocs A": I of the H
 * handler calls got an id, A allocations were made inside the handler.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "sigtest.h"

#ifdef __GLIBC__
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);

static volatile sig_atomic_t in_handler;
static volatile long allocs;

void *malloc(size_t n)
{
	if (in_handler)
		allocs++;
	return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
	if (in_handler)
		allocs++;
	return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
	if (in_handler)
		allocs++;
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (in_handler)
		allocs++;
	__libc_free(p);
}

static volatile long ids;

static void on_prof(int sig)
{
	(void)sig;
	char name[32] = "handler ";
	long k = handled, len = 8;
	char digits[20];
	int d = 0;
	do
		digits[d++] = (char)('0' + k % 10);
	while ((k /= 10) != 0);
	while (d > 0)
		name[len++] = digits[--d];
	name[len] = 0;
	in_handler = 1;
	uint32_t id = intern(name);
	in_handler = 0;
	if (id)
		ids++;
	handled++;
}

int main(int argc, char **argv)
{
	/* more than 1024 names: past the first sizes a growing table has */
	long n = argc > 1 ? atol(argv[1]) : 1500;
	if (!find_cuprof())
		return 1;
	if (!active()) { /* opens the ring: the handler's name is the first */
		printf("not recording\n");
		return 1;
	}
	on_sigprof(on_prof, 0);
	for (long i = 0; i < n; i++)
		raise(SIGPROF);
	printf("handled %ld ids %ld allocs %ld\n", handled, ids, allocs);
	return 0;
}
#else
int main(void)
{
	printf("not glibc\n");
	return 0;
}
#endif
