# The cuprof Python module's pass_through (python/cuprof) under cuprof
# record and without it: cuGetErrorName(SEQ) calls, SEQ kept in the trace's
# flags, recorded or passed through as the program switches the set (seq
# 4-6 inside a frame, work).
#   seq 0      recorded
#   seq 1-2    passed through (pass_through)
#   seq 3      recorded (pass_through(*before))
#   seq 4-6    passed through (passing_through, in work)
#   seq 7      recorded
import ctypes
import warnings

import cuda
import cuprof

cu = cuda.cu
s = ctypes.c_char_p()


def seq(n):
    cu.cuGetErrorName(n, ctypes.byref(s))


def work(first, n):
    for i in range(first, first + n):
        seq(i)


errors = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    cuda.init()
    seq(0)
    before = cuprof.pass_through("cuGetErrorName")
    now = cuprof.passed_through()
    seq(1)
    seq(2)
    for bad in ("cuNoSuchCall", "cuMemAlloc"):
        try:
            cuprof.pass_through(bad)
        except ValueError as e:
            errors.append(bad + ": " + str(e).split(": ", 1)[1][:24])
    kept = cuprof.passed_through()
    cuprof.pass_through(*before) if before is not None else None
    seq(3)
    with cuprof.passing_through("cuGetErrorName, cuStreamQuery"):
        inner = cuprof.passed_through()
        work(4, 3)
    after = cuprof.passed_through()
    seq(7)

print("before", before, "now", now, "kept", kept, "inner", inner, "after", after)
print("errors", errors)
print("warnings", len([w for w in caught if "cuprof" in str(w.message)]))
