"""adagrad on CUDA: MomentOut = Moment + Grad^2; ParamOut = Param - lr Grad / (sqrt(MomentOut)
+ eps), one thread per element, LearningRate read on the device. Param and Moment are updated
in place when their outputs are bound to them, as on the CPU.
"""
import math

from numba import cuda

from headrace.kernels.cuda_launch import flat, launch

from ._common import one_state_update

DTYPES = ("float32", "float64")


@cuda.jit
def _adagrad(p, g, m, lr, po, mo, eps):
    i = cuda.grid(1)
    if i < po.size:
        gi = g[i]
        mi = m[i] + gi * gi
        mo[i] = mi
        po[i] = p[i] - lr[0] * gi / (math.sqrt(mi) + eps)


class Adagrad:
    def __init__(self, attrs, info=None):
        self.eps = attrs.get("epsilon", 1e-6)
        self.inplace_p = info is not None and info.in_place("Param", "ParamOut")
        self.inplace_m = info is not None and info.in_place("Moment", "MomentOut")

    def __call__(self, param, grad, learning_rate, moment):
        p, g, m, lr, po, mo = one_state_update("adagrad", param, grad, learning_rate, moment,
                                               "Moment", self.inplace_p, self.inplace_m)
        launch(_adagrad, p.size, flat(p), flat(g), flat(m), lr, flat(po), flat(mo),
               p.dtype.type(self.eps))
        return (po, mo)


KERNELS = [("adagrad", Adagrad, DTYPES)]
