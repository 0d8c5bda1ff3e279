"""Build of the plugin's Cython CPU kernels; metadata is in pyproject.toml."""
import glob
import importlib.util
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

PKG = "headrace_math"
here = os.path.dirname(os.path.abspath(__file__))
os.chdir(here)
# The shared kernel helpers (headrace/kernels/common.pxd): from the core's sources when built
# inside the repository, else from the installed core on sys.path.
CORE = os.path.join(here, "..", "..", "packages", "headrace")
INCLUDE = [CORE] if os.path.isdir(os.path.join(CORE, "headrace", "kernels")) else []
# ... and for C, the directory holding the `headrace` package (fastmath.h is included as
# "headrace/kernels/fastmath.h"); find_spec locates the installed core without importing it.
C_INCLUDE = INCLUDE or [
    os.path.dirname(os.path.dirname(importlib.util.find_spec("headrace").origin))]
extensions = [
    Extension(path[:-4].replace(os.sep, "."), [path], include_dirs=[np.get_include(), *C_INCLUDE],
              define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
              # No FP traps and no errno from libm: lets the compiler if-convert the kernels'
              # NaN-aware selects and inline sqrt, so those loops vectorize. Results are
              # unchanged (neither is -ffast-math: no reassociation, NaN/inf kept).
              extra_compile_args=["-O3", "-fno-trapping-math", "-fno-math-errno"])
    for path in sorted(glob.glob(os.path.join(PKG, "kernels", "cpu", "*.pyx")))
]
setup(
    ext_modules=cythonize(extensions, include_path=INCLUDE, nthreads=os.cpu_count() or 1,
                          compiler_directives={"language_level": 3}),
    # Compile the C files of the kernel modules in parallel too.
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
)
