"""Build of the core's Cython extensions (the executor loop and the CPU kernels of the core's
own ops, headrace.core_ops); metadata is in pyproject.toml."""
import glob
import os
import runpy

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
os.chdir(here)
# headrace/build.py by path: importing the package would need its runtime dependencies.
kernel_build = runpy.run_path(os.path.join("headrace", "build.py"))["kernel_build"]
# The kernels cimport headrace/kernels/common.pxd from this source tree (the working directory).
sources = ["headrace/runtime/_loop.pyx", "headrace/kernels/threads.pyx",
           *sorted(glob.glob(os.path.join("headrace", "core_ops", "kernels", "cpu", "*.pyx")))]
setup(**kernel_build("headrace", "headrace", sources, include_path=[here]))
