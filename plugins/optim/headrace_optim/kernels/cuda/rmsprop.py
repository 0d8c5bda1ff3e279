"""rmsprop on CUDA: MeanSquareOut = decay MeanSquare + (1 - decay) g^2; centered: MeanGradOut =
decay MeanGrad + (1 - decay) g and denom = sqrt(MeanSquareOut - MeanGradOut^2 + eps), else
denom = sqrt(MeanSquareOut + eps); MomentOut = momentum Moment + lr g / denom;
ParamOut = Param - MomentOut. One thread per element, LearningRate read on the device.

Without centered, a bound MeanGradOut passes MeanGrad through (itself in place, else a device
copy). Param and the state are updated in place when their outputs are bound to them, as on
the CPU.
"""
import math

from numba import cuda

from headrace.kernels.cuda_launch import device_copy, flat, launch

from ..host.rmsprop import rmsprop_attrs
from ._common import dense, like_param, scalar, target

DTYPES = ("float32", "float64")


@cuda.jit
def _rmsprop(p, g, ms, mg, mom, lr, po, mso, mgo, momo, rho, eps, mu, centered):
    i = cuda.grid(1)
    if i < po.size:
        gi = g[i]
        s = rho * ms[i] + (1 - rho) * gi * gi
        mso[i] = s
        if centered:
            a = rho * mg[i] + (1 - rho) * gi
            mgo[i] = a
            d = math.sqrt(s - a * a + eps)
        else:
            d = math.sqrt(s + eps)
        v = mu * mom[i] + lr[0] * gi / d
        momo[i] = v
        po[i] = p[i] - v


class RMSProp:
    def __init__(self, attrs, info=None):
        (self.eps, self.rho, self.mu, self.centered, self.mg_out, self.inplace_p,
         self.inplace_ms, self.inplace_mg, self.inplace_mom) = rmsprop_attrs(attrs, info)

    def __call__(self, param, grad, learning_rate, mean_square, mean_grad, moment):
        p = dense(param, "rmsprop", "Param")
        g = like_param(grad, p, "rmsprop", "Grad")
        ms = like_param(mean_square, p, "rmsprop", "MeanSquare")
        mom = like_param(moment, p, "rmsprop", "Moment")
        mg = mgo = None
        if mean_grad is not None:
            mg = like_param(mean_grad, p, "rmsprop", "MeanGrad")
        elif self.centered:
            raise ValueError("rmsprop: centered RMSProp needs the MeanGrad input")
        lr = scalar(learning_rate, "rmsprop", "LearningRate")
        reads = [p, g, ms, mg, mom]
        po = target(p, self.inplace_p, reads, 0)
        mso = target(ms, self.inplace_ms, reads, 2)
        momo = target(mom, self.inplace_mom, reads, 4)
        if mg is not None:
            if self.centered:
                mgo = target(mg, self.inplace_mg, reads, 3)
            elif self.mg_out:  # passed through: itself in place, else a copy
                mgo = mg if self.inplace_mg else device_copy(mg)
        t = p.dtype.type
        # Without centered the kernel never touches MeanGrad: Param's arrays stand in.
        mg_in, mg_w = (mg, mgo) if self.centered else (p, po)
        launch(_rmsprop, p.size, flat(p), flat(g), flat(ms), flat(mg_in), flat(mom), lr,
               flat(po), flat(mso), flat(mg_w), flat(momo), t(self.rho), t(self.eps),
               t(self.mu), self.centered)
        return (po, mso, mgo if self.mg_out else None, momo)


KERNELS = [("rmsprop", RMSProp, DTYPES)]
