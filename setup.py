"""Here to ship ``failsecure-auto.pth`` at the root of site-packages (the drop-in
bootstrap) and to build the optional ``failsecure._spin`` (the guard's caller waits for
its batch without the GIL for a moment; without a compiler the guard polls in Python);
everything else is in pyproject.toml."""

import os

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

PTH = "failsecure-auto.pth"


class build_py_with_pth(build_py):
    def run(self):
        super().run()
        self.copy_file(PTH, os.path.join(self.build_lib, PTH), preserve_mode=0)

    def get_outputs(self, include_bytecode=1):
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, PTH)]

    def get_output_mapping(self):
        mapping = super().get_output_mapping()
        mapping[os.path.join(self.build_lib, PTH)] = PTH
        return mapping


# POSIX only (clock_gettime, sched_yield); optional: a failed build is a warning, and the
# guard then polls in Python.
SPIN = [Extension("failsecure._spin", ["src/failsecure/_spin.c"], optional=True)] if os.name == "posix" else []

setup(cmdclass={"build_py": build_py_with_pth}, ext_modules=SPIN)
