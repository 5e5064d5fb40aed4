import timeit
from cuda.core import Device
import cupy as cp
d = Device(); d.set_current(); s = d.create_stream(); mr = d.memory_resource
for stmt in ["d.create_stream()", "mr.allocate(10, stream=s)", "cp.cuda.Stream()", "cp.empty(10)"]:
    t = min(timeit.repeat(stmt, number=2000, repeat=3, globals=globals()))
    print(f"{stmt}: {t/2000*1e6:.3f} us")
