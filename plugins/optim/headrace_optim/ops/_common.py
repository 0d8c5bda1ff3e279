"""What the optimizer update ops share: slots, the shape/dtype rule, attribute checks.

Every update op reads Param, Grad and LearningRate plus its state, and writes ParamOut and the
state outputs; programs bind each output to its input variable, so the update is in place.
A private module (leading underscore): the plugin's auto-registration skips it.
"""
from headrace import dtypes as dt
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.shape import dims_match, numel

__all__ = ["FLOAT_DTYPES", "State", "optimizer_op", "at_least", "in_range", "master_slots",
           "refuse_master", "multi_precision_attr"]

FLOAT_DTYPES = tuple(dt.FLOAT_DTYPES)


def at_least(lo):
    """Attribute check: value >= lo."""
    return lambda v: f"must be >= {lo}" if not v >= lo else None


def in_range(lo, hi, hi_open=False):
    """Attribute check: lo <= value <= hi (or < hi)."""
    def check(v):
        ok = lo <= v < hi if hi_open else lo <= v <= hi
        return None if ok else f"must be in [{lo}, {hi}{')' if hi_open else ']'}"
    return check


class State:
    """An optimizer state tensor: input slot, its in-place output slot, and whether it has the
    parameter's shape (moments, velocity) or holds one element (Adam's beta powers)."""

    def __init__(self, name, doc, *, scalar=False, optional=False, optional_out=None):
        self.name, self.out, self.doc = name, f"{name}Out", doc
        self.scalar, self.optional = scalar, optional
        self.optional_out = optional if optional_out is None else optional_out


def _check_same_shape(ctx, meta, param, slot):
    if meta.shape != param.shape and not dims_match(meta.shape, param.shape):
        ctx.fail(f"input '{slot}' ({meta.name}) must have the shape of 'Param' ({param.name})",
                 expected=f"shape {list(param.shape)}", found=f"shape {list(meta.shape)}")


def _check_one_element(ctx, meta, slot):
    if numel(meta.shape) not in (1, -1):
        ctx.fail(f"input '{slot}' ({meta.name}) must hold exactly one element",
                 expected="shape [1] (or [])", found=f"shape {list(meta.shape)}")


def _make_infer(states, extra_check):
    def infer(ctx):
        param, grad, lr = ctx.input("Param"), ctx.input("Grad"), ctx.input("LearningRate")
        if param.kind != "lod_tensor":
            ctx.fail(f"input 'Param' ({param.name}) must be a dense tensor",
                     expected="lod_tensor", found=param.kind)
        _check_same_shape(ctx, grad, param, "Grad")
        if grad.dtype != param.dtype:
            ctx.fail(f"input 'Grad' ({grad.name}) must have the dtype of 'Param' "
                     f"({param.name})", expected=param.dtype, found=grad.dtype)
        _check_one_element(ctx, lr, "LearningRate")
        if extra_check is not None:
            extra_check(ctx)
        ctx.set_output_like("ParamOut", param)
        for s in states:
            if not ctx.has_input(s.name):
                if ctx.has_output(s.out):
                    ctx.fail(f"output '{s.out}' is bound but input '{s.name}' is not",
                             expected=f"both {s.name} and {s.out}, or neither",
                             found=f"{s.out} bound, {s.name} not")
                continue
            meta = ctx.input(s.name)
            if s.scalar:
                _check_one_element(ctx, meta, s.name)
            else:
                _check_same_shape(ctx, meta, param, s.name)
            ctx.set_output_like(s.out, meta)
    return infer


def optimizer_op(type, doc, *, states=(), attrs=(), extra_check=None, extra_inputs=(),
                 extra_outputs=()):
    """The OpDef of an update op with the standard slots plus ``states`` (then
    ``extra_inputs`` / ``extra_outputs``: optional slots that are not state)."""
    inputs = [
        In("Param", "the parameter to update", dtypes=FLOAT_DTYPES),
        In("Grad", "its gradient (dense or selected rows), shape and dtype of Param",
           dtypes=FLOAT_DTYPES),
        In("LearningRate", "one-element learning rate", dtypes=FLOAT_DTYPES),
    ] + [In(s.name, s.doc, optional=s.optional, dtypes=FLOAT_DTYPES) for s in states] + \
        list(extra_inputs)
    outputs = [Out("ParamOut", "the updated parameter (bound to the Param variable)")] + [
        Out(s.out, f"updated {s.name} (bound to the {s.name} variable)", optional=s.optional_out)
        for s in states] + list(extra_outputs)
    return OpDef(type, inputs=inputs, outputs=outputs, attrs=attrs, doc=doc,
                 infer=_make_infer(states, extra_check), differentiable=False)


def master_slots():
    """Paddle 3's MasterParam / MasterParamOut (a float16 Param's float32 master copy): declared,
    so that a bound one is refused by name rather than ignored."""
    return ([In("MasterParam", "a float16 Param's float32 master copy (multi_precision; "
                "refused here)", optional=True, dtypes=FLOAT_DTYPES)],
            [Out("MasterParamOut", "the updated master copy (refused here)", optional=True)])


def refuse_master(ctx):
    """Fail when MasterParam or MasterParamOut is bound: float16 Params are not trained here."""
    if ctx.has_input("MasterParam") or ctx.has_output("MasterParamOut"):
        ctx.fail("inputs 'MasterParam'/'MasterParamOut' (multi_precision training of a float16 "
                 "Param) are not supported here", expected="MasterParam unbound",
                 found="MasterParam bound")


def multi_precision_attr():
    """Paddle 3's multi_precision attribute of the update ops."""
    return Attr("multi_precision", "bool", False, "keep a float32 MasterParam for a float16 "
                "Param (a float32 or float64 Param is its own master: nothing changes)")
