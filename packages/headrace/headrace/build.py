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

:func:`part_build` is the build of the repository's own parts, each reading its module list
from its ``pyproject.toml`` (the core and the first-party plugins load this file by path from the
core's sources, before any headrace is installed); the root ``setup.py`` builds every part's
modules at once with :func:`part_modules` and :func:`kernel_build`.
"""
import glob
import os
import sys

__all__ = ["include_path", "cython_extensions", "kernel_build", "part_build", "part_modules",
           "openmp_flags", "announce"]

# Cython code generation that keeps the C small: no source lines copied into the C as comments
# (a third of the lines) and no signatures or line tracing compiled in; no pickling support for
# cdef classes (kernels are made from attributes, never pickled: a __reduce__, __setstate__ and
# unpickle function per class were ~10% of the compile time).
DIRECTIVES = {"language_level": 3, "emit_code_comments": False, "embedsignature": False,
              "linetrace": False, "profile": False, "auto_pickle": False}
# Last on the command line, so it wins over the -g in Python's own CFLAGS: debug info was half
# the compile time and 70 MB of installed .so files.
NO_DEBUG_INFO = ("-g0",)
# -O2 with -O3's loop-vectorizer cost model: the kernels' loops vectorize as at -O3, without
# -O3's unswitching, peeling and cloning that took 40-75% longer to compile the big modules.
OPTIMIZE = ("-O2", "-fvect-cost-model=dynamic")
# The modules a part lists as ``glue`` in its [tool.headrace.kernels]: their work is NumPy calls
# and Python objects, with no loops of their own over a tensor's elements, so -O2's vectorizer,
# scheduling and inlining buy them nothing measurable at run time, and -O1 compiles them in
# 36% less time (gcc 12.2, the 31 modules: 35.0 -> 22.5 s of CPU, 15-50% each). After OPTIMIZE
# on the command line, so it wins. Not -O0: it halves that again (20.4 -> 11.0 s) but a glue
# kernel's own C (argument parsing, attribute reads, the calls into NumPy) then costs 0.3-0.7 us
# more a call (reshape2 0.80 -> 1.13 us, flatten_contiguous_range 0.95 -> 1.55-1.73 us).
GLUE_OPTIMIZE = ("-O1",)
DEFINE_MACROS = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
# Cython's runtime shortcuts that compile a specialized copy of a generic CPython path into every
# module: module globals cached by dict version, a fast path for calling Python functions
# (CPython's vectorcall, which Cython uses anyway, does the same), unpacking bound methods
# before a call, and the C line number in tracebacks. The kernels' hot paths are C loops and
# C-level calls, not these; off, every module compiles in ~5% less time (gcc 12.2, the 78
# modules: 122.4 -> 116.7 s of CPU) and the executor's per-op time did not move
# (benchmarks/bench_executor.py). The same in every module of a build and in its shared runtime
# (<package>._cyutility), whose functions they call.
RUNTIME_MACROS = [("CYTHON_USE_DICT_VERSIONS", "0"), ("CYTHON_FAST_PYCALL", "0"),
                  ("CYTHON_UNPACK_METHODS", "0"), ("CYTHON_CLINE_IN_TRACEBACK", "0")]
# Where the generated C goes, under the directory the build runs in (a part's root, or the
# repository's for the root distribution): never beside the .pyx, so no C lands in a wheel, and
# the root build (one shared Cython runtime, headrace._cyutility) and a part's own build
# (<package>._cyutility) never reuse each other's C, which Cython's timestamps would allow.
BUILD_DIR = os.path.join("build", "cython")


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


def read_pyproject(root):
    """The parsed ``pyproject.toml`` of the part at ``root``."""
    try:
        import tomllib
    except ImportError:                   # Python 3.10: the parts' build requirement tomli
        import tomli as tomllib
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def part_modules(root):
    """``(module, .pyx path, extra compile args)`` for every Cython module of the part at
    ``root``, from its ``[tool.headrace.kernels]`` table: ``sources`` (globs relative to the
    part), ``extra-compile-args``, and ``glue`` (globs of sources compiled with
    :data:`GLUE_OPTIMIZE` too). Paths are ``root`` joined with the matches, so a build run from
    another directory (the repository's root distribution) names them right."""
    conf = read_pyproject(root)["tool"]["headrace"]["kernels"]
    args = tuple(conf.get("extra-compile-args", ()))

    def matches(key):
        found = {}
        for pattern in conf.get(key, ()):
            paths = sorted(glob.glob(os.path.join(root, pattern)))
            if not paths:
                raise FileNotFoundError(f"{os.path.join(root, 'pyproject.toml')}: [tool.headrace."
                                        f"kernels] {key} {pattern!r} matches no file")
            found.update(dict.fromkeys(paths))
        return list(found)

    sources, glue = matches("sources"), set(matches("glue"))
    if glue - set(sources):
        raise ValueError(f"{os.path.join(root, 'pyproject.toml')}: [tool.headrace.kernels] glue "
                         f"names files that are not sources: {sorted(glue - set(sources))}")
    return [(os.path.relpath(path, root)[:-len(".pyx")].replace(os.sep, "."), path,
             (*GLUE_OPTIMIZE, *args) if path in glue else args)
            for path in sources]


def part_build(include_path=(), include_dirs=()):
    """``setup()`` keywords of the part whose root is the working directory: its
    ``pyproject.toml`` names the distribution and, in ``[tool.headrace.kernels]``, the package
    that holds the shared Cython runtime and the modules (:func:`part_modules`)."""
    meta = read_pyproject(".")
    package = meta["tool"]["headrace"]["kernels"]["package"]
    return kernel_build(meta["project"]["name"], package, part_modules("."),
                        utility_dir=package.replace(".", os.sep), include_path=include_path,
                        include_dirs=include_dirs)


def announce(message):
    """``message`` on stderr, and on the terminal as well where stderr is not one: pip hides a
    build's output behind a spinner (unless -v), and whoever waits minutes for the compiler
    should see what it is doing. No terminal (CI, a log), no second copy."""
    print(message, file=sys.stderr, flush=True)
    if sys.stderr.isatty():
        return
    try:
        with open("/dev/tty", "w") as tty:
            # Its own line: pip's spinner goes on below it.
            tty.write(f"\n{message}\n")
    except OSError:
        pass


def kernel_build(dist, package, modules, utility_dir, include_path=(), include_dirs=()):
    """``setup()`` keywords that build ``modules`` (``(name, .pyx path, extra compile args)``,
    paths relative to the working directory) as extension modules of ``dist``.

    Cythonizing waits for ``build_ext`` (``egg_info`` and pip's metadata hooks skip it), runs
    on every CPU, and :func:`announce` says so first (on the terminal too, under pip). With Cython
    3.1 or newer the C runtime support Cython writes into every module (memoryviews, function
    objects, ...) is generated once, in ``<package>._cyutility`` (``utility_dir`` is the
    package's directory), which the other modules import: each module's C shrinks by about half.
    """
    import Cython
    import numpy as np
    from setuptools import Extension
    from setuptools.command.build_ext import build_ext

    def args(extra=()):
        return [*OPTIMIZE, *openmp_flags(), *extra, *NO_DEBUG_INFO]

    extensions = [
        # The .pyx's own directory: the C is written under BUILD_DIR, away from the headers
        # that the module's `cdef extern from "x.h"` names.
        Extension(name, [path],
                  include_dirs=[np.get_include(), *include_dirs, os.path.dirname(path) or "."],
                  define_macros=[*DEFINE_MACROS, *RUNTIME_MACROS], extra_compile_args=args(extra),
                  extra_link_args=list(openmp_flags()))
        for name, path, extra in modules]
    options = {"include_path": list(include_path), "compiler_directives": DIRECTIVES,
               "build_dir": BUILD_DIR}
    if tuple(int(v) for v in Cython.__version__.split(".")[:2]) >= (3, 1):
        shared = f"{package}._cyutility"
        extensions.append(Extension(shared, [os.path.join(utility_dir, "_cyutility.c")],
                                    define_macros=list(RUNTIME_MACROS),
                                    extra_compile_args=args()))
        options["shared_utility_qualified_name"] = shared
    jobs = build_jobs()

    class BuildCythonExt(build_ext):
        def run(self):
            # Cythonized here, not in finalize_options, which the metadata commands (egg_info,
            # pip's prepare-metadata hook) run too: each extension's .pyx is swapped for its C.
            from Cython.Build import cythonize
            announce(f"{dist}: compiling {len(self.extensions)} Cython modules, {jobs} at a "
                     f"time ...")
            built = cythonize(self.extensions, nthreads=jobs, quiet=True, **options)
            c_sources = {ext.name: ext.sources for ext in built}
            for ext in self.extensions:
                ext.sources = c_sources[ext.name]
            # Largest C first: the pool's last job is then a short one, not the biggest.
            self.extensions.sort(key=lambda ext: -sum(os.path.getsize(s) for s in ext.sources
                                                      if os.path.exists(s)))
            super().run()

    return {"ext_modules": extensions, "cmdclass": {"build_ext": BuildCythonExt},
            "options": {"build_ext": {"parallel": jobs}}}
