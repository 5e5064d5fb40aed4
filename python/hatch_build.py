"""The wheel's build hook: with CUPROF_WHEEL_BINARY (the cuprof program
built for one platform) and CUPROF_WHEEL_PLATFORM (its wheel platform tag,
such as manylinux_2_34_x86_64), the wheel carries the program as a script,
which pip puts on PATH, and is tagged for that platform; without them it is
the pure-Python wheel of the module alone."""

import os

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CuprofBinaryHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        binary = os.environ.get("CUPROF_WHEEL_BINARY")
        if not binary:
            return
        platform = os.environ.get("CUPROF_WHEEL_PLATFORM")
        if not platform:
            raise RuntimeError("CUPROF_WHEEL_BINARY is set without CUPROF_WHEEL_PLATFORM (e.g. manylinux_2_34_x86_64)")
        if not os.path.isfile(binary):
            raise RuntimeError("CUPROF_WHEEL_BINARY=%s is not a file" % binary)
        build_data["pure_python"] = False
        build_data["tag"] = "py3-none-" + platform
        build_data["shared_scripts"][os.path.abspath(binary)] = "cuprof"
