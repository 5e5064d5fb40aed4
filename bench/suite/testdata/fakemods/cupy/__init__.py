# A stand-in for CuPy with just what seeds.py touches, for selftest.sh on machines without a GPU.
__version__ = "0.fake"
int8 = "int8"
def empty(n, dtype=None):
    return bytearray(n)
from . import cuda
