/*
 * loops: times tight loops of CUDA driver calls, for cuprof's benchmark suite.
 *
 * Each case runs a warm-up, then REPS repetitions of ITERS iterations, each
 * repetition timed with CLOCK_MONOTONIC; it writes one JSON object with the
 * time per iteration of every repetition, their minimum and median. One case
 * per process, so that a tool's per-API statistics belong to that case alone.
 *
 * libcuda is opened with dlopen and its functions found with dlsym by their
 * exported (versioned) names, so this file needs no CUDA header and builds
 * anywhere; CUPROF_BENCH_LIBCUDA names another library (the simulated driver)
 * to test it without a GPU. Tools see the calls however they capture them: an
 * LD_PRELOAD shim hooks dlsym, CUPTI and nsys instrument the driver itself.
 *
 * With CUPROF_BENCH_DRAIN_US=N set while cuprof's shim is preloaded (and
 * CUPROF_DIR names its ring folder), a thread of this program plays the
 * recorder every N us: it hands the process's full chunks back to the shim
 * as `cuprof record` does, without reading them. That is the suite's "shim"
 * tool: the shim's own cost in steady state, measured by the same loops in
 * the same rotation as `cuprof record` (bench/capture's method). With
 * CUPROF_BENCH_DRAIN_READ=1 it also copies each full chunk's records out
 * before freeing it, as the recorder does (bench/capture/hypotheses.sh).
 *
 *   loops --list
 *   loops --case NAME [--iters N] [--reps R] [--device D] [--out FILE]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuprof_ring.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmemPoolHandle_st *CUmemoryPool;

#define CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4
#define CUDA_ERROR_INVALID_VALUE 1

static struct {
	CUresult (*Init)(unsigned int);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice);
	CUresult (*CtxGetCurrent)(CUcontext *);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxSynchronize)(void);
	CUresult (*GetErrorName)(CUresult, const char **);
	CUresult (*StreamCreate)(CUstream *, unsigned int);
	CUresult (*StreamDestroy)(CUstream);
	CUresult (*EventCreate)(CUevent *, unsigned int);
	CUresult (*EventDestroy)(CUevent);
	CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
	CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
	CUresult (*DeviceGetDefaultMemPool)(CUmemoryPool *, CUdevice);
	CUresult (*MemPoolSetAttribute)(CUmemoryPool, int, void *);
} cu;

/* The driver's exported name for each entry: the ABI the loops call. */
static const struct {
	void **slot;
	const char *name;
} symbols[] = {
	{(void **)&cu.Init, "cuInit"},
	{(void **)&cu.DriverGetVersion, "cuDriverGetVersion"},
	{(void **)&cu.DeviceGet, "cuDeviceGet"},
	{(void **)&cu.DeviceGetName, "cuDeviceGetName"},
	{(void **)&cu.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
	{(void **)&cu.DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
	{(void **)&cu.CtxGetCurrent, "cuCtxGetCurrent"},
	{(void **)&cu.CtxSetCurrent, "cuCtxSetCurrent"},
	/* The CUDA 12 ABI without a context argument; CUDA 13's _v2 takes one. */
	{(void **)&cu.CtxSynchronize, "cuCtxSynchronize"},
	{(void **)&cu.GetErrorName, "cuGetErrorName"},
	{(void **)&cu.StreamCreate, "cuStreamCreate"},
	{(void **)&cu.StreamDestroy, "cuStreamDestroy_v2"},
	{(void **)&cu.EventCreate, "cuEventCreate"},
	{(void **)&cu.EventDestroy, "cuEventDestroy_v2"},
	{(void **)&cu.MemAllocAsync, "cuMemAllocAsync"},
	{(void **)&cu.MemFreeAsync, "cuMemFreeAsync"},
	{(void **)&cu.DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool"},
	{(void **)&cu.MemPoolSetAttribute, "cuMemPoolSetAttribute"},
};

static CUcontext ctx;
static CUmemoryPool pool;
static unsigned long failures;
static CUresult first_failure;

/* check counts failed calls without branching out of the timed loop. */
static inline void check(CUresult r)
{
	if (__builtin_expect(r != 0, 0)) {
		if (failures++ == 0)
			first_failure = r;
	}
}

static void loop_ctx_get_current(long n)
{
	CUcontext c;
	for (long i = 0; i < n; i++)
		check(cu.CtxGetCurrent(&c));
}

static void loop_ctx_set_current(long n)
{
	for (long i = 0; i < n; i++)
		check(cu.CtxSetCurrent(ctx));
}

static void loop_get_error_name(long n)
{
	const char *s;
	for (long i = 0; i < n; i++)
		check(cu.GetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
}

static void loop_ctx_synchronize(long n)
{
	for (long i = 0; i < n; i++)
		check(cu.CtxSynchronize());
}

static void loop_stream(long n)
{
	CUstream s;
	for (long i = 0; i < n; i++) {
		check(cu.StreamCreate(&s, 0));
		check(cu.StreamDestroy(s));
	}
}

static void loop_event(long n)
{
	CUevent e;
	for (long i = 0; i < n; i++) {
		check(cu.EventCreate(&e, 0));
		check(cu.EventDestroy(e));
	}
}

static void loop_alloc(long n)
{
	CUdeviceptr p;
	for (long i = 0; i < n; i++) {
		check(cu.MemAllocAsync(&p, 10, NULL));
		check(cu.MemFreeAsync(p, NULL));
	}
}

static void loop_alloc_sync(long n)
{
	CUdeviceptr p;
	for (long i = 0; i < n; i++) {
		check(cu.MemAllocAsync(&p, 10, NULL));
		check(cu.MemFreeAsync(p, NULL));
		check(cu.CtxSynchronize());
	}
}

enum { THRESHOLD_KEEP, THRESHOLD_ZERO, THRESHOLD_MAX };

struct loop_case {
	const char *name;
	void (*run)(long);
	int threshold;
	long iters;	   /* default iterations per repetition */
	const char *apis; /* the driver APIs one iteration calls, in order */
	int calls;	   /* how many calls one iteration makes */
	const char *what;
};

static const struct loop_case cases[] = {
	{"ctx_get_current", loop_ctx_get_current, THRESHOLD_KEEP, 200000, "cuCtxGetCurrent", 1,
	 "cuCtxGetCurrent"},
	{"ctx_set_current", loop_ctx_set_current, THRESHOLD_KEEP, 200000, "cuCtxSetCurrent", 1,
	 "cuCtxSetCurrent (already current)"},
	{"get_error_name", loop_get_error_name, THRESHOLD_KEEP, 200000, "cuGetErrorName", 1, "cuGetErrorName"},
	{"ctx_synchronize", loop_ctx_synchronize, THRESHOLD_KEEP, 20000, "cuCtxSynchronize", 1,
	 "cuCtxSynchronize (idle)"},
	{"stream_create_destroy", loop_stream, THRESHOLD_KEEP, 2000, "cuStreamCreate,cuStreamDestroy", 2,
	 "cuStreamCreate + cuStreamDestroy"},
	{"event_create_destroy", loop_event, THRESHOLD_KEEP, 20000, "cuEventCreate,cuEventDestroy", 2,
	 "cuEventCreate + cuEventDestroy"},
	{"alloc_free_async", loop_alloc, THRESHOLD_KEEP, 20000, "cuMemAllocAsync,cuMemFreeAsync", 2,
	 "cuMemAllocAsync(10 B) + cuMemFreeAsync"},
	{"alloc_free_sync_threshold0", loop_alloc_sync, THRESHOLD_ZERO, 200,
	 "cuMemAllocAsync,cuMemFreeAsync,cuCtxSynchronize", 3,
	 "alloc + free + cuCtxSynchronize, pool release threshold 0"},
	{"alloc_free_sync_thresholdmax", loop_alloc_sync, THRESHOLD_MAX, 5000,
	 "cuMemAllocAsync,cuMemFreeAsync,cuCtxSynchronize", 3,
	 "alloc + free + cuCtxSynchronize, pool release threshold UINT64_MAX"},
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the speed probe ----
 *
 * On the H200 VM a loop process runs fast or slow (1.3-1.6x) in spells that
 * last from a few reps to a whole process, while a dependent multiply chain
 * in the same spells keeps its speed (2026-12-01 diagnostic run): whatever
 * shares the physical core on the host slows wide, branchy code, not a
 * latency-bound chain. So before every repetition the loop times three small
 * units of work that touch no driver and no tool: "alu" (a dependent chain:
 * the control), "ilp" (eight independent streams: wide issue) and "call"
 * (calls through a table of functions: front end and branch prediction).
 * Each is the fastest of PROBE_TRIES runs, in ns; one more reading follows
 * the last rep, so rep k lies between readings k and k+1 ("probe_ns": REPS+1
 * values a kind). tables.py keeps the reps whose readings on both sides ran
 * at the run's uncontended speed. */
#define PROBE_TRIES 5

static uint64_t probe_alu(uint64_t x)
{
	for (int i = 0; i < 4000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static uint64_t probe_ilp(uint64_t x)
{
	uint64_t s[8];
	for (int k = 0; k < 8; k++)
		s[k] = x + (uint64_t)k * 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 2000; i++)
		for (int k = 0; k < 8; k++) {
			s[k] ^= s[k] << 13;
			s[k] ^= s[k] >> 7;
			s[k] ^= s[k] << 17;
		}
	uint64_t r = 0;
	for (int k = 0; k < 8; k++)
		r ^= s[k];
	return r;
}

static uint64_t __attribute__((noinline)) pf0(uint64_t x) { return x * 3 + 1; }
static uint64_t __attribute__((noinline)) pf1(uint64_t x) { return (x >> 1) ^ x; }
static uint64_t __attribute__((noinline)) pf2(uint64_t x) { return x + (x << 3); }
static uint64_t __attribute__((noinline)) pf3(uint64_t x) { return x ^ 0x5bd1e995u; }
static uint64_t (*volatile probe_fns[4])(uint64_t) = {pf0, pf1, pf2, pf3};

static uint64_t probe_call(uint64_t x)
{
	for (int i = 0; i < 4000; i++)
		x = probe_fns[(x >> 7) & 3](x);
	return x;
}

/* v[0] alu, v[1] ilp, v[2] call */
struct probe_reading {
	double v[3];
};

static uint64_t probe_sink;

static double probe_one(uint64_t (*unit)(uint64_t))
{
	double best = 0;
	for (int t = 0; t < PROBE_TRIES; t++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		probe_sink += unit(probe_sink | 1);
		clock_gettime(CLOCK_MONOTONIC, &b);
		double d = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
		if (t == 0 || d < best)
			best = d;
	}
	return best;
}

static struct probe_reading probe(void)
{
	struct probe_reading p = {{probe_one(probe_alu), probe_one(probe_ilp), probe_one(probe_call)}};
	return p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void die(const char *what, CUresult r)
{
	const char *name = NULL;
	if (cu.GetErrorName)
		cu.GetErrorName(r, &name);
	fprintf(stderr, "loops: %s failed: %d (%s)\n", what, r, name ? name : "?");
	exit(1);
}

/* ---- the in-process drainer (CUPROF_BENCH_DRAIN_US) ---- */

static volatile int drain_stop, drain_ready;
static unsigned long drain_freed;
static int drain_read;
static volatile unsigned char drain_sink;

/* open_own_ring maps this process's ring file in dir, or returns NULL. */
static struct cuprof_ring_hdr *open_own_ring(const char *dir)
{
	char prefix[32];
	int plen = snprintf(prefix, sizeof prefix, "%d-", (int)getpid());
	struct cuprof_ring_hdr *h = NULL;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && !h && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (strncmp(e->d_name, prefix, (size_t)plen) || n < 5 || strcmp(e->d_name + n - 5, ".ring"))
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		int fd = open(path, O_RDWR | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > CUPROF_HDR_SIZE) {
			void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (m != MAP_FAILED) {
				if (__atomic_load_n(&((struct cuprof_ring_hdr *)m)->magic, __ATOMIC_ACQUIRE) == CUPROF_RING_MAGIC)
					h = m;
				else
					munmap(m, (size_t)st.st_size);
			}
		}
		if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
	return h;
}

/* drain frees the full chunks of this process's ring every interval us. */
static void *drain(void *arg)
{
	long us = (long)(intptr_t)arg;
	const char *dir = getenv("CUPROF_DIR");
	struct cuprof_ring_hdr *h = NULL;
	while (!drain_stop && !(h = open_own_ring(dir)))
		usleep(1000);
	drain_ready = h != NULL;
	unsigned char *copy = drain_read && h ? malloc(h->chunk_size) : NULL;
	while (!drain_stop && h) {
		struct cuprof_chunk_hdr *c = (void *)((char *)h + h->chunks_off);
		__atomic_add_fetch(&h->polls, 1, __ATOMIC_RELEASE);
		for (uint32_t i = 0; i < h->nchunks; i++) {
			if (__atomic_load_n(&c[i].state, __ATOMIC_ACQUIRE) == CUPROF_CHUNK_FULL) {
				if (copy) {
					uint32_t n = __atomic_load_n(&c[i].count, __ATOMIC_ACQUIRE);
					size_t bytes = (size_t)n * h->rec_size;
					if (bytes > h->chunk_size)
						bytes = h->chunk_size;
					memcpy(copy, (char *)h + h->data_off + (size_t)i * h->chunk_size, bytes);
					drain_sink ^= copy[bytes ? bytes - 1 : 0];
				}
				__atomic_store_n(&c[i].state, CUPROF_CHUNK_FREE, __ATOMIC_RELEASE);
				__atomic_add_fetch(&h->released, 1, __ATOMIC_RELEASE);
				drain_freed++;
			}
		}
		usleep((useconds_t)us);
	}
	free(copy);
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: loops --list\n"
		   "       loops --case NAME [--iters N] [--reps R] [--device D] [--out FILE]\n");
}

static long parse_long(const char *flag, const char *s, long min)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < min) {
		fprintf(stderr, "loops: %s wants an integer >= %ld, got %s\n", flag, min, s);
		exit(2);
	}
	return v;
}

static void open_driver(void)
{
	const char *lib = getenv("CUPROF_BENCH_LIBCUDA");
	if (!lib || !*lib)
		lib = "libcuda.so.1";
	void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		fprintf(stderr, "loops: cannot open the CUDA driver: %s (set CUPROF_BENCH_LIBCUDA)\n", dlerror());
		exit(1);
	}
	for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
		*symbols[i].slot = dlsym(h, symbols[i].name);
		if (!*symbols[i].slot) {
			fprintf(stderr, "loops: %s does not export %s\n", lib, symbols[i].name);
			exit(1);
		}
	}
}

int main(int argc, char **argv)
{
	const char *name = NULL, *out = NULL;
	long iters = 0, reps = 5, device = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--list")) {
			for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
				printf("%s\t%ld\t%s\n", cases[k].name, cases[k].iters, cases[k].what);
			return 0;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (i + 1 >= argc) {
			usage(stderr);
			return 2;
		}
		if (!strcmp(a, "--case"))
			name = argv[++i];
		else if (!strcmp(a, "--iters"))
			iters = parse_long(a, argv[++i], 1);
		else if (!strcmp(a, "--reps"))
			reps = parse_long(a, argv[++i], 1);
		else if (!strcmp(a, "--device"))
			device = parse_long(a, argv[++i], 0);
		else if (!strcmp(a, "--out"))
			out = argv[++i];
		else {
			usage(stderr);
			return 2;
		}
	}
	const struct loop_case *c = NULL;
	for (size_t k = 0; name && k < sizeof cases / sizeof cases[0]; k++)
		if (!strcmp(cases[k].name, name))
			c = &cases[k];
	if (!c) {
		fprintf(stderr, "loops: unknown or missing --case %s (see loops --list)\n", name ? name : "");
		return 2;
	}
	if (iters == 0)
		iters = c->iters;

	open_driver();
	CUresult r;
	CUdevice dev;
	int driver = 0;
	char devname[256] = "";
	if ((r = cu.Init(0)))
		die("cuInit", r);
	if ((r = cu.DriverGetVersion(&driver)))
		die("cuDriverGetVersion", r);
	if ((r = cu.DeviceGet(&dev, (int)device)))
		die("cuDeviceGet", r);
	if ((r = cu.DeviceGetName(devname, sizeof devname, dev)))
		die("cuDeviceGetName", r);
	if ((r = cu.DevicePrimaryCtxRetain(&ctx, dev)))
		die("cuDevicePrimaryCtxRetain", r);
	if ((r = cu.CtxSetCurrent(ctx)))
		die("cuCtxSetCurrent", r);
	if (c->threshold != THRESHOLD_KEEP) {
		uint64_t t = c->threshold == THRESHOLD_MAX ? UINT64_MAX : 0;
		if ((r = cu.DeviceGetDefaultMemPool(&pool, dev)))
			die("cuDeviceGetDefaultMemPool", r);
		if ((r = cu.MemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &t)))
			die("cuMemPoolSetAttribute", r);
	}

	pthread_t drainer;
	int draining = 0;
	const char *drain_us = getenv("CUPROF_BENCH_DRAIN_US");
	if (drain_us && *drain_us && getenv("CUPROF_DIR") && getenv("LD_PRELOAD")) {
		long us = parse_long("CUPROF_BENCH_DRAIN_US", drain_us, 1);
		const char *rd = getenv("CUPROF_BENCH_DRAIN_READ");
		drain_read = rd && !strcmp(rd, "1");
		draining = pthread_create(&drainer, NULL, drain, (void *)(intptr_t)us) == 0;
		/* The ring opens on the first recorded call (cuInit above): let
		 * the drainer find it before the warm-up. */
		for (int i = 0; i < 2000 && draining && !drain_ready; i++)
			usleep(100);
	}

	/* Warm-up: a tenth of a repetition, at least one iteration. */
	long warm = iters / 10 > 0 ? iters / 10 : 1;
	c->run(warm);
	if (failures)
		die(c->name, first_failure);

	double *per = calloc((size_t)reps, sizeof *per);
	double *sorted = calloc((size_t)reps, sizeof *sorted);
	struct probe_reading *probes = calloc((size_t)reps + 1, sizeof *probes);
	if (!per || !sorted || !probes) {
		fprintf(stderr, "loops: out of memory\n");
		return 1;
	}
	int64_t t_all = now_ns();
	for (long k = 0; k < reps; k++) {
		probes[k] = probe();
		int64_t t0 = now_ns();
		c->run(iters);
		per[k] = (double)(now_ns() - t0) / (double)iters;
	}
	probes[reps] = probe(); /* rep k lies between probes k and k+1 */
	t_all = now_ns() - t_all;
	if (draining) {
		drain_stop = 1;
		pthread_join(drainer, NULL);
	}
	memcpy(sorted, per, (size_t)reps * sizeof *per);
	qsort(sorted, (size_t)reps, sizeof *sorted, cmp_double);
	double median = reps % 2 ? sorted[reps / 2] : (sorted[reps / 2 - 1] + sorted[reps / 2]) / 2;

	FILE *f = stdout;
	if (out && !(f = fopen(out, "w"))) {
		fprintf(stderr, "loops: cannot write %s: %s\n", out, strerror(errno));
		return 1;
	}
	fprintf(f, "{\"case\": \"%s\", \"what\": \"%s\", \"apis\": [", c->name, c->what);
	const char *p = c->apis;
	while (*p) {
		size_t len = strcspn(p, ",");
		fprintf(f, "\"%.*s\"%s", (int)len, p, p[len] ? ", " : "");
		p += len + (p[len] != 0);
	}
	fprintf(f,
		"], \"calls_per_iter\": %d, \"iters\": %ld, \"warmup_iters\": %ld, \"reps\": %ld,"
		" \"ns_per_iter\": [",
		c->calls, iters, warm, reps);
	for (long k = 0; k < reps; k++)
		fprintf(f, "%s%.3f", k ? ", " : "", per[k]);
	static const char *probe_names[] = {"alu", "ilp", "call"};
	fprintf(f, "], \"probe_ns\": {");
	for (int q = 0; q < 3; q++) {
		fprintf(f, "%s\"%s\": [", q ? ", " : "", probe_names[q]);
		for (long k = 0; k <= reps; k++)
			fprintf(f, "%s%.0f", k ? ", " : "", probes[k].v[q]);
		fprintf(f, "]");
	}
	fprintf(f,
		"}, \"min_ns\": %.3f, \"median_ns\": %.3f, \"max_ns\": %.3f, \"total_s\": %.6f,"
		" \"failures\": %lu, \"drained_chunks\": %lu, \"driver_version\": %d, \"device\": %ld,"
		" \"device_name\": \"",
		sorted[0], median, sorted[reps - 1], (double)t_all / 1e9, failures, drain_freed, driver, device);
	for (const char *q = devname; *q; q++)
		if (*q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
			fputc(*q, f);
	fprintf(f, "\"}\n");
	if (f != stdout && fclose(f)) {
		fprintf(stderr, "loops: cannot write %s: %s\n", out, strerror(errno));
		return 1;
	}
	cu.DevicePrimaryCtxRelease(dev);
	if (failures) {
		const char *en = NULL;
		cu.GetErrorName(first_failure, &en);
		fprintf(stderr, "loops: %s: %lu calls failed, first with %d (%s)\n", c->name, failures,
			first_failure, en ? en : "?");
		return 1;
	}
	return 0;
}
