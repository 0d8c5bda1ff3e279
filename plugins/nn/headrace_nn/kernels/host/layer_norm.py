"""layer_norm's host logic, one copy for kernels/cpu/layer_norm.pyx and
kernels/cuda/layer_norm.py: X split into [left, right] rows at begin_norm_axis."""
import numpy as np

__all__ = ["GRADS", "split_rows"]

# layer_norm_grad's outputs, in its kernels' order.
GRADS = ("X@GRAD", "Scale@GRAD", "Bias@GRAD")


def split_rows(shape, axis, op):
    """(left, right): the rows and values per row of X of ``shape`` normalized from ``axis``
    on, refused when that leaves no rows (a 1-D X is one row: axis 0)."""
    if not (1 <= axis < len(shape) or (len(shape) == 1 and axis == 0)):
        raise ValueError(f"{op}: begin_norm_axis {axis} leaves X of shape {list(shape)} no "
                         f"rows to normalize")
    left = int(np.prod(shape[:axis], dtype=np.int64))
    size = int(np.prod(shape, dtype=np.int64))
    return left, size // max(left, 1)
