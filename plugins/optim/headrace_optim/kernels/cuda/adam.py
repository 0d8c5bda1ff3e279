"""adam/adamw on CUDA: Moment1Out = b1 Moment1 + (1 - b1) g; Moment2Out = b2 Moment2 +
(1 - b2) g^2; lr_t = lr sqrt(1 - Beta2Pow) / (1 - Beta1Pow);
ParamOut = Param - lr_t Moment1Out / (sqrt(Moment2Out) + eps sqrt(1 - Beta2Pow)).

Everything is read on the device: LearningRate, Beta1Pow/Beta2Pow, Beta1Tensor/Beta2Tensor/
EpsilonTensor (Paddle 3, replacing the attributes when given) and SkipUpdate are one-element
device arrays each thread of the update kernel reads. Beta1PowOut/Beta2PowOut, when bound, are
written by a one-thread kernel launched after the update (stream order: the update read the
old powers first): Beta*Pow * beta, or the powers kept with use_global_beta_pow or a true
SkipUpdate. That kernel also checks the values the CPU kernel checks (betas in [0, 1), epsilon
>= 0, Beta1Pow != 1, Beta2Pow in [0, 1]) into a device flag, raised as the CPU kernel's
ValueError when the run's flags are read. With amsgrad, Moment2MaxOut = max(Moment2Max,
Moment2Out) takes Moment2Out's place in the step. adamw with with_decay first decays Param by
lr * lr_ratio * coeff. A true SkipUpdate leaves every output at its input's value (copied
where not in place). Param, the moments and the powers are updated in place when their outputs
are bound to them, as on the CPU; a MasterParam is refused.
"""
import math

import numpy as np
from numba import cuda

from headrace.kernels.cuda_launch import check_flag, flat, launch, new_flag

from ._common import dense, like_param, scalar, target

DTYPES = ("float32", "float64")

# What the one-thread kernel does with the powers: nothing bound, kept, advanced.
_NO_POWS, _KEEP_POWS, _ADVANCE_POWS = 0, 1, 2


@cuda.jit
def _adam(p, g, m1, m2, mx, lr, b1p, b2p, b1t, b2t, epst, skip, po, m1o, m2o, mxo,
          b1a, b2a, epsa, use_b1t, use_b2t, use_epst, use_skip, amsgrad, decays, decay_k):
    i = cuda.grid(1)
    if i < po.size:
        if use_skip and skip[0]:
            po[i] = p[i]
            m1o[i] = m1[i]
            m2o[i] = m2[i]
            if amsgrad:
                mxo[i] = mx[i]
            return
        b1 = b1t[0] if use_b1t else b1a
        b2 = b2t[0] if use_b2t else b2a
        eps = epst[0] if use_epst else epsa
        c2 = math.sqrt(1.0 - b2p[0])
        lr_t = lr[0] * c2 / (1.0 - b1p[0])
        eps_t = eps * c2
        gi = g[i]
        a = b1 * m1[i] + (1 - b1) * gi
        b = b2 * m2[i] + (1 - b2) * gi * gi
        m1o[i] = a
        m2o[i] = b
        if amsgrad:        # the step divides by the running maximum's root
            if mx[i] > b:
                b = mx[i]
            mxo[i] = b
        pi = p[i]
        if decays:         # adamw's decoupled decay (a branch: Param - 0 * inf would be NaN)
            pi = pi - lr[0] * decay_k * pi
        po[i] = pi - lr_t * a / (math.sqrt(b) + eps_t)


@cuda.jit
def _pows(b1p, b2p, b1t, b2t, epst, skip, b1po, b2po, flag, b1a, b2a, epsa, use_b1t,
          use_b2t, use_epst, use_skip, mode):
    if cuda.grid(1) != 0:
        return
    b1 = b1t[0] if use_b1t else b1a
    b2 = b2t[0] if use_b2t else b2a
    eps = epst[0] if use_epst else epsa
    if not (b1 >= 0 and b1 < 1 and b2 >= 0 and b2 < 1 and eps >= 0):
        cuda.atomic.min(flag, 0, 0)
    skipping = use_skip and skip[0]
    x1 = b1p[0]
    x2 = b2p[0]
    if not skipping and (x1 == 1 or not (x2 >= 0 and x2 <= 1)):
        cuda.atomic.min(flag, 0, 1)
    if mode == 0:
        return
    if mode == 2 and not skipping:
        x1 = x1 * b1
        x2 = x2 * b2
    b1po[0] = x1
    b2po[0] = x2


class Adam:
    def __init__(self, attrs, info=None):
        self.name = "adam"
        self.info = info
        self.b1, self.b2 = attrs.get("beta1", 0.9), attrs.get("beta2", 0.999)
        self.eps = attrs.get("epsilon", 1e-8)
        self.amsgrad = bool(attrs.get("amsgrad", False))
        self.global_pows = attrs.get("use_global_beta_pow", False)
        self.decays, self.lr_ratio, self.coeff = False, 1.0, 0.0
        if not (0 <= self.b1 < 1 and 0 <= self.b2 < 1):
            raise ValueError(f"adam: beta1 ({self.b1}) and beta2 ({self.b2}) must be in [0, 1)")

        def inplace(slot):
            return info is not None and info.in_place(slot, slot + "Out")
        self.inplace_p, self.inplace_m1 = inplace("Param"), inplace("Moment1")
        self.inplace_m2, self.inplace_mx = inplace("Moment2"), inplace("Moment2Max")
        self.inplace_b1, self.inplace_b2 = inplace("Beta1Pow"), inplace("Beta2Pow")
        b1_out = info is None or info.wants("Beta1PowOut")
        b2_out = info is None or info.wants("Beta2PowOut")
        if b1_out != b2_out:
            raise ValueError("adam: outputs Beta1PowOut and Beta2PowOut go together")
        self.pows_out = b1_out

    def __call__(self, param, grad, learning_rate, moment1, moment2, beta1_pow, beta2_pow,
                 moment2_max=None, beta1_tensor=None, beta2_tensor=None, epsilon_tensor=None,
                 skip_update=None, master_param=None):
        name = self.name
        if master_param is not None:
            raise ValueError(f"{name}: MasterParam (multi_precision training of a float16 "
                             f"Param) is not supported here")
        p = dense(param, name, "Param")
        g = like_param(grad, p, name, "Grad")
        m1 = like_param(moment1, p, name, "Moment1")
        m2 = like_param(moment2, p, name, "Moment2")
        lr = scalar(learning_rate, name, "LearningRate")
        b1p = scalar(beta1_pow, name, "Beta1Pow")
        b2p = scalar(beta2_pow, name, "Beta2Pow")
        # Absent optional scalars: Beta1Pow stands in (the kernels never read it for them).
        b1t = b1p if beta1_tensor is None else scalar(beta1_tensor, name, "Beta1Tensor")
        b2t = b1p if beta2_tensor is None else scalar(beta2_tensor, name, "Beta2Tensor")
        epst = b1p if epsilon_tensor is None else scalar(epsilon_tensor, name, "EpsilonTensor")
        skip = b1p
        if skip_update is not None:
            if skip_update.size != 1 or str(skip_update.dtype) != "bool":
                raise ValueError(f"{name}: input 'SkipUpdate' must hold one bool, got "
                                 f"{skip_update.dtype} of shape {list(skip_update.shape)}")
            skip = skip_update.reshape(1)
        mx = mxo = None
        if self.amsgrad:
            if moment2_max is None:
                raise ValueError(f"{name}: amsgrad needs input Moment2Max")
            mx = like_param(moment2_max, p, name, "Moment2Max")
        reads = [p, g, m1, m2, mx]
        po = target(p, self.inplace_p, reads, 0)
        m1o = target(m1, self.inplace_m1, reads, 2)
        m2o = target(m2, self.inplace_m2, reads, 3)
        if mx is not None:
            mxo = target(mx, self.inplace_mx, reads, 4)
        uses = (beta1_tensor is not None, beta2_tensor is not None,
                epsilon_tensor is not None, skip_update is not None)
        t = p.dtype.type
        launch(_adam, p.size, flat(p), flat(g), flat(m1), flat(m2),
               flat(mx if mx is not None else p), lr, b1p, b2p, b1t, b2t, epst, skip,
               flat(po), flat(m1o), flat(m2o), flat(mxo if mxo is not None else po),
               t(self.b1), t(self.b2), t(self.eps), *uses, self.amsgrad, self.decays,
               t(self.lr_ratio * self.coeff))
        # The powers after the update read them (same stream), with the value checks.
        b1po = b2po = None
        mode = _NO_POWS
        if self.pows_out:
            mode = _KEEP_POWS if self.global_pows else _ADVANCE_POWS
            b1po = target(beta1_pow, self.inplace_b1, [], 0)
            b2po = target(beta2_pow, self.inplace_b2, [], 0)
        flag = new_flag(2)
        launch(_pows, 1, b1p, b2p, b1t, b2t, epst, skip,
               b1p if b1po is None else b1po.reshape(1),
               b2p if b2po is None else b2po.reshape(1), flag,
               np.float64(self.b1), np.float64(self.b2), np.float64(self.eps), *uses, mode)

        def report(pos):
            if pos == 0:
                return ValueError(f"{name}: beta1 and beta2 must be in [0, 1), epsilon >= 0 "
                                  f"(Beta1Tensor/Beta2Tensor/EpsilonTensor)")
            return ValueError("adam: Beta1Pow must not be 1 and Beta2Pow must be in [0, 1]")
        check_flag(flag, 2, report, self.info)
        return (po, m1o, m2o, b1po, b2po, mxo, None)


class AdamW(Adam):
    def __init__(self, attrs, info=None):
        Adam.__init__(self, attrs, info)
        self.name = "adamw"
        self.decays = bool(attrs.get("with_decay", False))
        self.lr_ratio, self.coeff = attrs.get("lr_ratio", 1.0), attrs.get("coeff", 0.01)


KERNELS = [("adam", Adam, DTYPES), ("adamw", AdamW, DTYPES)]
