/*
 * cupti_apicount: a CUPTI callback tool that counts driver API calls per API,
 * for comparing with what `cuprof record` recorded in the same process. The
 * CUDA driver loads it through CUDA_INJECTION64_PATH and calls
 * InitializeInjection, which subscribes one callback to the driver API
 * domain; the callback adds one to the callback id's counter at each API
 * entry. At exit every non-zero counter is written, as "NAME COUNT" lines
 * (CUPTI's name of the API, such as cuStreamDestroy_v2), to the file
 * CUPROF_APICOUNT_FILE names.
 *
 * Build (on the GPU machine):
 *   gcc -O2 -shared -fPIC -I/usr/local/cuda/include cupti_apicount.c \
 *       -L$CUPTI_LIB -lcupti -Wl,-rpath,$CUPTI_LIB -o libcupti_apicount.so
 */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_CBID 4096

static unsigned long long counts[MAX_CBID];
static unsigned long long beyond;
static CUpti_SubscriberHandle subscriber;
static int initialized;

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			     const void *cbdata)
{
	const CUpti_CallbackData *data = cbdata;
	(void)userdata;
	(void)domain;
	if (data->callbackSite != CUPTI_API_ENTER)
		return;
	if (cbid < MAX_CBID)
		__atomic_add_fetch(&counts[cbid], 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&beyond, 1, __ATOMIC_RELAXED);
}

static void report(void)
{
	const char *path = getenv("CUPROF_APICOUNT_FILE");
	FILE *f = path && *path ? fopen(path, "w") : stderr;
	if (!f)
		return;
	unsigned long long total = 0;
	for (unsigned i = 0; i < MAX_CBID; i++) {
		unsigned long long n = __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
		if (!n)
			continue;
		const char *name = NULL;
		if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, i, &name) != CUPTI_SUCCESS || !name)
			name = "?";
		fprintf(f, "%s %llu\n", name, n);
		total += n;
	}
	if (beyond)
		fprintf(f, "(callback-ids-past-%d) %llu\n", MAX_CBID, beyond);
	if (f != stderr)
		fclose(f);
	fprintf(stderr, "cupti_apicount: %llu driver API calls\n", total + beyond);
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	if (initialized)
		return 1;
	initialized = 1;
	if (cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_call, NULL) != CUPTI_SUCCESS ||
	    cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS) {
		fprintf(stderr, "cupti_apicount: cannot subscribe to the driver API domain\n");
		return 0;
	}
	atexit(report);
	return 1;
}
