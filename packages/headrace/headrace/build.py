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

:func:`kernel_build` is the build of the repository's own parts (the core and the first-party
plugins load this file by path from the core's sources, before any headrace is installed).
"""
import glob
import os
import sys

__all__ = ["include_path", "cython_extensions", "kernel_build", "openmp_flags"]

# Cython code generation that keeps the C small: no source lines copied into the C as comments
# (a third of the lines) and no signatures or line tracing compiled in.
DIRECTIVES = {"language_level": 3, "emit_code_comments": False, "embedsignature": False,
              "linetrace": False, "profile": False}
# Last on the command line, so it wins over the -g in Python's own CFLAGS: debug info was half
# the compile time and 70 MB of installed .so files.
NO_DEBUG_INFO = ("-g0",)
# -O2 with -O3's loop-vectorizer cost model: the kernels' loops vectorize as at -O3, without
# -O3's unswitching, peeling and cloning that took 40-75% longer to compile the big modules.
OPTIMIZE = ("-O2", "-fvect-cost-model=dynamic")
DEFINE_MACROS = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]


def openmp_flags():
    """Compile and link flags for OpenMP (the kernels' ``prange`` loops and the packed GEMM's
    ``omp parallel``): GCC's ``-fopenmp`` on Linux; none elsewhere (Apple's clang has no
    OpenMP runtime) or with ``HEADRACE_OPENMP=0``, and the loops then run serially."""
    if os.environ.get("HEADRACE_OPENMP", "1") == "0" or not sys.platform.startswith("linux"):
        return ()
    return ("-fopenmp",)


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
                  include_dirs=[np.get_include()], define_macros=DEFINE_MACROS,
                  extra_compile_args=[*extra_compile_args, *NO_DEBUG_INFO])
        for p in sources]
    return cythonize(extensions, include_path=[include_path()], compiler_directives=DIRECTIVES)


def build_jobs():
    """The CPUs this process may use (a container or taskset may allow fewer than the
    machine has)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def kernel_build(dist, package, sources, include_path=(), include_dirs=(), extra_compile_args=()):
    """``setup()`` keywords that build ``sources`` (``.pyx`` paths relative to the working
    directory, the part's root) as extension modules of ``dist``.

    Cythonizing waits for ``build_ext`` (``egg_info`` and pip's metadata hooks skip it), runs
    on every CPU, and prints one line to stderr first (pip shows it with ``-v``). With Cython
    3.1 or newer the C runtime support Cython writes into every module (memoryviews, function
    objects, ...) is generated once per part, in ``<package>._cyutility``, which the other
    modules import: each module's C shrinks by about half.
    """
    import Cython
    import numpy as np
    from setuptools import Extension
    from setuptools.command.build_ext import build_ext

    args = [*OPTIMIZE, *openmp_flags(), *extra_compile_args, *NO_DEBUG_INFO]
    extensions = [
        Extension(path[:-len(".pyx")].replace(os.sep, "."), [path],
                  include_dirs=[np.get_include(), *include_dirs], define_macros=DEFINE_MACROS,
                  extra_compile_args=args, extra_link_args=list(openmp_flags()))
        for path in sources]
    options = {"include_path": list(include_path), "compiler_directives": DIRECTIVES}
    if tuple(int(v) for v in Cython.__version__.split(".")[:2]) >= (3, 1):
        shared = f"{package}._cyutility"
        extensions.append(Extension(shared, [shared.replace(".", os.sep) + ".c"],
                                    extra_compile_args=args))
        options["shared_utility_qualified_name"] = shared
    jobs = build_jobs()

    class BuildCythonExt(build_ext):
        def finalize_options(self):
            # Cythonized before setuptools' own finalizing, which annotates each extension.
            from Cython.Build import cythonize
            exts = self.distribution.ext_modules
            print(f"compiling {len(exts)} Cython modules for {dist} ({jobs} at a time) ...",
                  file=sys.stderr, flush=True)
            built = cythonize(exts, nthreads=jobs, **options)
            # Largest C first: the pool's last job is then a short one, not the biggest.
            built.sort(key=lambda ext: -sum(os.path.getsize(s) for s in ext.sources
                                            if os.path.exists(s)))
            exts[:] = built
            super().finalize_options()

    return {"ext_modules": extensions, "cmdclass": {"build_ext": BuildCythonExt},
            "options": {"build_ext": {"parallel": jobs}}}
