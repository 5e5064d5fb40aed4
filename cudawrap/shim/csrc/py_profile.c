/*
 * The C profile function (CPython 3.10 and 3.11, full mode; stacks mode has
 * the frame evaluation hook, py_evalframe.c): set on every thread alive at
 * start and, through threading.setprofile, on threads started later. Its
 * call and return events push and end frames of Python code and of
 * C-level callables. Its price: while it is set, 3.11 runs every bytecode
 * instruction through its tracing path, deoptimised (pure bytecode 1.70x
 * slower on this project's CPU machine, 3.10 1.14x), a cost per
 * instruction that no calibration per event can take out; but its C_CALL
 * events are the only way to see a C-level callable (a Cython function
 * that passes PyCFunction_Check) on these versions.
 */
#define _GNU_SOURCE
#include <string.h>

#include "python_internal.h"

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
	PyObject *co = pyapi.FrameGetCode(frame);
	if (!co)
		return NULL;
	pyapi.DecRef(co); /* the frame holds it */
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

int py_prof_func(PyObject *obj, PyObject *frame, int what, PyObject *arg)
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
		int cls = py_type_class(TYPE(arg));
		if (cls == NAT_PYFUNC)
			return 0;
		struct py_native *n = py_native_state(arg, cls);
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
	if (!py_hot.stopped && pyapi.SetProfile) {
		pyapi.SetProfile(py_prof_func, NULL);
		if (nargs >= 2 && TYPE(args[1]) == pyapi.UnicodeType) {
			Py_ssize_t n;
			const char *ev = pyapi.AsUTF8(args[1], &n);
			if (ev && strcmp(ev, "call") == 0)
				py_prof_func(NULL, args[0], PYTRACE_CALL, NULL);
			else if (!ev)
				pyapi.Clear();
		}
	}
	return ret_none();
}

static PyMethodDef def_boot = {"cuprof_thread_profile", (void *)thread_boot, METH_FASTCALL, NULL};

/* py_install_profile sets the C profile function on every thread alive and
 * on threads threading starts later; it returns 0 or -1. */
int py_install_profile(const char **why)
{
	if (!pyapi.SetProfileTS)
		return *why = "no _PyEval_SetProfile", -1;
	void *interp = pyapi.InterpGet();
	for (void *ts = pyapi.ThreadHead(interp); ts; ts = pyapi.ThreadNext(ts))
		if (pyapi.SetProfileTS(ts, py_prof_func, NULL) < 0)
			pyapi.Clear();
	PyObject *threading = pyapi.ImportModule("threading");
	PyObject *boot = new_func(&def_boot);
	if (!threading || !boot || CALL_METHOD(threading, "setprofile", "O", boot) < 0) {
		pyapi.Clear();
		*why = "threading.setprofile failed: threads started later are not seen";
	}
	if (threading)
		pyapi.DecRef(threading);
	if (boot)
		pyapi.DecRef(boot);
	return 0;
}
