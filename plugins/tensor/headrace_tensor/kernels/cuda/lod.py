"""lod_reset on CUDA: X's data with a new LoD - Y's LoD, Y's data as level-0 offsets, or
target_lod. A LoD kernel (kind "lod", called with Tensors): the LoD is host metadata on the
Tensor, as for the nn plugin's sequence kernels, and the data stays X's device array (a view)
unless X or Out may not alias, where it is copied by one kernel as the CPU kernel copies.

Exception to "values stay on the device": Y given without a LoD holds the new offsets as
data, read on the host (they become the LoD, which is host metadata), as the CPU kernel does.
"""
from headrace.runtime.tensor import Tensor

from ._common import ALL_DTYPES, dense, host_ints
from .reshape import copy_of


def checked_lod(lod, rows):
    """``lod`` if it describes ``rows`` rows: every level starts at 0 and never decreases,
    the last level ends at the row count, each other level at the entries of the next."""
    n = len(lod)
    for i, level in enumerate(lod):
        if not level or level[0] != 0:
            raise ValueError(f"lod_reset: LoD level {i} must start at offset 0, got {level}")
        for k in range(1, len(level)):
            if level[k] < level[k - 1]:
                raise ValueError(f"lod_reset: LoD level {i} offsets must not decrease: "
                                 f"{level}")
        expected = rows if i == n - 1 else len(lod[i + 1]) - 1
        if level[-1] != expected:
            what = f"the {rows} rows of X" if i == n - 1 else f"the entries of level {i + 1}"
            raise ValueError(f"lod_reset: LoD level {i} ends at {level[-1]}, expected "
                             f"{expected} ({what}); LoD {lod}")
    return lod


class LodReset:
    """kernel(x: Tensor, y: Tensor or None) -> (Tensor,)."""

    def __init__(self, attrs, info=None):
        self.target = [int(v) for v in attrs.get("target_lod", [])]
        self.append = attrs.get("append", False)
        self.own = info is not None and not info.may_alias("X", "Out")

    def __call__(self, x, y=None):
        data = x.data if isinstance(x, Tensor) else x
        dense(data, "lod_reset", "X")
        x_lod = x.lod if isinstance(x, Tensor) else []
        rows = data.shape[0] if len(data.shape) else 1
        y_lod = y.lod if isinstance(y, Tensor) else []
        if y is not None and y_lod:
            lod = [list(level) for level in y_lod]  # Y's LoD replaces X's, append or not
        else:
            if y is not None:
                level = host_ints(y.data if isinstance(y, Tensor) else y, "lod_reset", "Y")
                source = "Y's data"
            else:
                level = list(self.target)
                source = "target_lod"
            if not level:
                raise ValueError(f"lod_reset: the new LoD level from {source} is empty")
            lod = ([list(lv) for lv in x_lod] if self.append else []) + [level]
        checked_lod(lod, rows)
        if self.own:
            data = copy_of(data)
        return (Tensor(data, lod),)


KERNELS = [("lod_reset", LodReset, ALL_DTYPES, "lod")]
