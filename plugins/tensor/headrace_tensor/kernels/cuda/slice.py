"""slice, strided_slice and their gradients on CUDA.

The starts/ends/strides of each axis are normalized as the CPU kernel does (Paddle's rules)
into an element offset and one element stride per dim of Input, on the host; then Out is one
strided-copy launch (one thread per output element) into a new contiguous array. (The CPU
kernel returns a view where it can; a device kernel's output must be contiguous, so it is
always a copy here.) The gradients zero-fill Input's shape and write Out@GRAD through the
same offset and strides: two launches.

Exception to "values stay on the device": the StartsTensor/EndsTensor/StridesTensor (and
their ...TensorList) inputs are shape metadata, read on the host as the CPU kernel reads them.
"""
from headrace.kernels.cuda_launch import device_empty
from headrace.kernels.cuda_strided import contiguous_strides, strided_copy, zeros

from ._common import ALL_DTYPES, GRAD_DTYPES, dense, host_ints, ints_of_list


def axis_index(n, start, end, step, op, axis):
    """(first index, step, length) of one axis of size ``n``, Paddle's normalization."""
    if step == 0:
        raise ValueError(f"{op}: the stride of axis {axis} is 0")
    if n == 0:
        return 0, 1, 0
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
        return start, step, (end - start + step - 1) // step
    start, end = min(start, n - 1), min(end, n)
    if end < -1:
        end += n
    end = max(end, -1)
    if start < end:
        raise ValueError(f"{op}: along axis {axis} (size {n}) the start {start} comes before "
                         f"the end {end} (after counting negatives from the end and clamping) "
                         f"for the negative step {step}")
    return start, step, (start - end - step - 1) // -step


class _Slicing:
    """What slice and strided_slice share: the attributes, the values given by tensors, and
    the index of a call."""

    def _setup(self, attrs, op, strided):
        self.op, self.strided = op, strided
        self.axes = [int(a) for a in attrs["axes"]]
        self.starts = [int(v) for v in attrs["starts"]]
        self.ends = [int(v) for v in attrs["ends"]]
        self.strides = [int(v) for v in attrs["strides"]] if strided else None
        self.flags = [int(v) for v in attrs["infer_flags"]]
        self.decrease = [int(v) for v in attrs["decrease_axis"]]
        self.last_shape = self.last_index = None

    def _values(self, part, attr, tensor, tensor_list):
        name = part[0].upper() + part[1:]
        if tensor is not None:
            vals = host_ints(tensor, self.op, f"{name}Tensor")
        elif tensor_list:
            vals = ints_of_list(tensor_list, self.op, f"{name}TensorList")
        else:
            vals = attr
        if len(vals) != len(self.axes):
            raise ValueError(f"{self.op}: '{part}' holds {len(vals)} values for "
                             f"{len(self.axes)} axes {self.axes}")
        return vals

    def index(self, shape, tensors):
        """(offset, strides, sliced shape, Out's shape) in elements of a contiguous Input of
        ``shape``; kept for the next call of the same shape when no tensor is given."""
        cacheable = all(t is None or (isinstance(t, list) and not t) for t in tensors)
        if cacheable and shape == self.last_shape:
            return self.last_index
        rank = len(shape)
        if self.strided:
            starts = self._values("starts", self.starts, tensors[0], tensors[3])
            ends = self._values("ends", self.ends, tensors[1], tensors[4])
            strides = self._values("strides", self.strides, tensors[2], tensors[5])
        else:
            starts = self._values("starts", self.starts, tensors[0], tensors[2])
            ends = self._values("ends", self.ends, tensors[1], tensors[3])
            strides = [1] * len(self.axes)
        xs = contiguous_strides(shape)
        offset, steps, sliced = 0, list(xs), list(shape)
        dec = set()
        for a in self.decrease:
            if not -rank <= a < rank:
                raise IndexError(f"{self.op}: decrease_axis {a} is out of range for an Input "
                                 f"of rank {rank}")
            dec.add(a + rank if a < 0 else a)
        seen = set()
        for k, a in enumerate(self.axes):
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
            first, step, sliced[a] = axis_index(shape[a], start, end, step, self.op, a)
            offset += first * xs[a]
            steps[a] = step * xs[a]
        for a in sorted(dec):
            if sliced[a] != 1:
                raise ValueError(f"{self.op}: decrease_axis drops axis {a}, whose slice has "
                                 f"{sliced[a]} elements (Input shape {list(shape)})")
        out = tuple(d for k, d in enumerate(sliced) if k not in dec)
        result = (offset, tuple(steps), tuple(sliced), out)
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
