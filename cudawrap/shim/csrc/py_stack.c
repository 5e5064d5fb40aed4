/*
 * The shadow stacks of the Python frame recorder: one per thread, kept in a
 * registry (locked for thread exit and fork); the state of code objects
 * (a code extra, with a cache by address in front) and of C callables (by
 * identity); the code entry a frame is named by; the out-of-line parts of
 * writing and ending a frame; the frames still open at the stop; fork.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "python_internal.h"

__thread struct py_thread *py_tls __attribute__((tls_model("initial-exec")));

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct py_thread *reg_head;
pthread_key_t py_key;
int py_key_ok;

struct py_hot py_hot = {.threshold = 1000};
uint64_t py_calib_inside_ticks[2];

void py_thread_exit(void *arg)
{
	struct py_thread *th = arg;
	pthread_mutex_lock(&reg_mu);
	if (th->prev)
		th->prev->next = th->next;
	else if (reg_head == th)
		reg_head = th->next;
	if (th->next)
		th->next->prev = th->prev;
	pthread_mutex_unlock(&reg_mu);
	py_tls = NULL;
	free(th->stack);
	free(th);
}

struct py_thread *py_thread_new(void)
{
	struct py_thread *th = calloc(1, sizeof *th);
	if (!th)
		return NULL;
	th->cap = 64;
	th->stack = malloc(th->cap * sizeof *th->stack);
	if (!th->stack) {
		free(th);
		return NULL;
	}
	th->tid = (uint32_t)syscall(SYS_gettid);
	th->tls = &cuprof_tls;
	pthread_mutex_lock(&reg_mu);
	th->next = reg_head;
	if (reg_head)
		reg_head->prev = th;
	reg_head = th;
	pthread_mutex_unlock(&reg_mu);
	if (py_key_ok)
		pthread_setspecific(py_key, th);
	py_tls = th;
	return th;
}

struct py_code_slot code_cache[1u << CODE_CACHE_BITS];

/* py_free_code is called when a code object dies. Frames still on a shadow
 * stack (stale: their end event never came, as when another profile
 * function took the thread over) keep its state, marked dead. */
void py_free_code(void *p)
{
	struct py_code *c = p;
	if (!c)
		return;
	uint32_t i = code_slot(c->co);
	if (code_cache[i].c == c) {
		code_cache[i].co = NULL;
		code_cache[i].c = NULL;
	}
	if (c->module && !py_final)
		pyapi.DecRef(c->module);
	c->module = NULL;
	if (c->h.active > 0) {
		c->h.dead = 1;
		return;
	}
	free(c->sites);
	free(c);
}

static inline void code_cache_put(PyObject *co, struct py_code *c)
{
	uint32_t i = code_slot(co);
	code_cache[i].co = co;
	code_cache[i].c = c;
}

/* py_code_state_slow is code_state past the cache: the code extra, or a new
 * state on first sight. */
struct py_code *py_code_state_slow(PyObject *co, PyObject *globals)
{
	void *p = NULL;
	if (__builtin_expect(pyapi.GetExtra(co, py_extra, &p) == 0 && p != NULL, 1)) {
		code_cache_put(co, p);
		return p;
	}
	if (p == NULL) {
		PyObject *et, *ev, *tb;
		pyapi.Fetch(&et, &ev, &tb);
		struct py_code *c = calloc(1, sizeof *c);
		if (c) {
			c->h.dist = DIST_NONE;
			c->co = co;
			PyObject *g = globals ? globals : pyapi.GetGlobals();
			PyObject *m = g ? pyapi.DictGetItemString(g, "__name__") : NULL; /* borrowed */
			if (m && TYPE(m) == pyapi.UnicodeType) {
				pyapi.IncRef(m);
				c->module = m;
			}
			if (pyapi.SetExtra(co, py_extra, c) != 0) {
				pyapi.Clear();
				py_free_code(c);
				c = NULL;
			}
		}
		if (c)
			code_cache_put(co, c);
		pyapi.Clear();
		pyapi.Restore(et, ev, tb);
		return c;
	}
	pyapi.Clear();
	return NULL;
}

/* py_code_lookup returns the state of code object co, NULL when it has none. */
struct py_code *py_code_lookup(PyObject *co)
{
	uint32_t i = code_slot(co);
	if (code_cache[i].co == co)
		return code_cache[i].c;
	void *p = NULL;
	if (pyapi.GetExtra(co, py_extra, &p) != 0) {
		pyapi.Clear();
		return NULL;
	}
	if (p)
		code_cache_put(co, p);
	return p;
}

/* ---- C callables ---- */

static PyObject *py_cfuncptr; /* _ctypes.CFuncPtr once imported */

#define TYPES_CAP 1024
static struct {
	PyObject *type;
	int cls;
} type_cache[TYPES_CAP];

#define NATIVE_CAP (1u << 14)
static struct py_native *natives[NATIVE_CAP];
static uint32_t nnatives;

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int classify_type(PyObject *tp)
{
	if (tp == pyapi.FunctionType)
		return NAT_PYFUNC;
	if (tp == pyapi.CFunctionType || (pyapi.CMethodType && tp == pyapi.CMethodType))
		return NAT_CFUNC;
	if (tp == pyapi.MethodDescrType || tp == pyapi.ClassMethodDescrType)
		return NAT_DESCR;
	if (tp == pyapi.WrapperDescrType)
		return NAT_WRAPPER;
	if (pyapi.MethodWrapperType && tp == pyapi.MethodWrapperType)
		return NAT_METHWRAPPER;
	const char *name = *(const char **)((char *)tp + OFF_TYPE_NAME);
	if (name && (ends_with(name, "cython_function_or_method") || ends_with(name, "fused_cython_function")))
		return NAT_CFUNC;
	if (pyapi.TypeGetFlags(tp) & Py_TPFLAGS_TYPE_SUBCLASS)
		return NAT_TYPE;
	if (!py_cfuncptr) {
		PyObject *mods = pyapi.ImportGetModuleDict();
		PyObject *ct = mods ? pyapi.DictGetItemString(mods, "_ctypes") : NULL;
		if (ct) {
			py_cfuncptr = pyapi.GetAttrString(ct, "CFuncPtr");
			if (!py_cfuncptr)
				pyapi.Clear();
		}
	}
	if (py_cfuncptr && pyapi.IsSubtype(tp, py_cfuncptr))
		return NAT_CFUNCPTR;
	return NAT_OTHER;
}

int py_type_class(PyObject *tp)
{
	uint32_t h = (uint32_t)(((uintptr_t)tp >> 4) * 2654435761u) % TYPES_CAP;
	for (uint32_t k = 0; k < 16; k++) {
		uint32_t i = (h + k) % TYPES_CAP;
		if (type_cache[i].type == tp)
			return type_cache[i].cls;
		if (type_cache[i].type == NULL) {
			int cls = classify_type(tp);
			pyapi.IncRef(tp); /* no other type gets its address while cached */
			type_cache[i].type = tp;
			type_cache[i].cls = cls;
			return cls;
		}
	}
	return classify_type(tp);
}

/* native_key returns the identity of callable c of class cls and the object
 * to hold for it (NULL: the key is static memory). */
static uint64_t native_key(PyObject *c, int cls, PyObject **hold)
{
	*hold = NULL;
	switch (cls) {
	case NAT_CFUNC:
		return (uint64_t)(uintptr_t) * (void **)((char *)c + OFF_CFUNC_ML) | 1ull << 56;
	case NAT_DESCR:
		return (uint64_t)(uintptr_t) * (void **)((char *)c + OFF_DESCR_METHOD) | 1ull << 56;
	case NAT_METHWRAPPER:
		*hold = *(PyObject **)((char *)c + OFF_WRAPPER_DESCR);
		return (uint64_t)(uintptr_t)*hold | 2ull << 56;
	case NAT_WRAPPER:
	case NAT_TYPE:
		*hold = c;
		return (uint64_t)(uintptr_t)c | 2ull << 56;
	case NAT_CFUNCPTR: {
		void **b = *(void ***)((char *)c + OFF_CDATA_PTR);
		return (uint64_t)(uintptr_t)(b ? *b : NULL) | 3ull << 56;
	}
	default:
		*hold = TYPE(c);
		return (uint64_t)(uintptr_t)TYPE(c) | 4ull << 56;
	}
}

struct py_native *py_native_state(PyObject *c, int cls)
{
	PyObject *hold;
	uint64_t key = native_key(c, cls, &hold);
	uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & (NATIVE_CAP - 1);
	for (uint32_t k = 0; k < NATIVE_CAP; k++) {
		uint32_t i = (h + k) & (NATIVE_CAP - 1);
		struct py_native *n = natives[i];
		if (n && n->key == key)
			return n;
		if (!n) {
			if (nnatives >= NATIVE_CAP / 2)
				return NULL;
			n = calloc(1, sizeof *n);
			if (!n)
				return NULL;
			n->h.native = 1;
			n->h.dist = DIST_NONE;
			n->h.through = cls == NAT_TYPE;
			n->key = key;
			if (hold) {
				pyapi.IncRef(hold);
				n->held = hold;
			}
			natives[i] = n;
			nnatives++;
			return n;
		}
	}
	return NULL;
}

/* ---- naming: the code entry of a frame ---- */

/* attr_str copies the str attribute name of o (or of its attribute via) into
 * dst; it returns the length, 0 when absent. */
static size_t attr_str(PyObject *o, const char *name, char *dst, size_t cap)
{
	dst[0] = 0;
	if (!o)
		return 0;
	PyObject *v = pyapi.GetAttrString(o, name);
	if (!v) {
		pyapi.Clear();
		return 0;
	}
	size_t n = 0;
	if (TYPE(v) == pyapi.UnicodeType) {
		Py_ssize_t len;
		const char *s = pyapi.AsUTF8(v, &len);
		if (s) {
			n = (size_t)len < cap - 1 ? (size_t)len : cap - 1;
			memcpy(dst, s, n);
			dst[n] = 0;
		} else {
			pyapi.Clear();
		}
	}
	pyapi.DecRef(v);
	return n;
}

static long attr_long(PyObject *o, const char *name)
{
	PyObject *v = pyapi.GetAttrString(o, name);
	if (!v) {
		pyapi.Clear();
		return 0;
	}
	long n = pyapi.AsLong(v);
	if (n == -1)
		pyapi.Clear();
	pyapi.DecRef(v);
	return n < 0 ? 0 : n;
}

static void str_copy(char *dst, size_t cap, const char *s)
{
	snprintf(dst, cap, "%s", s ? s : "");
}

/* intern_frame interns the code entry of f's code (once) and returns its
 * string id, 0 when the string area is full. */
static uint32_t intern_frame(struct py_frame *f)
{
	struct py_ident *s = f->s;
	if (s->id)
		return s->id;
	if (py_final)
		return 0;
	char qual[512], mod[256], file[1024];
	long line = 0;
	char kind;
	PyObject *et, *ev, *tb;
	pyapi.Fetch(&et, &ev, &tb);
	qual[0] = mod[0] = file[0] = 0;
	if (!s->native) {
		struct py_code *c = (struct py_code *)s;
		kind = CUPROF_CODE_PYTHON;
		if (!attr_str(f->obj, "co_qualname", qual, sizeof qual))
			attr_str(f->obj, "co_name", qual, sizeof qual);
		attr_str(f->obj, "co_filename", file, sizeof file);
		line = attr_long(f->obj, "co_firstlineno");
		if (c->module) {
			Py_ssize_t len;
			const char *m = pyapi.AsUTF8(c->module, &len);
			if (m)
				str_copy(mod, sizeof mod, m);
			else
				pyapi.Clear();
		}
	} else {
		kind = CUPROF_CODE_NATIVE;
		PyObject *o = f->obj;
		int cls = py_type_class(TYPE(o));
		switch (cls) {
		case NAT_CFUNCPTR: {
			char n[480];
			if (!attr_str(o, "__name__", n, sizeof n))
				str_copy(n, sizeof n, "?");
			snprintf(qual, sizeof qual, "CFuncPtr %s", n);
			str_copy(mod, sizeof mod, "ctypes");
			break;
		}
		case NAT_OTHER:
			attr_str((PyObject *)TYPE(o), "__qualname__", qual, sizeof qual);
			attr_str((PyObject *)TYPE(o), "__module__", mod, sizeof mod);
			break;
		case NAT_DESCR: {
			attr_str(o, "__qualname__", qual, sizeof qual);
			PyObject *cls_o = pyapi.GetAttrString(o, "__objclass__");
			if (cls_o) {
				attr_str(cls_o, "__module__", mod, sizeof mod);
				pyapi.DecRef(cls_o);
			} else {
				pyapi.Clear();
			}
			break;
		}
		default:
			attr_str(o, "__qualname__", qual, sizeof qual);
			attr_str(o, "__module__", mod, sizeof mod);
		}
		if (!qual[0]) {
			const char *tn = *(const char **)((char *)TYPE(o) + OFF_TYPE_NAME);
			str_copy(qual, sizeof qual, tn ? tn : "?");
		}
	}
	pyapi.Clear();
	pyapi.Restore(et, ev, tb);
	if (!qual[0])
		str_copy(qual, sizeof qual, "?");
	char buf[2048];
	int n = snprintf(buf, sizeof buf, "%c%c%c%s%c%s%c%s%c%ld", 0, kind, 0, qual, 0, mod, 0, file, 0, line);
	if (n <= 0)
		return 0;
	if ((size_t)n >= sizeof buf)
		n = sizeof buf - 1;
	s->id = cuprof_intern_n(buf, (uint32_t)n);
	return s->id;
}

/* ---- writing and ending frames, out of line ---- */

/* Where calibration writes its frames: the same stores as a real one,
 * into memory that, like a ring, is new to the cache every few frames
 * (py_calib_area, set while calibrating; else one scratch record). */
static struct cuprof_rec calib_rec[3];
struct cuprof_rec *py_calib_area;
size_t py_calib_slots, py_calib_next;

/* py_write_frame_slow is write_frame for every case: calibration, a code not
 * named yet, a thread inside a wrapper, a long frame. */
void py_write_frame_slow(struct py_frame *f, uint64_t end, uint64_t flags, uint32_t tid)
{
	struct cuprof_tls *t = &cuprof_tls;
	unsigned n = need_slots(f, end);
	if (py_hot.calibrating) {
		struct cuprof_rec *r = calib_rec;
		if (py_calib_area) {
			if (py_calib_next + n > py_calib_slots)
				py_calib_next = 0;
			r = py_calib_area + py_calib_next;
			py_calib_next += n;
		}
		cuprof_guard_enter(t);
		fill_frame(r, n, f, end, flags, tid, 1);
		__asm__ __volatile__("" : : "r"(r) : "memory"); /* keep the stores */
		cuprof_guard_exit(t);
		/* the frames of the calibrating loop's callee: how much of two
		 * events lies between a frame's own start and end */
		if (py_tls && f > py_tls->stack) {
			py_calib_inside_ticks[f->s->native] += end - f->start;
		}
		return;
	}
	uint32_t id = f->s->id;
	if (__builtin_expect(!id, 0) && !(id = intern_frame(f))) {
		cuprof_py_count_drop(t, 1);
		return;
	}
	if (t->depth) {
		cuprof_py_count_drop(t, 0);
		return;
	}
	put_frame(t, f, n, end, flags, tid, id);
}

int py_grow(struct py_thread *th)
{
	if (th->cap >= (1u << 20))
		return 0;
	struct py_frame *s = realloc(th->stack, 2 * th->cap * sizeof *s);
	if (!s)
		return 0;
	th->stack = s;
	th->cap *= 2;
	return 1;
}

/* A helper (an activation written only because a caller within
 * HELPER_REACH leads to CUDA, no driver call under it, ever) is written
 * for its first py_hot.threshold such activations; then py_judge_helper compares
 * their median length, less what recording a frame costs (calibrated), with
 * py_helper_ns (--python-helper-min, default HELPER_CHEAP_NS; the median,
 * as one preemption inside a thousand calls would make a mean of any of
 * them dear). A cheaper one is no longer written
 * as a helper: its time is its caller's self time, and its events stop like
 * those of code that does not lead to CUDA (a code object is turned off
 * after py_hot.threshold more calls, a C callable's call sites likewise). So
 * `isinstance`, `len`, `list.append` or a one-line accessor under a torch
 * module's __call__ cost their frames' recording for a thousand calls, not
 * for the whole run, while an options object's __init__ or an error check
 * of half a microsecond keep their frames. */
#define HELPER_CHEAP_NS 300
uint32_t py_helper_ns = HELPER_CHEAP_NS; /* CUPROF_PY_HELPER_NS (--python-helper-min); 0: never cheap */

/* py_hot.cheap_ticks: the clock's ticks per py_helper_ns
 * (cuprof_ticks_for: from the ring's anchor), 0 until known. */

/* cheap_limit returns the clock ticks under which a helper's activation is
 * cheap (py_helper_ns and what recording its frame costs: two events,
 * as calibrated), or 0 while the clock's rate is not known yet (the ring's
 * first millisecond): until then nothing is judged. */
static __attribute__((noinline)) uint64_t cheap_limit_slow(void)
{
	py_hot.cheap_ticks = cuprof_ticks_for(py_helper_ns);
	return py_hot.cheap_ticks ? py_hot.cheap_ticks + 2 * py_calib.event_mt / 1000 : 0;
}

static inline uint64_t cheap_limit(void)
{
	if (__builtin_expect(py_hot.cheap_ticks != 0, 1))
		return py_hot.cheap_ticks + 2 * py_calib.event_mt / 1000;
	return cheap_limit_slow();
}

/* py_judge_helper counts one activation of helper s that lasted ticks and,
 * after py_hot.threshold of them, decides: cheap when at least half were
 * under the limit. */
void py_judge_helper(struct py_ident *s, uint64_t ticks)
{
	if (!py_helper_ns) {
		s->judged = 1; /* every helper written */
		return;
	}
	uint64_t limit = cheap_limit();
	if (!limit)
		return;
	s->hfast += ticks < limit;
	if (++s->hcalls < py_hot.threshold)
		return;
	s->judged = 1;
	if (2 * (uint64_t)s->hfast >= s->hcalls) {
		s->cheap = 1;
		/* (no driver call under it: see pop) Turned off after
		 * py_hot.threshold more activations with nothing written, not at
		 * once for those it had elsewhere while written as a helper. */
		s->emitted = 0;
		s->calls = 0;
	}
}

/* py_end_below is end_frame when obj's frame is not on top: frames above it
 * lost their end event, or it has none on the stack. */
int py_end_below(struct py_thread *th, PyObject *obj, uint64_t flags)
{
	int d = find(th, obj);
	if (d < 0)
		return 0;
	while (th->depth > (uint32_t)d + 1) { /* their end events never came */
		th->depth--;
		th->stack[th->depth].s->active--;
	}
	pop(th, flags);
	return 1;
}

/* ---- the stop, fork ---- */

/* py_flush_open writes the frames still open on every thread as FrameOpen,
 * ending now: those that matter (something recorded inside, the thread in
 * a driver call, or code leading to CUDA under them). */
void py_flush_open(void)
{
	uint64_t now = cuprof_clock();
	uint32_t self = py_tls ? py_tls->tid : 0;
	pthread_mutex_lock(&reg_mu);
	for (struct py_thread *th = reg_head; th; th = th->next) {
		struct cuprof_tls *t = th->tls;
		int in_call = __atomic_load_n(&t->depth, __ATOMIC_RELAXED) != 0;
		uint32_t claims = __atomic_load_n(&t->claims, __ATOMIC_RELAXED);
		uint32_t count = __atomic_load_n(&t->count, __ATOMIC_RELAXED);
		int below = 0; /* a frame above was written */
		while (th->depth > 0) {
			struct py_frame *f = &th->stack[--th->depth];
			f->s->active--;
			/* A frame whose end event never came may name an object
			 * that is gone: only code still alive, or already named,
			 * is written. */
			if (f->s->dead || (f->s->native && !f->s->id))
				continue;
			int leads_under = !py_hot.stacks_only && parent_leads(th->stack, th->depth);
			if (below || in_call || f->forced || py_hot.scope_all || f->claims != claims || f->count != count ||
			    leads_under) {
				write_frame(f, now, CUPROF_FRAME_OPEN, th->tid == self ? 0 : th->tid);
				below = 1;
			}
		}
		th->skipped = 0;
	}
	pthread_mutex_unlock(&reg_mu);
}

/* py_release_held lets go of the types and descriptors held for identity:
 * a class held to the end keeps its module's globals alive past the point
 * where the interpreter tears them down, and its instances' __del__ would
 * run only once nothing can print. */
void py_release_held(void)
{
	for (unsigned i = 0; i < TYPES_CAP; i++) {
		if (type_cache[i].type) {
			pyapi.DecRef(type_cache[i].type);
			type_cache[i].type = NULL;
		}
	}
	for (unsigned i = 0; i < NATIVE_CAP; i++) {
		if (natives[i] && natives[i]->held) {
			pyapi.DecRef(natives[i]->held);
			natives[i]->held = NULL;
		}
	}
}

/* Fork: the registry's lock is held across it, so that the child finds
 * the list whole. */
void py_fork_prepare(void)
{
	pthread_mutex_lock(&reg_mu);
}

void py_fork_parent(void)
{
	pthread_mutex_unlock(&reg_mu);
}

/* In the child only the forking thread lives on: the others' stacks are let
 * go (not freed: their owners' memory may be mid-change), and the forking
 * thread's frames are written when they end in the child, starting at the
 * fork (the parent writes them whole). */
void py_fork_child(void)
{
	pthread_mutex_init(&reg_mu, NULL);
	struct py_thread *me = py_tls;
	reg_head = me;
	if (me) {
		me->next = me->prev = NULL;
		me->tid = (uint32_t)syscall(SYS_gettid);
		uint64_t now = cuprof_clock();
		for (uint32_t i = 0; i < me->depth; i++) {
			me->stack[i].start = now;
			me->stack[i].forced = 1;
		}
	}
}

