/*
 * A stand-in for the cuprof shim's span ABI (cudawrap/shim/cuprof.h), for
 * cudawrap's tests: preloaded into a child test process, it writes every span
 * as a line "tid domain name start end" to the file named by
 * CUDAWRAP_FAKE_SPANS.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char *names[4096];
static uint32_t nnames;
static int fd = -1;

static uint64_t ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((visibility("default"))) int cuprof_active(void) { return 1; }
__attribute__((visibility("default"))) uint64_t cuprof_now(void) { return ns(); }
__attribute__((visibility("default"))) uint64_t cuprof_last_call_end(void) { return ns(); }

__attribute__((visibility("default"))) uint32_t cuprof_intern(const char *s)
{
	if (!s || !*s)
		return 0;
	pthread_mutex_lock(&mu);
	for (uint32_t i = 1; i <= nnames; i++) {
		if (strcmp(names[i - 1], s) == 0) {
			pthread_mutex_unlock(&mu);
			return i;
		}
	}
	uint32_t id = 0;
	if (nnames < 4096) {
		names[nnames++] = strdup(s);
		id = nnames;
	}
	pthread_mutex_unlock(&mu);
	return id;
}

__attribute__((visibility("default"))) void cuprof_span(uint32_t domain, uint32_t name, uint64_t start, uint64_t end)
{
	char line[512];
	pthread_mutex_lock(&mu);
	if (fd < 0) {
		const char *path = getenv("CUDAWRAP_FAKE_SPANS");
		fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT, 0600) : -2;
	}
	const char *d = domain && domain <= nnames ? names[domain - 1] : "-";
	const char *n = name && name <= nnames ? names[name - 1] : "-";
	int len = snprintf(line, sizeof line, "%ld %s %s %llu %llu\n", (long)syscall(SYS_gettid), d, n,
			   (unsigned long long)start, (unsigned long long)end);
	if (fd >= 0 && len > 0)
		(void)!write(fd, line, (size_t)len);
	pthread_mutex_unlock(&mu);
}
