"""select_input / select_output: route one value by a mask read on the host."""
from headrace.runtime.tensor import Tensor, TensorArray

from ._frame import scalar


def _mask(device, frame, n, op):
    m = scalar(device, frame.input("Mask"), f"{op}: Mask")
    if not isinstance(m, int) or not 0 <= m < n:
        raise IndexError(f"{op}: Mask must pick one of the {n} candidates (0 to {n - 1}), "
                         f"found {m!r}")
    return m


class SelectInput:
    """Out = X[Mask] with its LoD (the others may have no value)."""

    def __init__(self, attrs, info):
        self.device = info.device

    def __call__(self, frame):
        xs = frame.tensors("X")
        m = _mask(self.device, frame, len(xs), "select_input")
        if xs[m].data is None:
            raise ValueError(f"select_input: the picked candidate X[{m}] has no value (its "
                             f"branch wrote nothing)")
        frame.set_output("Out", xs[m].data, xs[m].lod)


class SelectOutput:
    """Out[Mask] = X (with X's LoD); the other outputs keep their values."""

    def __init__(self, attrs, info):
        self.device = info.device
        self.n = info.n_outputs("Out")

    def __call__(self, frame):
        m = _mask(self.device, frame, self.n, "select_output")
        x = frame.tensor("X")
        if x is None or x.data is None:
            return  # a gradient that never reached the value: none for the branch either
        frame.store(frame.output_ids("Out")[m], x.data, x.lod)


def _zeros(device, value):
    """Zeros like ``value`` (a tensor or a tensor array); None when it has no value."""
    if value is None:
        return None
    if isinstance(value, list):
        return TensorArray(None if t is None else Tensor(device.zeros_like(t.data), t.lod)
                           for t in value)
    return device.zeros_like(value)


class SelectInputGrad:
    """X@GRAD[Mask] = Out@GRAD; zeros like X[k] (none where X[k] has no value) elsewhere."""

    def __init__(self, attrs, info):
        self.device = info.device

    def __call__(self, frame):
        xs = frame.tensors("X")
        m = _mask(self.device, frame, len(xs), "select_input_grad")
        g = frame.tensor("Out@GRAD")
        for k, i in enumerate(frame.output_ids("X@GRAD")):
            if k == m and g is not None and g.data is not None:
                frame.store(i, g.data, g.lod)
            else:  # not picked, or no gradient reached Out: zeros
                frame.store(i, _zeros(self.device, xs[k].data), xs[k].lod)


KERNELS = [("select_input", SelectInput, None, "frame"),
           ("select_output", SelectOutput, None, "frame"),
           ("select_input_grad", SelectInputGrad, None, "frame")]
