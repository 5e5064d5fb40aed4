"""The tempbuffer seed comparison with cuda.core (1.2): the way cuda.cccl's
TemporaryStorageBuffer allocated (set the device current, create a stream,
allocate on it, free, close the stream, every call) against a direct
stream-ordered allocation on a long-lived stream, with the device's memory
pool release threshold at its maximum and at 0, without and with a
synchronize. Same table as examples/tempbuffer.

    python3 tempbuffer_cudacore.py [-n 1000]
    cuprof record -- python3 tempbuffer_cudacore.py
"""

import argparse

try:
    from cuda.core import Device
except ImportError:  # cuda.core before 1.0
    from cuda.core.experimental import Device
from cuda.bindings import driver

from _percall import header, measure, row

MAX = 2**64 - 1


def check(result):
    err = result[0]
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver error {err}")
    return result[1:]


def set_release_threshold(ordinal, value):
    (pool,) = check(driver.cuDeviceGetMemPool(ordinal))
    check(driver.cuMemPoolSetAttribute(
        pool, driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, driver.cuuint64_t(value)))


def temp_buffer(dev, mr, size, sync):
    dev.set_current()
    s = dev.create_stream()
    buf = mr.allocate(size, stream=s)
    buf.close(s)
    if sync:
        dev.sync()
    s.close()


def direct(dev, mr, s, size, sync):
    buf = mr.allocate(size, stream=s)
    buf.close(s)
    if sync:
        dev.sync()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000, help="timed calls per variant")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--size", type=int, default=10)
    ap.add_argument("--device", type=int, default=0)
    a = ap.parse_args()

    dev = Device(a.device)
    dev.set_current()
    mr = dev.memory_resource
    long_lived = dev.create_stream()
    print(f"device {a.device}: {dev.name} (cuda.core), {a.size}-byte allocations, {a.n} calls per variant\n")
    header()
    for temp in (True, False):
        for threshold in (MAX, 0):
            for sync in (False, True):
                set_release_threshold(a.device, threshold)
                dev.sync()
                name = ("tempbuffer (set+stream+alloc+destroy)" if temp else "direct alloc on a stream")
                name += " thr=" + ("max" if threshold == MAX else "0") + (" +sync" if sync else "")
                if temp:
                    fn = lambda: temp_buffer(dev, mr, a.size, sync)
                else:
                    fn = lambda: direct(dev, mr, long_lived, a.size, sync)
                row(measure(name, fn, a.n, a.warmup))
    long_lived.close()


if __name__ == "__main__":
    main()
