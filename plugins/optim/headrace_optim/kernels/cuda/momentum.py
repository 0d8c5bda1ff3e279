"""momentum on CUDA: VelocityOut = mu Velocity + g; ParamOut = Param - lr (g + mu VelocityOut)
with use_nesterov, else Param - lr VelocityOut; g = rescale_grad Grad (+ regularization_coeff
Param with 'l2_decay'). One thread per element; LearningRate read on the device. Param and
Velocity are updated in place when their outputs are bound to them, as on the CPU.
"""
from numba import cuda

from headrace.kernels.cuda_launch import flat, launch

from ..host.momentum import momentum_attrs, refuse_master_param
from ._common import one_state_update

DTYPES = ("float32", "float64")


@cuda.jit
def _momentum(p, g, v, lr, po, vo, mu, decay, nesterov, rescale):
    i = cuda.grid(1)
    if i < po.size:
        pi = p[i]
        gi = g[i] * rescale + decay * pi
        vi = mu * v[i] + gi
        vo[i] = vi
        if nesterov:
            po[i] = pi - lr[0] * (gi + mu * vi)
        else:
            po[i] = pi - lr[0] * vi


class Momentum:
    def __init__(self, attrs, info=None):
        self.mu, self.nesterov, self.decay, self.rescale = momentum_attrs(attrs)
        self.inplace_p = info is not None and info.in_place("Param", "ParamOut")
        self.inplace_v = info is not None and info.in_place("Velocity", "VelocityOut")

    def __call__(self, param, grad, learning_rate, velocity, master_param=None):
        refuse_master_param(master_param)
        p, g, v, lr, po, vo = one_state_update("momentum", param, grad, learning_rate, velocity,
                                               "Velocity", self.inplace_p, self.inplace_v)
        # The coefficients in Param's type, as the CPU kernel casts them.
        t = p.dtype.type
        launch(_momentum, p.size, flat(p), flat(g), flat(v), lr, flat(po), flat(vo),
               t(self.mu), t(self.decay), self.nesterov, t(self.rescale))
        return (po, vo, None)


KERNELS = [("momentum", Momentum, DTYPES)]
