/*
 * Capture overhead harness: ns per call of a few driver calls, linked to
 * libcuda directly. Run it once plainly and once with the shim preloaded
 * (run.sh does both, interleaved) and subtract.
 *
 *   bench [ITERS]
 *
 * prints "name ns_per_call" lines (best of ROUNDS rounds). Under the shim
 * (CUPROF_DIR set) a thread plays the recorder: it hands full chunks back
 * to the shim as `cuprof record` does, so the shim runs in steady state
 * (chunks reused, no page faults, no drops).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuprof_cuda.h"
#include "cuprof_ring.h"

CUresult cuInit(unsigned int);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuCtxGetCurrent(CUcontext *);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuGetErrorName(CUresult, const char **);
CUresult cuEventCreate(CUevent *, unsigned int);
CUresult cuEventDestroy_v2(CUevent);
CUresult cuMemAllocAsync(CUdeviceptr *, size_t, CUstream);
CUresult cuMemFreeAsync(CUdeviceptr, CUstream);

#define ROUNDS 5

static volatile int stop;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* drain frees full chunks of the first ring file in dir, as the recorder does. */
static void *drain(void *arg)
{
	const char *dir = arg;
	struct cuprof_ring_hdr *h = NULL;
	while (!stop && !h) {
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			size_t n = strlen(e->d_name);
			if (n < 5 || strcmp(e->d_name + n - 5, ".ring"))
				continue;
			char path[4096];
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			int fd = open(path, O_RDWR);
			struct stat st;
			if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > CUPROF_HDR_SIZE) {
				void *m = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
				if (m != MAP_FAILED && ((struct cuprof_ring_hdr *)m)->magic == CUPROF_RING_MAGIC)
					h = m;
			}
			if (fd >= 0)
				close(fd);
			break;
		}
		if (d)
			closedir(d);
		usleep(1000);
	}
	while (!stop && h) {
		struct cuprof_chunk_hdr *c = (void *)((char *)h + h->chunks_off);
		for (uint32_t i = 0; i < h->nchunks; i++) {
			if (__atomic_load_n(&c[i].state, __ATOMIC_ACQUIRE) == CUPROF_CHUNK_FULL) {
				__atomic_store_n(&c[i].state, CUPROF_CHUNK_FREE, __ATOMIC_RELEASE);
				__atomic_add_fetch(&h->released, 1, __ATOMIC_RELEASE);
			}
		}
		usleep(1000);
	}
	return NULL;
}

#define MEASURE(name, calls_per_iter, body)                                    \
	do {                                                                   \
		double best = 1e30;                                            \
		for (int r = 0; r < ROUNDS; r++) {                             \
			uint64_t t0 = now_ns();                                \
			for (long i = 0; i < iters; i++) {                     \
				body;                                          \
			}                                                      \
			double ns = (double)(now_ns() - t0) / (double)iters;   \
			if (ns < best)                                         \
				best = ns;                                     \
		}                                                              \
		printf("%-28s %8.1f\n", name, best);                           \
		(void)(calls_per_iter);                                        \
	} while (0)

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 200000;
	pthread_t th;
	const char *dir = getenv("CUPROF_DIR");
	int draining = dir && getenv("LD_PRELOAD") && pthread_create(&th, NULL, drain, (void *)dir) == 0;
	CUdevice dev;
	CUcontext ctx, cur;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) {
		fprintf(stderr, "bench: no CUDA device\n");
		return 1;
	}
	usleep(20000); /* let the drainer find the ring */
	const char *s;
	CUevent ev;
	CUdeviceptr p;
	/* warm up (and fault in the ring's chunks once) */
	for (long i = 0; i < iters; i++)
		cuCtxGetCurrent(&cur);
	MEASURE("cuCtxGetCurrent", 1, cuCtxGetCurrent(&cur));
	MEASURE("cuCtxSetCurrent", 1, cuCtxSetCurrent(ctx));
	MEASURE("cuGetErrorName", 1, cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
	long saved = iters;
	iters = iters / 10 > 1000 ? iters / 10 : 1000;
	MEASURE("cuEventCreate+Destroy", 2, (cuEventCreate(&ev, 0), cuEventDestroy_v2(ev)));
	MEASURE("cuMemAllocAsync+FreeAsync", 2, (cuMemAllocAsync(&p, 10, NULL), cuMemFreeAsync(p, NULL)));
	iters = saved;
	if (draining) {
		stop = 1;
		pthread_join(th, NULL);
	}
	return 0;
}
