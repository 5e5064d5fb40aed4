/*
 * cuprof-calib: run by the recorder under the shim (LD_PRELOAD) to tie the
 * ring clock to CLOCK_MONOTONIC and to measure the shim's own cost.
 *
 *   cuprof-calib [ITERS]
 *
 * prints "clock K" (CUPROF_CLOCK_*), "pair TICKS MONO_NS" (one instant on
 * both clocks, taken where the two reads of the ring clock were closest),
 * and with ITERS > 0 "calib PLAIN WRAPPED INSIDE N COLD COLD_N WARM WARM_N" (see cuprof_calibrate).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	uint64_t (*now)(void) = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "cuprof_now");
	int (*cal)(uint64_t, uint64_t *) = (int (*)(uint64_t, uint64_t *))dlsym(RTLD_DEFAULT, "cuprof_calibrate");
	if (!now || !cal) {
		fprintf(stderr, "cuprof-calib: the cuprof shim is not loaded\n");
		return 2;
	}
	uint64_t iters = argc > 1 ? strtoull(argv[1], NULL, 10) : 0;
	uint64_t out[8] = {0};
	int clock = cal(iters ? iters : 1, out);
	uint64_t best = UINT64_MAX, tick = 0, mono = 0;
	for (int i = 0; i < 50; i++) {
		struct timespec ts;
		uint64_t a = now();
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t b = now();
		if (b - a < best) {
			best = b - a;
			tick = a + (b - a) / 2;
			mono = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		}
	}
	printf("clock %d\n", clock);
	printf("pair %" PRIu64 " %" PRIu64 "\n", tick, mono);
	if (iters)
		printf("calib %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
		       out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7]);
	return 0;
}
