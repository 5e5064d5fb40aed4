# A program with sys.monitoring tools of its own on the unnamed ids 3 and 4
# (CPython 3.12+), as a program's own tool picks them: it must get both
# while cuprof records it.
import sys

import cuda


def work():
    cuda.create_stream().close()


cuda.init()
if sys.version_info >= (3, 12):
    M = sys.monitoring
    seen = set()
    for tool in (3, 4):
        M.use_tool_id(tool, "the program's tool %d" % tool)
        M.register_callback(tool, M.events.PY_START, lambda code, off: seen.add(code.co_name))
        M.set_events(tool, M.events.PY_START)
    work()
    for tool in (3, 4):
        M.set_events(tool, 0)
        M.free_tool_id(tool)
    print("the program's tools saw work:", "work" in seen)
else:
    work()
print("tool ids done")
