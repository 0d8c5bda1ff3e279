"""Build of the plugin's Cython CPU kernels; metadata is in pyproject.toml."""
import glob
import importlib.util
import os
import runpy

from setuptools import setup

PKG = "headrace_optim"
here = os.path.dirname(os.path.abspath(__file__))
os.chdir(here)
# The shared kernel helpers (headrace/kernels/common.pxd) and the build (headrace/build.py):
# from the core's sources when built inside the repository, else from the installed core.
CORE = os.path.join(here, "..", "..", "packages", "headrace")
INCLUDE = [CORE] if os.path.isdir(os.path.join(CORE, "headrace", "kernels")) else []
kernel_build = (runpy.run_path(os.path.join(CORE, "headrace", "build.py"))["kernel_build"]
                if INCLUDE else importlib.import_module("headrace.build").kernel_build)
sources = sorted(glob.glob(os.path.join(PKG, "kernels", "cpu", "*.pyx")))
setup(**kernel_build("headrace-optim", PKG, sources, include_path=INCLUDE))
