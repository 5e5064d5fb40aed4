# The child of a fork keeps recording: its driver calls sit under its frames.
import os
import sys

import cuda


def child_work():
    cuda.create_stream().close()


def main():
    cuda.init()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        child_work()
        os._exit(7)
    _, status = os.waitpid(pid, 0)
    child_work()
    print("child exited", os.waitstatus_to_exitcode(status))


main()
