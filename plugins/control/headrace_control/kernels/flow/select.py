"""select_input / select_output: route one value by a mask read on the host."""
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


KERNELS = [("select_input", SelectInput, None, "frame"),
           ("select_output", SelectOutput, None, "frame")]
