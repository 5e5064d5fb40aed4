/*
 * What the translation units of the Python frame recorder share (python.c:
 * the C ABI the bootstrap calls, start and stop; py_stack.c: the per-thread
 * shadow stacks and the state of code objects and C callables;
 * py_monitoring.c: the sys.monitoring callbacks of 3.12+; py_evalframe.c: the
 * frame evaluation hook of 3.10 and 3.11). The shadow stack's common path is
 * inline here, so that both kinds of callbacks compile it into themselves.
 * See python.c for how frames are recorded.
 */
#ifndef CUPROF_PYTHON_INTERNAL_H
#define CUPROF_PYTHON_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "cuprof.h"
#include "shim_internal.h"

/* ---- the slice of the C API used, declared by hand ---- */

typedef intptr_t Py_ssize_t;
typedef struct py_object {
	Py_ssize_t ob_refcnt;
	struct py_object *ob_type;
} PyObject;
typedef PyObject *(*py_fastcall)(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
typedef int (*py_tracefunc)(PyObject *obj, PyObject *frame, int what, PyObject *arg);
typedef struct {
	const char *ml_name;
	void *ml_meth;
	int ml_flags;
	const char *ml_doc;
} PyMethodDef;
#define METH_FASTCALL 0x80
#define Py_TPFLAGS_TYPE_SUBCLASS (1UL << 31)
/* Offsets of the few fields read (stable from 3.10 to 3.13, GIL builds). */
#define OFF_TYPE_NAME 24    /* PyTypeObject.tp_name */
#define OFF_CFUNC_ML 16     /* PyCFunctionObject.m_ml (Cython's cyfunction starts the same) */
#define OFF_METHOD_FUNC 16  /* PyMethodObject.im_func */
#define OFF_DESCR_METHOD 40 /* PyMethodDescrObject.d_method */
#define OFF_WRAPPER_DESCR 16 /* method-wrapper's descr */
#define OFF_CDATA_PTR 16    /* ctypes CDataObject.b_ptr (a CFuncPtr's holds the function) */
/* PyTrace_* of the profile function */
#define PYTRACE_CALL 0
#define PYTRACE_RETURN 3
#define PYTRACE_C_CALL 4
#define PYTRACE_C_EXCEPTION 5
#define PYTRACE_C_RETURN 6
/* A frame's code, where the hooks of 3.10 and 3.11 read it: 3.10's
 * PyFrameObject.f_code; 3.11's _PyInterpreterFrame.f_code (the frame
 * evaluation hook's frame; the profile function's PyFrameObject has it at
 * f_frame). Checked first (a code object; PyFrame_GetCode's). */
#define OFF_FRAME_CODE_310 32
#define OFF_FRAME_IFRAME_311 24
#define OFF_IFRAME_CODE_311 32

#define TYPE(o) ((o)->ob_type)

/* The C API, resolved with dlsym at start (python.c). */
struct py_api {
	int (*IsInitialized)(void);
	const char *(*GetVersion)(void);
	PyObject *(*ImportModule)(const char *);
	PyObject *(*GetAttrString)(PyObject *, const char *);
	PyObject *(*CallMethod)(PyObject *, const char *, const char *, ...);
	PyObject *(*CallFunction)(PyObject *, const char *, ...);
	PyObject *(*CFunctionNew)(PyMethodDef *, PyObject *, PyObject *);
	void (*IncRef)(PyObject *);
	void (*DecRef)(PyObject *);
	const char *(*AsUTF8)(PyObject *, Py_ssize_t *);
	long (*AsLong)(PyObject *);
	void (*Fetch)(PyObject **, PyObject **, PyObject **);
	void (*Restore)(PyObject *, PyObject *, PyObject *);
	void (*Clear)(void);
	PyObject *(*GetGlobals)(void);
	PyObject *(*DictGetItemString)(PyObject *, const char *);
	PyObject *(*ImportGetModuleDict)(void);
	unsigned long (*TypeGetFlags)(PyObject *);
	int (*IsSubtype)(PyObject *, PyObject *);
	int (*GetExtra)(PyObject *, Py_ssize_t, void **);
	int (*SetExtra)(PyObject *, Py_ssize_t, void *);
	Py_ssize_t (*RequestExtraIndex)(void (*)(void *));
	void *(*InterpGet)(void);
	void *(*InterpMain)(void);
	PyObject *(*FrameGetCode)(PyObject *);
	void *(*ThreadHead)(void *);
	void *(*ThreadNext)(void *);
	int (*SetProfileTS)(void *, py_tracefunc, PyObject *);
	void (*SetProfile)(py_tracefunc, PyObject *);
	void *(*GetEvalFrame)(void *);
	void (*SetEvalFrame)(void *, void *);
	PyObject *None;
	PyObject *CodeType;
	PyObject *FunctionType, *MethodType, *CFunctionType, *CMethodType, *MethodDescrType, *ClassMethodDescrType,
		*WrapperDescrType, *MethodWrapperType, *UnicodeType;
};
extern struct py_api pyapi CUPROF_HIDDEN;

/* ---- state ---- */

/* What frames of one piece of code (a code object, or a C callable's
 * identity) have done: shared head of py_code and py_native. */
struct py_ident {
	uint32_t id;      /* ring string id of its code entry, 0 until a frame is written */
	uint32_t calls;   /* activations that had nothing recorded inside */
	uint32_t active;  /* activations on shadow stacks */
	uint16_t dist;    /* fewest frames from it down to a driver call seen (DIST_NONE: none) */
	uint8_t emitted;  /* some frame of it was written (as a helper only: until judged cheap) */
	uint8_t disabled; /* scope cuda turned it off */
	uint8_t native;
	uint8_t through; /* a class call: its callees count as its caller's */
	uint8_t dead;    /* its code object is gone (kept while frames hold it) */
	uint8_t judged;  /* its cost as a helper was judged (py_judge_helper) */
	uint8_t cheap;   /* a helper too cheap to be worth its frame: no longer written as one */
	uint32_t hcalls; /* activations written only as a helper, until judged */
	uint32_t hfast;  /* of them, those shorter than the cheap limit */
};

struct py_code {
	struct py_ident h;
	PyObject *co;     /* its code object (no reference: the state dies with it) */
	PyObject *module; /* the module's __name__ (a reference), or NULL */
	uint16_t *sites;  /* per CALL site (offset/2): C calls with nothing written */
	uint32_t nsites;
};

#define SITE_OFF 0xffff

/* C callables by identity: PyMethodDef, descriptor, type, function address. */
struct py_native {
	struct py_ident h;
	uint64_t key;
	PyObject *held; /* a reference that keeps the key's object alive, or NULL */
};

struct py_frame {
	struct py_ident *s;
	PyObject *obj;   /* the code object or the callable (alive while running) */
	uint64_t start;
	uint32_t claims; /* the thread's chunk count when it started */
	uint32_t count;
	uint32_t site;   /* CALL site of a C callable (offset/2), or UINT32_MAX */
	uint32_t forced; /* written whatever happens (inherited over fork) */
	uint64_t last_end; /* the thread's last driver call's end when it started */
	uint32_t cdist;    /* fewest frames from it to a driver call under its callees */
	/* What the hooks did in its self time and left no frame of (so that
	 * analysis takes their calibrated cost out of it): activations pushed
	 * and not written, of Python code (hpy) and of C-level callables (hc),
	 * and hook calls that pushed nothing (hl: code turned off, a call the
	 * callback passed over). A frame not written adds its own and its
	 * counts to its caller's. */
	uint32_t hpy, hc, hl;
};

#define DIST_NONE 0xffff

struct py_thread {
	struct py_frame *stack;
	uint32_t depth, cap, skipped;
	uint32_t tid;
	struct cuprof_tls *tls;
	struct py_thread *next, *prev;
};

extern __thread struct py_thread *py_tls __attribute__((tls_model("initial-exec"))) CUPROF_HIDDEN;

/* What every event reads, in one cache line. Scattered over .data, .bss
 * and the resolved API's struct they were five lines, each a miss once a
 * library's own work between two events has evicted the first-level cache:
 * in bench/python/cold_cache.py under cachegrind (2026-12-01) a Python frame
 * and a C-level frame missed it 21 times more per call when it was, 4 times
 * fewer with this line (bench/python/results/2026-12-01l-cpu-cold-cache). */
struct py_hot {
	int stopped;       /* stopped at exit: every callback returns at once */
	int stacks_only;   /* --python=stacks: no CALL / C_RETURN, no helpers */
	int scope_all;
	int calibrating;   /* CALIB_*: at start only */
	int immortal;      /* see ret_none */
	uint32_t threshold;
	uint64_t cheap_ticks; /* see cheap_limit */
	PyObject *none;    /* pyapi.None, .FunctionType, .MethodType, copied at start */
	PyObject *disable; /* sys.monitoring.DISABLE */
	PyObject *function_type;
	PyObject *method_type;
} __attribute__((aligned(64)));
extern struct py_hot py_hot CUPROF_HIDDEN;

/* py_hot.calibrating: how the calibration's frames go (python.c). */
#define CALIB_WRITTEN 1 /* every frame written, to a scratch record */
#define CALIB_HIDDEN 2  /* every frame pushed and not written */
#define CALIB_LONE 3    /* no frame pushed: every code turned off */

/* The calibration's figures (struct cuprof_py_costs, shim_internal.h). */
extern struct cuprof_py_costs py_calib CUPROF_HIDDEN;

extern int py_final CUPROF_HIDDEN;          /* past the stop: the C API is not called again */
extern Py_ssize_t py_extra CUPROF_HIDDEN;   /* the code extra index of a code object's state */
/* The calibrating loop's callee frames' ticks, [0] Python and [1]
 * C-level (py_stack.c). */
extern uint64_t py_calib_inside_ticks[2] CUPROF_HIDDEN;
/* The memory the calibration writes its frames to (py_stack.c). */
extern struct cuprof_rec *py_calib_area CUPROF_HIDDEN;
extern size_t py_calib_slots CUPROF_HIDDEN, py_calib_next CUPROF_HIDDEN;
extern uint32_t py_helper_ns CUPROF_HIDDEN; /* see py_judge_helper (py_stack.c) */
extern int py_minor CUPROF_HIDDEN;          /* the interpreter's minor version (3.x) */
extern PyObject *py_mon CUPROF_HIDDEN;      /* sys.monitoring */
extern int py_tool CUPROF_HIDDEN;           /* its tool id, -1 until taken */

/* ---- helpers ---- */

/* py_hot.immortal: None and sys.monitoring.DISABLE are immortal (3.12+: the
 * low 32 bits of their count are negative), so handing them out needs no
 * reference: the interpreter's Py_DECREF of an immortal object does
 * nothing. Set at start; otherwise Py_IncRef, a call into libpython. */
static inline int is_immortal(PyObject *o)
{
	return (int32_t)(uint32_t)o->ob_refcnt < 0;
}

static inline PyObject *ret_none(void)
{
	if (!py_hot.immortal)
		pyapi.IncRef(py_hot.none);
	return py_hot.none;
}

static inline PyObject *ret_disable(void)
{
	if (!py_hot.immortal)
		pyapi.IncRef(py_hot.disable);
	return py_hot.disable;
}

/* call_method calls o.name(fmt...) and drops the result; it returns 0 or -1. */
#define CALL_METHOD(o, name, ...)                                                                        \
	({                                                                                                   \
		PyObject *r_ = pyapi.CallMethod((o), (name), __VA_ARGS__);                                       \
		if (r_)                                                                                          \
			pyapi.DecRef(r_);                                                                            \
		r_ ? 0 : -1;                                                                                     \
	})

static inline PyObject *new_func(PyMethodDef *d)
{
	return pyapi.CFunctionNew(d, NULL, NULL);
}

/* py_thread_new makes the calling thread's shadow stack on its first event;
 * py_thread_exit, the destructor of py_key, lets it go. */
CUPROF_HIDDEN struct py_thread *py_thread_new(void);
CUPROF_HIDDEN void py_thread_exit(void *arg);
extern pthread_key_t py_key CUPROF_HIDDEN;
extern int py_key_ok CUPROF_HIDDEN;

static inline struct py_thread *thread_state(void)
{
	struct py_thread *th = py_tls;
	if (__builtin_expect(th != NULL, 1))
		return th;
	return py_thread_new();
}

/* The state of recently seen code objects by address, in front of the code
 * extra (an indirect call into libpython per event otherwise). An entry is
 * cleared when its code object dies (py_free_code), before the address can be
 * reused; every callback holds the GIL. */
#define CODE_CACHE_BITS 10
struct py_code_slot {
	PyObject *co;
	struct py_code *c;
};
extern struct py_code_slot code_cache[1u << CODE_CACHE_BITS] CUPROF_HIDDEN;

static inline uint32_t code_slot(PyObject *co)
{
	return (uint32_t)((uint64_t)(uintptr_t)co * 0x9E3779B97F4A7C15ull >> (64 - CODE_CACHE_BITS));
}

CUPROF_HIDDEN void py_free_code(void *p);
CUPROF_HIDDEN struct py_code *py_code_state_slow(PyObject *co, PyObject *globals);
CUPROF_HIDDEN struct py_code *py_code_lookup(PyObject *co);

/* code_state returns the state of code object co, made on first sight
 * (its module named from globals, NULL: the running frame's). */
static inline struct py_code *code_state_in(PyObject *co, PyObject *globals)
{
	uint32_t i = code_slot(co);
	if (__builtin_expect(code_cache[i].co == co, 1))
		return code_cache[i].c;
	return py_code_state_slow(co, globals);
}

static inline struct py_code *code_state(PyObject *co)
{
	return code_state_in(co, NULL);
}

/* C callables: their class (what identifies one) and state (py_stack.c). */
enum { NAT_CFUNC = 1, NAT_DESCR, NAT_WRAPPER, NAT_METHWRAPPER, NAT_TYPE, NAT_CFUNCPTR, NAT_OTHER, NAT_PYFUNC };
CUPROF_HIDDEN int py_type_class(PyObject *tp);
CUPROF_HIDDEN struct py_native *py_native_state(PyObject *c, int cls);
/* py_release_held lets go of the types and callables held for identity. */
CUPROF_HIDDEN void py_release_held(void);

/* ---- the shadow stack's common path ---- */

/* need_slots is the length of a frame's record: one slot (the code's
 * string id in the low 32 bits of caller, the flags above them) when its
 * duration fits the head's 32 bits, else three (the flags in the args, the
 * end and the code in the detail). */
static inline unsigned need_slots(struct py_frame *f, uint64_t end)
{
	return end - f->start <= UINT32_MAX && (f->hpy | f->hc | f->hl) <= 0xff ? 1 : 3;
}

/* fill_frame fills f's record of n slots (need_slots) at r; nothing is
 * committed. The hidden counts (hpy, hc, hl) go in the one slot's caller,
 * a byte each above the flags, or in the three slots' stream, size and
 * caller. */
static inline void fill_frame(struct cuprof_rec *r, unsigned n, struct py_frame *f, uint64_t end, uint64_t flags,
			      uint32_t tid, uint32_t id)
{
	if (__builtin_expect(n == 1, 1)) {
		r->start = f->start;
		r->handle = tid;
		r->caller = (uint64_t)id | (flags & 0xff) << 32 | (uint64_t)f->hpy << 40 | (uint64_t)f->hc << 48 |
			    (uint64_t)f->hl << 56;
		r->dur = (uint32_t)(end - f->start);
		cuprof_rec_tag(r, 0, CUPROF_REC_FRAME, 0);
		return;
	}
	cuprof_rec_fill3(r, CUPROF_REC_FRAME, f->start, end, tid, 0, flags, f->hl, id, 0);
	struct cuprof_rec_args *a = (struct cuprof_rec_args *)(r + 1);
	a->stream = f->hpy;
	a->size = f->hc;
}

/* put_frame writes f's record of n slots (need_slots) with code id. depth
 * is set before the slot is read and cleared after the commit: a signal
 * handler's record in between passes through (counted as a drop) instead
 * of being written where this one then goes. */
static inline __attribute__((always_inline)) void put_frame(struct cuprof_tls *t, struct py_frame *f, unsigned n,
							    uint64_t end, uint64_t flags, uint32_t tid, uint32_t id)
{
	/* Outside a capture range, and for frames that began before it
	 * opened, nothing is written. */
	if (CUPROF_UNLIKELY(!cuprof_gate_open() || f->start < cuprof_gate_since))
		return;
	cuprof_guard_enter(t);
	struct cuprof_rec *r = t->cur;
	if (__builtin_expect(cuprof_rec_room(t, n), 1)) {
		/* The chunk's lines further on, for writing: a thread cycles
		 * through more than its L2 between two drains (drain.go), so a
		 * new line is a miss every second frame; never past the chunk
		 * (another thread's). */
		if ((uintptr_t)t->lim - (uintptr_t)r > 256)
			__builtin_prefetch((char *)r + 256, 1, 3);
	} else {
		r = cuprof_rec_slow_frame(t);
	}
	if (r) {
		fill_frame(r, n, f, end, flags, tid, id);
		cuprof_rec_commit(t, r, n);
	}
	cuprof_guard_exit(t);
}

/* py_write_frame_slow is write_frame for every case (py_stack.c). */
CUPROF_HIDDEN void py_write_frame_slow(struct py_frame *f, uint64_t end, uint64_t flags, uint32_t tid);

/* write_frame writes f's record, on behalf of thread tid when not 0. The
 * common case (a named code, one slot, outside any wrapper, not
 * calibrating) is inline in the callbacks; py_write_frame_slow does the rest. */
static inline __attribute__((always_inline)) void write_frame(struct py_frame *f, uint64_t end, uint64_t flags,
							      uint32_t tid)
{
	struct cuprof_tls *t = &cuprof_tls;
	uint32_t id = f->s->id;
	if (__builtin_expect((py_hot.calibrating | t->depth) != 0 || !id || end - f->start > UINT32_MAX ||
				     (f->hpy | f->hc | f->hl) > 0xff,
			     0)) {
		py_write_frame_slow(f, end, flags, tid);
		return;
	}
	put_frame(t, f, 1, end, flags, tid, id);
}

/* py_grow doubles th's stack; it returns 0 when it cannot. */
CUPROF_HIDDEN int py_grow(struct py_thread *th);

static inline void push(struct py_thread *th, struct py_ident *s, PyObject *obj, uint32_t site)
{
	if (__builtin_expect(th->depth == th->cap, 0) && !py_grow(th)) {
		th->skipped++;
		return;
	}
	struct py_frame *f = &th->stack[th->depth++];
	struct cuprof_tls *t = &cuprof_tls;
	f->s = s;
	f->obj = obj;
	f->site = site;
	f->forced = 0;
	f->claims = t->claims;
	f->count = t->count;
	f->last_end = t->last_end;
	f->cdist = DIST_NONE;
	f->hpy = f->hc = f->hl = 0;
	s->active++;
	f->start = cuprof_clock();
}

/* HELPER_REACH bounds which callees of code leading to CUDA get frames of
 * their own (a wrapper's helpers): a frame is written when a caller A of it,
 * a levels up, is dist(A) Python frames above a driver call with dist(A) +
 * a <= HELPER_REACH (C-level frames do not count in dist, so --python=stacks
 * and full agree). So weakref.finalize.__init__, called by the __init__ of a
 * members object Stream._init makes (a = 2), is written when Stream._init
 * calls a C-level binding (a Cython function: dist 0), and not when it calls
 * a Python binding that calls ctypes (dist 1: the members __init__ is its
 * last helper); a function main calls fifty frames above the driver is not,
 * nor one that a function main calls calls, main having called an init
 * function that calls the driver (dist 1, a = 2). Class calls do not count
 * as a level. */
#define HELPER_REACH 2

/* parent_leads reports whether a caller of the frame above depth makes it
 * a wrapper's helper. */
static inline int parent_leads(struct py_frame *stack, uint32_t depth)
{
	int levels = 1;
	while (depth > 0 && levels <= HELPER_REACH) {
		struct py_ident *p = stack[--depth].s;
		if (p->dist + levels <= HELPER_REACH)
			return 1;
		if (!p->through)
			levels++;
	}
	return 0;
}

/* py_judge_helper counts one activation of helper s that lasted ticks and
 * decides, after enough of them, whether it is too cheap to be written. */
CUPROF_HIDDEN void py_judge_helper(struct py_ident *s, uint64_t ticks);

/* hide adds frame f, not written, and what was hidden in it to its
 * caller's hidden counts. */
static inline void hide(struct py_thread *th, struct py_frame *f)
{
	if (th->depth == 0)
		return;
	struct py_frame *p = &th->stack[th->depth - 1];
	p->hpy += f->hpy + !f->s->native;
	p->hc += f->hc + f->s->native;
	p->hl += f->hl;
}

/* count_lone counts a hook call that pushed nothing in the self time of
 * the thread's top frame. */
static inline void count_lone(void)
{
	struct py_thread *th = py_tls;
	if (th && th->depth > 0)
		th->stack[th->depth - 1].hl++;
}

/* pop ends the top frame now: the clock is read only for a frame that is
 * written (most frames of code that does not lead to CUDA are not: their
 * end costs no clock read). */
static inline __attribute__((always_inline)) void pop(struct py_thread *th, uint64_t flags)
{
	struct py_frame *f = &th->stack[--th->depth];
	struct cuprof_tls *t = &cuprof_tls;
	struct py_ident *s = f->s;
	int inside = f->claims != t->claims || f->count != t->count;
	s->active--;
	if (t->last_end != f->last_end) {
		/* A driver call ended inside: directly when no callee had one
		 * (dist 0), else one above the nearest. Known at once for the
		 * caller, still running: its next callees are written as its
		 * helpers. */
		uint32_t d = f->cdist == DIST_NONE ? 0 : f->cdist;
		if (d < s->dist)
			s->dist = (uint16_t)d;
		if (th->depth > 0) {
			struct py_frame *p = &th->stack[th->depth - 1];
			uint32_t up = s->native ? d : d + 1;
			if (up < p->cdist)
				p->cdist = up;
			if (up < p->s->dist)
				p->s->dist = (uint16_t)up;
		}
	}
	/* --python=stacks writes only what a driver call's stack needs: the
	 * frames with something recorded inside, no helpers (so helpers are
	 * turned off after the threshold like code that does not lead to
	 * CUDA: their events stop). */
	int emit = inside || f->forced || py_hot.scope_all || py_hot.calibrating == CALIB_WRITTEN;
	int helper = !emit && !py_hot.stacks_only && !s->cheap && !py_hot.calibrating &&
		     parent_leads(th->stack, th->depth);
	if (!emit && !helper) {
		if (s->calls != UINT32_MAX)
			s->calls++;
		hide(th, f);
		return;
	}
	uint64_t end = cuprof_clock();
	/* Judged: a helper no driver call ever ended under. Frames written
	 * under it (its own helpers) do not spare it: once they are judged
	 * cheap and gone, so may it be. */
	if (helper && s->dist == DIST_NONE && !s->judged) {
		py_judge_helper(s, end - f->start);
		if (s->cheap) {
			hide(th, f); /* judged just now: this one is not written either */
			return;
		}
	}
	s->emitted = 1;
	write_frame(f, end, flags, 0);
}

/* find returns the depth of the frame of obj on top of th's stack, at most a
 * few entries down (frames above it lost their end event), or -1. */
static inline int find(struct py_thread *th, PyObject *obj)
{
	uint32_t d = th->depth;
	for (uint32_t k = 0; k < 4 && k < d; k++)
		if (th->stack[d - 1 - k].obj == obj)
			return (int)(d - 1 - k);
	return -1;
}

/* py_end_below is end_frame when obj's frame is not on top (py_stack.c). */
CUPROF_HIDDEN int py_end_below(struct py_thread *th, PyObject *obj, uint64_t flags);

/* end_frame ends the activation of obj on this thread; it reports whether
 * one was on the stack. The frame on top is the common case, inline. */
static inline __attribute__((always_inline)) int end_frame(PyObject *obj, uint64_t flags)
{
	struct py_thread *th = py_tls;
	if (!th)
		return 0;
	if (__builtin_expect(th->skipped != 0, 0)) {
		th->skipped--;
		return 1;
	}
	uint32_t top = th->depth;
	if (__builtin_expect(top > 0 && th->stack[top - 1].obj == obj, 1)) {
		pop(th, flags);
		return 1;
	}
	return py_end_below(th, obj, flags);
}

/* may_start reports whether an activation of s may be pushed, turning s off
 * when scope cuda says so. */
static inline int may_start(struct py_ident *s)
{
	if (s->disabled)
		return 0;
	if (__builtin_expect(py_hot.calibrating == CALIB_LONE, 0))
		return 0;
	if (!py_hot.scope_all && !py_hot.calibrating && !s->emitted && s->calls >= py_hot.threshold && s->active == 0) {
		s->disabled = 1;
		return 0;
	}
	return 1;
}

/* start_frame pushes an activation of s (obj's) on this thread's stack
 * unless may_start says no, which it reports (the hook call counted as
 * one that pushed nothing). */
static inline int start_frame(struct py_ident *s, PyObject *obj)
{
	if (!may_start(s)) {
		count_lone();
		return 0;
	}
	struct py_thread *th = thread_state();
	if (th)
		push(th, s, obj, UINT32_MAX);
	return 1;
}

/* Ending: py_flush_open writes every thread's open frames (py_stack.c). */
CUPROF_HIDDEN void py_flush_open(void);

/* Fork: the shadow stacks' part (py_stack.c), run by the ring's fork hooks. */
CUPROF_HIDDEN void py_fork_prepare(void);
CUPROF_HIDDEN void py_fork_parent(void);
CUPROF_HIDDEN void py_fork_child(void);

/* The two ways of being called by the interpreter: each returns 0, or -1
 * with the reason in why. */
CUPROF_HIDDEN int py_install_monitoring(const char **why);
CUPROF_HIDDEN int py_install_eval(const char **why);
CUPROF_HIDDEN int py_install_profile(const char **why);
CUPROF_HIDDEN int py_prof_func(PyObject *obj, PyObject *frame, int what, PyObject *arg);

#endif /* CUPROF_PYTHON_INTERNAL_H */
