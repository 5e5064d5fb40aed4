# A thread alive before cuprof's hooks start (with python -S the bootstrap
# runs when the script imports it, after starting the thread) and one
# started after; both call the driver from their own functions.
import sys
import threading

import cuda

go = threading.Event()


def early_call():
    cuda.init()
    cuda.create_stream().close()


def early_thread():
    go.wait()
    early_call()


def late_call():
    cuda.init()
    cuda.create_stream().close()


def late_thread():
    late_call()


t1 = threading.Thread(target=early_thread)
t1.start()
if "--boot" in sys.argv:
    try:
        import sitecustomize  # noqa: F401  (cuprof's bootstrap, skipped by -S)
    except ImportError:
        pass
go.set()
t1.join()
t2 = threading.Thread(target=late_thread)
t2.start()
t2.join()
print("threads done")
