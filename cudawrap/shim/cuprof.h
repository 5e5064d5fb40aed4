/*
 * cuprof's C ABI: what the shim exports for code that wants to add its own
 * records to the recording (package cudawrap finds these with
 * dlsym(RTLD_DEFAULT, ...); they exist only when the shim is loaded).
 * All are safe to call from any thread; none takes a lock on the common path.
 */
#ifndef CUPROF_H
#define CUPROF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cuprof_active returns 1 when this process is being recorded (the ring file
 * is open or could be opened now), else 0. */
int cuprof_active(void);

/* cuprof_now returns the current time on the recording's clock (TSC ticks or
 * CLOCK_MONOTONIC nanoseconds: opaque, only for cuprof_span). */
uint64_t cuprof_now(void);

/* cuprof_intern returns the id of string s in this process's string table
 * (0 for NULL, "" or when the table is full). Ids are stable for the process. */
uint32_t cuprof_intern(const char *s);

/* cuprof_span records a complete range [start, end] (cuprof_now values) named
 * `name` in domain `domain` (ids from cuprof_intern) on the calling thread. */
void cuprof_span(uint32_t domain, uint32_t name, uint64_t start, uint64_t end);

/* cuprof_last_call_end returns the end time (cuprof_now units) of the last
 * driver call the calling thread recorded, or 0. */
uint64_t cuprof_last_call_end(void);

/* cuprof_capture_start opens a capture range named name (NULL:
 * "cuprof.start") when the process is recorded with
 * --capture-range=profiler-api, as cuProfilerStart does: 1 then, 0 when the
 * recording has no such ranges, -1 when the process is not recorded.
 * cuprof_capture_stop closes it, with the same results. */
int cuprof_capture_start(const char *name);
int cuprof_capture_stop(void);

/* cuprof_capture_mode: 0 everything is recorded, 1 profiler-api ranges, 2 an
 * NVTX range, 3 a --delay/--duration window only. */
int cuprof_capture_mode(void);

#ifdef __cplusplus
}
#endif

#endif /* CUPROF_H */
