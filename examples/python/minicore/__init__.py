"""minicore: a pure-Python CUDA wrapper over ctypes, the seed of the Python benchmarks.

Two wrappers make the same driver calls (libcuda.so.1 through ctypes):

  minicore.core   in the style of cuda.core 0.3: an options dataclass parsed
                  per call (check_or_create_options), a weakref.finalize
                  registered per object, the bindings' result tuples checked
                  by handle_return after every call (a typed CUDAError, named
                  with cuGetErrorName on failure);
  minicore.lean   the same operations as plain functions: no options object,
                  no finalizer, one integer comparison per call.

examples/python/wrappers_ctypes.py times both; `cuprof record` of it shows
where the heavy wrapper's extra time goes. It runs on the real driver and, on
a machine without a GPU, under `cuprof record --sim` on cuprof's simulated
driver.

Why an imitation still, now that the real cuda.core 1.x runs on the
simulated driver in the tests (docs/python.md, "Real libraries"): cuda.core
1.x is Cython, so its helpers (option parsing, finalizers, result checks)
are cdef code that no Python hook sees; minicore.core's helpers are Python
functions, whose frames are what the tests of the frames' attribution
(TestTimeitMinicore, the helper rule of docs/python.md) check against the
program's own timing. minicore.lean is also the lean side that real
cuda.core is compared with (cmd/cuprof TestTimeitPyLibs).
"""
