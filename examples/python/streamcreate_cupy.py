"""The streamcreate seed comparison with CuPy (14): cupy.cuda.Stream()
(object, finalizer destroys it) against cudaStreamCreate/cudaStreamDestroy
through cupy.cuda.runtime.

    python3 streamcreate_cupy.py [-n 1000]
"""

import argparse

import cupy as cp

from _percall import header, measure, row


def direct():
    s = cp.cuda.runtime.streamCreate()
    cp.cuda.runtime.streamDestroy(s)


def heavy():
    s = cp.cuda.Stream(non_blocking=True)
    del s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--device", type=int, default=0)
    a = ap.parse_args()
    cp.cuda.Device(a.device).use()
    print(f"device {a.device} (CuPy {cp.__version__}), {a.n} calls per variant\n")
    header()
    row(measure("direct: runtime.streamCreate + streamDestroy", direct, a.n, a.warmup))
    row(measure("heavy: cupy.cuda.Stream() + del", heavy, a.n, a.warmup))


if __name__ == "__main__":
    main()
