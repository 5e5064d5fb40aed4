/*
 * The sys.monitoring callbacks (CPython 3.12+): PY_START, PY_RESUME and
 * PY_THROW push a frame of Python code, PY_RETURN, PY_YIELD and PY_UNWIND
 * end it; CALL pushes a frame of a C-level callable (not with
 * --python=stacks), C_RETURN and C_RAISE end it. With scope cuda, code and
 * call sites turned off return sys.monitoring.DISABLE.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "python_internal.h"

PyObject *py_mon;
int py_tool = -1;

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
		pyapi.DecRef(r);
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
		struct py_code *c = py_code_lookup(args[0]);
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
	if (!py_hot.scope_all) { /* calibrating too: what a call costs includes this */
		struct py_code *c = code_state(args[0]);
		if (c && c->h.disabled)
			return ret_disable(); /* code turned off: so are its calls */
		long off = pyapi.AsLong(args[1]);
		if (off < 0) {
			pyapi.Clear();
		} else if (c) {
			uint16_t *sc = site_count(c, (uint32_t)(off / 2));
			if (sc && *sc >= py_hot.threshold && !py_hot.calibrating) {
				*sc = SITE_OFF;
				return ret_disable();
			}
			if (sc)
				site = (uint32_t)(off / 2);
		}
	}
	int cls = py_type_class(tp);
	if (cls == NAT_PYFUNC)
		return ret_disable();
	/* A callable is turned off per call site (above), not everywhere as a
	 * code object is: a builtin (isinstance, len) runs thousands of times
	 * in code that does not lead to CUDA before a wrapper calls it as a
	 * helper, and would lose that frame. */
	struct py_native *n = py_native_state(callable, cls);
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
		struct py_code *c = py_code_lookup(args[0]);
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

static PyMethodDef def_start = {"cuprof_py_start", (void *)mon_start, METH_FASTCALL, NULL};
static PyMethodDef def_throw = {"cuprof_py_throw", (void *)mon_throw, METH_FASTCALL, NULL};
static PyMethodDef def_return = {"cuprof_py_return", (void *)mon_return, METH_FASTCALL, NULL};
static PyMethodDef def_yield = {"cuprof_py_yield", (void *)mon_yield, METH_FASTCALL, NULL};
static PyMethodDef def_unwind = {"cuprof_py_unwind", (void *)mon_unwind, METH_FASTCALL, NULL};
static PyMethodDef def_call = {"cuprof_py_call", (void *)mon_call, METH_FASTCALL, NULL};
static PyMethodDef def_c_return = {"cuprof_py_c_return", (void *)mon_c_return, METH_FASTCALL, NULL};
static PyMethodDef def_c_raise = {"cuprof_py_c_raise", (void *)mon_c_raise, METH_FASTCALL, NULL};

static long event_bit(PyObject *events, const char *name)
{
	PyObject *v = pyapi.GetAttrString(events, name);
	if (!v)
		return -1;
	long b = pyapi.AsLong(v);
	pyapi.DecRef(v);
	return b;
}

/* py_install_monitoring registers the callbacks with a free tool id; it
 * returns 0, or -1 with the reason in why. */
int py_install_monitoring(const char **why)
{
	PyObject *sys = pyapi.ImportModule("sys");
	if (!sys)
		return *why = "no sys module", -1;
	py_mon = pyapi.GetAttrString(sys, "monitoring");
	pyapi.DecRef(sys);
	if (!py_mon)
		return *why = "no sys.monitoring", -1;
	/* OPTIMIZER_ID (5) first: PEP 669 names it for JIT optimizers, which
	 * a traced program does not bring; 3 and 4, which have no name, are
	 * the ones a program's own tool picks, and 0-2 belong to debuggers,
	 * coverage and cProfile (issue 47: a program that then asked for 4
	 * got ValueError). */
	static const int ids[] = {5, 4, 3};
	for (unsigned i = 0; i < sizeof ids / sizeof ids[0] && py_tool < 0; i++) {
		PyObject *r = pyapi.CallMethod(py_mon, "get_tool", "i", ids[i]);
		if (r == pyapi.None)
			py_tool = ids[i];
		if (r)
			pyapi.DecRef(r);
		else
			pyapi.Clear();
	}
	if (py_tool < 0)
		return *why = "no free sys.monitoring tool id: 5, 4 and 3 are taken", -1;
	if (CALL_METHOD(py_mon, "use_tool_id", "is", py_tool, "cuprof") < 0)
		return *why = "sys.monitoring.use_tool_id failed", -1;
	py_hot.disable = pyapi.GetAttrString(py_mon, "DISABLE");
	PyObject *events = pyapi.GetAttrString(py_mon, "events");
	if (!py_hot.disable || !events)
		return *why = "sys.monitoring has no DISABLE or events", -1;
	py_hot.immortal = is_immortal(pyapi.None) && is_immortal(py_hot.disable);
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
			pyapi.DecRef(events);
			return *why = "sys.monitoring callbacks could not be made", -1;
		}
		int err = CALL_METHOD(py_mon, "register_callback", "ilO", py_tool, bit, fn);
		pyapi.DecRef(fn);
		if (err < 0) {
			pyapi.DecRef(events);
			return *why = "sys.monitoring.register_callback failed", -1;
		}
		mask |= bit;
	}
	pyapi.DecRef(events);
	if (CALL_METHOD(py_mon, "set_events", "il", py_tool, mask) < 0)
		return *why = "sys.monitoring.set_events failed", -1;
	return 0;
}

