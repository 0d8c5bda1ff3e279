"""Build of the core's Cython extensions (the executor loop, the thread setting and the CPU
kernels of the core's own ops, headrace.core_ops); the metadata and the list of modules
([tool.headrace.kernels]) are in pyproject.toml."""
import os
import runpy

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
os.chdir(here)
# headrace/build.py by path: importing the package would need its runtime dependencies.
part_build = runpy.run_path(os.path.join("headrace", "build.py"))["part_build"]
# The kernels cimport headrace/kernels/*.pxd from this source tree (the working directory).
setup(**part_build(include_path=[here], include_dirs=[here]))
