"""The seed statements with the real cuda.core and nvtx (internal/record
TestPyLibsSeed): per round, set_current, create_stream, allocate(10) on the
stream and its close, inside an nvtx range; then the stream's close.
Prints what the program saw, the same with and without cuprof."""
import sys

import nvtx
from cuda.core import Device, DeviceMemoryResource

ROUNDS = 5


def seed(dev, mr):
    with nvtx.annotate("seed", domain="pylibs"):
        dev.set_current()
        s = dev.create_stream()
        b = mr.allocate(10, stream=s)
        size = b.size
        b.close()
        s.close()
    return size


def main():
    dev = Device(0)
    dev.set_current()
    mr = DeviceMemoryResource(dev.device_id)
    sizes = []
    for _ in range(ROUNDS):  # a loop, not a comprehension: no frame of its own before 3.12
        sizes.append(seed(dev, mr))
    print("device", dev.device_id, dev.name, "cc", dev.compute_capability, "uuid", dev.uuid)
    print("allocated", sizes)
    print("python", sys.version_info[:2] >= (3, 10))


main()
