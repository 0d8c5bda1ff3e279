"""Weight decay: L1Decay and L2Decay add a term to a parameter's gradient before the update.

``L2Decay(c)`` adds ``c * param`` (one ``scale`` op); ``L1Decay(c)`` adds ``c * sign(param)``,
sign built from existing ops as ``cast(param > 0) - cast(param < 0)``. The term is added to the
gradient in place by a ``sum`` op (a sparse ``selected_rows`` gradient gets a dense
``<grad>@NEWGRAD`` instead). A parameter's own regularizer (``ParamAttr(regularizer=...)``) wins
over the optimizer's ``regularization``. The ops carry op_role optimize.
"""
from .checks import check_number
from .errors import LayerError
from .framework.builder import append_simple, constant, dtype_enum, tmp_var
from .framework.program import OP_ROLE_OPTIMIZE

__all__ = ["WeightDecayRegularizer", "L1Decay", "L2Decay", "L1DecayRegularizer",
           "L2DecayRegularizer", "append_regularization_ops"]


class WeightDecayRegularizer:
    """Base class: ``reg(param, grad, block)`` appends the ops computing the term to add to
    ``grad`` and returns the term's variable."""

    def __call__(self, param, grad, block):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(regularization_coeff={self._coeff})"


class L2Decay(WeightDecayRegularizer):
    """term = coeff * param."""

    def __init__(self, regularization_coeff=0.0):
        self._coeff = check_number("L2Decay", "regularization_coeff", regularization_coeff,
                                   minimum=0.0)

    def __call__(self, param, grad, block):
        return append_simple(block, "scale", {"X": param}, {"scale": self._coeff},
                             key=f"{param.name}@L2DECAY")


class L1Decay(WeightDecayRegularizer):
    """term = coeff * sign(param)."""

    def __init__(self, regularization_coeff=0.0):
        self._coeff = check_number("L1Decay", "regularization_coeff", regularization_coeff,
                                   minimum=0.0)

    def __call__(self, param, grad, block):
        key = f"{param.name}@L1DECAY"
        zero = constant(block, 0.0, param.dtype, key=key)
        pos = append_simple(block, "greater_than", {"X": param, "Y": zero}, dtype="bool", key=key)
        neg = append_simple(block, "less_than", {"X": param, "Y": zero}, dtype="bool", key=key)
        cast = {"in_dtype": dtype_enum("bool"), "out_dtype": dtype_enum(param.dtype)}
        pos = append_simple(block, "cast", {"X": pos}, cast, dtype=param.dtype, key=key)
        neg = append_simple(block, "cast", {"X": neg}, cast, dtype=param.dtype, key=key)
        sign = append_simple(block, "elementwise_sub", {"X": pos, "Y": neg}, key=key)
        return append_simple(block, "scale", {"X": sign}, {"scale": self._coeff}, key=key)


L1DecayRegularizer = L1Decay
L2DecayRegularizer = L2Decay


def append_regularization_ops(params_grads, regularization=None):
    """Add each parameter's regularization term to its gradient.

    The parameter's ``regularizer`` is used if it has one, else ``regularization`` (may be
    None). Returns the new ``[(param, grad)]`` list (the same gradient variables, updated in
    place, except for sparse gradients).
    """
    if regularization is not None and not isinstance(regularization, WeightDecayRegularizer):
        raise LayerError(f"append_regularization_ops: argument 'regularization' must be an "
                         f"L1Decay or L2Decay, got {type(regularization).__name__}")
    out = []
    for param, grad in params_grads:
        reg = getattr(param, "regularizer", None) or regularization
        if grad is None or reg is None:
            out.append((param, grad))
            continue
        block = grad.block
        with block.program.op_role_guard(OP_ROLE_OPTIMIZE):
            term = reg(param, grad, block)
            new_grad = grad
            if grad.kind == "selected_rows":
                new_grad = tmp_var(block, f"{grad.name}@NEWGRAD", param.dtype,
                                   shape=param.shape)
            block.append_op("sum", {"X": [grad, term]}, {"Out": new_grad},
                            {"op_role_var": [param.name, grad.name]})
        out.append((param, new_grad))
    return out
