"""What assign and fill_zeros_like do to a tensor array, on every device: the function applied
to each element's data, LoDs kept, unwritten positions left None."""
from headrace.runtime.tensor import Tensor, TensorArray


def each_tensor(xs, fn):
    """A new TensorArray of ``fn(data)`` for each element of the tensor array ``xs``."""
    return TensorArray(None if t is None else Tensor(fn(t.data), [list(l) for l in t.lod])
                       for t in xs)
