import sys
import cuda


def main():
    for i in range(20):
        s = cuda.create_stream()
        s.close()
    try:
        fail()
    except cuda.CUDAError as e:
        print("error:", e)


def fail():
    cuda.check(cuda.cu.cuStreamDestroy_v2(None))


def gen():
    for i in range(3):
        h = cuda.ctypes.c_void_p()
        cuda.check(cuda.cu.cuStreamCreate(cuda.ctypes.byref(h), 0))
        yield h


cuda.init()
for h in gen():
    cuda.check(cuda.cu.cuStreamDestroy_v2(h))
main()
print("done", file=sys.stderr)
