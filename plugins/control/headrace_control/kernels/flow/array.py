"""write_to_array / read_from_array over TensorArray values (lists of Tensors)."""
from headrace.runtime.tensor import Tensor, TensorArray

from ._frame import scalar


def _index(device, value, op):
    i = scalar(device, value, f"{op}: I")
    if not isinstance(i, int) or i < 0:
        raise IndexError(f"{op}: I must be a non-negative integer, found {i!r}")
    return i


class WriteToArray:
    frame_kernel = True

    def __init__(self, attrs, info):
        self.x = info.in_slots["X"][0]
        self.i = info.in_slots["I"][0]
        self.out = info.out_slots["Out"][0]
        self.device = info.device

    def __call__(self, values, lods):
        i = _index(self.device, values[self.i], "write_to_array")
        arr = values[self.out]
        arr = TensorArray() if arr is None else TensorArray(arr)  # a new value per write
        while len(arr) <= i:
            arr.append(None)
        # Arrays hold their own copy: the slot of X is overwritten by later steps.
        arr[i] = Tensor(values[self.x].copy(), lods.get(self.x))
        values[self.out] = arr


class ReadFromArray:
    frame_kernel = True

    def __init__(self, attrs, info):
        self.arr = info.in_slots["X"][0]
        self.i = info.in_slots["I"][0]
        self.out = info.out_slots["Out"][0]
        self.device = info.device

    def __call__(self, values, lods):
        i = _index(self.device, values[self.i], "read_from_array")
        arr = values[self.arr] or []
        if i >= len(arr) or arr[i] is None:
            raise IndexError(f"read_from_array: position {i} of an array of length {len(arr)} "
                             f"was never written")
        t = arr[i]
        values[self.out] = t.data
        if t.lod:
            lods[self.out] = t.lod
        else:
            lods.pop(self.out, None)


KERNELS = [("write_to_array", WriteToArray, None), ("read_from_array", ReadFromArray, None)]
