/*
 * Python frames: a shadow stack per thread kept by CPython's own hooks
 * (sys.monitoring on 3.12+, the C profile function on 3.10 and 3.11), so
 * that every driver call sits under the Python functions and C-level
 * callables that made it, with their exact times. See docs/python.md.
 *
 * Nothing here is linked against libpython and no Python header is used:
 * the C API is resolved with dlsym(RTLD_DEFAULT) when the bootstrap
 * (internal/record/pyboot/sitecustomize.py) calls cuprof_python_start, and
 * the few structures read are declared by hand (their layout is that of
 * every CPython 3.10-3.13 build with the GIL; free-threaded builds are
 * refused).
 *
 * A frame is written to the ring only when it matters, at its end: when
 * something was recorded inside it (a driver call, an NVTX range, a span, a
 * frame under it: the thread's chunk count moved), or when the frame below
 * it is of code known to lead to CUDA (so a wrapper's helpers show up with
 * their own time). With scope "cuda", code that ran `threshold` times and
 * never had a frame written is turned off: sys.monitoring.DISABLE for it
 * (3.12+), a flag that makes the profile function return at once (<3.12).
 *
 * Every callback runs with the GIL held (free-threaded builds are off), so
 * the per-code and per-callable state needs no lock; the registry of
 * threads has one, for thread exit and fork.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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
/* PyTrace_* of the profile function */
#define PYTRACE_CALL 0
#define PYTRACE_RETURN 3
#define PYTRACE_C_CALL 4
#define PYTRACE_C_EXCEPTION 5
#define PYTRACE_C_RETURN 6
/* Offsets of the few fields read (stable from 3.10 to 3.13, GIL builds). */
#define OFF_TYPE_NAME 24    /* PyTypeObject.tp_name */
#define OFF_CFUNC_ML 16     /* PyCFunctionObject.m_ml (Cython's cyfunction starts the same) */
#define OFF_METHOD_FUNC 16  /* PyMethodObject.im_func */
#define OFF_DESCR_METHOD 40 /* PyMethodDescrObject.d_method */
#define OFF_WRAPPER_DESCR 16 /* method-wrapper's descr */
#define OFF_CDATA_PTR 16    /* ctypes CDataObject.b_ptr (a CFuncPtr's holds the function) */
/* A frame's code, where the profile function (<3.12) reads it: 3.10's
 * PyFrameObject.f_code; 3.11's PyFrameObject.f_frame, whose
 * _PyInterpreterFrame.f_code. Checked against PyFrame_GetCode first. */
#define OFF_FRAME_CODE_310 32
#define OFF_FRAME_IFRAME_311 24
#define OFF_IFRAME_CODE_311 32

#define TYPE(o) ((o)->ob_type)

static struct {
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
	PyObject *(*FrameGetCode)(PyObject *);
	void *(*InterpGet)(void);
	void *(*InterpMain)(void);
	void *(*ThreadHead)(void *);
	void *(*ThreadNext)(void *);
	int (*SetProfileTS)(void *, py_tracefunc, PyObject *);
	void (*SetProfile)(py_tracefunc, PyObject *);
	PyObject *None;
	PyObject *FunctionType, *MethodType, *CFunctionType, *CMethodType, *MethodDescrType, *ClassMethodDescrType,
		*WrapperDescrType, *MethodWrapperType, *UnicodeType;
} P;

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
	uint8_t judged;  /* its cost as a helper was judged (judge_helper) */
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
};

#define DIST_NONE 0xffff

struct py_thread {
	struct py_frame *stack;
	uint32_t depth, cap, skipped;
	uint32_t tid;
	struct cuprof_tls *tls;
	struct py_thread *next, *prev;
};

static __thread struct py_thread *py_tls __attribute__((tls_model("initial-exec")));

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct py_thread *reg_head;
static pthread_key_t py_key;
static int py_key_ok;

/* What every event reads, in one cache line. Scattered over .data, .bss
 * and the resolved API's struct they were five lines, each a miss once a
 * library's own work between two events has evicted the first-level cache:
 * in bench/python/cold_cache.py under cachegrind (2026-12-01) a Python frame
 * and a C-level frame missed it 21 times more per call when it was, 4 times
 * fewer with this line (bench/python/results/2026-12-01l-cpu-cold-cache). */
static struct {
	int stopped;       /* stopped at exit: every callback returns at once */
	int stacks_only;   /* --python=stacks: no CALL / C_RETURN, no helpers */
	int scope_all;
	int calibrating;
	int immortal;      /* see ret_none */
	uint32_t threshold;
	uint64_t cheap_ticks; /* see cheap_limit */
	PyObject *none;    /* P.None, P.FunctionType, P.MethodType, copied at start */
	PyObject *disable; /* sys.monitoring.DISABLE */
	PyObject *function_type;
	PyObject *method_type;
} py_hot __attribute__((aligned(64))) = {.threshold = 1000};

static int py_on;          /* hooks installed and running */
static int py_final;       /* past the stop: the C API is not called again */
static int py_started;     /* cuprof_python_start was called */
static int py_monitoring;  /* 3.12+: sys.monitoring, else the profile function */
static Py_ssize_t py_extra = -1;
static PyObject *py_mon;     /* sys.monitoring */
static PyObject *py_cfuncptr; /* _ctypes.CFuncPtr once imported */
static int py_tool = -1;
static char py_status[CUPROF_PY_STATUS_MAX];
static uint64_t py_event_mt; /* calibrated ticks x 1000 per event */
static char py_version[32];

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
		P.IncRef(py_hot.none);
	return py_hot.none;
}

static inline PyObject *ret_disable(void)
{
	if (!py_hot.immortal)
		P.IncRef(py_hot.disable);
	return py_hot.disable;
}

static void set_status(const char *s)
{
	snprintf(py_status, sizeof py_status, "%s", s);
	cuprof_py_publish(py_status, py_event_mt);
}

/* set_version keeps the version number of Py_GetVersion's full text. */
static void set_version(const char *full)
{
	snprintf(py_version, sizeof py_version, "%s", full);
	char *sp = strchr(py_version, ' ');
	if (sp)
		*sp = 0;
}

static void py_thread_exit(void *arg)
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

static struct py_thread *thread_state(void)
{
	struct py_thread *th = py_tls;
	if (__builtin_expect(th != NULL, 1))
		return th;
	th = calloc(1, sizeof *th);
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

/* The state of recently seen code objects by address, in front of the code
 * extra (an indirect call into libpython per event otherwise). An entry is
 * cleared when its code object dies (free_code), before the address can be
 * reused; every callback holds the GIL. */
#define CODE_CACHE_BITS 10
static struct {
	PyObject *co;
	struct py_code *c;
} code_cache[1u << CODE_CACHE_BITS];

static inline uint32_t code_slot(PyObject *co)
{
	return (uint32_t)((uint64_t)(uintptr_t)co * 0x9E3779B97F4A7C15ull >> (64 - CODE_CACHE_BITS));
}

/* free_code is called when a code object dies. Frames still on a shadow
 * stack (stale: their end event never came, as when another profile
 * function took the thread over) keep its state, marked dead. */
static void free_code(void *p)
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
		P.DecRef(c->module);
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

/* code_state_slow is code_state past the cache: the code extra, or a new
 * state on first sight. */
static __attribute__((noinline)) struct py_code *code_state_slow(PyObject *co)
{
	void *p = NULL;
	if (__builtin_expect(P.GetExtra(co, py_extra, &p) == 0 && p != NULL, 1)) {
		code_cache_put(co, p);
		return p;
	}
	if (p == NULL) {
		PyObject *et, *ev, *tb;
		P.Fetch(&et, &ev, &tb);
		struct py_code *c = calloc(1, sizeof *c);
		if (c) {
			c->h.dist = DIST_NONE;
			c->co = co;
			PyObject *g = P.GetGlobals();
			PyObject *m = g ? P.DictGetItemString(g, "__name__") : NULL; /* borrowed */
			if (m && TYPE(m) == P.UnicodeType) {
				P.IncRef(m);
				c->module = m;
			}
			if (P.SetExtra(co, py_extra, c) != 0) {
				P.Clear();
				free_code(c);
				c = NULL;
			}
		}
		if (c)
			code_cache_put(co, c);
		P.Clear();
		P.Restore(et, ev, tb);
		return c;
	}
	P.Clear();
	return NULL;
}

/* code_state returns the state of code object co, made on first sight. */
static inline struct py_code *code_state(PyObject *co)
{
	uint32_t i = code_slot(co);
	if (__builtin_expect(code_cache[i].co == co, 1))
		return code_cache[i].c;
	return code_state_slow(co);
}

/* code_lookup returns the state of code object co, NULL when it has none. */
static struct py_code *code_lookup(PyObject *co)
{
	uint32_t i = code_slot(co);
	if (code_cache[i].co == co)
		return code_cache[i].c;
	void *p = NULL;
	if (P.GetExtra(co, py_extra, &p) != 0) {
		P.Clear();
		return NULL;
	}
	if (p)
		code_cache_put(co, p);
	return p;
}

/* ---- C callables ---- */

enum { NAT_CFUNC = 1, NAT_DESCR, NAT_WRAPPER, NAT_METHWRAPPER, NAT_TYPE, NAT_CFUNCPTR, NAT_OTHER, NAT_PYFUNC };

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
	if (tp == P.FunctionType)
		return NAT_PYFUNC;
	if (tp == P.CFunctionType || (P.CMethodType && tp == P.CMethodType))
		return NAT_CFUNC;
	if (tp == P.MethodDescrType || tp == P.ClassMethodDescrType)
		return NAT_DESCR;
	if (tp == P.WrapperDescrType)
		return NAT_WRAPPER;
	if (P.MethodWrapperType && tp == P.MethodWrapperType)
		return NAT_METHWRAPPER;
	const char *name = *(const char **)((char *)tp + OFF_TYPE_NAME);
	if (name && (ends_with(name, "cython_function_or_method") || ends_with(name, "fused_cython_function")))
		return NAT_CFUNC;
	if (P.TypeGetFlags(tp) & Py_TPFLAGS_TYPE_SUBCLASS)
		return NAT_TYPE;
	if (!py_cfuncptr) {
		PyObject *mods = P.ImportGetModuleDict();
		PyObject *ct = mods ? P.DictGetItemString(mods, "_ctypes") : NULL;
		if (ct) {
			py_cfuncptr = P.GetAttrString(ct, "CFuncPtr");
			if (!py_cfuncptr)
				P.Clear();
		}
	}
	if (py_cfuncptr && P.IsSubtype(tp, py_cfuncptr))
		return NAT_CFUNCPTR;
	return NAT_OTHER;
}

static int type_class(PyObject *tp)
{
	uint32_t h = (uint32_t)(((uintptr_t)tp >> 4) * 2654435761u) % TYPES_CAP;
	for (uint32_t k = 0; k < 16; k++) {
		uint32_t i = (h + k) % TYPES_CAP;
		if (type_cache[i].type == tp)
			return type_cache[i].cls;
		if (type_cache[i].type == NULL) {
			int cls = classify_type(tp);
			P.IncRef(tp); /* no other type gets its address while cached */
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

static struct py_native *native_state(PyObject *c, int cls)
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
				P.IncRef(hold);
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
	PyObject *v = P.GetAttrString(o, name);
	if (!v) {
		P.Clear();
		return 0;
	}
	size_t n = 0;
	if (TYPE(v) == P.UnicodeType) {
		Py_ssize_t len;
		const char *s = P.AsUTF8(v, &len);
		if (s) {
			n = (size_t)len < cap - 1 ? (size_t)len : cap - 1;
			memcpy(dst, s, n);
			dst[n] = 0;
		} else {
			P.Clear();
		}
	}
	P.DecRef(v);
	return n;
}

static long attr_long(PyObject *o, const char *name)
{
	PyObject *v = P.GetAttrString(o, name);
	if (!v) {
		P.Clear();
		return 0;
	}
	long n = P.AsLong(v);
	if (n == -1)
		P.Clear();
	P.DecRef(v);
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
	P.Fetch(&et, &ev, &tb);
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
			const char *m = P.AsUTF8(c->module, &len);
			if (m)
				str_copy(mod, sizeof mod, m);
			else
				P.Clear();
		}
	} else {
		kind = CUPROF_CODE_NATIVE;
		PyObject *o = f->obj;
		int cls = type_class(TYPE(o));
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
			PyObject *cls_o = P.GetAttrString(o, "__objclass__");
			if (cls_o) {
				attr_str(cls_o, "__module__", mod, sizeof mod);
				P.DecRef(cls_o);
			} else {
				P.Clear();
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
	P.Clear();
	P.Restore(et, ev, tb);
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

/* ---- the shadow stack ---- */

/* Where calibration writes its frames: the same stores as a real one. */
static struct cuprof_rec calib_rec[3];

/* need_slots is the length of a frame's record: one slot (the code's
 * string id in the low 32 bits of caller, the flags above them) when its
 * duration fits the head's 32 bits, else three (the flags in the args, the
 * end and the code in the detail). */
static inline unsigned need_slots(uint64_t start, uint64_t end)
{
	return end - start <= UINT32_MAX ? 1 : 3;
}

/* fill_frame fills a frame's record of n slots (need_slots) at r; nothing
 * is committed. */
static inline void fill_frame(struct cuprof_rec *r, unsigned n, uint64_t start, uint64_t end, uint64_t flags,
			      uint32_t tid, uint32_t id)
{
	if (__builtin_expect(n == 1, 1)) {
		r->start = start;
		r->handle = tid;
		r->caller = (uint64_t)id | (flags & 0xff) << 32;
		r->dur = (uint32_t)(end - start);
		cuprof_rec_tag(r, 0, CUPROF_REC_FRAME, 0);
		return;
	}
	cuprof_rec_fill3(r, CUPROF_REC_FRAME, start, end, tid, 0, flags, 0, id, 0);
}

/* put_frame writes f's record of n slots (need_slots) with code id. depth
 * is set before the slot is read and cleared after the commit: a signal
 * handler's record in between passes through (counted as a drop) instead
 * of being written where this one then goes. */
static inline __attribute__((always_inline)) void put_frame(struct cuprof_tls *t, struct py_frame *f, unsigned n,
							    uint64_t end, uint64_t flags, uint32_t tid, uint32_t id)
{
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
		fill_frame(r, n, f->start, end, flags, tid, id);
		cuprof_rec_commit(t, r, n);
	}
	cuprof_guard_exit(t);
}

/* write_frame_slow is write_frame for every case: calibration, a code not
 * named yet, a thread inside a wrapper, a long frame. */
static __attribute__((noinline)) void write_frame_slow(struct py_frame *f, uint64_t end, uint64_t flags, uint32_t tid)
{
	struct cuprof_tls *t = &cuprof_tls;
	unsigned n = need_slots(f->start, end);
	if (py_hot.calibrating) {
		fill_frame(calib_rec, n, f->start, end, flags, tid, 1);
		__asm__ __volatile__("" : : "r"(calib_rec) : "memory"); /* keep the stores */
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

/* write_frame writes f's record, on behalf of thread tid when not 0. The
 * common case (a named code, one slot, outside any wrapper, not
 * calibrating) is inline in the callbacks; write_frame_slow does the rest. */
static inline __attribute__((always_inline)) void write_frame(struct py_frame *f, uint64_t end, uint64_t flags,
							      uint32_t tid)
{
	struct cuprof_tls *t = &cuprof_tls;
	uint32_t id = f->s->id;
	if (__builtin_expect((py_hot.calibrating | t->depth) != 0 || !id || end - f->start > UINT32_MAX, 0)) {
		write_frame_slow(f, end, flags, tid);
		return;
	}
	put_frame(t, f, 1, end, flags, tid, id);
}

static int grow(struct py_thread *th)
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

static inline void push(struct py_thread *th, struct py_ident *s, PyObject *obj, uint32_t site)
{
	if (__builtin_expect(th->depth == th->cap, 0) && !grow(th)) {
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

/* A helper (an activation written only because a caller within
 * HELPER_REACH leads to CUDA, no driver call under it, ever) is written
 * for its first py_hot.threshold such activations; then judge_helper compares
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
static uint32_t py_helper_ns = HELPER_CHEAP_NS; /* CUPROF_PY_HELPER_NS (--python-helper-min); 0: never cheap */

/* py_hot.cheap_ticks: the clock's ticks per py_helper_ns
 * (cuprof_ticks_for: from the ring's anchor), 0 until known. */

/* cheap_limit returns the clock ticks under which a helper's activation is
 * cheap (py_helper_ns and what recording its frame costs: two events,
 * as calibrated), or 0 while the clock's rate is not known yet (the ring's
 * first millisecond): until then nothing is judged. */
static __attribute__((noinline)) uint64_t cheap_limit_slow(void)
{
	py_hot.cheap_ticks = cuprof_ticks_for(py_helper_ns);
	return py_hot.cheap_ticks ? py_hot.cheap_ticks + 2 * py_event_mt / 1000 : 0;
}

static inline uint64_t cheap_limit(void)
{
	if (__builtin_expect(py_hot.cheap_ticks != 0, 1))
		return py_hot.cheap_ticks + 2 * py_event_mt / 1000;
	return cheap_limit_slow();
}

/* judge_helper counts one activation of helper s that lasted ticks and,
 * after py_hot.threshold of them, decides: cheap when at least half were
 * under the limit. */
static void judge_helper(struct py_ident *s, uint64_t ticks)
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
	int emit = inside || f->forced || py_hot.scope_all || py_hot.calibrating;
	int helper = !emit && !py_hot.stacks_only && !s->cheap && parent_leads(th->stack, th->depth);
	if (!emit && !helper) {
		if (s->calls != UINT32_MAX)
			s->calls++;
		return;
	}
	uint64_t end = cuprof_clock();
	/* Judged: a helper no driver call ever ended under. Frames written
	 * under it (its own helpers) do not spare it: once they are judged
	 * cheap and gone, so may it be. */
	if (helper && s->dist == DIST_NONE && !s->judged) {
		judge_helper(s, end - f->start);
		if (s->cheap)
			return; /* judged just now: this one is not written either */
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

/* end_below is end_frame when obj's frame is not on top: frames above it
 * lost their end event, or it has none on the stack. */
static __attribute__((noinline)) int end_below(struct py_thread *th, PyObject *obj, uint64_t flags)
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
	return end_below(th, obj, flags);
}

/* may_start reports whether an activation of s may be pushed, turning s off
 * when scope cuda says so. */
static inline int may_start(struct py_ident *s)
{
	if (s->disabled)
		return 0;
	if (!py_hot.scope_all && !py_hot.calibrating && !s->emitted && s->calls >= py_hot.threshold && s->active == 0) {
		s->disabled = 1;
		return 0;
	}
	return 1;
}

/* start_frame pushes an activation of s (obj's) on this thread's stack
 * unless may_start says no, which it reports. */
static inline int start_frame(struct py_ident *s, PyObject *obj)
{
	if (!may_start(s))
		return 0;
	struct py_thread *th = thread_state();
	if (th)
		push(th, s, obj, UINT32_MAX);
	return 1;
}

/* ---- sys.monitoring callbacks (3.12+) ---- */

static PyObject *mon_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	if (__builtin_expect(py_hot.stopped || nargs < 1, 0))
		return ret_none();
	struct py_code *c = code_state(args[0]);
	if (!c)
		return ret_none();
	return start_frame(&c->h, args[0]) ? ret_none() : ret_disable();
}

/* PY_THROW cannot be disabled. */
static PyObject *mon_throw(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *r = mon_start(self, args, nargs);
	if (r == py_hot.disable) {
		P.DecRef(r);
		return ret_none();
	}
	return r;
}

static PyObject *mon_end(PyObject *const *args, Py_ssize_t nargs, uint64_t flags, int disablable)
{
	if (__builtin_expect(py_hot.stopped || nargs < 1, 0))
		return ret_none();
	if (end_frame(args[0], flags))
		return ret_none();
	if (disablable) {
		struct py_code *c = code_lookup(args[0]);
		if (c && c->h.disabled && c->h.active == 0)
			return ret_disable();
	}
	return ret_none();
}

static PyObject *mon_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return mon_end(args, nargs, 0, 1);
}

static PyObject *mon_yield(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return mon_end(args, nargs, CUPROF_FRAME_YIELDED, 1);
}

static PyObject *mon_unwind(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return mon_end(args, nargs, CUPROF_FRAME_UNWOUND, 0);
}

/* site_count returns the counter of the CALL site at offset of code c. */
static uint16_t *site_count(struct py_code *c, uint32_t site)
{
	if (site >= c->nsites) {
		if (site >= (1u << 20))
			return NULL;
		uint32_t n = c->nsites ? c->nsites : 16;
		while (n <= site)
			n *= 2;
		uint16_t *s = realloc(c->sites, n * sizeof *s);
		if (!s)
			return NULL;
		memset(s + c->nsites, 0, (n - c->nsites) * sizeof *s);
		c->sites = s;
		c->nsites = n;
	}
	return &c->sites[site];
}

static PyObject *mon_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	if (__builtin_expect(py_hot.stopped || nargs < 3, 0))
		return ret_none();
	PyObject *callable = args[2];
	PyObject *tp = TYPE(callable);
	if (tp == py_hot.function_type)
		return ret_disable(); /* its PY_START covers it */
	if (tp == py_hot.method_type) {
		PyObject *fn = *(PyObject **)((char *)callable + OFF_METHOD_FUNC);
		if (TYPE(fn) == py_hot.function_type)
			return ret_disable();
		callable = fn;
		tp = TYPE(fn);
	}
	/* With scope cuda, a site whose C calls had nothing written
	 * threshold times is turned off: the frame remembers its site, counted
	 * at its end (mon_c_end). */
	uint32_t site = UINT32_MAX;
	if (!py_hot.scope_all && !py_hot.calibrating) {
		struct py_code *c = code_state(args[0]);
		if (c && c->h.disabled)
			return ret_disable(); /* code turned off: so are its calls */
		long off = P.AsLong(args[1]);
		if (off < 0) {
			P.Clear();
		} else if (c) {
			uint16_t *sc = site_count(c, (uint32_t)(off / 2));
			if (sc && *sc >= py_hot.threshold) {
				*sc = SITE_OFF;
				return ret_disable();
			}
			if (sc)
				site = (uint32_t)(off / 2);
		}
	}
	int cls = type_class(tp);
	if (cls == NAT_PYFUNC)
		return ret_disable();
	/* A callable is turned off per call site (above), not everywhere as a
	 * code object is: a builtin (isinstance, len) runs thousands of times
	 * in code that does not lead to CUDA before a wrapper calls it as a
	 * helper, and would lose that frame. */
	struct py_native *n = native_state(callable, cls);
	struct py_thread *th = n ? thread_state() : NULL;
	if (th)
		push(th, &n->h, callable, site);
	return ret_none();
}

static PyObject *mon_c_end(PyObject *const *args, Py_ssize_t nargs, uint64_t flags)
{
	if (__builtin_expect(py_hot.stopped || nargs < 3, 0))
		return ret_none();
	PyObject *callable = args[2];
	if (TYPE(callable) == py_hot.method_type)
		callable = *(PyObject **)((char *)callable + OFF_METHOD_FUNC);
	struct py_thread *th = py_tls;
	if (!th || th->depth == 0)
		return ret_none();
	struct py_frame *top = &th->stack[th->depth - 1];
	if (top->obj == callable && top->site != UINT32_MAX && !py_hot.scope_all) {
		/* count the site's calls with nothing written */
		struct py_code *c = code_lookup(args[0]);
		uint32_t calls = top->s->calls;
		uint32_t site = top->site;
		end_frame(callable, flags);
		if (c && site < c->nsites && top->s->calls != calls && c->sites[site] < SITE_OFF - 1)
			c->sites[site]++;
		return ret_none();
	}
	end_frame(callable, flags);
	return ret_none();
}

static PyObject *mon_c_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return mon_c_end(args, nargs, 0);
}

static PyObject *mon_c_raise(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return mon_c_end(args, nargs, CUPROF_FRAME_UNWOUND);
}

/* ---- the profile function (3.10, 3.11) ---- */

static int py_minor;
/* 1: a frame's code is read at the offsets above (they gave what
 * PyFrame_GetCode did for the first frames); -1: through PyFrame_GetCode;
 * 0: not known yet. */
static int py_frame_direct;
static int py_frame_checks;

static inline PyObject *frame_code_at(PyObject *frame)
{
	if (py_minor == 10)
		return *(PyObject **)((char *)frame + OFF_FRAME_CODE_310);
	char *iframe = *(char **)((char *)frame + OFF_FRAME_IFRAME_311);
	return *(PyObject **)(iframe + OFF_IFRAME_CODE_311);
}

/* frame_code_api is frame_code through the C API, which it checks the
 * offsets against for the first frames. */
static __attribute__((noinline)) PyObject *frame_code_api(PyObject *frame)
{
	PyObject *co = P.FrameGetCode(frame);
	if (!co)
		return NULL;
	P.DecRef(co); /* the frame holds it */
	if (py_frame_direct == 0) {
		if ((py_minor != 10 && py_minor != 11) || frame_code_at(frame) != co)
			py_frame_direct = -1;
		else if (++py_frame_checks >= 8)
			py_frame_direct = 1;
	}
	return co;
}

/* frame_code returns the code object of frame (borrowed: the frame holds
 * it), without a call into libpython once the offsets are known good. */
static inline PyObject *frame_code(PyObject *frame)
{
	if (__builtin_expect(py_frame_direct > 0, 1))
		return frame_code_at(frame);
	return frame_code_api(frame);
}

static int prof_func(PyObject *obj, PyObject *frame, int what, PyObject *arg)
{
	if (__builtin_expect(py_hot.stopped, 0))
		return 0;
	switch (what) {
	case PYTRACE_CALL: {
		PyObject *co = frame_code(frame);
		if (!co)
			return 0;
		struct py_code *c = code_state(co);
		if (c)
			start_frame(&c->h, co);
		return 0;
	}
	case PYTRACE_RETURN: {
		PyObject *co = frame_code(frame);
		if (!co)
			return 0;
		end_frame(co, arg ? 0 : CUPROF_FRAME_UNWOUND);
		return 0;
	}
	case PYTRACE_C_CALL: {
		if (py_hot.stacks_only || !arg)
			return 0;
		int cls = type_class(TYPE(arg));
		if (cls == NAT_PYFUNC)
			return 0;
		struct py_native *n = native_state(arg, cls);
		if (n)
			start_frame(&n->h, arg);
		return 0;
	}
	case PYTRACE_C_RETURN:
	case PYTRACE_C_EXCEPTION:
		if (!py_hot.stacks_only && arg)
			end_frame(arg, what == PYTRACE_C_EXCEPTION ? CUPROF_FRAME_UNWOUND : 0);
		return 0;
	}
	return 0;
}

/* thread_boot is what threading.setprofile hands to every new thread: its
 * first call replaces itself by the C profile function, then feeds it the
 * event it was called for. */
static PyObject *thread_boot(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	if (!py_hot.stopped && P.SetProfile) {
		P.SetProfile(prof_func, NULL);
		if (nargs >= 2 && TYPE(args[1]) == P.UnicodeType) {
			Py_ssize_t n;
			const char *ev = P.AsUTF8(args[1], &n);
			if (ev && strcmp(ev, "call") == 0)
				prof_func(NULL, args[0], PYTRACE_CALL, NULL);
			else if (!ev)
				P.Clear();
		}
	}
	return ret_none();
}

/* ---- stop at exit, fork ---- */

/* flush_open writes the frames still open on every thread as FrameOpen,
 * ending now: those that matter (something recorded inside, the thread in
 * a driver call, or code leading to CUDA under them). */
static void flush_open(void)
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

static PyObject *py_stop(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	if (py_hot.stopped || !py_on)
		return ret_none();
	py_hot.stopped = 1; /* callbacks return at once from now on */
	flush_open();
	py_final = 1;
	/* Let go of the types and descriptors held for identity: a class held
	 * to the end keeps its module's globals alive past the point where the
	 * interpreter tears them down, and its instances' __del__ would run
	 * only once nothing can print. */
	for (unsigned i = 0; i < TYPES_CAP; i++) {
		if (type_cache[i].type) {
			P.DecRef(type_cache[i].type);
			type_cache[i].type = NULL;
		}
	}
	for (unsigned i = 0; i < NATIVE_CAP; i++) {
		if (natives[i] && natives[i]->held) {
			P.DecRef(natives[i]->held);
			natives[i]->held = NULL;
		}
	}
	if (py_monitoring && py_mon) {
		PyObject *r = P.CallMethod(py_mon, "set_events", "ii", py_tool, 0);
		if (r)
			P.DecRef(r);
		r = P.CallMethod(py_mon, "free_tool_id", "i", py_tool);
		if (r)
			P.DecRef(r);
		P.Clear();
	}
	/* The profile function (<3.12) stays: it returns at once from now on,
	 * and removing it could remove another tool's that replaced it. */
	return ret_none();
}

void cuprof_py_fork_prepare(void)
{
	pthread_mutex_lock(&reg_mu);
}

void cuprof_py_fork_parent(void)
{
	pthread_mutex_unlock(&reg_mu);
}

/* In the child only the forking thread lives on: the others' stacks are let
 * go (not freed: their owners' memory may be mid-change), and the forking
 * thread's frames are written when they end in the child, starting at the
 * fork (the parent writes them whole). */
void cuprof_py_fork_child(void)
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

/* cuprof_py_ring_opened publishes the status in a new ring (a fork child's)
 * and tells, once, that Python ran without the bootstrap. */
void cuprof_py_ring_opened(void)
{
	if (py_status[0]) {
		cuprof_py_publish(py_status, py_event_mt);
		return;
	}
	if (py_started)
		return;
	const char *mode = getenv("CUPROF_PYTHON");
	if (mode && strcmp(mode, "off") == 0)
		return; /* --python=off: nothing to say */
	int (*init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
	const char *(*ver)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
	if (!init || !ver || !init())
		return;
	set_version(ver());
	snprintf(py_status, sizeof py_status,
		 "CPython %s: frames off (the bootstrap did not run: python -I, -E or -S, a PYTHONPATH or site "
		 "the program replaced, or an embedded interpreter)",
		 py_version);
	cuprof_py_publish(py_status, 0);
}

void cuprof_py_at_exit(void)
{
	if (!py_status[0] && !py_started && cuprof_tls.locked == 0)
		cuprof_py_ring_opened();
}

/* ---- start ---- */

static PyMethodDef def_start = {"cuprof_py_start", (void *)mon_start, METH_FASTCALL, NULL};
static PyMethodDef def_throw = {"cuprof_py_throw", (void *)mon_throw, METH_FASTCALL, NULL};
static PyMethodDef def_return = {"cuprof_py_return", (void *)mon_return, METH_FASTCALL, NULL};
static PyMethodDef def_yield = {"cuprof_py_yield", (void *)mon_yield, METH_FASTCALL, NULL};
static PyMethodDef def_unwind = {"cuprof_py_unwind", (void *)mon_unwind, METH_FASTCALL, NULL};
static PyMethodDef def_call = {"cuprof_py_call", (void *)mon_call, METH_FASTCALL, NULL};
static PyMethodDef def_c_return = {"cuprof_py_c_return", (void *)mon_c_return, METH_FASTCALL, NULL};
static PyMethodDef def_c_raise = {"cuprof_py_c_raise", (void *)mon_c_raise, METH_FASTCALL, NULL};
static PyMethodDef def_stop = {"cuprof_py_stop", (void *)py_stop, METH_FASTCALL, NULL};
static PyMethodDef def_boot = {"cuprof_thread_profile", (void *)thread_boot, METH_FASTCALL, NULL};

#define SYM(field, name) (*(void **)&P.field = dlsym(RTLD_DEFAULT, name))

static int resolve(void)
{
	SYM(IsInitialized, "Py_IsInitialized");
	SYM(GetVersion, "Py_GetVersion");
	SYM(ImportModule, "PyImport_ImportModule");
	SYM(GetAttrString, "PyObject_GetAttrString");
	SYM(CallMethod, "PyObject_CallMethod");
	SYM(CallFunction, "PyObject_CallFunction");
	SYM(CFunctionNew, "PyCFunction_NewEx");
	SYM(IncRef, "Py_IncRef");
	SYM(DecRef, "Py_DecRef");
	SYM(AsUTF8, "PyUnicode_AsUTF8AndSize");
	SYM(AsLong, "PyLong_AsLong");
	SYM(Fetch, "PyErr_Fetch");
	SYM(Restore, "PyErr_Restore");
	SYM(Clear, "PyErr_Clear");
	SYM(GetGlobals, "PyEval_GetGlobals");
	SYM(DictGetItemString, "PyDict_GetItemString");
	SYM(ImportGetModuleDict, "PyImport_GetModuleDict");
	SYM(TypeGetFlags, "PyType_GetFlags");
	SYM(IsSubtype, "PyType_IsSubtype");
	if (!SYM(GetExtra, "PyUnstable_Code_GetExtra"))
		SYM(GetExtra, "_PyCode_GetExtra");
	if (!SYM(SetExtra, "PyUnstable_Code_SetExtra"))
		SYM(SetExtra, "_PyCode_SetExtra");
	if (!SYM(RequestExtraIndex, "PyUnstable_Eval_RequestCodeExtraIndex"))
		SYM(RequestExtraIndex, "_PyEval_RequestCodeExtraIndex");
	SYM(FrameGetCode, "PyFrame_GetCode");
	SYM(InterpGet, "PyInterpreterState_Get");
	SYM(InterpMain, "PyInterpreterState_Main");
	SYM(ThreadHead, "PyInterpreterState_ThreadHead");
	SYM(ThreadNext, "PyThreadState_Next");
	SYM(SetProfileTS, "_PyEval_SetProfile");
	SYM(SetProfile, "PyEval_SetProfile");
	SYM(None, "_Py_NoneStruct");
	SYM(FunctionType, "PyFunction_Type");
	SYM(MethodType, "PyMethod_Type");
	SYM(CFunctionType, "PyCFunction_Type");
	SYM(CMethodType, "PyCMethod_Type");
	SYM(MethodDescrType, "PyMethodDescr_Type");
	SYM(ClassMethodDescrType, "PyClassMethodDescr_Type");
	SYM(WrapperDescrType, "PyWrapperDescr_Type");
	SYM(MethodWrapperType, "_PyMethodWrapper_Type");
	SYM(UnicodeType, "PyUnicode_Type");
	return P.IsInitialized && P.GetVersion && P.ImportModule && P.GetAttrString && P.CallMethod &&
	       P.CallFunction && P.CFunctionNew && P.IncRef && P.DecRef && P.AsUTF8 && P.AsLong && P.Fetch &&
	       P.Restore && P.Clear && P.GetGlobals && P.DictGetItemString && P.ImportGetModuleDict &&
	       P.TypeGetFlags && P.IsSubtype && P.GetExtra && P.SetExtra && P.RequestExtraIndex && P.FrameGetCode &&
	       P.InterpGet && P.InterpMain && P.ThreadHead && P.ThreadNext && P.SetProfile && P.None &&
	       P.FunctionType && P.MethodType && P.CFunctionType && P.MethodDescrType && P.ClassMethodDescrType &&
	       P.WrapperDescrType && P.UnicodeType;
}

static PyObject *new_func(PyMethodDef *d)
{
	return P.CFunctionNew(d, NULL, NULL);
}

/* call_method calls o.name(fmt...) and drops the result; it returns 0 or -1. */
#define CALL_METHOD(o, name, ...)                                                                        \
	({                                                                                                   \
		PyObject *r_ = P.CallMethod((o), (name), __VA_ARGS__);                                           \
		if (r_)                                                                                          \
			P.DecRef(r_);                                                                                \
		r_ ? 0 : -1;                                                                                     \
	})

static long event_bit(PyObject *events, const char *name)
{
	PyObject *v = P.GetAttrString(events, name);
	if (!v)
		return -1;
	long b = P.AsLong(v);
	P.DecRef(v);
	return b;
}

/* install_monitoring registers the callbacks with a free tool id; it
 * returns 0, or -1 with the reason in why. */
static int install_monitoring(const char **why)
{
	PyObject *sys = P.ImportModule("sys");
	if (!sys)
		return *why = "no sys module", -1;
	py_mon = P.GetAttrString(sys, "monitoring");
	P.DecRef(sys);
	if (!py_mon)
		return *why = "no sys.monitoring", -1;
	static const int ids[] = {4, 3, 5};
	for (unsigned i = 0; i < sizeof ids / sizeof ids[0] && py_tool < 0; i++) {
		PyObject *r = P.CallMethod(py_mon, "get_tool", "i", ids[i]);
		if (r == P.None)
			py_tool = ids[i];
		if (r)
			P.DecRef(r);
		else
			P.Clear();
	}
	if (py_tool < 0)
		return *why = "no free sys.monitoring tool id: 3, 4 and 5 are taken", -1;
	if (CALL_METHOD(py_mon, "use_tool_id", "is", py_tool, "cuprof") < 0)
		return *why = "sys.monitoring.use_tool_id failed", -1;
	py_hot.disable = P.GetAttrString(py_mon, "DISABLE");
	PyObject *events = P.GetAttrString(py_mon, "events");
	if (!py_hot.disable || !events)
		return *why = "sys.monitoring has no DISABLE or events", -1;
	py_hot.immortal = is_immortal(P.None) && is_immortal(py_hot.disable);
	struct {
		const char *event;
		PyMethodDef *def;
		int full_only;
	} cbs[] = {
		{"PY_START", &def_start, 0}, {"PY_RESUME", &def_start, 0},   {"PY_THROW", &def_throw, 0},
		{"PY_RETURN", &def_return, 0}, {"PY_YIELD", &def_yield, 0}, {"PY_UNWIND", &def_unwind, 0},
		{"CALL", &def_call, 1},        {"C_RETURN", &def_c_return, 1}, {"C_RAISE", &def_c_raise, 1},
	};
	long mask = 0;
	for (unsigned i = 0; i < sizeof cbs / sizeof cbs[0]; i++) {
		if (cbs[i].full_only && py_hot.stacks_only)
			continue;
		long bit = event_bit(events, cbs[i].event);
		PyObject *fn = new_func(cbs[i].def);
		if (bit <= 0 || !fn) {
			P.DecRef(events);
			return *why = "sys.monitoring callbacks could not be made", -1;
		}
		int err = CALL_METHOD(py_mon, "register_callback", "ilO", py_tool, bit, fn);
		P.DecRef(fn);
		if (err < 0) {
			P.DecRef(events);
			return *why = "sys.monitoring.register_callback failed", -1;
		}
		mask |= bit;
	}
	P.DecRef(events);
	if (CALL_METHOD(py_mon, "set_events", "il", py_tool, mask) < 0)
		return *why = "sys.monitoring.set_events failed", -1;
	return 0;
}

/* install_profile sets the C profile function on every thread alive and
 * on threads threading starts later; it returns 0 or -1. */
static int install_profile(const char **why)
{
	if (!P.SetProfileTS)
		return *why = "no _PyEval_SetProfile", -1;
	void *interp = P.InterpGet();
	for (void *ts = P.ThreadHead(interp); ts; ts = P.ThreadNext(ts))
		if (P.SetProfileTS(ts, prof_func, NULL) < 0)
			P.Clear();
	PyObject *threading = P.ImportModule("threading");
	PyObject *boot = new_func(&def_boot);
	if (!threading || !boot || CALL_METHOD(threading, "setprofile", "O", boot) < 0) {
		P.Clear();
		*why = "threading.setprofile failed: threads started later are not seen";
	}
	if (threading)
		P.DecRef(threading);
	if (boot)
		P.DecRef(boot);
	return 0;
}

static uint64_t time_loop(PyObject *loop, int n)
{
	uint64_t best = UINT64_MAX;
	for (int k = 0; k < 7; k++) {
		uint64_t t0 = cuprof_clock();
		PyObject *r = P.CallFunction(loop, "i", n);
		uint64_t t1 = cuprof_clock();
		if (!r) {
			P.Clear();
			return 0;
		}
		P.DecRef(r);
		if (t1 - t0 < best)
			best = t1 - t0;
	}
	return best;
}

static void parse_options(void)
{
	const char *mode = getenv("CUPROF_PYTHON");
	py_hot.stacks_only = mode && strcmp(mode, "stacks") == 0;
	const char *scope = getenv("CUPROF_PY_SCOPE");
	py_hot.scope_all = scope && strcmp(scope, "all") == 0;
	const char *hn = getenv("CUPROF_PY_HELPER_NS");
	if (hn && *hn) {
		char *end;
		unsigned long v = strtoul(hn, &end, 10);
		if (*end == 0 && v <= 1000000000ul)
			py_helper_ns = (uint32_t)v;
	}
	const char *th = getenv("CUPROF_PY_THRESHOLD");
	if (th && *th) {
		char *end;
		unsigned long v = strtoul(th, &end, 10);
		if (*end == 0 && v > 0 && v < 60000)
			py_hot.threshold = (uint32_t)v;
	}
}

/*
 * cuprof_python_start is called by the bootstrap, holding the GIL, with a
 * Python function loop(n) that calls an empty function n times (for the
 * calibration). It returns 1 when frames are recorded, else 0 (the reason
 * is in the trace's Process.Python).
 */
CUPROF_EXPORT int cuprof_python_start(PyObject *loop)
{
	if (py_started)
		return py_on;
	if (!resolve()) {
		py_started = 1;
		if (cuprof_active())
			set_status("Python: frames off (the C API of this interpreter was not found)");
		return 0;
	}
	py_hot.none = P.None;
	py_hot.function_type = P.FunctionType;
	py_hot.method_type = P.MethodType;
	if (P.InterpGet() != P.InterpMain())
		return 0; /* a subinterpreter's site: the main one has (or has not) started */
	py_started = 1;
	if (!cuprof_active())
		return 0;
	parse_options();
	set_version(P.GetVersion());
	int major = 0, minor = 0;
	sscanf(py_version, "%d.%d", &major, &minor);
	char s[CUPROF_PY_STATUS_MAX];
	if (strstr(P.GetVersion(), "free-threading")) {
		snprintf(s, sizeof s, "CPython %s: frames off (free-threaded build)", py_version);
		set_status(s);
		return 0;
	}
	if (major != 3 || minor < 10) {
		snprintf(s, sizeof s, "CPython %s: frames off (cuprof needs Python 3.10 or newer)", py_version);
		set_status(s);
		return 0;
	}
	py_monitoring = minor >= 12;
	py_minor = minor;
	py_extra = P.RequestExtraIndex(free_code);
	if (py_extra < 0) {
		P.Clear();
		snprintf(s, sizeof s, "CPython %s: frames off (no code extra index left)", py_version);
		set_status(s);
		return 0;
	}
	py_key_ok = pthread_key_create(&py_key, py_thread_exit) == 0;

	/* Calibrate: the loop with hooks off, then on (every frame written,
	 * to a scratch record). */
	int n = 2000;
	uint64_t off = loop ? time_loop(loop, n) : 0;
	const char *why = NULL;
	py_hot.calibrating = 1;
	int err = py_monitoring ? install_monitoring(&why) : install_profile(&why);
	if (err < 0) {
		py_hot.calibrating = 0;
		P.Clear();
		snprintf(s, sizeof s, "CPython %s: frames off (%s)", py_version, why);
		set_status(s);
		return 0;
	}
	if (!py_monitoring)
		P.SetProfile(prof_func, NULL);
	uint64_t on = loop && off ? time_loop(loop, n) : 0;
	py_hot.calibrating = 0;
	if (on > off && off)
		py_event_mt = (on - off) * 1000 / (2 * (uint64_t)n);
	/* Frames of the calibration are not in the trace; the scratch state of
	 * its code objects is forgotten with them. */
	struct py_thread *th = py_tls;
	if (th) {
		while (th->depth) {
			th->depth--;
			th->stack[th->depth].s->active--;
		}
	}
	PyObject *atexit_mod = P.ImportModule("atexit");
	PyObject *stop = new_func(&def_stop);
	if (atexit_mod && stop)
		CALL_METHOD(atexit_mod, "register", "O", stop);
	P.Clear();
	if (atexit_mod)
		P.DecRef(atexit_mod);
	if (stop)
		P.DecRef(stop);
	char scope[48];
	if (py_hot.scope_all)
		snprintf(scope, sizeof scope, "scope all");
	else
		snprintf(scope, sizeof scope, "scope cuda (%u)", py_hot.threshold);
	if (py_monitoring)
		snprintf(s, sizeof s, "CPython %s, sys.monitoring tool %d, %s, %s", py_version, py_tool,
			 py_hot.stacks_only ? "stacks" : "full", scope);
	else
		snprintf(s, sizeof s, "CPython %s, profile function, %s, %s%s%s", py_version,
			 py_hot.stacks_only ? "stacks" : "full", scope, why ? "; " : "", why ? why : "");
	py_on = 1;
	set_status(s);
	return 1;
}

/* cuprof_python_off records why an interpreter that ran the bootstrap
 * cannot have its frames recorded (PyPy, ...). */
CUPROF_EXPORT void cuprof_python_off(const char *why)
{
	if (py_started || !why)
		return;
	py_started = 1;
	if (!cuprof_active())
		return;
	set_status(why);
}
