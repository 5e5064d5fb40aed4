"""numba-cuda's device array, stream and synchronize on the simulated driver
(internal/record TestPyLibsNumba): no kernel is compiled, so no NVVM,
NVRTC or nvJitLink is needed."""
import numpy as np
from numba import cuda


def work():
    a = cuda.device_array(10, dtype=np.float32)
    s = cuda.stream()
    cuda.synchronize()
    return a, s


def main():
    for _ in range(3):
        a, s = work()
    print("array", a.shape, a.dtype, "device", cuda.get_current_device().name.decode() if isinstance(cuda.get_current_device().name, bytes) else cuda.get_current_device().name)


main()
