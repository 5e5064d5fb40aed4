/*
 * cupti_callback: the smallest CUPTI callback-API tool, the comparator for
 * cuprof's per-call cost. The CUDA driver loads it through
 * CUDA_INJECTION64_PATH and calls InitializeInjection, which subscribes one
 * callback to the driver API domain (and the runtime API domain when
 * CUPROF_BENCH_CUPTI_DOMAINS contains "runtime"). The callback only counts API
 * entries in a per-thread counter; at exit the total goes to stderr and, as
 * JSON, to the file CUPROF_BENCH_COUNT_FILE names.
 *
 * Build (on the GPU machine):
 *   gcc -O2 -shared -fPIC -I/usr/local/cuda/include cupti_callback.c \
 *       -L$CUPTI_LIB -lcupti -Wl,-rpath,$CUPTI_LIB -lpthread -o libcupti_callback.so
 */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One per thread that made a call, kept after the thread exits. */
struct counter {
	unsigned long long calls;
	struct counter *next;
};

static __thread struct counter *mine;
static struct counter *threads;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_SubscriberHandle subscriber;
static int runtime_too;
static int initialized;

static struct counter *new_counter(void)
{
	struct counter *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	pthread_mutex_lock(&threads_lock);
	c->next = threads;
	threads = c;
	pthread_mutex_unlock(&threads_lock);
	mine = c;
	return c;
}

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			     const void *cbdata)
{
	const CUpti_CallbackData *data = cbdata;
	(void)userdata;
	(void)domain;
	(void)cbid;
	if (data->callbackSite != CUPTI_API_ENTER)
		return;
	struct counter *c = mine;
	if (!c && !(c = new_counter()))
		return;
	__atomic_store_n(&c->calls, c->calls + 1, __ATOMIC_RELAXED);
}

static void report(void)
{
	unsigned long long total = 0;
	int nthreads = 0;
	pthread_mutex_lock(&threads_lock);
	for (struct counter *c = threads; c; c = c->next) {
		total += __atomic_load_n(&c->calls, __ATOMIC_RELAXED);
		nthreads++;
	}
	pthread_mutex_unlock(&threads_lock);
	fprintf(stderr, "cupti_callback: %llu API calls on %d threads (domains: driver%s)\n", total, nthreads,
		runtime_too ? "+runtime" : "");
	const char *path = getenv("CUPROF_BENCH_COUNT_FILE");
	if (!path || !*path)
		return;
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "cupti_callback: cannot write %s\n", path);
		return;
	}
	fprintf(f, "{\"tool\": \"cupti_callback\", \"events\": %llu, \"calls\": %llu, \"threads\": %d, "
		   "\"domains\": \"driver%s\"}\n",
		total, total, nthreads, runtime_too ? ",runtime" : "");
	fclose(f);
}

static int fail(const char *what, CUptiResult r)
{
	const char *s = NULL;
	cuptiGetResultString(r, &s);
	fprintf(stderr, "cupti_callback: %s failed: %s\n", what, s ? s : "?");
	return 0;
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	CUptiResult r;
	if (initialized)
		return 1;
	initialized = 1;
	const char *domains = getenv("CUPROF_BENCH_CUPTI_DOMAINS");
	runtime_too = domains && strstr(domains, "runtime");
	if ((r = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_call, NULL)) != CUPTI_SUCCESS)
		return fail("cuptiSubscribe", r);
	if ((r = cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API)) != CUPTI_SUCCESS)
		return fail("cuptiEnableDomain(driver)", r);
	if (runtime_too && (r = cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API)) != CUPTI_SUCCESS)
		return fail("cuptiEnableDomain(runtime)", r);
	atexit(report);
	return 1;
}
