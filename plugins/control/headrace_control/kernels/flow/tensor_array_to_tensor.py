"""tensor_array_to_tensor and its gradient. The join runs on the host (device arrays are
copied there and back): it happens once per run, outside any loop."""
import numpy as np

from headrace.runtime.tensor import Tensor, TensorArray


def _axis(axis, rank, stack):
    limit = rank + 1 if stack else rank
    return axis + limit if axis < 0 else axis


class TensorArrayToTensor:

    def __init__(self, attrs, info):
        self.axis, self.stack = attrs["axis"], attrs["use_stack"]
        self.device, self.place = info.device, info.place

    def __call__(self, frame):
        arr = frame.input("X") or []
        if not arr:
            raise ValueError("tensor_array_to_tensor: the array is empty (nothing to join)")
        missing = [k for k, t in enumerate(arr) if t is None]
        if missing:
            raise ValueError(f"tensor_array_to_tensor: positions {missing} of the array were "
                             f"never written")
        parts = [np.asarray(self.device.to_host(t.data)) for t in arr]
        axis = _axis(self.axis, parts[0].ndim, self.stack)
        out = np.stack(parts, axis) if self.stack else np.concatenate(parts, axis)
        # Paddle's OutIndex: each element's own size along axis, stacking included (its doc:
        # three elements of shape [2] stacked on axis 0 give [2, 2, 2]); stacking on a new
        # last axis, which no element has, counts 1 each.
        sizes = [p.shape[axis] if axis < p.ndim else 1 for p in parts]
        frame.set_output("Out", self.device.to_device(out, self.place))
        frame.set_output("OutIndex", self.device.to_device(np.array(sizes, np.int32),
                                                           self.place))


class TensorArrayToTensorGrad:

    def __init__(self, attrs, info):
        self.axis, self.stack = attrs["axis"], attrs["use_stack"]
        self.device, self.place = info.device, info.place

    def __call__(self, frame):
        arr = frame.input("X") or []
        g = np.asarray(self.device.to_host(frame.input("Out@GRAD")))
        if not arr:
            if frame.output("X@GRAD") is None:
                frame.set_output("X@GRAD", TensorArray())
            return
        rank = np.asarray(self.device.to_host(arr[0].data)).ndim
        axis = _axis(self.axis, rank, self.stack)
        if self.stack:
            pieces = [np.take(g, k, axis=axis) for k in range(len(arr))]
        else:
            sizes = [np.asarray(self.device.to_host(t.data)).shape[axis] for t in arr]
            pieces = np.split(g, np.cumsum(sizes)[:-1], axis=axis)
        # Other readers of the array (read_from_array_grad, another join) may have put their
        # part of its gradient there already: add to it, on a new TensorArray value (the old
        # one may be kept by a step).
        acc = frame.output("X@GRAD")
        acc = TensorArray() if acc is None else TensorArray(acc)
        while len(acc) < len(arr):
            acc.append(None)
        for k, (p, t) in enumerate(zip(pieces, arr)):
            piece = self.device.to_device(np.ascontiguousarray(p), self.place)
            acc[k] = (Tensor(piece, t.lod) if acc[k] is None or acc[k].data is None else
                      Tensor(self.device.add(acc[k].data, piece), acc[k].lod))
        frame.set_output("X@GRAD", acc)


KERNELS = [("tensor_array_to_tensor", TensorArrayToTensor, None, "frame"),
           ("tensor_array_to_tensor_grad", TensorArrayToTensorGrad, None, "frame")]
