"""momentum on CUDA: VelocityOut = mu Velocity + g; ParamOut = Param - lr (g + mu VelocityOut)
with use_nesterov, else Param - lr VelocityOut; g = rescale_grad Grad (+ regularization_coeff
Param with 'l2_decay'). One thread per element; LearningRate read on the device. Param and
Velocity are updated in place when their outputs are bound to them, as on the CPU.
"""
from numba import cuda

from headrace.kernels.cuda_launch import flat, launch

from ._common import dense, like_param, scalar, target

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
        self.mu = attrs["mu"]
        self.nesterov = bool(attrs.get("use_nesterov", False))
        method = attrs.get("regularization_method", "")
        if method not in ("", "l2_decay"):
            raise ValueError(f"momentum: regularization_method {method!r} is not '' or "
                             f"'l2_decay'")
        self.decay = attrs.get("regularization_coeff", 0.0) if method == "l2_decay" else 0.0
        self.rescale = attrs.get("rescale_grad", 1.0)
        self.inplace_p = info is not None and info.in_place("Param", "ParamOut")
        self.inplace_v = info is not None and info.in_place("Velocity", "VelocityOut")

    def __call__(self, param, grad, learning_rate, velocity, master_param=None):
        if master_param is not None:
            raise ValueError("momentum: MasterParam (multi_precision training of a float16 "
                             "Param) is not supported here")
        p = dense(param, "momentum", "Param")
        g = like_param(grad, p, "momentum", "Grad")
        v = like_param(velocity, p, "momentum", "Velocity")
        lr = scalar(learning_rate, "momentum", "LearningRate")
        reads = [p, g, v]
        po = target(p, self.inplace_p, reads, 0)
        vo = target(v, self.inplace_v, reads, 2)
        # The coefficients in Param's type, as the CPU kernel casts them.
        t = p.dtype.type
        launch(_momentum, p.size, flat(p), flat(g), flat(v), lr, flat(po), flat(vo),
               t(self.mu), t(self.decay), self.nesterov, t(self.rescale))
        return (po, vo, None)


KERNELS = [("momentum", Momentum, DTYPES)]
