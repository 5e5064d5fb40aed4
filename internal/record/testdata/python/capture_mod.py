# The cuprof Python module (python/cuprof) under cuprof record
# --capture-range=profiler-api and without it: cuGetErrorName(SEQ) calls,
# SEQ kept in the trace's flags, inside and outside its capture ranges, and
# the IPython magics through a stand-in for IPython's shell.
import ctypes
import warnings

import cuda
import cuprof

cu = cuda.cu
s = ctypes.c_char_p()


def seq(n):
    cu.cuGetErrorName(n, ctypes.byref(s))


def work(n):  # a frame inside a range
    seq(n)


class FakeShell:
    """What load_ipython_extension and the magics use of IPython's shell."""

    def __init__(self):
        self.magics = {}
        self.ns = {"work": work}

    def register_magic_function(self, func, magic_kind, magic_name):
        self.magics[(magic_kind, magic_name)] = func

    def run_cell(self, code):
        exec(code, self.ns)


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    cuda.init()
    stream = cuda.Stream()  # created before the range, destroyed inside it
    seq(1000)
    work(1001)
    with cuprof.capture("block"):
        work(0)
        seq(1)
        stream.close()
    seq(1002)
    opened = cuprof.start()
    work(2)
    closed = cuprof.stop()
    work(1003)
    ip = FakeShell()
    cuprof.load_ipython_extension(ip)
    magic = ip.magics[("line_cell", "cuprof")]
    magic("work(3)")
    magic("cell", "work(4)\nwork(5)\n")
    work(1004)

print("recording", cuprof.recording(), "mode", cuprof.mode(), "start", opened, "stop", closed)
print("warnings", len([w for w in caught if "cuprof" in str(w.message)]))
