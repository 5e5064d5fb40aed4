/*
 * hostprobe: how fast this machine's CPU runs a fixed piece of work, over
 * time, so that a benchmark can tell a slow process from a slow tool.
 *
 * The work unit is a chain of 2000 dependent multiply-adds (L1 and register
 * only: no memory traffic, no system call), whose time depends on nothing but
 * the core's speed and what shares it (on a VM: the host's other work on the
 * same physical core). A second unit walks a random cycle through 64 MiB (a
 * dependent load per step: DRAM and TLB), for memory placement.
 *
 *   hostprobe [--seconds S] [--window-ms W] [--mem] [--label L]
 *
 * prints one JSON line per window: {"label", "t_ms", "ns_alu", "ns_mem"},
 * ns_alu the fastest unit of the window in ns (the work itself, less its
 * interruptions), ns_mem the mean ns per dependent load of one walk of 4096
 * steps. The last line is a summary: median, minimum and maximum of the
 * windows' ns_alu. Standard C only; built by the bench scripts with gcc.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t alu_unit(uint64_t x)
{
	for (int i = 0; i < 2000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	double seconds = 1.0, window_ms = 20.0;
	int mem = 0;
	const char *label = "";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--window-ms") && i + 1 < argc)
			window_ms = atof(argv[++i]);
		else if (!strcmp(argv[i], "--mem"))
			mem = 1;
		else if (!strcmp(argv[i], "--label") && i + 1 < argc)
			label = argv[++i];
		else {
			fprintf(stderr, "hostprobe: unknown argument %s; usage: hostprobe [--seconds S] [--window-ms W] [--mem] [--label L]\n", argv[i]);
			return 2;
		}
	}
	if (seconds <= 0 || window_ms <= 0) {
		fprintf(stderr, "hostprobe: --seconds and --window-ms want positive numbers\n");
		return 2;
	}
	size_t n = 0;
	uint32_t *next = NULL, pos = 0;
	if (mem) {
		n = (64u << 20) / sizeof *next;
		next = malloc(n * sizeof *next);
		uint32_t *perm = malloc(n * sizeof *perm);
		if (!next || !perm) {
			fprintf(stderr, "hostprobe: no memory for the 64 MiB walk; run without --mem\n");
			return 1;
		}
		for (size_t i = 0; i < n; i++)
			perm[i] = (uint32_t)i;
		uint64_t r = 88172645463325252ull;
		for (size_t i = n - 1; i > 0; i--) {
			r ^= r << 13, r ^= r >> 7, r ^= r << 17;
			size_t j = r % (i + 1);
			uint32_t t = perm[i];
			perm[i] = perm[j], perm[j] = t;
		}
		for (size_t i = 0; i < n; i++)
			next[perm[i]] = perm[(i + 1) % n];
		free(perm);
	}
	size_t cap = (size_t)(seconds * 1000.0 / window_ms) + 2, nw = 0;
	double *alu = malloc(cap * sizeof *alu);
	if (!alu)
		return 1;
	uint64_t x = 1, t0 = now_ns(), end = t0 + (uint64_t)(seconds * 1e9);
	uint64_t win = (uint64_t)(window_ms * 1e6);
	while (nw < cap) {
		uint64_t ws = now_ns();
		if (ws >= end)
			break;
		double best = 1e30;
		while (now_ns() - ws < win) {
			uint64_t a = now_ns();
			x = alu_unit(x);
			double d = (double)(now_ns() - a);
			if (d < best)
				best = d;
		}
		double memns = 0;
		if (mem) {
			uint64_t a = now_ns();
			for (int i = 0; i < 4096; i++)
				pos = next[pos];
			memns = (double)(now_ns() - a) / 4096.0;
		}
		alu[nw++] = best;
		printf("{\"label\": \"%s\", \"t_ms\": %.1f, \"ns_alu\": %.0f, \"ns_mem\": %.1f}\n", label,
		       (double)(ws - t0) / 1e6, best, memns);
	}
	qsort(alu, nw, sizeof *alu, cmp_double);
	printf("{\"label\": \"%s\", \"summary\": true, \"windows\": %zu, \"median_alu\": %.0f, \"min_alu\": %.0f, "
	       "\"max_alu\": %.0f, \"sink\": %u}\n",
	       label, nw, nw ? alu[nw / 2] : 0, nw ? alu[0] : 0, nw ? alu[nw - 1] : 0, (unsigned)(x ^ pos) & 1);
	return 0;
}
