/*
 * Uses up every pthread key (PTHREAD_KEYS_MAX) before its first driver
 * call, then has a thread set its first key, make a call and read the key
 * back: the shim, finding no key for its own thread-exit hook, must not
 * write another library's key. Prints "key K kept 1".
 */
#include <pthread.h>
#include <stdio.h>

#include "cuprof_cuda.h"

CUresult cuInit(unsigned int);
CUresult cuCtxGetCurrent(CUcontext *);

static pthread_key_t first;
static int marker;

static void *worker(void *arg)
{
	CUcontext c;
	pthread_setspecific(first, &marker);
	for (int i = 0; i < 3; i++)
		cuCtxGetCurrent(&c);
	*(int *)arg = pthread_getspecific(first) == &marker;
	return NULL;
}

int main(void)
{
	pthread_key_create(&first, NULL);
	pthread_key_t k;
	while (pthread_key_create(&k, NULL) == 0)
		;
	cuInit(0);
	int kept = 0;
	pthread_t t;
	pthread_create(&t, NULL, worker, &kept);
	pthread_join(t, NULL);
	printf("key %u kept %d\n", (unsigned)first, kept);
	return 0;
}
