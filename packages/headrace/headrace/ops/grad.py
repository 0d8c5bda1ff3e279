"""Gradient makers: the rule, attached to an op's definition, that writes its backward ops.

A maker is ``f(ctx) -> [GradOp, ...]``: given one forward op (through a :class:`GradContext`)
it returns the ops that compute the gradients of the op's inputs from the gradients of its
outputs. Gradient variables are named ``<var>@GRAD``; a gradient nobody needs is ``@EMPTY@``.

Most ops get their maker and their ``<op>_grad`` definition from one call::

    relu = OpDef("relu", ...)
    relu_grad = grad_of(relu, uses=["Out"])   # relu_grad(Out, Out@GRAD) -> X@GRAD
    OPS = [relu, relu_grad]

Ops whose gradient is made of ordinary forward ops (scale, sum, cast, assign, split) write
their own maker returning those ops.
"""
from collections import namedtuple

from .definition import COMMON_ATTRS, In, OpDef, Out

__all__ = ["GRAD_SUFFIX", "EMPTY", "grad_name", "GradOp", "GradContext", "grad_of"]

GRAD_SUFFIX = "@GRAD"
EMPTY = "@EMPTY@"


def grad_name(name):
    return name + GRAD_SUFFIX


class GradOp(namedtuple("GradOp", "type inputs outputs attrs")):
    """A backward op to append: type, ``{slot: [names]}`` inputs and outputs, attributes."""
    __slots__ = ()


class GradContext:
    """One forward op as its gradient maker sees it.

    ``input(slot)``/``output(slot)``: the forward variable names. ``input_grad(slot)``: the names
    the input gradients must be written to (``@EMPTY@`` where no gradient is wanted).
    ``output_grad(slot)``: the names of the output gradients (always present: the backward pass
    fills zeros for outputs that do not reach the loss). ``attrs``: the forward attributes,
    bookkeeping ones left out.
    """

    def __init__(self, op, wanted, available):
        self.op = op
        self.type = op.type
        self._wanted = wanted          # names of forward vars whose gradient is wanted
        self._available = available    # grad names that exist or will be zero-filled
        self.attrs = op._attrs_but(COMMON_ATTRS)

    def input(self, slot):
        return self.op.input(slot)

    def output(self, slot):
        return self.op.output(slot)

    def input_grad(self, slot):
        return [grad_name(n) if n in self._wanted else EMPTY for n in self.op.input(slot)]

    def output_grad(self, slot):
        return [grad_name(n) for n in self.op.output(slot)]

    def wants(self, slot):
        """True if any input of ``slot`` needs its gradient."""
        return any(n in self._wanted for n in self.op.input(slot))

    def grad_names(self, names):
        """``<name>@GRAD`` for each of ``names`` whose gradient is wanted, else ``@EMPTY@``."""
        return [grad_name(n) if n in self._wanted else EMPTY for n in names]

    def sub_block_grad(self, attr):
        """The gradient block of the block held by attribute ``attr`` (a
        ``headrace.autodiff.SubBlockGrad``: ``block``, ``inputs``, ``outputs``), or None when
        nothing in it needs a gradient. The backward pass provides it; see ``while``'s maker."""
        raise NotImplementedError(f"{self.type}: sub-block gradients are built by "
                                  f"headrace.autodiff.append_backward")


def grad_of(fwd, uses=("X",), grads=None, infer=None, doc=None, attrs=None):
    """Make ``fwd.type + "_grad"``'s definition and attach a maker producing it to ``fwd``.

    uses: forward input and output slots the grad op reads (besides the output gradients).
    grads: forward input slots that get gradients (default: every non-integer-only input).
    infer: shape rule of the grad op (default: ``X@GRAD`` like ``X`` if read, else like the
    first output gradient).
    """
    grads = tuple(grads) if grads is not None else tuple(s.name for s in fwd.inputs)
    used = []
    for name in uses:
        slot = fwd.input(name) or fwd.output(name)
        if slot is None:
            raise ValueError(f"grad_of({fwd.type}): no slot {name!r}")
        used.append(In(name, slot.doc, duplicable=slot.duplicable, optional=slot.optional))
    out_grads = [s.name for s in fwd.outputs if not s.intermediate]
    inputs = used + [In(grad_name(o), f"gradient of {o}", duplicable=fwd.output(o).duplicable,
                        optional=fwd.output(o).optional) for o in out_grads]
    outputs = [Out(grad_name(g), f"gradient of {g}", duplicable=fwd.input(g).duplicable,
                   optional=True) for g in grads]

    def default_infer(ctx):
        ref = grad_name(out_grads[0])
        for g in grads:
            if not ctx.has_output(grad_name(g)):
                continue
            if ctx.has_input(g):
                for i, meta in enumerate(ctx.inputs(g)):
                    if i < ctx.num_outputs(grad_name(g)):
                        ctx.set_output_like(grad_name(g), meta, index=i)
            else:
                ctx.set_output_like(grad_name(g), ctx.input(ref))

    grad_def = OpDef(fwd.type + "_grad", inputs=inputs, outputs=outputs,
                     attrs=list(fwd.attrs.values()) if attrs is None else attrs,
                     infer=infer or default_infer, differentiable=False,
                     host_only=fwd.host_only,   # the gradient runs where its forward op runs
                     doc=doc or f"Gradient of {fwd.type}.")

    def maker(ctx):
        ins = {u.name: (ctx.input(u.name) if fwd.input(u.name) else ctx.output(u.name))
               for u in used}
        for o in out_grads:
            if ctx.output(o):
                ins[grad_name(o)] = ctx.output_grad(o)
        outs = {grad_name(g): ctx.input_grad(g) for g in grads if ctx.wants(g)}
        if not outs:
            return []  # no input of this op needs its gradient
        return [GradOp(grad_def.type, ins, outs, dict(ctx.attrs))]

    fwd.grad = maker
    return grad_def
