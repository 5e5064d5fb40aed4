# __del__ calls the driver while the interpreter tears the module down.
import ctypes

import cuda


class Holder:
    def __init__(self):
        self.h = ctypes.c_void_p()
        cuda.check(cuda.cu.cuStreamCreate(ctypes.byref(self.h), 0))

    def __del__(self):
        cuda.cu.cuStreamDestroy_v2(self.h)


cuda.init()
keep = Holder()  # a module global: destroyed at interpreter teardown
print("end of program")
