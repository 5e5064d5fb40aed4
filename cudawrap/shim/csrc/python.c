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
 * The C ABI the bootstrap calls and the start and stop are here; the
 * shadow stacks are py_stack.c's, the callbacks py_monitoring.c's (3.12+)
 * and py_evalframe.c's (3.10, 3.11), what they share python_internal.h's.
 *
 * Every callback runs with the GIL held (free-threaded builds are off), so
 * the per-code and per-callable state needs no lock; the registry of
 * threads has one, for thread exit and fork.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python_internal.h"

struct py_api pyapi;

static int py_on;          /* hooks installed and running */
int py_final;              /* past the stop: the C API is not called again */
static int py_started;     /* cuprof_python_start was called */
static int py_monitoring;  /* 3.12+: sys.monitoring, else the frame evaluation hook */
Py_ssize_t py_extra = -1;
static char py_status[CUPROF_PY_STATUS_MAX];
struct cuprof_py_costs py_calib;
static char py_version[32];

static void set_status(const char *s)
{
	snprintf(py_status, sizeof py_status, "%s", s);
	cuprof_py_publish(py_status, &py_calib);
}

/* set_version keeps the version number of Py_GetVersion's full text. */
static void set_version(const char *full)
{
	snprintf(py_version, sizeof py_version, "%s", full);
	char *sp = strchr(py_version, ' ');
	if (sp)
		*sp = 0;
}

static PyObject *py_stop(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	if (py_hot.stopped || !py_on)
		return ret_none();
	py_hot.stopped = 1; /* callbacks return at once from now on */
	py_flush_open();
	py_final = 1;
	py_release_held();
	if (py_monitoring && py_mon) {
		PyObject *r = pyapi.CallMethod(py_mon, "set_events", "ii", py_tool, 0);
		if (r)
			pyapi.DecRef(r);
		r = pyapi.CallMethod(py_mon, "free_tool_id", "i", py_tool);
		if (r)
			pyapi.DecRef(r);
		pyapi.Clear();
	}
	/* The frame evaluation hook (<3.12) stays: it passes every frame on
	 * from now on, and removing it could remove another tool's set after
	 * it. */
	return ret_none();
}

/* ring_opened publishes the status in a new ring (a fork child's) and
 * tells, once, that Python ran without the bootstrap. */
static void ring_opened(void)
{
	if (py_status[0]) {
		cuprof_py_publish(py_status, &py_calib);
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
	cuprof_py_publish(py_status, NULL);
}

static void at_exit(void)
{
	if (!py_status[0] && !py_started && cuprof_tls.locked == 0)
		ring_opened();
}

CUPROF_LIFECYCLE(python_lifecycle) = {
	.ring_opened = ring_opened,
	.at_exit = at_exit,
	.fork_prepare = py_fork_prepare,
	.fork_parent = py_fork_parent,
	.fork_child = py_fork_child,
};

/* ---- start ---- */

static PyMethodDef def_stop = {"cuprof_py_stop", (void *)py_stop, METH_FASTCALL, NULL};

#define SYM(field, name) (*(void **)&pyapi.field = dlsym(RTLD_DEFAULT, name))

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
	SYM(InterpGet, "PyInterpreterState_Get");
	SYM(InterpMain, "PyInterpreterState_Main");
	SYM(FrameGetCode, "PyFrame_GetCode");
	SYM(ThreadHead, "PyInterpreterState_ThreadHead");
	SYM(ThreadNext, "PyThreadState_Next");
	SYM(SetProfileTS, "_PyEval_SetProfile");
	SYM(SetProfile, "PyEval_SetProfile");
	SYM(GetEvalFrame, "_PyInterpreterState_GetEvalFrameFunc");
	SYM(SetEvalFrame, "_PyInterpreterState_SetEvalFrameFunc");
	SYM(None, "_Py_NoneStruct");
	SYM(CodeType, "PyCode_Type");
	SYM(FunctionType, "PyFunction_Type");
	SYM(MethodType, "PyMethod_Type");
	SYM(CFunctionType, "PyCFunction_Type");
	SYM(CMethodType, "PyCMethod_Type");
	SYM(MethodDescrType, "PyMethodDescr_Type");
	SYM(ClassMethodDescrType, "PyClassMethodDescr_Type");
	SYM(WrapperDescrType, "PyWrapperDescr_Type");
	SYM(MethodWrapperType, "_PyMethodWrapper_Type");
	SYM(UnicodeType, "PyUnicode_Type");
	return pyapi.IsInitialized && pyapi.GetVersion && pyapi.ImportModule && pyapi.GetAttrString &&
	       pyapi.CallMethod && pyapi.CallFunction && pyapi.CFunctionNew && pyapi.IncRef && pyapi.DecRef &&
	       pyapi.AsUTF8 && pyapi.AsLong && pyapi.Fetch && pyapi.Restore && pyapi.Clear && pyapi.GetGlobals &&
	       pyapi.DictGetItemString && pyapi.ImportGetModuleDict && pyapi.TypeGetFlags && pyapi.IsSubtype &&
	       pyapi.GetExtra && pyapi.SetExtra && pyapi.RequestExtraIndex && pyapi.InterpGet && pyapi.InterpMain &&
	       pyapi.None && pyapi.CodeType && pyapi.FrameGetCode && pyapi.ThreadHead && pyapi.ThreadNext &&
	       pyapi.SetProfile &&
	       pyapi.FunctionType && pyapi.MethodType && pyapi.CFunctionType && pyapi.MethodDescrType &&
	       pyapi.ClassMethodDescrType && pyapi.WrapperDescrType && pyapi.UnicodeType;
}

/* time_loop returns the least ticks of 11 runs of loop(n, f), 0 when it
 * fails. inside gets, for the fastest run, the ticks of the frames of
 * loop's callee, Python [0] and C-level [1], as py_write_frame_slow adds
 * them up while calibrating (those of a slower run hold what else the
 * machine did). */
static uint64_t time_loop(PyObject *loop, int n, PyObject *f, uint64_t inside[2])
{
	uint64_t best = UINT64_MAX;
	for (int k = 0; k < 11; k++) {
		memset(py_calib_inside_ticks, 0, sizeof py_calib_inside_ticks);
		uint64_t t0 = cuprof_clock();
		PyObject *r = f ? pyapi.CallFunction(loop, "iO", n, f) : pyapi.CallFunction(loop, "i", n);
		uint64_t t1 = cuprof_clock();
		if (!r) {
			pyapi.Clear();
			return 0;
		}
		pyapi.DecRef(r);
		if (t1 - t0 < best) {
			best = t1 - t0;
			if (inside)
				memcpy(inside, py_calib_inside_ticks, sizeof py_calib_inside_ticks);
		}
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

/* per_call returns (on - off) / calls in ticks x 1000, 0 when on is not
 * above off or either is unknown. */
static uint64_t per_call(uint64_t on, uint64_t off, uint64_t calls)
{
	return on > off && off ? (on - off) * 1000 / calls : 0;
}

/* calibrate measures what the hooks cost (struct cuprof_py_costs) with
 * loop(n, f), which calls f n times: f NULL, an empty Python function;
 * cfunc, a C-level callable (3.12+ full mode). off and coff are the loops'
 * ticks with the hooks not yet installed. The hooks are on. */
static void calibrate(PyObject *loop, PyObject *cfunc, int n, uint64_t off, uint64_t coff)
{
	uint64_t inside[2] = {0, 0};
	/* 4 MiB, more than a second-level cache: a ring's slots are new to
	 * the cache every other frame. */
	py_calib_slots = (4u << 20) / sizeof(struct cuprof_rec);
	py_calib_area = malloc(py_calib_slots * sizeof(struct cuprof_rec));
	if (py_calib_area)
		memset(py_calib_area, 0, py_calib_slots * sizeof(struct cuprof_rec)); /* its pages faulted in now */
	/* C-level first: on 3.12+ the loop's call site gets DISABLE for its
	 * CALL events once it calls a Python function. */
	if (coff) {
		py_hot.calibrating = CALIB_WRITTEN;
		py_calib.c_event_mt = per_call(time_loop(loop, n, cfunc, inside), coff, 2 * (uint64_t)n);
		py_calib.c_inside_mt = inside[1] * 1000 / (uint64_t)n;
		py_hot.calibrating = CALIB_HIDDEN;
		py_calib.c_hidden_mt = per_call(time_loop(loop, n, cfunc, NULL), coff, n);
	}
	py_hot.calibrating = CALIB_WRITTEN;
	py_calib.event_mt = per_call(time_loop(loop, n, NULL, inside), off, 2 * (uint64_t)n);
	py_calib.inside_mt = inside[0] * 1000 / (uint64_t)n;
	py_hot.calibrating = CALIB_HIDDEN;
	py_calib.hidden_mt = per_call(time_loop(loop, n, NULL, NULL), off, n);
	/* Last: on 3.12+ it turns the loop's code off for good. */
	py_hot.calibrating = CALIB_LONE;
	py_calib.lone_mt = per_call(time_loop(loop, n, NULL, NULL), off, n);
	py_hot.calibrating = 0;
	free(py_calib_area);
	py_calib_area = NULL;
	/* No frame costs less than none. */
	if (!py_calib.event_mt)
		memset(&py_calib, 0, sizeof py_calib);
}

/*
 * cuprof_python_start is called by the bootstrap, holding the GIL, with a
 * Python function loop(n, f=empty) that calls f (an empty function by
 * default) n times, and a C-level callable cfunc that takes no argument
 * (for the calibration; None or NULL: C-level frames are not calibrated).
 * It returns 1 when frames are recorded, else 0 (the reason is in the
 * trace's Process.Python).
 */
CUPROF_EXPORT int cuprof_python_start(PyObject *loop, PyObject *cfunc)
{
	if (py_started)
		return py_on;
	if (!resolve()) {
		py_started = 1;
		if (cuprof_active())
			set_status("Python: frames off (the C API of this interpreter was not found)");
		return 0;
	}
	py_hot.none = pyapi.None;
	py_hot.function_type = pyapi.FunctionType;
	py_hot.method_type = pyapi.MethodType;
	if (pyapi.InterpGet() != pyapi.InterpMain())
		return 0; /* a subinterpreter's site: the main one has (or has not) started */
	py_started = 1;
	if (!cuprof_active())
		return 0;
	parse_options();
	set_version(pyapi.GetVersion());
	int major = 0, minor = 0;
	sscanf(py_version, "%d.%d", &major, &minor);
	char s[CUPROF_PY_STATUS_MAX];
	if (strstr(pyapi.GetVersion(), "free-threading")) {
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
	py_extra = pyapi.RequestExtraIndex(py_free_code);
	if (py_extra < 0) {
		pyapi.Clear();
		snprintf(s, sizeof s, "CPython %s: frames off (no code extra index left)", py_version);
		set_status(s);
		return 0;
	}
	py_key_ok = pthread_key_create(&py_key, py_thread_exit) == 0;

	/* Calibrate: the loops with hooks off, then on (calibrate). C-level
	 * frames only where the hooks see them: 3.12+, full mode. */
	int n = 2000;
	if (cfunc == pyapi.None || py_hot.stacks_only)
		cfunc = NULL;
	uint64_t off = loop ? time_loop(loop, n, NULL, NULL) : 0;
	uint64_t coff = loop && cfunc ? time_loop(loop, n, cfunc, NULL) : 0;
	const char *why = NULL;
	py_hot.calibrating = CALIB_WRITTEN;
	/* 3.10/3.11: the frame evaluation hook with --python=stacks (no
	 * C-level frames asked for; nothing paid per bytecode), else the
	 * profile function (its C_CALL events are the only way to see a
	 * Cython function's frame there). */
	int eval_hook = !py_monitoring && py_hot.stacks_only;
	int err = py_monitoring ? py_install_monitoring(&why)
		  : eval_hook	? py_install_eval(&why)
				: py_install_profile(&why);
	if (err < 0) {
		py_hot.calibrating = 0;
		pyapi.Clear();
		snprintf(s, sizeof s, "CPython %s: frames off (%s)", py_version, why);
		set_status(s);
		return 0;
	}
	if (!py_monitoring && !eval_hook)
		pyapi.SetProfile(py_prof_func, NULL);
	if (loop && off)
		calibrate(loop, cfunc, n, off, coff);
	py_hot.calibrating = 0;
	/* Frames of the calibration are not in the trace; the scratch state of
	 * its code objects is forgotten with them. */
	struct py_thread *th = py_tls;
	if (th) {
		while (th->depth) {
			th->depth--;
			th->stack[th->depth].s->active--;
		}
	}
	PyObject *atexit_mod = pyapi.ImportModule("atexit");
	PyObject *stop = new_func(&def_stop);
	if (atexit_mod && stop)
		CALL_METHOD(atexit_mod, "register", "O", stop);
	pyapi.Clear();
	if (atexit_mod)
		pyapi.DecRef(atexit_mod);
	if (stop)
		pyapi.DecRef(stop);
	char scope[48];
	if (py_hot.scope_all)
		snprintf(scope, sizeof scope, "scope all");
	else
		snprintf(scope, sizeof scope, "scope cuda (%u)", py_hot.threshold);
	if (py_monitoring)
		snprintf(s, sizeof s, "CPython %s, sys.monitoring tool %d, %s, %s", py_version, py_tool,
			 py_hot.stacks_only ? "stacks" : "full", scope);
	else
		snprintf(s, sizeof s, "CPython %s, %s, %s, %s%s%s", py_version,
			 eval_hook ? "frame evaluation hook" : "profile function", py_hot.stacks_only ? "stacks" : "full",
			 scope, why ? "; " : "", why ? why : "");
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
