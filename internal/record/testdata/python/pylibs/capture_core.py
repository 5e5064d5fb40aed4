"""The cuprof module's capture ranges around real cuda.core (internal/record
TestPyLibsCapture): cuprof.capture, then %cuprof and %%cuprof in a real
IPython shell; the seed also runs outside them. Without cuprof record the
module warns once and does nothing."""
import warnings

import cuprof
from cuda.core import Device, DeviceMemoryResource
from IPython.core.interactiveshell import InteractiveShell

dev = Device(0)
dev.set_current()
mr = DeviceMemoryResource(dev.device_id)


def seed():
    s = dev.create_stream()
    b = mr.allocate(10, stream=s)
    b.close()
    s.close()


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    seed()
    with cuprof.capture("block"):
        seed()
    seed()
    ip = InteractiveShell.instance()
    ip.user_ns["seed"] = seed
    ip.run_line_magic("load_ext", "cuprof")
    ip.run_cell("%cuprof seed()")
    ip.run_cell("%%cuprof cell\nseed()\nseed()\n")
    seed()

print("recording", cuprof.recording(), "warnings", len([w for w in caught if "cuprof" in str(w.message)]))
