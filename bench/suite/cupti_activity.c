/*
 * cupti_activity: a CUPTI activity-API tool, the way Kineto and nsys collect
 * API records. Loaded through CUDA_INJECTION64_PATH, InitializeInjection
 * registers buffer callbacks and enables the DRIVER and RUNTIME activity kinds.
 * Completed buffers are walked record by record and counted (nothing else is
 * kept); at exit everything is flushed and the counts go to stderr and, as
 * JSON, to the file CUPROF_BENCH_COUNT_FILE names.
 *
 * Build (on the GPU machine):
 *   gcc -O2 -shared -fPIC -I/usr/local/cuda/include cupti_activity.c \
 *       -L$CUPTI_LIB -lcupti -Wl,-rpath,$CUPTI_LIB -o libcupti_activity.so
 */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Bytes per activity buffer handed to CUPTI; records are a few dozen bytes. */
#define BUFFER_BYTES (8u << 20)

static unsigned long long n_records, n_driver, n_runtime, n_dropped, n_buffers;
static int initialized;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	/* malloc's 16-byte alignment covers CUPTI's 8-byte requirement. */
	*buffer = malloc(BUFFER_BYTES);
	*size = *buffer ? BUFFER_BYTES : 0;
	*max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size,
				      size_t valid_size)
{
	CUpti_Activity *record = NULL;
	unsigned long long all = 0, driver = 0, runtime = 0;
	(void)size;
	while (valid_size > 0 && cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
		all++;
		if (record->kind == CUPTI_ACTIVITY_KIND_DRIVER)
			driver++;
		else if (record->kind == CUPTI_ACTIVITY_KIND_RUNTIME)
			runtime++;
	}
	size_t dropped = 0;
	if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS)
		__atomic_fetch_add(&n_dropped, (unsigned long long)dropped, __ATOMIC_RELAXED);
	__atomic_fetch_add(&n_records, all, __ATOMIC_RELAXED);
	__atomic_fetch_add(&n_driver, driver, __ATOMIC_RELAXED);
	__atomic_fetch_add(&n_runtime, runtime, __ATOMIC_RELAXED);
	__atomic_fetch_add(&n_buffers, 1, __ATOMIC_RELAXED);
	free(buffer);
}

static void report(void)
{
	CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	if (r != CUPTI_SUCCESS) {
		const char *s = NULL;
		cuptiGetResultString(r, &s);
		fprintf(stderr, "cupti_activity: cuptiActivityFlushAll failed: %s\n", s ? s : "?");
	}
	unsigned long long all = __atomic_load_n(&n_records, __ATOMIC_RELAXED);
	unsigned long long driver = __atomic_load_n(&n_driver, __ATOMIC_RELAXED);
	unsigned long long runtime = __atomic_load_n(&n_runtime, __ATOMIC_RELAXED);
	unsigned long long dropped = __atomic_load_n(&n_dropped, __ATOMIC_RELAXED);
	unsigned long long buffers = __atomic_load_n(&n_buffers, __ATOMIC_RELAXED);
	fprintf(stderr, "cupti_activity: %llu records (%llu driver, %llu runtime), %llu dropped, %llu buffers\n",
		all, driver, runtime, dropped, buffers);
	const char *path = getenv("CUPROF_BENCH_COUNT_FILE");
	if (!path || !*path)
		return;
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "cupti_activity: cannot write %s\n", path);
		return;
	}
	fprintf(f,
		"{\"tool\": \"cupti_activity\", \"events\": %llu, \"driver\": %llu, \"runtime\": %llu, "
		"\"dropped\": %llu, \"buffers\": %llu}\n",
		all, driver, runtime, dropped, buffers);
	fclose(f);
}

static int fail(const char *what, CUptiResult r)
{
	const char *s = NULL;
	cuptiGetResultString(r, &s);
	fprintf(stderr, "cupti_activity: %s failed: %s\n", what, s ? s : "?");
	return 0;
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	CUptiResult r;
	if (initialized)
		return 1;
	initialized = 1;
	if ((r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS)
		return fail("cuptiActivityRegisterCallbacks", r);
	if ((r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER)) != CUPTI_SUCCESS)
		return fail("cuptiActivityEnable(DRIVER)", r);
	if ((r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME)) != CUPTI_SUCCESS)
		return fail("cuptiActivityEnable(RUNTIME)", r);
	atexit(report);
	return 1;
}
