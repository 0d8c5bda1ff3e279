"""One thread setting for the CPU kernels and BLAS: ``hr.set_num_threads(n)`` /
``hr.get_num_threads()`` (PyTorch's ``torch.set_num_threads``, Paddle's
``cpu_math_library_num_threads``).

The count starts at ``OMP_NUM_THREADS`` (its first entry, as OpenMP reads it) or, unset, at the
CPUs this process may run on (PyTorch's default; it is also what OpenBLAS takes unset). The
Cython kernels read it before each parallel loop (``headrace.kernels.threads``) and stay
serial where an op is too small to pay a fork and join.

BLAS follows the same number without a second thread pool: the kernels split their BLAS
products over headrace's OpenMP threads themselves (``headrace/kernels/blas_split.pxd``, one
single-threaded sgemm/dgemm a band of rows or columns), and SciPy's OpenBLAS, the one they
call, is kept at one thread of its own (``bind_blas``, when the kernels load): its pthreads
spin after each call, as OpenMP's do, and two pools would ask for the same cores. NumPy's
OpenBLAS (your own NumPy code; no kernel calls it) gets ``n`` threads from
``set_num_threads``.
"""
import ctypes
import logging
import os

from ..errors import LayerError
from ..kernels import threads as _state

__all__ = ["set_num_threads", "get_num_threads", "bind_blas", "default_num_threads"]

_log = logging.getLogger("headrace")

# (set, get) C names exported by the OpenBLAS builds NumPy and SciPy ship (scipy-openblas
# wheels prefix and, for the 64-bit-integer build NumPy uses, suffix them) and by a plain one.
_BLAS_SYMBOLS = (("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
                 ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
                 ("openblas_set_num_threads", "openblas_get_num_threads"),
                 ("openblas_set_num_threads64_", "openblas_get_num_threads64_"))
_blas = None   # [(path, set function, get function)] once looked up


def _cpus():
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def default_num_threads(environ=None):
    """The count headrace starts with: ``OMP_NUM_THREADS``'s first entry when it is a positive
    integer, else the CPUs this process may use."""
    value = (os.environ if environ is None else environ).get("OMP_NUM_THREADS", "").strip()
    if value:
        first = value.split(",")[0].strip()
        if first.isdigit() and int(first) > 0:
            return int(first)
        _log.warning("OMP_NUM_THREADS=%r is not a positive integer; headrace uses %d threads",
                     value, _cpus())
    return _cpus()


def _loaded_openblas():
    """Paths of the OpenBLAS libraries loaded in this process (Linux: /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(None, 5)[-1].strip() for line in maps if "openblas" in line}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/") and os.path.exists(p))


def _find_blas():
    global _blas
    if _blas is not None:
        return _blas
    # The library the kernels' sgemm/dgemm run in is SciPy's: load it (the kernels do anyway).
    import scipy.linalg.cython_blas  # noqa: F401
    found = []
    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_LOCAL)
        except OSError:
            continue
        for set_name, get_name in _BLAS_SYMBOLS:
            if hasattr(lib, set_name) and hasattr(lib, get_name):
                setter, getter = getattr(lib, set_name), getattr(lib, get_name)
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                found.append((path, set_name, setter, getter))
                break
    _blas = found
    return found


def bind_blas():
    """Keep SciPy's OpenBLAS, the kernels' BLAS, at one thread of its own (the kernels run it on
    headrace's threads); called when the plugins' kernels load, and by ``set_num_threads``.
    Returns the paths of the OpenBLAS libraries found (none: BLAS is not OpenBLAS, and stays
    as it is)."""
    found = _find_blas()
    for _, name, setter, getter in found:
        # SciPy's build exports the unsuffixed names (32-bit integers, the cython_blas ABI).
        if not name.endswith("64_") and getter() != 1:
            setter(1)
    return [f[0] for f in found]


def set_num_threads(n):
    """Run the CPU kernels (their BLAS products included) on ``n`` threads (1: all serial);
    NumPy's own BLAS gets ``n`` threads too."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise LayerError(f"set_num_threads: argument 'n' must be a positive int, got {n!r}")
    _state._set_count(n)
    for _, name, setter, _ in _find_blas():
        if name.endswith("64_"):
            setter(n)
    bind_blas()


def get_num_threads():
    """The kernels' thread count (``set_num_threads``, else the default at import)."""
    return _state._get_count()


_state._set_count(default_num_threads())
