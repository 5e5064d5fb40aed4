# A frame longer than the ring head's 32-bit duration (2^32 clock ticks: about
# 2 s at 2.1 GHz, 4.3 s on the monotonic clock): the shim writes it in the
# three-slot form. argv[1]: seconds to sleep.
import sys
import time
import cuda


def long_call(seconds):
    cuda.check(cuda.cu.cuCtxSynchronize())
    time.sleep(seconds)


cuda.init()
long_call(float(sys.argv[1]))
print("done")
