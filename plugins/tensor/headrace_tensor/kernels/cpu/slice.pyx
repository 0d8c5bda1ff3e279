# cython: language_level=3
"""slice, strided_slice and their gradients.

The starts/ends/strides of each axis are normalized as Paddle does (negative indices count
from the end and are clamped to the dim; with a negative step an end of -1 means "through
element 0"; a range that runs against its step is an error) and turned into a NumPy basic
index once per call, so Out is a view of Input: no copy unless Input or Out is persistable (an
optimizer may update a persistable array in place, which would show through a view).

The gradients write Out@GRAD through the same index into zeros of Input's shape.
"""
cimport numpy as cnp
from headrace.kernels.common cimport check_plain, dtype_name
from ._common cimport int_values, ints_of_list

import numpy as np

cnp.import_array()

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")
GRAD_DTYPES = ("float32", "float64")


cdef object dense(object x, str op, str slot):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}: input '{slot}' must be a dense tensor (a NumPy array on the "
                        f"CPU), got {type(x).__name__}")
    check_plain(<cnp.ndarray>x, op, slot)
    return x


cdef tuple axis_index(Py_ssize_t n, long long start, long long end, long long step, str op,
                      int axis):
    """(a Python slice, its length) of one axis of size ``n``, Paddle's normalization."""
    if step == 0:
        raise ValueError(f"{op}: the stride of axis {axis} is 0")
    if n == 0:
        return slice(0, 0, 1), 0
    start = start + n if start < 0 else start
    start = max(start, 0)
    if step > 0:
        if end < 0:
            end += n
        start, end = min(start, n), min(max(end, 0), n)
        if end < start:
            raise ValueError(f"{op}: along axis {axis} (size {n}) the end {end} comes before "
                             f"the start {start} (after counting negatives from the end and "
                             f"clamping) for the positive step {step}")
        return slice(start, end, step), (end - start + step - 1) // step
    start, end = min(start, n - 1), min(end, n)
    if end < -1:
        end += n
    end = max(end, -1)
    if start < end:
        raise ValueError(f"{op}: along axis {axis} (size {n}) the start {start} comes before "
                         f"the end {end} (after counting negatives from the end and clamping) "
                         f"for the negative step {step}")
    return slice(start, None if end == -1 else end, step), (start - end - step - 1) // -step


cdef class _Slicing:
    """What slice and strided_slice share: the attributes, the values given by tensors, and
    the index of a call."""
    cdef str op
    cdef list axes, starts, ends, strides, flags, decrease
    cdef bint strided
    cdef tuple last_shape, last_index  # the index of the last call given no tensors

    def _setup(self, dict attrs, str op, bint strided):
        self.op, self.strided = op, strided
        self.axes = [int(a) for a in attrs["axes"]]
        self.starts = [int(v) for v in attrs["starts"]]
        self.ends = [int(v) for v in attrs["ends"]]
        self.strides = [int(v) for v in attrs["strides"]] if strided else None
        self.flags = [int(v) for v in attrs["infer_flags"]]
        self.decrease = [int(v) for v in attrs["decrease_axis"]]

    cdef list _values(self, str part, list attr, object tensor, object tensor_list):
        name = part[0].upper() + part[1:]
        if tensor is not None:
            vals = int_values(tensor, self.op, f"{name}Tensor")
        elif tensor_list:
            vals = ints_of_list(tensor_list, self.op, f"{name}TensorList")
        else:
            vals = attr
        if len(vals) != len(self.axes):
            raise ValueError(f"{self.op}: '{part}' holds {len(vals)} values for "
                             f"{len(self.axes)} axes {self.axes}")
        return vals

    cdef tuple index(self, tuple shape, tuple tensors):
        """(the NumPy index, the sliced shape, Out's shape) for an Input of ``shape``;
        ``tensors``: the optional inputs, in the definition's order. Without tensors it
        depends on the shape alone, and is kept for the next call of the same shape."""
        cdef bint cacheable = all(t is None or (isinstance(t, list) and not t) for t in tensors)
        if cacheable and shape == self.last_shape:
            return self.last_index
        cdef int rank = len(shape), k
        if self.strided:
            starts = self._values("starts", self.starts, tensors[0], tensors[3])
            ends = self._values("ends", self.ends, tensors[1], tensors[4])
            strides = self._values("strides", self.strides, tensors[2], tensors[5])
        else:
            starts = self._values("starts", self.starts, tensors[0], tensors[2])
            ends = self._values("ends", self.ends, tensors[1], tensors[3])
            strides = [1] * len(self.axes)
        idx = [slice(None)] * rank
        sliced = list(shape)
        dec = set()
        for a in self.decrease:
            if not -rank <= a < rank:
                raise IndexError(f"{self.op}: decrease_axis {a} is out of range for an Input "
                                 f"of rank {rank}")
            dec.add(a + rank if a < 0 else a)
        seen = set()
        for k in range(len(self.axes)):
            a = self.axes[k]
            if not -rank <= a < rank:
                raise IndexError(f"{self.op}: axis {a} of 'axes' is out of range for an Input "
                                 f"of rank {rank}")
            a = a + rank if a < 0 else a
            if a in seen:
                raise ValueError(f"{self.op}: 'axes' names axis {a} twice: {self.axes}")
            seen.add(a)
            start, end, step = starts[k], ends[k], strides[k]
            if self.strided and start == -1 and end == 0 and a in dec and \
                    k < len(self.flags) and self.flags[k] == -1:
                # Paddle's encoding of x[-1] along a decreased axis: the last element.
                end = shape[a] + (1 if step > 0 else -2)
            idx[a], sliced[a] = axis_index(shape[a], start, end, step, self.op, a)
        for a in sorted(dec):
            if sliced[a] != 1:
                raise ValueError(f"{self.op}: decrease_axis drops axis {a}, whose slice has "
                                 f"{sliced[a]} elements (Input shape {list(shape)})")
        out = tuple(d for k, d in enumerate(sliced) if k not in dec)
        result = (tuple(idx), tuple(sliced), out)
        if cacheable:
            self.last_shape, self.last_index = shape, result
        return result


cdef class Slice(_Slicing):
    """slice / strided_slice: (Input, the start/end(/stride) tensors...) -> (Out,)."""
    cdef bint copy

    def __init__(self, dict attrs, info=None, op="slice"):
        op = info.op_type if info is not None else op
        self._setup(attrs, op, op == "strided_slice")
        self.copy = info is None or not info.may_alias("Input", "Out")

    def __call__(self, x, *tensors):
        a = dense(x, self.op, "Input")
        idx, sliced, out = self.index(a.shape, tensors)
        view = a[idx]
        if self.copy:
            view = view.copy()
        return (view.reshape(out),)


cdef class SliceGrad(_Slicing):
    """slice_grad / strided_slice_grad: (Input, the tensors..., Out@GRAD) -> (Input@GRAD,):
    zeros of Input's shape with Out@GRAD where the slice was taken."""

    def __init__(self, dict attrs, info=None, op="slice_grad"):
        op = info.op_type if info is not None else op
        self._setup(attrs, op, op == "strided_slice_grad")

    def __call__(self, x, *rest):
        a = dense(x, self.op, "Input")
        g = dense(rest[-1], self.op, "Out@GRAD")
        if dtype_name(g) not in GRAD_DTYPES or g.dtype != a.dtype:
            raise TypeError(f"{self.op}: Out@GRAD is {dtype_name(g)} and Input "
                            f"{dtype_name(a)}; both must be float32 or both float64")
        idx, sliced, out = self.index(a.shape, rest[:-1])
        if g.shape != out:
            raise ValueError(f"{self.op}: Out@GRAD has shape {list(g.shape)}, but the slice "
                             f"of Input {list(a.shape)} has shape {list(out)}")
        dx = np.zeros(a.shape, a.dtype)
        dx[idx] = g.reshape(sliced)
        return (dx,)


class StridedSlice(Slice):
    def __init__(self, dict attrs, info=None):
        super().__init__(attrs, info, "strided_slice")


class StridedSliceGrad(SliceGrad):
    def __init__(self, dict attrs, info=None):
        super().__init__(attrs, info, "strided_slice_grad")


KERNELS = [
    ("slice", Slice, ALL_DTYPES),
    ("strided_slice", StridedSlice, ALL_DTYPES),
    ("slice_grad", SliceGrad, GRAD_DTYPES),
    ("strided_slice_grad", StridedSliceGrad, GRAD_DTYPES),
]
