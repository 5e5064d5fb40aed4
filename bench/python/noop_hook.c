/*
 * C-level no-op hooks for bench/python/events.py: the cost of CPython's own
 * hook machinery without any work in the callback. No Python header: only
 * the shapes of the callbacks matter, and the two C API symbols used are
 * found with dlsym in the running interpreter.
 *
 *   cuprof_bench_noop_hook   a Py_tracefunc for PyEval_SetProfile:
 *                            int (*)(PyObject *, PyFrameObject *, int, PyObject *)
 *   cuprof_bench_noop_fast   a METH_FASTCALL function returning None, made
 *                            into a builtin by events.py (PyCFunction_NewEx)
 *                            to be a sys.monitoring callback
 *
 *   gcc -O2 -shared -fPIC -o noop_hook.so noop_hook.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

int cuprof_bench_noop_hook(void *obj, void *frame, int what, void *arg)
{
	(void)obj;
	(void)frame;
	(void)what;
	(void)arg;
	return 0;
}

static void *none;
static void (*incref)(void *);

void *cuprof_bench_noop_fast(void *self, void *const *args, ptrdiff_t nargs)
{
	(void)self;
	(void)args;
	(void)nargs;
	if (!none) {
		/* Called with the GIL held; a race only repeats the same lookups. */
		incref = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_IncRef");
		none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
		if (!none || !incref)
			return NULL; /* no exception set: CPython reports a SystemError */
	}
	incref(none);
	return none;
}
