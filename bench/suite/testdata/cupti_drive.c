/*
 * Drives a suite CUPTI tool against fake_cupti.c, as the CUDA driver would:
 * dlopen the tool, call InitializeInjection, make API calls from two threads,
 * exit (the tool reports at exit). For selftest.sh.
 *
 *   cupti_drive TOOL.so CALLS_PER_THREAD
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

int fake_cupti_fire(int n);

static int calls;

static void *worker(void *arg)
{
	(void)arg;
	fake_cupti_fire(calls);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	calls = atoi(argv[2]);
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
	if (!init || init() != 1 || init() != 1)
		return 1;
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return 0;
}
