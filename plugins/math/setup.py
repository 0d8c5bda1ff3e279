"""Build of the plugin's Cython CPU kernels; metadata is in pyproject.toml."""
import glob
import importlib.util
import os
import runpy

from setuptools import setup

PKG = "headrace_math"
here = os.path.dirname(os.path.abspath(__file__))
os.chdir(here)
# The shared kernel helpers (headrace/kernels/common.pxd) and the build (headrace/build.py):
# from the core's sources when built inside the repository, else from the installed core.
CORE = os.path.join(here, "..", "..", "packages", "headrace")
INCLUDE = [CORE] if os.path.isdir(os.path.join(CORE, "headrace", "kernels")) else []
kernel_build = (runpy.run_path(os.path.join(CORE, "headrace", "build.py"))["kernel_build"]
                if INCLUDE else importlib.import_module("headrace.build").kernel_build)
# ... and for C, the directory holding the `headrace` package (fastmath.h is included as
# "headrace/kernels/fastmath.h"); find_spec locates the installed core without importing it.
C_INCLUDE = INCLUDE or [
    os.path.dirname(os.path.dirname(importlib.util.find_spec("headrace").origin))]
# No FP traps and no errno from libm: lets the compiler if-convert the kernels'
# NaN-aware selects and inline sqrt, so those loops vectorize. Results are unchanged (neither is
# -ffast-math: no reassociation, NaN/inf kept).
sources = sorted(glob.glob(os.path.join(PKG, "kernels", "cpu", "*.pyx")))
setup(**kernel_build("headrace-math", PKG, sources, include_path=INCLUDE,
                     include_dirs=C_INCLUDE,
                     extra_compile_args=("-fno-trapping-math", "-fno-math-errno")))
