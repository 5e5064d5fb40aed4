/*
 * What the programs that test the simulated driver (simtest.c,
 * simfamilies.c) share: a prototype of every exported symbol, from the API
 * table, and the check counters and macros their results are counted with.
 * Include after cuprof_cuda.h and cuprof_apis.h.
 */
#ifndef CUPROF_SIMCHECK_H
#define CUPROF_SIMCHECK_H

#include <stdio.h>

#define X_PROTO(sym, api, params, ...) CUresult sym params;
CUPROF_SYMBOLS(X_PROTO)
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus);

/* Checks made and checks failed, for the summary line the program prints. */
static int checks, failures;

#define CHECK(cond)                                                                                 \
	do {                                                                                        \
		checks++;                                                                           \
		if (!(cond)) {                                                                      \
			failures++;                                                                 \
			printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                      \
		}                                                                                   \
	} while (0)

#define EXPECT(call, want)                                                                          \
	do {                                                                                        \
		CUresult got_ = (call);                                                             \
		checks++;                                                                           \
		if (got_ != (want)) {                                                               \
			failures++;                                                                 \
			printf("FAIL %s:%d: %s = %d, want %s (%d)\n", __FILE__, __LINE__, #call,    \
			       got_, #want, (int)(want));                                           \
		}                                                                                   \
	} while (0)

#define OK(call) EXPECT(call, CUDA_SUCCESS)

#define CHECK_EQ(got, want)                                                                         \
	do {                                                                                        \
		unsigned long long g_ = (got), w_ = (want);                                         \
		checks++;                                                                           \
		if (g_ != w_) {                                                                     \
			failures++;                                                                 \
			printf("FAIL %s:%d: %s = %llu, want %llu\n", __FILE__, __LINE__, #got, g_, w_); \
		}                                                                                   \
	} while (0)

#endif
