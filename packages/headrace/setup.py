"""Build of the core's Cython extensions (the executor loop and the CPU kernels of the core's
own ops, headrace.core_ops); metadata is in pyproject.toml."""
import glob
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
os.chdir(here)
# The kernels cimport headrace/kernels/common.pxd from this source tree (the working directory).
kernels = [
    Extension(path[:-4].replace(os.sep, "."), [path], include_dirs=[np.get_include()],
              define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
              extra_compile_args=["-O3"])
    for path in sorted(glob.glob(os.path.join("headrace", "core_ops", "kernels", "cpu", "*.pyx")))
]
setup(
    ext_modules=cythonize(
        [Extension("headrace.runtime._loop", ["headrace/runtime/_loop.pyx"])] + kernels,
        include_path=[here], nthreads=os.cpu_count() or 1,
        compiler_directives={"language_level": 3}),
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
)
