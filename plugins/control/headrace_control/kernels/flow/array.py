"""write_to_array / read_from_array / lod_array_length over TensorArray values (lists of
Tensors)."""
import numpy as np

from headrace.runtime.tensor import Tensor, TensorArray
from headrace_control.limits import ARRAY_LENGTH, ArrayLengthLimitError, max_array_length

from ._frame import scalar


def _index(device, value, op):
    i = scalar(device, value, f"{op}: I")
    if not isinstance(i, int) or i < 0:
        raise IndexError(f"{op}: I must be a non-negative integer, found {i!r}")
    return i


class WriteToArray:
    """Out[I] = X (with X's LoD); Out is a new TensorArray value per write."""

    def __init__(self, attrs, info):
        self.device = info.device
        # Kernels write new arrays into their outputs, so the value X holds now stays as it
        # is when a later step writes X again; only a persistable X may be updated in place
        # (an optimizer's), so only its value is copied.
        self.copy = info.persistable("X")

    def __call__(self, frame):
        i = _index(self.device, frame.input("I"), "write_to_array")
        if i >= max_array_length():
            raise ArrayLengthLimitError(
                f"write_to_array: index I = {i} would make the tensor array longer than the "
                f"limit of {max_array_length()} entries ({ARRAY_LENGTH.hint()})")
        arr = frame.output("Out")
        arr = TensorArray() if arr is None else TensorArray(arr)  # a new value per write
        while len(arr) <= i:
            arr.append(None)
        x = frame.input("X")
        arr[i] = Tensor(x.copy() if self.copy else x, frame.lod("X"))
        frame.set_output("Out", arr)


class ReadFromArray:
    """Out = X[I], with the LoD it was written with."""

    def __init__(self, attrs, info):
        self.device = info.device

    def __call__(self, frame):
        i = _index(self.device, frame.input("I"), "read_from_array")
        arr = frame.input("X") or []
        if i >= len(arr) or arr[i] is None:
            raise IndexError(f"read_from_array: position {i} of an array of length {len(arr)} "
                             f"was never written")
        frame.set_output("Out", arr[i].data, arr[i].lod)


class LodArrayLength:
    """Out = [len(X)] as int64 on the op's device (an array never written has length 0)."""

    def __init__(self, attrs, info):
        self.device, self.place = info.device, info.place

    def __call__(self, frame):
        arr = frame.input("X")
        n = 0 if arr is None else len(arr)
        frame.set_output("Out", self.device.to_device(np.array([n], np.int64), self.place))


class WriteToArrayGrad:
    """X@GRAD = Out@GRAD[I], zeros like X where that gradient has no value."""

    def __init__(self, attrs, info):
        self.device = info.device

    def __call__(self, frame):
        i = _index(self.device, frame.input("I"), "write_to_array_grad")
        arr = frame.input("Out@GRAD")
        if arr is not None and i < len(arr) and arr[i] is not None:
            frame.set_output("X@GRAD", arr[i].data, arr[i].lod)
        else:
            frame.set_output("X@GRAD", self.device.zeros_like(frame.input("X")))


class ReadFromArrayGrad:
    """X@GRAD[I] += Out@GRAD, on a new TensorArray value (the old one may be kept by a step)."""

    def __init__(self, attrs, info):
        self.device = info.device

    def __call__(self, frame):
        i = _index(self.device, frame.input("I"), "read_from_array_grad")
        g = frame.input("Out@GRAD")
        if g is None:
            return
        arr = frame.output("X@GRAD")
        arr = TensorArray() if arr is None else TensorArray(arr)
        while len(arr) <= i:
            arr.append(None)
        if arr[i] is None:
            arr[i] = Tensor(g, frame.lod("Out@GRAD"))
        else:
            arr[i] = Tensor(self.device.add(arr[i].data, g), arr[i].lod)
        frame.set_output("X@GRAD", arr)


KERNELS = [("write_to_array_grad", WriteToArrayGrad, None, "frame"),
           ("read_from_array_grad", ReadFromArrayGrad, None, "frame"),
           ("write_to_array", WriteToArray, None, "frame"),
           ("read_from_array", ReadFromArray, None, "frame"),
           ("lod_array_length", LodArrayLength, None, "frame")]
