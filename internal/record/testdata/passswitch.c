/*
 * The pass-through set changed while the program runs (record's
 * TestPassThroughSwitch): cuprof_pass_through and cuprof_pass_through_list
 * of the shim's C ABI, found with dlsym. Every call the test counts is
 * cuGetErrorName(SEQ): the trace keeps SEQ in the call's flags, so which
 * calls were recorded says which stretches passed it through.
 *
 *   seq 0-4     recorded (or not, as the recording's --pass-through says)
 *   set         cuGetErrorName
 *   seq 5-9     passed through
 *   set         cuNoSuchCall (refused: unknown), cuMemAlloc (refused: it
 *               creates an object): the set stays
 *   seq 10      passed through
 *   set         "" (none)
 *   seq 11-13   recorded
 *   set         cuGetErrorName,cuStreamQuery
 *   seq 14-15   passed through
 *   set         NULL (none)
 *   seq 16      recorded
 *
 * It prints each result: "list L" (the set at start), then "set R" per
 * change and "list L" after the first.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

#include "cuprof_cuda.h"

CUresult cuGetErrorName(CUresult, const char **);

static void seq(int n)
{
	const char *s;
	cuGetErrorName((CUresult)n, &s);
}

int main(void)
{
	int (*pass)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "cuprof_pass_through");
	int (*list)(char *, size_t) = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "cuprof_pass_through_list");
	if (!pass || !list) {
		printf("no cuprof_pass_through\n");
		return 1;
	}
	char buf[256];
	int n = list(buf, sizeof buf);
	printf("list %d %s\n", n, buf);
	for (int i = 0; i <= 4; i++)
		seq(i);
	printf("set %d\n", pass("cuGetErrorName"));
	n = list(buf, sizeof buf);
	printf("list %d %s\n", n, buf);
	printf("small %d\n", list(buf, 4));
	for (int i = 5; i <= 9; i++)
		seq(i);
	printf("set %d\n", pass("cuNoSuchCall"));
	printf("set %d\n", pass("cuMemAlloc"));
	seq(10);
	printf("set %d\n", pass(""));
	for (int i = 11; i <= 13; i++)
		seq(i);
	printf("set %d\n", pass("cuGetErrorName,cuStreamQuery"));
	seq(14);
	seq(15);
	printf("set %d\n", pass(NULL));
	seq(16);
	return 0;
}
