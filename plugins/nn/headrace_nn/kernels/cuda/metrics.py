"""accuracy on CUDA (top_k is still pending): one block counts the rows whose top-k Indices
hold the Label, threads striding over rows, the count a shared-memory tree sum; thread 0
writes Accuracy, Correct and Total, so nothing comes back to the host."""
from numba import cuda, float64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import ROW_THREADS, tree_reduce


@cuda.jit
def _accuracy(ind, lab, N, k, acc, correct, total):
    t = cuda.threadIdx.x
    buf = cuda.shared.array(ROW_THREADS, float64)
    n = 0
    for i in range(t, N, ROW_THREADS):
        for j in range(k):
            if ind[i, j] == lab[i, 0]:
                n += 1
                break
    buf[t] = n
    cuda.syncthreads()
    tree_reduce(buf, t, False)
    if t == 0:
        c = int(buf[0])
        correct[0] = c
        total[0] = N
        acc[0] = c / N if N else 0.0     # no rows: accuracy 0 rather than 0/0


class Accuracy:
    def __init__(self, attrs, info=None):
        pass

    def __call__(self, out, indices, label):
        for name, arr in (("Indices", indices), ("Label", label)):
            if str(arr.dtype) != "int64":
                raise TypeError(f"accuracy: {name} has dtype {arr.dtype}, expected int64")
        os_, is_, ls = tuple(out.shape), tuple(indices.shape), tuple(label.shape)
        if len(is_) != 2 or os_ != is_:
            raise ValueError(f"accuracy: Out{list(os_)} and Indices{list(is_)} must both be "
                             f"the same [N, k]")
        if ls != (is_[0], 1):
            raise ValueError(f"accuracy: Label{list(ls)} must be [{is_[0]}, 1]")
        stream = current_stream()
        acc = cuda.device_array(1, dtype="float32", stream=stream)
        correct = cuda.device_array(1, dtype="int32", stream=stream)
        total = cuda.device_array(1, dtype="int32", stream=stream)
        _accuracy[1, ROW_THREADS, stream](indices, label, is_[0], is_[1], acc, correct, total)
        return (acc.reshape(()), correct.reshape(()), total.reshape(()))


KERNELS = [("accuracy", Accuracy, ("float16", "float32", "float64"))]
