# Times its own functions with perf_counter and writes them to argv[1], one
# "name microseconds" line per activation, for the test to compare.
import sys
import time
import cuda

out = []


def spin(us):
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


def work():
    t0 = time.perf_counter()
    spin(200)
    cuda.check(cuda.cu.cuCtxSynchronize())
    t1 = time.perf_counter()
    out.append(("work", (t1 - t0) * 1e6))


def outer():
    t0 = time.perf_counter()
    x = 0
    for i in range(20000):  # outer's own time: no calls
        x += i
    inner = 0.0
    for _ in range(3):
        a = time.perf_counter()
        work()
        inner += time.perf_counter() - a
    t1 = time.perf_counter()
    out.append(("outer", (t1 - t0) * 1e6))
    out.append(("self", (t1 - t0 - inner) * 1e6))  # outer less its calls of work, timed around them


cuda.init()
for _ in range(10):
    outer()
with open(sys.argv[1], "w") as f:
    for name, us in out:
        f.write("%s %.3f\n" % (name, us))
print("ok")
