"""Building a plugin's Cython kernels against the installed core.

A plugin whose kernels ``cimport headrace.kernels.common`` (the core's shared inline helpers:
``contiguous``, ``empty_like``, ``shape_of``, the ``real`` fused type...) needs the installed
headrace at build time, which an isolated build cannot fetch (headrace is on no package
index). Such a plugin builds without isolation::

    python -m pip install setuptools Cython numpy      # once, beside headrace
    python -m pip install --no-build-isolation ./myops

with a ``setup.py`` that asks this module for its extensions::

    from headrace.build import cython_extensions
    from setuptools import setup
    setup(ext_modules=cython_extensions("myops"))

The skeleton of ``headrace new-plugin`` cimports only NumPy instead, so its default build is
isolated and needs nothing of this module.
"""
import glob
import os

__all__ = ["include_path", "cython_extensions"]


def include_path():
    """The directory holding the installed ``headrace`` package: Cython looks there for
    ``headrace/kernels/common.pxd``."""
    import headrace
    return os.path.dirname(os.path.dirname(os.path.abspath(headrace.__file__)))


def cython_extensions(package, root=".", devices=("cpu",), extra_compile_args=("-O3",)):
    """Cythonized setuptools Extensions for every ``<package>/kernels/<device>/*.pyx`` under
    ``root``, with NumPy's headers and the core's ``.pxd`` files reachable."""
    # Imported here, not at the top: they are build-time tools, never needed to run headrace.
    import numpy as np
    from Cython.Build import cythonize
    from setuptools import Extension

    sources = sorted(p for d in devices
                     for p in glob.glob(os.path.join(root, package, "kernels", d, "*.pyx")))
    if not sources:
        raise FileNotFoundError(f"no Cython kernels under {os.path.join(root, package)}"
                                f"/kernels/{{{','.join(devices)}}}/*.pyx")
    extensions = [
        Extension(os.path.relpath(p, root)[:-len(".pyx")].replace(os.sep, "."), [p],
                  include_dirs=[np.get_include()],
                  define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                  extra_compile_args=list(extra_compile_args))
        for p in sources]
    return cythonize(extensions, include_path=[include_path()],
                     compiler_directives={"language_level": 3})
