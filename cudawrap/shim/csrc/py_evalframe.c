/*
 * The frame evaluation hook (PEP 523; CPython 3.10 and 3.11 with --python=stacks;
 * full mode has the profile function, py_profile.c): every Python
 * frame the interpreter evaluates (a call, a generator's or coroutine's
 * resumption) passes through eval_frame, which pushes its activation,
 * evaluates it with the function that was there before (CPython's own, or
 * another tool's) and ends it. Unlike a profile function it costs nothing
 * per bytecode instruction (a profile function made 3.11 run every
 * instruction through its tracing path, deoptimised: pure bytecode 1.7x
 * slower on this project's CPU machine, 3.10 1.14x) and nothing for calls
 * of C-level callables, which it does not see: on 3.10 and 3.11 builtins,
 * method descriptors, class calls, Cython and ctypes functions have no
 * frames (their time is their caller's self time, as without cuprof),
 * which stacks mode does not write anyway.
 * It is set for the main interpreter, so every thread of it is covered.
 */
#define _GNU_SOURCE
#include <string.h>

#include "python_internal.h"

int py_minor;

typedef PyObject *(*py_evalfunc)(void *tstate, void *frame, int throwflag);
static py_evalfunc prev_eval;

/* Where a frame's code and globals are: 3.10's PyFrameObject, 3.11's
 * _PyInterpreterFrame (stable over each version's releases). */
#define OFF_FRAME_GLOBALS_310 48
#define OFF_IFRAME_GLOBALS_311 8

static inline PyObject *eval_code(void *frame)
{
	return *(PyObject **)((char *)frame + (py_minor == 10 ? OFF_FRAME_CODE_310 : OFF_IFRAME_CODE_311));
}

static inline PyObject *eval_globals(void *frame)
{
	return *(PyObject **)((char *)frame + (py_minor == 10 ? OFF_FRAME_GLOBALS_310 : OFF_IFRAME_GLOBALS_311));
}

/* checked: the code read at the offset above is a code object for the
 * first frames; a frame where it is not turns frames off (the hook then
 * only passes frames on). */
static int eval_checked;
static int eval_broken;

static __attribute__((noinline)) int eval_check(PyObject *co)
{
	if (!co || TYPE(co) != pyapi.CodeType) {
		eval_broken = 1;
		return 0;
	}
	eval_checked++;
	return 1;
}

static PyObject *eval_frame(void *tstate, void *frame, int throwflag)
{
	if (__builtin_expect(py_hot.stopped | eval_broken, 0))
		return prev_eval(tstate, frame, throwflag);
	PyObject *co = eval_code(frame);
	if (__builtin_expect(eval_checked < 64, 0) && !eval_check(co))
		return prev_eval(tstate, frame, throwflag);
	struct py_code *c = code_state_in(co, eval_globals(frame));
	if (!c || !start_frame(&c->h, co))
		return prev_eval(tstate, frame, throwflag);
	PyObject *r = prev_eval(tstate, frame, throwflag);
	if (__builtin_expect(!py_hot.stopped, 1))
		end_frame(co, r ? 0 : CUPROF_FRAME_UNWOUND);
	return r;
}

/* py_install_eval sets eval_frame as the main interpreter's frame
 * evaluation function, in front of the one there; it returns 0, or -1
 * with the reason in why. */
int py_install_eval(const char **why)
{
	if (!pyapi.GetEvalFrame || !pyapi.SetEvalFrame || !pyapi.CodeType)
		return *why = "no _PyInterpreterState_SetEvalFrameFunc", -1;
	void *interp = pyapi.InterpMain();
	prev_eval = (py_evalfunc)pyapi.GetEvalFrame(interp);
	if (!prev_eval)
		return *why = "no frame evaluation function", -1;
	pyapi.SetEvalFrame(interp, (void *)eval_frame);
	return 0;
}
