"""Build of the plugin's Cython CPU kernels; the metadata and the list of modules
([tool.headrace.kernels]) are in pyproject.toml."""
import importlib
import importlib.util
import os
import runpy

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
os.chdir(here)
# The shared kernel helpers (headrace/kernels/*.pxd) and the build (headrace/build.py): from the
# core's sources when built inside the repository, else from the installed core.
CORE = os.path.join(here, "..", "..", "packages", "headrace")
INCLUDE = [CORE] if os.path.isdir(os.path.join(CORE, "headrace", "kernels")) else []
part_build = (runpy.run_path(os.path.join(CORE, "headrace", "build.py"))["part_build"]
              if INCLUDE else importlib.import_module("headrace.build").part_build)
# ... and for C, the directory holding the `headrace` package (fastmath.h is included as
# "headrace/kernels/fastmath.h"); find_spec locates the installed core without importing it.
C_INCLUDE = INCLUDE or [
    os.path.dirname(os.path.dirname(importlib.util.find_spec("headrace").origin))]
setup(**part_build(include_path=INCLUDE, include_dirs=C_INCLUDE))
