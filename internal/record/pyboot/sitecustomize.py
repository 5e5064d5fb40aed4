# cuprof's bootstrap (written by `cuprof record` into a private directory put
# first on PYTHONPATH for the recorded program only). It starts the Python
# frame hooks of the preloaded shim, then runs the program's own
# sitecustomize, the next one on sys.path, as if this one were not there.
def _cuprof_bootstrap():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        import ctypes

        shim = ctypes.PyDLL(None)
        if sys.implementation.name != "cpython":
            off = shim.cuprof_python_off
            off.argtypes = (ctypes.c_char_p,)
            off.restype = None
            why = "%s %s: frames off (not CPython)" % (
                sys.implementation.name, ".".join(map(str, sys.implementation.version[:3])))
            off(why.encode("utf-8", "replace"))
        else:
            start = shim.cuprof_python_start
            start.argtypes = (ctypes.py_object, ctypes.py_object)
            start.restype = ctypes.c_int

            def empty():
                pass

            def loop(n, f=empty):
                for _ in range(n):
                    f()

            start(loop, (0).bit_length)
    except Exception:
        pass  # no shim (a program run outside cuprof with this path): nothing to do

    # The program's own sitecustomize, if any, found past this directory.
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path[:] = path
    try:
        import importlib.machinery
        import importlib.util

        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    except Exception:
        spec = None
    if spec is None or spec.loader is None:
        return
    # The import of this module returns what sys.modules holds once it ran
    # (importlib supports that replacement): the program's module. Its
    # errors reach site.py, which reports them as it would have.
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)


_cuprof_bootstrap()
del _cuprof_bootstrap
