"""slice / strided_slice host plan: Paddle's normalization of starts/ends/strides into one
Python slice per axis, the sliced shape and Out's shape (decrease_axis dropped).

The CPU kernel indexes Input with the slices (a view); the CUDA kernel turns them into an
element offset and strides for its strided-copy launch. Both cache the plan per Input shape
when no tensor input gives the values.
"""


def axis_index(n, start, end, step, op, axis):
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


def given_nothing(tensors):
    """Whether no optional tensor input is given (the plan then depends on the shape alone
    and may be cached)."""
    return all(t is None or (isinstance(t, list) and not t) for t in tensors)


class Slicing:
    """What slice and strided_slice share: the attributes, the values given by tensors, and
    the plan of a call. ``ints(t, op, slot)`` / ``ints_of_list(ts, op, slot)`` read the
    values of a tensor input on the host (the device's own readers)."""

    def __init__(self, attrs, op, strided, ints, ints_of_list):
        self.op, self.strided = op, strided
        self.ints, self.ints_of_list = ints, ints_of_list
        self.axes = [int(a) for a in attrs["axes"]]
        self.starts = [int(v) for v in attrs["starts"]]
        self.ends = [int(v) for v in attrs["ends"]]
        self.strides = [int(v) for v in attrs["strides"]] if strided else None
        self.flags = [int(v) for v in attrs["infer_flags"]]
        self.decrease = [int(v) for v in attrs["decrease_axis"]]

    def _values(self, part, attr, tensor, tensor_list):
        name = part[0].upper() + part[1:]
        if tensor is not None:
            vals = self.ints(tensor, self.op, f"{name}Tensor")
        elif tensor_list:
            vals = self.ints_of_list(tensor_list, self.op, f"{name}TensorList")
        else:
            vals = attr
        if len(vals) != len(self.axes):
            raise ValueError(f"{self.op}: '{part}' holds {len(vals)} values for "
                             f"{len(self.axes)} axes {self.axes}")
        return vals

    def plan(self, shape, tensors):
        """(one slice per dim of Input, the sliced shape, Out's shape) for an Input of
        ``shape``; ``tensors``: the optional inputs, in the definition's order."""
        rank = len(shape)
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
            idx[a], sliced[a] = axis_index(shape[a], start, end, step, self.op, a)
        for a in sorted(dec):
            if sliced[a] != 1:
                raise ValueError(f"{self.op}: decrease_axis drops axis {a}, whose slice has "
                                 f"{sliced[a]} elements (Input shape {list(shape)})")
        out = tuple(d for k, d in enumerate(sliced) if k not in dec)
        return tuple(idx), tuple(sliced), out
