# cProfile (and, on 3.12+, another sys.monitoring tool) active in the same
# process as cuprof.
import cProfile
import sys

import cuda


def work():
    cuda.create_stream().close()


cuda.init()
pr = cProfile.Profile()
pr.enable()
for _ in range(5):
    work()
pr.disable()
print("cProfile saw work:", any(getattr(s.code, "co_name", "") == "work" for s in pr.getstats()))
if sys.version_info >= (3, 12):
    M = sys.monitoring
    seen = set()
    M.use_tool_id(M.COVERAGE_ID, "test")
    M.register_callback(M.COVERAGE_ID, M.events.PY_START, lambda code, off: seen.add(code.co_name))
    M.set_events(M.COVERAGE_ID, M.events.PY_START)
    work()
    M.set_events(M.COVERAGE_ID, 0)
    M.free_tool_id(M.COVERAGE_ID)
    print("the other tool saw work:", "work" in seen)
print("profilers done")
