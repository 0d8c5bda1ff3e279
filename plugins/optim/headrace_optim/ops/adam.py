"""adam: Adam (Kingma & Ba) with bias correction through the beta power accumulators; adamw:
Adam with decoupled weight decay (Loshchilov & Hutter), Paddle's AdamW."""
from headrace.ops import Attr, In
from headrace.ops.shape import numel

from ._common import (FLOAT_DTYPES, State, at_least, in_range, master_slots,
                      multi_precision_attr, optimizer_op, refuse_master)


def _check_pow_outputs(ctx):
    # Newer Paddle advances the beta powers inside the op; older programs use separate scale
    # ops and bind neither output. One without the other would advance half the state.
    bound = [s for s in ("Beta1PowOut", "Beta2PowOut") if ctx.has_output(s)]
    if len(bound) == 1:
        ctx.fail("outputs 'Beta1PowOut' and 'Beta2PowOut' go together",
                 expected="both bound or neither", found=f"only {bound[0]}")
    # AMSGrad keeps its running maximum in Moment2Max: without it there is nothing to keep.
    if ctx.attr("amsgrad") and not (ctx.has_input("Moment2Max")
                                    and ctx.has_output("Moment2MaxOut")):
        ctx.fail("attribute 'amsgrad' needs input 'Moment2Max' and output 'Moment2MaxOut'",
                 expected="Moment2Max and Moment2MaxOut bound",
                 found=f"Moment2Max {'bound' if ctx.has_input('Moment2Max') else 'unbound'}, "
                       f"Moment2MaxOut "
                       f"{'bound' if ctx.has_output('Moment2MaxOut') else 'unbound'}")
    for slot in ("Beta1Tensor", "Beta2Tensor", "EpsilonTensor", "SkipUpdate"):
        if ctx.has_input(slot) and numel(ctx.input(slot).shape) not in (1, -1):
            m = ctx.input(slot)
            ctx.fail(f"input '{slot}' ({m.name}) must hold one element",
                     expected="shape [1] (or [])", found=f"shape {list(m.shape)}")
    refuse_master(ctx)


_STATES = [
    State("Moment1", "first moment, shape of Param"),
    State("Moment2", "second moment, shape of Param"),
    State("Beta1Pow", "beta1^t, one element", scalar=True, optional_out=True),
    State("Beta2Pow", "beta2^t, one element", scalar=True, optional_out=True),
    State("Moment2Max", "AMSGrad's running maximum of Moment2, shape of Param (amsgrad only)",
          optional=True),
]


def _adam_attrs():
    return [
        Attr("beta1", "float", 0.9, "decay of the first moment", check=in_range(0.0, 1.0, True)),
        Attr("beta2", "float", 0.999, "decay of the second moment",
             check=in_range(0.0, 1.0, True)),
        Attr("epsilon", "float", 1e-8, "added to the denominator", check=at_least(0.0)),
        Attr("lazy_mode", "bool", False, "with a selected-rows Grad, update only its rows"),
        Attr("min_row_size_to_use_multithread", "long", 1000,
             "a Paddle CPU threading hint for selected-rows Grad (ignored)", check=at_least(0)),
        # Paddle 3 writes these on every adam op; their defaults are what is computed here.
        multi_precision_attr(),
        Attr("use_global_beta_pow", "bool", False, "the powers are advanced elsewhere: leave "
             "Beta1PowOut/Beta2PowOut as Beta1Pow/Beta2Pow"),
        Attr("amsgrad", "bool", False, "AMSGrad: the step divides by the square root of "
             "Moment2MaxOut = max(Moment2Max, Moment2Out) instead of Moment2Out's"),
    ]


_ADAM_DOC = ("Moment1Out = beta1 Moment1 + (1 - beta1) Grad; Moment2Out = beta2 Moment2 + "
             "(1 - beta2) Grad^2; lr_t = LearningRate sqrt(1 - Beta2Pow) / (1 - Beta1Pow); "
             "ParamOut = Param - lr_t Moment1Out / (sqrt(Moment2Out) + epsilon sqrt(1 - "
             "Beta2Pow)). When Beta1PowOut/Beta2PowOut are bound the op also advances the "
             "powers (Beta1PowOut = Beta1Pow * beta1), unless use_global_beta_pow. With "
             "amsgrad, Moment2MaxOut = max(Moment2Max, Moment2Out) replaces Moment2Out in "
             "the step.")

# Paddle 3's optional inputs beside the state, in its order.
_EXTRA_INPUTS = [
    In("Beta1Tensor", "one-element beta1 (overrides the attribute)", optional=True,
       dtypes=FLOAT_DTYPES),
    In("Beta2Tensor", "one-element beta2 (overrides the attribute)", optional=True,
       dtypes=FLOAT_DTYPES),
    In("EpsilonTensor", "one-element epsilon (overrides the attribute)", optional=True,
       dtypes=FLOAT_DTYPES),
    In("SkipUpdate", "one bool: when true nothing changes this run (every output keeps its "
       "input)", optional=True, dtypes=("bool",)),
] + master_slots()[0]
_EXTRA_OUTPUTS = master_slots()[1]

adam = optimizer_op("adam", _ADAM_DOC, states=_STATES, attrs=_adam_attrs(),
                    extra_check=_check_pow_outputs, extra_inputs=_EXTRA_INPUTS,
                    extra_outputs=_EXTRA_OUTPUTS)

adamw = optimizer_op(
    "adamw",
    "Adam with decoupled weight decay: with with_decay, Param first decays to Param - "
    "LearningRate * lr_ratio * coeff * Param (Paddle's CPU kernel; the Adam step itself uses "
    "LearningRate), then adam's update. Without with_decay it is adam. " + _ADAM_DOC,
    states=_STATES,
    attrs=_adam_attrs() + [
        Attr("lr_ratio", "float", 1.0, "scales the learning rate of the decay",
             check=at_least(0.0)),
        Attr("coeff", "float", 0.01, "the weight decay coefficient", check=at_least(0.0)),
        Attr("with_decay", "bool", False, "apply the decay (else the op is adam)"),
    ],
    extra_check=_check_pow_outputs, extra_inputs=_EXTRA_INPUTS, extra_outputs=_EXTRA_OUTPUTS,
)

OPS = [adam, adamw]
