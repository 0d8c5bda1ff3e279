"""sgd on CUDA: ParamOut = Param - LearningRate * Grad, one thread per element.

LearningRate stays on the device (each thread reads its one element). In place (ParamOut bound
to a persistable Param) the update is written into Param's own array, as on the CPU.
"""
from numba import cuda

from headrace.kernels.cuda_launch import flat, launch

from ._common import dense, like_param, scalar, target

DTYPES = ("float32", "float64")


@cuda.jit
def _sgd(p, g, lr, po):
    i = cuda.grid(1)
    if i < po.size:
        po[i] = p[i] - lr[0] * g[i]


class SGD:
    def __init__(self, attrs, info=None):
        self.inplace = info is not None and info.in_place("Param", "ParamOut")

    def __call__(self, param, grad, learning_rate, master_param=None):
        if master_param is not None:
            raise ValueError("sgd: MasterParam (multi_precision training of a float16 Param) "
                             "is not supported here")
        p = dense(param, "sgd", "Param")
        g = like_param(grad, p, "sgd", "Grad")
        lr = scalar(learning_rate, "sgd", "LearningRate")
        po = target(p, self.inplace, [p, g], 0)
        launch(_sgd, p.size, flat(p), flat(g), lr, flat(po))
        return (po, None)


KERNELS = [("sgd", SGD, DTYPES)]
