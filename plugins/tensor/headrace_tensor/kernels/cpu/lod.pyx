# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""lod_reset: X's data with a new LoD - Y's LoD, Y's data as level-0 offsets, or target_lod.

A LoD kernel (registered with kind "lod"): it is called with Tensors (``.data``, ``.lod``)
and returns Tensors, since the LoD is what it computes. The data is X's array itself (a view, no
copy), unless X or Out is persistable: see reshape.pyx for why sharing is safe otherwise.
"""
cimport numpy as cnp
from headrace.kernels.common cimport check_plain
from ._common cimport int_values

import numpy as np

from headrace.runtime.tensor import Tensor

cnp.import_array()

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")


cdef list checked_lod(list lod, Py_ssize_t rows):
    """``lod`` if it describes ``rows`` rows: every level starts at 0 and never decreases,
    the last level ends at the row count, each other level at the entries of the next."""
    cdef Py_ssize_t i, k, n = len(lod)
    for i in range(n):
        level = lod[i]
        if not level or level[0] != 0:
            raise ValueError(f"lod_reset: LoD level {i} must start at offset 0, got {level}")
        for k in range(1, len(level)):
            if level[k] < level[k - 1]:
                raise ValueError(f"lod_reset: LoD level {i} offsets must not decrease: "
                                 f"{level}")
        expected = rows if i == n - 1 else len(lod[i + 1]) - 1
        if level[len(level) - 1] != expected:
            what = f"the {rows} rows of X" if i == n - 1 else f"the entries of level {i + 1}"
            raise ValueError(f"lod_reset: LoD level {i} ends at {level[len(level) - 1]}, "
                             f"expected {expected} ({what}); LoD {lod}")
    return lod


cdef class LodReset:
    """kernel(x: Tensor, y: Tensor or None) -> (Tensor,)."""
    cdef list target
    cdef bint append, own

    def __init__(self, dict attrs, info=None):
        self.target = [int(v) for v in attrs.get("target_lod", [])]
        self.append = attrs.get("append", False)
        self.own = info is not None and not info.may_alias("X", "Out")

    def __call__(self, x, y=None):
        data = x.data if isinstance(x, Tensor) else x
        if not isinstance(data, np.ndarray):
            raise TypeError(f"lod_reset: X must be a dense tensor, got {type(data).__name__}")
        check_plain(<cnp.ndarray>data, "lod_reset", "X")
        x_lod = x.lod if isinstance(x, Tensor) else []
        rows = data.shape[0] if data.ndim else 1
        y_lod = y.lod if isinstance(y, Tensor) else []
        if y is not None and y_lod:
            lod = [list(level) for level in y_lod]  # Y's LoD replaces X's, append or not
        else:
            if y is not None:
                level = int_values(y.data if isinstance(y, Tensor) else y, "lod_reset", "Y")
                source = "Y's data"
            else:
                level = list(self.target)
                source = "target_lod"
            if not level:
                raise ValueError(f"lod_reset: the new LoD level from {source} is empty")
            lod = ([list(l) for l in x_lod] if self.append else []) + [level]
        checked_lod(lod, rows)
        if self.own:
            data = np.array(data, order="C", copy=True)
        return (Tensor(data, lod),)


KERNELS = [("lod_reset", LodReset, ALL_DTYPES, "lod")]
