/*
 * Capture ranges from the program's side (record's capture tests). Every
 * call the tests count is cuGetErrorName(SEQ): the trace keeps SEQ in the
 * call's flags, so which calls were recorded says where the ranges were.
 *
 *   capture api       two cuProfilerStart/Stop ranges around known calls, a
 *                     stream created before the first and destroyed in it,
 *                     one created and destroyed outside
 *   capture nvtx      NVTX ranges "step" nested and repeated, push/pop and
 *                     start/end, in the default domain and in "train"
 *   capture window    cuGetErrorName(0, 1, ...) from before the --delay
 *                     window opens until after it closed; prints "made N
 *                     before B after A"
 *   capture midcall   a thread inside a long cuCtxSynchronize when the range
 *                     closes, another inside one when it opens
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuprof_cuda.h"
#include "nvtx_client.h"

CUresult cuInit(unsigned int);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuCtxSynchronize(void);
CUresult cuStreamCreate(CUstream *, unsigned int);
CUresult cuStreamDestroy(CUstream);
CUresult cuStreamQuery(CUstream);
CUresult cuGetErrorName(CUresult, const char **);
CUresult cuProfilerStart(void);
CUresult cuProfilerStop(void);

static void seq(int n)
{
	const char *s;
	cuGetErrorName((CUresult)n, &s);
}

static CUcontext ctx;

static void setup(void)
{
	CUdevice d;
	cuInit(0);
	cuDeviceGet(&d, 0);
	cuDevicePrimaryCtxRetain(&ctx, d);
	cuCtxSetCurrent(ctx);
}

static int api(void)
{
	setup();
	CUstream s1, s2;
	cuStreamCreate(&s1, 0); /* before the range, used and destroyed in it */
	cuStreamCreate(&s2, 0); /* before, destroyed after */
	for (int i = 0; i < 10; i++)
		seq(1000 + i);
	cuProfilerStart();
	for (int i = 0; i < 5; i++) {
		seq(i);
		cuStreamQuery(s1);
	}
	cuStreamDestroy(s1);
	cuProfilerStop();
	for (int i = 0; i < 10; i++)
		seq(2000 + i);
	cuStreamDestroy(s2);
	cuProfilerStart();
	for (int i = 0; i < 3; i++)
		seq(100 + i);
	cuProfilerStop();
	seq(3000);
	return 0;
}

/* ---- NVTX, through the test programs' minimal client ---- */

#define PUSH(m) ((int (*)(const char *))core[9])(m)
#define POP() ((int (*)(void))core[11])()
#define START(m) ((uint64_t(*)(const char *))core[5])(m)
#define END(id) ((void (*)(uint64_t))core[7])(id)
#define MARK(m) ((void (*)(const char *))core[2])(m)

static int nvtx(void)
{
	if (!nvtx_inject()) {
		printf("no injection\n");
		return 1;
	}
	setup();
	MARK("before");
	seq(1000);
	PUSH("step"); /* opens */
	seq(0);
	PUSH("inner");
	seq(1);
	PUSH("step"); /* nested: the outer one decides */
	seq(2);
	POP();
	POP();
	seq(3);
	POP(); /* closes */
	seq(1001);
	PUSH("other");
	seq(1002);
	POP();
	void *d = ((void *(*)(const char *))core2[12])("train"); /* DomainCreateA */
	attrs_t a = {3, sizeof(attrs_t), 0, 0, 0, 0, 0, 0, 1, "step"};
	((int (*)(void *, const attrs_t *))core2[4])(d, &a); /* DomainRangePushEx: step@train */
	seq(50);
	((int (*)(void *))core2[5])(d); /* DomainRangePop */
	uint64_t id = START("step"); /* a start/end range: repeated */
	seq(4);
	END(id);
	seq(1003);
	PUSH("step"); /* repeated */
	seq(5);
	POP();
	seq(1004);
	printf("ok\n");
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* window_thread_alive says whether the shim's window thread
 * ("cuprof-window") still runs: it ends right after it closes the gate. */
static int window_thread_alive(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return 0;
	int alive = 0;
	struct dirent *e;
	while (!alive && (e = readdir(d)) != NULL) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof comm, f) && strcmp(comm, "cuprof-window\n") == 0)
			alive = 1;
		fclose(f);
	}
	closedir(d);
	return alive;
}

/* window makes calls from before the capture window (CUPROF_CAPTURE_WINDOW,
 * CLOCK_MONOTONIC ns) opens until after it has closed, however slow the
 * machine: it prints how many calls it made, how many of the first ended
 * before the window's start (the gate cannot have been open for them) and
 * how many it made once the shim's window thread had closed the gate and
 * ended ("made N before B after A"). */
static int window(void)
{
	unsigned long long start = 0, end = 0;
	const char *w = getenv("CUPROF_CAPTURE_WINDOW");
	if (!w || sscanf(w, "%llu %llu", &start, &end) != 2 || !end) {
		fprintf(stderr, "window: no CUPROF_CAPTURE_WINDOW with an end (%s)\n", w ? w : "unset");
		return 2;
	}
	setup();
	int n = 0, before = 0;
	while (mono_ns() < end) {
		seq(n++);
		if (mono_ns() < start)
			before = n;
	}
	uint64_t give_up = mono_ns() + 60000000000ull;
	while (window_thread_alive()) {
		if (mono_ns() > give_up) {
			fprintf(stderr, "window: the window thread still runs a minute after the window's end\n");
			return 1;
		}
		seq(n++);
	}
	const int after = 100;
	for (int i = 0; i < after; i++)
		seq(n++);
	printf("made %d before %d after %d\n", n, before, after);
	return 0;
}

static volatile int entered;

static void *long_call(void *arg)
{
	cuCtxSetCurrent(ctx);
	__atomic_store_n(&entered, 1, __ATOMIC_SEQ_CST);
	cuCtxSynchronize();
	return arg;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* thread_cpu_ns is the CPU time thread th has used. */
static uint64_t thread_cpu_ns(pthread_t th)
{
	clockid_t c;
	struct timespec ts;
	if (pthread_getcpuclockid(th, &c) != 0 || clock_gettime(c, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* in_long_call starts a thread in a long call and comes back once the
 * thread is inside it: the simulated driver spins through the call's cost,
 * and the thread has spun 20 ms of its own CPU time (what it does before
 * the call takes microseconds), however long the machine made it wait. */
static pthread_t in_long_call(void)
{
	pthread_t th;
	entered = 0;
	pthread_create(&th, NULL, long_call, NULL);
	while (!__atomic_load_n(&entered, __ATOMIC_SEQ_CST))
		nap_ms(1);
	while (thread_cpu_ns(th) < 20000000u)
		nap_ms(1);
	return th;
}

static int midcall(void)
{
	setup();
	cuProfilerStart();
	pthread_t b = in_long_call();
	cuProfilerStop(); /* b is inside cuCtxSynchronize: recorded whole */
	seq(7);
	pthread_join(b, NULL);
	pthread_t c = in_long_call();
	cuProfilerStart(); /* c is inside cuCtxSynchronize: not recorded */
	seq(8);
	pthread_join(c, NULL);
	cuProfilerStop();
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "api") == 0)
		return api();
	if (strcmp(mode, "nvtx") == 0)
		return nvtx();
	if (strcmp(mode, "window") == 0)
		return window();
	if (strcmp(mode, "midcall") == 0)
		return midcall();
	fprintf(stderr, "usage: capture api|nvtx|window|midcall\n");
	return 2;
}
