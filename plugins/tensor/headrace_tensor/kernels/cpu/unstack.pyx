# cython: language_level=3
"""unstack and its gradient. The slices are views of X (no copy) unless X is persistable: an
optimizer may update a persistable array in place, which would show through a view."""
import numpy as np

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64")


cdef class Unstack:
    cdef int axis, num
    cdef bint copy

    def __init__(self, dict attrs, info=None):
        self.axis, self.num = attrs["axis"], attrs["num"]
        self.copy = info is None or not info.may_alias("X", "Y")

    def __call__(self, x):
        a = np.asarray(x)
        axis = self.axis + a.ndim if self.axis < 0 else self.axis
        if not 0 <= axis < a.ndim or a.shape[axis] != self.num:
            raise ValueError(f"unstack: X of shape {list(a.shape)} has no {self.num} slices "
                             f"along axis {self.axis}")
        if self.copy:
            return ([np.take(a, k, axis=axis) for k in range(self.num)],)
        if axis == 0:
            return (list(a),)  # views
        return ([a[(slice(None),) * axis + (k,)] for k in range(self.num)],)


cdef class UnstackGrad:
    cdef int axis

    def __init__(self, dict attrs, info=None):
        self.axis = attrs["axis"]

    def __call__(self, grads):
        present = [g for g in grads if g is not None]
        if not present:
            raise ValueError("unstack_grad: no slice has a gradient")
        like = np.asarray(present[0])
        parts = [np.zeros_like(like) if g is None else np.asarray(g) for g in grads]
        axis = self.axis + like.ndim + 1 if self.axis < 0 else self.axis
        return (np.stack(parts, axis),)


KERNELS = [("unstack", Unstack, ALL_DTYPES), ("unstack_grad", UnstackGrad, ALL_DTYPES)]
