# The interpreter shuts down while a daemon thread is inside a driver call
# (cuCtxSynchronize costs seconds in the simulated driver, CUPROF_SIM_COSTS).
import threading
import time

import cuda

started = threading.Event()


def blocked():
    started.set()
    cuda.cu.cuCtxSynchronize()


def daemon_main():
    cuda.init()
    blocked()


t = threading.Thread(target=daemon_main, daemon=True)
t.start()
started.wait()
time.sleep(0.05)
print("main exits")
