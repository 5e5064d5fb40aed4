/*
 * The layout of a cuprof ring file: the one definition shared by the shim
 * (writer, C) and the recorder (reader, Go: internal/record, whose constants
 * a test checks against this header by compiling a program that prints every
 * size and offset).
 *
 * One file per process image (a fork or an exec opens a new one), created in
 * $CUPROF_DIR and mapped MAP_SHARED, so what was committed survives the
 * process being killed. Layout, all little-endian:
 *
 *   [0, CUPROF_HDR_SIZE)            struct cuprof_ring_hdr
 *   [threads_off, +max_threads*32)  struct cuprof_thread_slot: per-thread tid, name, drops
 *   [chunks_off, +nchunks*32)       struct cuprof_chunk_hdr: state, owner, committed count
 *   [strings_off, +strings_size)    interned strings: {u32 id, u32 len, bytes, pad to 4}
 *   [data_off, +nchunks*chunk_size) chunk bodies: arrays of 32-byte slots (records of 1-3 slots)
 *
 *   [ext_off, ...)                  extension segments the ring grew by (struct
 *                                   cuprof_ring_seg, its chunk table and bodies)
 *
 * Protocol. A thread owns one chunk at a time and appends records to it; after
 * each record it publishes the new count with a release store (no lock, no
 * shared atomic read-modify-write). When its chunk is full it marks it FULL
 * and claims a FREE one with a compare-and-swap: the only shared atomic,
 * once per chunk. The recorder reads committed records of OWNED and FULL
 * chunks while the program runs and, once it has read a FULL chunk, writes
 * FREE back (only the recorder makes that transition) and bumps `released`.
 *
 * A thread keeps its chunk while it lives (it writes no shared word between
 * records), so threads that wait elsewhere (at a barrier) hold chunks the
 * recorder cannot free. A thread that finds no FREE chunk and no FULL one
 * (every chunk is held by a thread: waiting would wait on threads, not on
 * the recorder) grows the ring: it appends a segment of more chunks to the
 * file (struct cuprof_ring_seg, linked from ext_off and each segment's
 * next_off, release-stored once the segment is ready) and claims there.
 * Only when a FULL chunk exists (the recorder is behind) is the ring full:
 * the thread then drops the event and counts it in its slot, or, when the
 * recorder asked for it (when_full = CUPROF_WHEN_FULL_WAIT), first waits for
 * one: it sleeps on `released` as a futex (the recorder wakes as many
 * sleepers as a poll freed chunks) and claims again while the recorder
 * lives, which it tells
 * by the recorder's lock (CUPROF_LOCK_NAME in $CUPROF_DIR, held shared by the
 * recorder while it records) or, where there is none, by the heartbeat
 * (`polls`, or `released`, moving within CUPROF_STALL_MS). A ring that
 * cannot grow (no room) drops and counts in grow_drops, a wait that found
 * the recorder gone in stall_drops.
 */
#ifndef CUPROF_RING_H
#define CUPROF_RING_H

#include <stdint.h>

#define CUPROF_RING_MAGIC 0x31474e4952464f52ULL /* "ROFRING1" little-endian */
#define CUPROF_RING_VERSION 6
#define CUPROF_HDR_SIZE 8192
#define CUPROF_MAX_THREADS 4096
#define CUPROF_STRINGS_SIZE (1u << 20)
#define CUPROF_STRING_MAX 65535 /* longest string interned; a longer one is cut */
#define CUPROF_EXE_MAX 512
#define CUPROF_CMDLINE_MAX 2048
#define CUPROF_ENV_MAX 1024
#define CUPROF_PY_STATUS_MAX 256
#define CUPROF_PASS_APIS 496 /* pass-through counters in the header, by API id */

/* cuprof_ring_hdr.clock */
#define CUPROF_CLOCK_TSC 1       /* timestamps are rdtsc ticks */
#define CUPROF_CLOCK_MONOTONIC 2 /* timestamps are CLOCK_MONOTONIC ns */

/* cuprof_ring_hdr.exited, set by the exit hook: CUPROF_EXITED, plus
 * CUPROF_EXITED_STATUS and the exit status in bits 8-15 when it is known. */
#define CUPROF_EXITED 1              /* the process ran its exit hooks */
#define CUPROF_EXITED_STATUS 0x10000 /* bits 8-15 hold the exit status */

/* cuprof_ring_hdr.when_full: what a writer does when no chunk is free. */
#define CUPROF_WHEN_FULL_DROP 0 /* drop the event and count it */
#define CUPROF_WHEN_FULL_WAIT 1 /* wait for the recorder to free a chunk */
/* How long a waiting writer waits without seeing the recorder poll, when
 * it cannot tell by the recorder's lock whether the recorder lives, unless
 * the program's environment sets CUPROF_STALL_MS (1 to 3600000). */
#define CUPROF_STALL_MS 2000
/* The file in $CUPROF_DIR the recorder holds a shared flock(2) on while it
 * records: a writer whose try for an exclusive lock fails knows it lives. */
#define CUPROF_LOCK_NAME ".recorder"

/* Growth: at most CUPROF_MAX_SEGS segments, the k-th (from 0) of
 * CUPROF_SEG_CHUNKS << k chunks of at most CUPROF_SEG_CHUNK_SLOTS slots
 * (small: a segment holds chunks for threads, not for bursts). */
#define CUPROF_SEG_MAGIC 0x31474553464f52ULL /* "ROFSEG1" little-endian */
#define CUPROF_MAX_SEGS 16
#define CUPROF_SEG_CHUNKS 256
#define CUPROF_SEG_CHUNK_SLOTS 128
#define CUPROF_SEG_HDR_SIZE 64

/* cuprof_chunk_hdr.state */
#define CUPROF_CHUNK_FREE 0
#define CUPROF_CHUNK_OWNED 1
#define CUPROF_CHUNK_FULL 2

/* cuprof_rec.kind: the same numbers as package trace's Kind. */
#define CUPROF_REC_CALL 1
#define CUPROF_REC_PUSH 2
#define CUPROF_REC_POP 3
#define CUPROF_REC_START 4
#define CUPROF_REC_END 5
#define CUPROF_REC_SPAN 6
#define CUPROF_REC_MARK 7
#define CUPROF_REC_NAME 8
#define CUPROF_REC_FRAME 9 /* a Python-level activation, see below */
#define CUPROF_REC_CAPTURE 10 /* a capture range of the process: start, end, name (capture.c) */
#define CUPROF_REC_COUNT 11 /* calls of a driver function not in the API table: name, size = calls */

/* cuprof_rec.flags of a CUPROF_REC_FRAME: trace.FrameUnwound... */
#define CUPROF_FRAME_UNWOUND 1
#define CUPROF_FRAME_YIELDED 2
#define CUPROF_FRAME_OPEN 4

/*
 * A frame's code is a string of the string area (its id in cuprof_rec.name)
 * that starts with a NUL byte, which no NVTX or cuprof_intern string can:
 * "\0" KIND "\0" qualname "\0" module "\0" file "\0" firstlineno, KIND '1'
 * for a Python function, '2' for a C-level callable (trace.CodeKind).
 */
#define CUPROF_CODE_PYTHON '1'
#define CUPROF_CODE_NATIVE '2'

struct cuprof_ring_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;     /* CUPROF_HDR_SIZE */
	uint32_t rec_size;     /* sizeof(struct cuprof_rec) */
	uint32_t chunk_size;   /* bytes per chunk body, a multiple of rec_size */
	uint32_t nchunks;
	uint32_t max_threads;
	uint32_t clock;        /* CUPROF_CLOCK_* */
	uint32_t pid;
	uint32_t ppid;
	uint32_t nthreads;     /* thread slots handed out (atomic) */
	uint64_t threads_off;
	uint64_t chunks_off;
	uint64_t strings_off;
	uint64_t strings_size;
	uint64_t data_off;
	uint64_t file_size;
	/* Clock anchor taken when the file was opened: the same instant on the
	 * ring clock, CLOCK_MONOTONIC and CLOCK_REALTIME. */
	uint64_t tsc0;
	uint64_t mono0;
	uint64_t wall0;
	uint32_t strings_used; /* bytes of the string area in use (release-stored) */
	uint32_t released;     /* chunks freed by the recorder (written by it only; a futex waiters sleep on) */
	uint64_t overflow_drops; /* events dropped by threads without a slot (atomic) */
	uint64_t string_drops;   /* strings that did not fit (atomic) */
	uint32_t exited;       /* set by the exit hook: CUPROF_EXITED, | CUPROF_EXITED_STATUS | status << 8 when known */
	uint32_t cmdline_len;  /* bytes of cmdline used */
	uint32_t when_full;    /* CUPROF_WHEN_FULL_* the shim applies */
	uint32_t polls;        /* the recorder's polls of this ring (written by it only) */
	uint32_t waiters;      /* writers waiting for a free chunk now (atomic) */
	uint32_t string_cuts;  /* strings cut to CUPROF_STRING_MAX bytes (atomic) */
	uint64_t waits;        /* times a writer waited for a free chunk (atomic) */
	uint64_t wait_ns;      /* their waits in all, CLOCK_MONOTONIC ns (atomic) */
	char exe[CUPROF_EXE_MAX];         /* readlink /proc/self/exe, NUL-terminated */
	char cmdline[CUPROF_CMDLINE_MAX]; /* /proc/self/cmdline, NUL-separated */
	/* The environment variables kept for attribution (ranks, visible
	 * devices), as NUL-terminated KEY=VALUE strings, then an empty one. */
	char env[CUPROF_ENV_MAX];
	/* Python frames (python.c): the calibrated cost of one Python event
	 * in ring clock ticks x 1000 (0: not measured), the frames dropped
	 * because their code could not be interned (string area full), and
	 * how frames were recorded or why not (trace.Process.Python),
	 * NUL-terminated, release-stored by its first byte last. */
	uint64_t py_event_milliticks;
	uint64_t py_code_drops;
	char py_status[CUPROF_PY_STATUS_MAX];
	/* The ring's growth and the drops that are not the buffer's. */
	uint64_t ext_off;      /* the first extension segment's offset, 0: none (release-stored) */
	uint64_t grow_drops;   /* events dropped: every chunk held and the ring could not grow (atomic) */
	uint64_t stall_drops;  /* events dropped by a wait that found the recorder gone (atomic) */
	uint64_t nested_drops; /* driver calls made inside a wrapped call of the thread (a signal handler's), not recorded (atomic) */
	/* The wrapper's cost measured in place (inplace.c): the shadow calls'
	 * ticks in all, cold (before their call) and warm (after it), and their
	 * counts, the cold ones' in the low 32 bits, the warm ones' in the high
	 * (atomic). */
	uint64_t inplace_cold_ticks;
	uint64_t inplace_warm_ticks;
	uint64_t inplace_counts;
	/* Calls passed through (--pass-through), by API id, not yet written
	 * as count events (atomic): the shim writes them as count events at
	 * exit and at a change of the set, zeroing them; what a process that
	 * ended without its exit hooks left (_exit, a Go program, a forked
	 * multiprocessing child) the recorder writes when it is gone. */
	uint64_t pass_calls[CUPROF_PASS_APIS];
	/* Fork children of this process that could make no ring of their own
	 * (a privilege drop: the ring directory is the recorder's user's), and
	 * the events they made until they exec'd or exited (atomic; written by
	 * the children through the header they keep mapped). */
	uint64_t lost_children;
	uint64_t lost_child_events;
	/* Python frames, the rest of the calibration (struct
	 * cuprof_py_costs, ticks x 1000, 0: not measured; added 2026-12-07): per
	 * event of a written C-level frame; the part of a written Python and
	 * C-level frame's two events inside its own start and end; per Python
	 * and C-level activation pushed and not written; per hook call that
	 * pushed nothing. Stored before py_event_milliticks (release-stored). */
	uint64_t py_c_event_milliticks;
	uint64_t py_inside_milliticks;
	uint64_t py_c_inside_milliticks;
	uint64_t py_hidden_milliticks;
	uint64_t py_c_hidden_milliticks;
	uint64_t py_lone_milliticks;
};

/* An extension segment at a page-aligned offset of the file: this header,
 * its chunk table at chunks_off, its chunk bodies at data_off. */
struct cuprof_ring_seg {
	uint64_t magic;      /* CUPROF_SEG_MAGIC */
	uint64_t next_off;   /* the next segment's offset, 0: none (release-stored) */
	uint64_t chunks_off; /* absolute offsets */
	uint64_t data_off;
	uint64_t size;       /* bytes from this header to the segment's end */
	uint32_t nchunks;
	uint32_t chunk_size; /* bytes per chunk body, a multiple of the slot size */
	uint64_t pad[2];
};

struct cuprof_thread_slot {
	uint32_t tid;
	uint32_t py_drops; /* Python frames this thread could not record (owner-written) */
	uint64_t drops;  /* events this thread could not record (owner-written) */
	char name[16];   /* comm of the thread when it got its slot */
};

struct cuprof_chunk_hdr {
	uint32_t state;  /* CUPROF_CHUNK_* */
	uint32_t gen;    /* bumped each time the chunk is claimed */
	uint32_t tid;    /* owner thread */
	uint32_t count;  /* records committed (release-stored by the owner) */
	uint32_t slot;   /* owner's thread serial: the order in which it took a
			  * thread slot (from 0), its slot's index when below
			  * max_threads; with the tid, what tells threads apart
			  * when the kernel reuses a tid */
	/* How far the recorder has read this chunk into its spill file (written
	 * by it only, after the spill): read slots of generation read_gen. A
	 * recorder killed mid-run leaves them for `cuprof recover`, which reads
	 * what was committed after them. */
	uint32_t read_gen;
	uint64_t read;
};

/*
 * One event: a head slot, followed by its argument slot and its detail slot
 * when head.ext says so (CUPROF_EXT_*); the chunk bodies are arrays of
 * 32-byte slots, a chunk's count is in slots, and a record never spans two
 * chunks. A call whose API records no stream, aux, size or flags (the
 * table's zero columns) and that succeeded, with no device and a duration
 * that fits 32 bits, is one slot (cuCtxGetCurrent, cuCtxSetCurrent);
 * an API that records any of them always has the argument slot (two slots). Absent slots mean zero stream, aux, size and flags,
 * result 0, device -1, name 0, object 0.
 *
 * For calls: start and dur on the ring clock (dur holds the duration's low
 * 32 bits; a record with a detail slot takes its end from there, and one
 * whose duration does not fit 32 bits has one), api, result and the
 * handle/stream/aux/size/flags/
 * device the API table says to record, caller the return address in the
 * program. For NVTX and spans: name and domain are string ids (domain in
 * aux), handle holds the start/end range id or, for KIND_NAME, the named
 * object's handle with its trace.Object in `object`.
 * For frames (CUPROF_REC_FRAME): one slot when the duration fits dur (ext
 * 0: caller holds the code's string id in its low 32 bits and the flags
 * CUPROF_FRAME_* above them), else all three (start, dur and the detail's
 * end; the args' flags; the detail's name the code's string id); handle 0
 * or, for a frame written at exit on behalf of another thread (still open
 * there), that thread's tid.
 */
#define CUPROF_EXT_ARGS 1   /* a struct cuprof_rec_args follows */
#define CUPROF_EXT_DETAIL 2 /* a struct cuprof_rec_detail follows (after the args) */
#define CUPROF_SLOT_BYTES 32

struct cuprof_rec {
	uint64_t start;
	uint64_t handle;
	uint64_t caller;
	uint32_t dur;    /* end - start, low 32 bits */
	uint16_t api;
	uint8_t kind;
	uint8_t ext;     /* CUPROF_EXT_* */
};

struct cuprof_rec_args {
	uint64_t stream;
	uint64_t aux;
	uint64_t size;
	uint64_t flags;
};

struct cuprof_rec_detail {
	uint64_t end;
	int32_t result;
	int32_t device;
	uint32_t name;
	uint8_t object;
	uint8_t pad[3];
	uint64_t pad2;
};

#define CUPROF_RING_LAYOUT(X)                                    \
	X(cuprof_ring_hdr, magic) X(cuprof_ring_hdr, version)        \
	X(cuprof_ring_hdr, hdr_size) X(cuprof_ring_hdr, rec_size)    \
	X(cuprof_ring_hdr, chunk_size) X(cuprof_ring_hdr, nchunks)   \
	X(cuprof_ring_hdr, max_threads) X(cuprof_ring_hdr, clock)    \
	X(cuprof_ring_hdr, pid) X(cuprof_ring_hdr, ppid)             \
	X(cuprof_ring_hdr, nthreads) X(cuprof_ring_hdr, threads_off) \
	X(cuprof_ring_hdr, chunks_off) X(cuprof_ring_hdr, strings_off) \
	X(cuprof_ring_hdr, strings_size) X(cuprof_ring_hdr, data_off) \
	X(cuprof_ring_hdr, file_size) X(cuprof_ring_hdr, tsc0)       \
	X(cuprof_ring_hdr, mono0) X(cuprof_ring_hdr, wall0)          \
	X(cuprof_ring_hdr, strings_used) X(cuprof_ring_hdr, released) \
	X(cuprof_ring_hdr, overflow_drops) X(cuprof_ring_hdr, string_drops) \
	X(cuprof_ring_hdr, exited) X(cuprof_ring_hdr, cmdline_len)   \
	X(cuprof_ring_hdr, when_full) X(cuprof_ring_hdr, polls)      \
	X(cuprof_ring_hdr, waiters) X(cuprof_ring_hdr, waits)        \
	X(cuprof_ring_hdr, wait_ns) X(cuprof_ring_hdr, string_cuts)  \
	X(cuprof_ring_hdr, exe) X(cuprof_ring_hdr, cmdline)          \
	X(cuprof_ring_hdr, env) X(cuprof_ring_hdr, py_event_milliticks) \
	X(cuprof_ring_hdr, py_code_drops) X(cuprof_ring_hdr, py_status) \
	X(cuprof_ring_hdr, ext_off) X(cuprof_ring_hdr, grow_drops)   \
	X(cuprof_ring_hdr, stall_drops) X(cuprof_ring_hdr, nested_drops) \
	X(cuprof_ring_hdr, inplace_cold_ticks) X(cuprof_ring_hdr, inplace_warm_ticks) \
	X(cuprof_ring_hdr, inplace_counts) X(cuprof_ring_hdr, pass_calls) \
	X(cuprof_ring_hdr, lost_children) X(cuprof_ring_hdr, lost_child_events) \
	X(cuprof_ring_hdr, py_c_event_milliticks) \
	X(cuprof_ring_hdr, py_inside_milliticks) X(cuprof_ring_hdr, py_c_inside_milliticks) \
	X(cuprof_ring_hdr, py_hidden_milliticks) X(cuprof_ring_hdr, py_c_hidden_milliticks) \
	X(cuprof_ring_hdr, py_lone_milliticks) \
	X(cuprof_ring_seg, magic) X(cuprof_ring_seg, next_off)       \
	X(cuprof_ring_seg, chunks_off) X(cuprof_ring_seg, data_off)  \
	X(cuprof_ring_seg, size) X(cuprof_ring_seg, nchunks)         \
	X(cuprof_ring_seg, chunk_size)                               \
	X(cuprof_thread_slot, tid) X(cuprof_thread_slot, py_drops)   \
	X(cuprof_thread_slot, drops)                                 \
	X(cuprof_thread_slot, name)                                  \
	X(cuprof_chunk_hdr, state) X(cuprof_chunk_hdr, gen)          \
	X(cuprof_chunk_hdr, tid) X(cuprof_chunk_hdr, count)          \
	X(cuprof_chunk_hdr, slot) X(cuprof_chunk_hdr, read_gen)      \
	X(cuprof_chunk_hdr, read)                                    \
	X(cuprof_rec, start) X(cuprof_rec, handle) X(cuprof_rec, caller) \
	X(cuprof_rec, dur) X(cuprof_rec, api) X(cuprof_rec, kind)    \
	X(cuprof_rec, ext)                                           \
	X(cuprof_rec_args, stream) X(cuprof_rec_args, aux)           \
	X(cuprof_rec_args, size) X(cuprof_rec_args, flags)           \
	X(cuprof_rec_detail, end) X(cuprof_rec_detail, result)       \
	X(cuprof_rec_detail, device) X(cuprof_rec_detail, name)      \
	X(cuprof_rec_detail, object)

#endif /* CUPROF_RING_H */
