"""slice, strided_slice and their gradients on CUDA.

The starts/ends/strides of each axis are normalized by the CPU kernel's host plan
(kernels/host/slice.py, Paddle's rules) and turned into an element offset and one element
stride per dim of Input; then Out is one strided-copy launch (one thread per output element)
into a new contiguous array. (The CPU kernel returns a view where it can; a device kernel's
output must be contiguous, so it is always a copy here.) The gradients zero-fill Input's shape
and write Out@GRAD through the same offset and strides: two launches.

Exception to "values stay on the device": the StartsTensor/EndsTensor/StridesTensor (and their
...TensorList) inputs are shape metadata, read on the host as the CPU kernel reads them.
"""
from headrace.kernels.cuda_launch import device_empty
from headrace.kernels.cuda_strided import contiguous_strides, strided_copy, zeros

from ..host.slice import Slicing, given_nothing
from ._common import ALL_DTYPES, GRAD_DTYPES, dense, host_ints, ints_of_list


class _Slicing:
    """The host plan (kernels/host/slice.py, shared with the CPU kernel) as an element offset
    and strides of a contiguous Input, kept for the next call of the same shape when no tensor
    is given."""

    def _setup(self, attrs, op, strided):
        self.op = op
        self.slicing = Slicing(attrs, op, strided, host_ints, ints_of_list)
        self.last_shape = self.last_index = None

    def index(self, shape, tensors):
        """(offset, strides, sliced shape, Out's shape) in elements of a contiguous Input of
        ``shape``."""
        cacheable = given_nothing(tensors)
        if cacheable and shape == self.last_shape:
            return self.last_index
        idx, sliced, out = self.slicing.plan(shape, tensors)
        xs = contiguous_strides(shape)
        offset, steps = 0, list(xs)
        for a, s in enumerate(idx):
            if s.start is not None:  # a sliced axis (the others are whole: slice(None))
                offset += s.start * xs[a]
                steps[a] = s.step * xs[a]
        result = (offset, tuple(steps), sliced, out)
        if cacheable:
            self.last_shape, self.last_index = shape, result
        return result


class Slice(_Slicing):
    """slice / strided_slice: (Input, the start/end(/stride) tensors...) -> (Out,)."""

    def __init__(self, attrs, info=None, op="slice"):
        op = info.op_type if info is not None else op
        self._setup(attrs, op, op == "strided_slice")

    def __call__(self, x, *tensors):
        a = dense(x, self.op, "Input")
        offset, steps, sliced, out = self.index(tuple(a.shape), tensors)
        y = device_empty(out, a.dtype)
        return (strided_copy(a, y, sliced, steps, contiguous_strides(sliced), src_offset=offset),)


class SliceGrad(_Slicing):
    """slice_grad / strided_slice_grad: (Input, the tensors..., Out@GRAD) -> (Input@GRAD,):
    zeros of Input's shape with Out@GRAD where the slice was taken."""

    def __init__(self, attrs, info=None, op="slice_grad"):
        op = info.op_type if info is not None else op
        self._setup(attrs, op, op == "strided_slice_grad")

    def __call__(self, x, *rest):
        a = dense(x, self.op, "Input")
        g = dense(rest[-1], self.op, "Out@GRAD")
        if str(g.dtype) not in GRAD_DTYPES or g.dtype != a.dtype:
            raise TypeError(f"{self.op}: Out@GRAD is {g.dtype} and Input {a.dtype}; both must "
                            f"be float32 or both float64")
        offset, steps, sliced, out = self.index(tuple(a.shape), rest[:-1])
        if tuple(g.shape) != out:
            raise ValueError(f"{self.op}: Out@GRAD has shape {list(g.shape)}, but the slice "
                             f"of Input {list(a.shape)} has shape {list(out)}")
        dx = zeros(a.shape, a.dtype)
        return (strided_copy(g, dx, sliced, contiguous_strides(sliced), steps,
                             dst_offset=offset),)


class StridedSlice(Slice):
    def __init__(self, attrs, info=None):
        super().__init__(attrs, info, "strided_slice")


class StridedSliceGrad(SliceGrad):
    def __init__(self, attrs, info=None):
        super().__init__(attrs, info, "strided_slice_grad")


KERNELS = [
    ("slice", Slice, ALL_DTYPES),
    ("strided_slice", StridedSlice, ALL_DTYPES),
    ("slice_grad", SliceGrad, GRAD_DTYPES),
    ("strided_slice_grad", StridedSliceGrad, GRAD_DTYPES),
]
