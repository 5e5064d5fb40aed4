"""The streamcreate seed comparison with cuda.core (1.2) and cuda.bindings:
Device.create_stream() (options object, Stream object with its finalizer)
against cuStreamCreate/cuStreamDestroy called directly. Same table as
examples/streamcreate.

    python3 streamcreate_cudacore.py [-n 1000]
"""

import argparse

try:
    from cuda.core import Device, StreamOptions
except ImportError:  # cuda.core before 1.0
    from cuda.core.experimental import Device, StreamOptions
from cuda.bindings import driver

from _percall import header, measure, row


def direct():
    err, s = driver.cuStreamCreate(0)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(err)
    (err,) = driver.cuStreamDestroy(s)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(err)


def heavy(dev):
    s = dev.create_stream(options=StreamOptions(nonblocking=True))
    s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--device", type=int, default=0)
    a = ap.parse_args()
    dev = Device(a.device)
    dev.set_current()
    print(f"device {a.device}: {dev.name} (cuda.core), {a.n} calls per variant\n")
    header()
    row(measure("direct: cuStreamCreate + cuStreamDestroy", direct, a.n, a.warmup))
    row(measure("heavy: dev.create_stream(options) + close", lambda: heavy(dev), a.n, a.warmup))
    row(measure("heavy, no close (finalizer destroys)", lambda: dev.create_stream(), a.n, a.warmup))


if __name__ == "__main__":
    main()
