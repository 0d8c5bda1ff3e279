"""Build of the core's Cython extension (the executor loop); metadata is in pyproject.toml."""
from Cython.Build import cythonize
from setuptools import Extension, setup

setup(ext_modules=cythonize(
    [Extension("headrace.runtime._loop", ["headrace/runtime/_loop.pyx"])],
    compiler_directives={"language_level": 3}))
