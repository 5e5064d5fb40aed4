/*
 * cuprof's C ABI: what the shim exports for code that wants to add its own
 * records to the recording (package cudawrap finds these with
 * dlsym(RTLD_DEFAULT, ...); they exist only when the shim is loaded).
 * All are safe to call from any thread; none takes a lock on the common path.
 */
#ifndef CUPROF_H
#define CUPROF_H

#include <stddef.h>
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

/* cuprof_pass_through makes the driver APIs named in names (base names of
 * cuprof's API table, comma-separated: "cuCtxGetStreamPriorityRange,
 * cuStreamIsCapturing"; NULL or "" for none) the set that passes through
 * unrecorded from now on, in place of the one before (at start, what
 * `cuprof record --pass-through` named). Their calls are counted, not
 * recorded; the counts so far are written first, as count events at this
 * time, so the trace says how many calls passed through before and after.
 * It returns how many APIs pass through now (0 or more), or:
 * CUPROF_PASS_NOT_RECORDED, the process is not recorded;
 * CUPROF_PASS_UNKNOWN, a name is no API of the table;
 * CUPROF_PASS_REFUSED, a name is an API that creates, destroys, retains or
 * releases an object or switches the context (cuprof follows objects and
 * contexts through those, as --pass-through refuses them);
 * CUPROF_PASS_BUSY, called from a signal handler inside a change.
 * On an error the set stays as it was. Safe from any thread. */
#define CUPROF_PASS_NOT_RECORDED (-1)
#define CUPROF_PASS_UNKNOWN (-2)
#define CUPROF_PASS_REFUSED (-3)
#define CUPROF_PASS_BUSY (-4)
int cuprof_pass_through(const char *names);

/* cuprof_pass_through_list writes the set passed through now into buf
 * (base names, comma-separated, NUL-ended; "" for none) and returns how
 * many APIs it names, CUPROF_PASS_NOT_RECORDED, CUPROF_PASS_BUSY, or
 * CUPROF_PASS_TOO_SMALL when size is too small for them. */
#define CUPROF_PASS_TOO_SMALL (-5)
int cuprof_pass_through_list(char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* CUPROF_H */
