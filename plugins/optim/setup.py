"""Build of the plugin's Cython CPU kernels; metadata is in pyproject.toml."""
import glob
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

PKG = "headrace_optim"
here = os.path.dirname(os.path.abspath(__file__))
os.chdir(here)
# The shared kernel helpers (headrace/kernels/common.pxd): from the core's sources when built
# inside the repository, else from the installed core on sys.path.
CORE = os.path.join(here, "..", "..", "packages", "headrace")
INCLUDE = [CORE] if os.path.isdir(os.path.join(CORE, "headrace", "kernels")) else []
extensions = [
    Extension(path[:-4].replace(os.sep, "."), [path], include_dirs=[np.get_include()],
              define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
              extra_compile_args=["-O3"])
    for path in sorted(glob.glob(os.path.join(PKG, "kernels", "cpu", "*.pyx")))
]
setup(
    ext_modules=cythonize(extensions, include_path=INCLUDE, nthreads=os.cpu_count() or 1,
                          compiler_directives={"language_level": 3}),
    # Compile the C files of the kernel modules in parallel too.
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
)
