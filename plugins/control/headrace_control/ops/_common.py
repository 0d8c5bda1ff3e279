"""What the control op modules share. A private module: auto-registration skips it."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp, grad_name
from headrace.ops.shape import numel

__all__ = ["sub_block_attr", "skip_vars_attr", "expect_one_element", "expect_kind",
           "sub_block_grad_def", "sub_block_grad_maker"]


def _sub_block_check(v):
    idx = getattr(v, "idx", v)
    return "must be a sub-block (index >= 1), not the global block" if idx == 0 else None


def sub_block_attr(doc):
    """The required BLOCK attribute of an op that owns a block."""
    return Attr("sub_block", "block", doc=doc, check=_sub_block_check)


def skip_vars_attr():
    # Paddle's garbage-collection bookkeeping; present in programs Paddle writes.
    return Attr("skip_eager_deletion_vars", "strings", [],
                "variables Paddle's eager deletion must keep (ignored)")


def expect_one_element(ctx, meta, slot):
    """Fail unless ``meta`` holds one element (unknown dims pass)."""
    if numel(meta.shape) not in (1, -1):
        ctx.fail(f"input '{slot}' ({meta.name}) must hold exactly one element",
                 expected="shape [1] (or [])", found=f"shape {list(meta.shape)}")


def expect_kind(ctx, meta, kind, slot):
    """Fail unless the variable is of ``kind``."""
    if meta.kind != kind:
        ctx.fail(f"input '{slot}' ({meta.name}) is a {meta.kind} variable",
                 expected=kind, found=meta.kind)


def _infer_sub_block_grad(ctx, x_slot):
    # Each X@GRAD is shaped like its X (the gradient blocks' ops set nothing outside).
    for i, meta in enumerate(ctx.inputs(x_slot)):
        if i < ctx.num_outputs(grad_name(x_slot)):
            ctx.set_output_like(grad_name(x_slot), meta, index=i)


def sub_block_grad_def(fwd_type, x_slot, scopes_slot, extra_inputs=(), attrs=()):
    """The definition of ``<fwd_type>_grad``: run the gradient block (``sub_block``) over each
    kept step of the forward op in reverse, with that step's values restored."""
    return OpDef(
        fwd_type + "_grad",
        inputs=list(extra_inputs) + [
            In(x_slot, "outer variables whose gradients the gradient block computes",
               duplicable=True, optional=True),
            In("Out", "outer variables the forward block writes", duplicable=True,
               optional=True),
            In("Out@GRAD", "their gradients after the op (missing: zero)", duplicable=True,
               optional=True),
            In(scopes_slot, "the steps the forward op kept (kind step_scopes)"),
        ],
        outputs=[Out(grad_name(x_slot), f"gradients of {x_slot}: summed over the steps, or "
                     f"carried through them for variables the block also writes",
                     duplicable=True, optional=True)],
        attrs=[sub_block_attr("the gradient block (its parent is the forward block)")]
        + list(attrs),
        infer=lambda ctx: _infer_sub_block_grad(ctx, x_slot),
        differentiable=False,
        doc=f"Gradient of {fwd_type}: for each kept step, last first, restore the step's "
            f"values, set the gradients of the written outer variables to those from the step "
            f"after, and run the gradient block.",
    )


def sub_block_grad_maker(grad_def, x_slot, scopes_slot, extra_inputs=(), attrs=()):
    """The gradient maker of an op that owns ``sub_block``: one ``grad_def`` op over the
    gradient block the backward pass builds for it."""

    def maker(ctx):
        sub = ctx.sub_block_grad("sub_block")
        if sub is None:
            return []
        ins = {slot: ctx.input(slot) for slot in extra_inputs}
        ins.update({x_slot: sub.inputs, "Out": sub.outputs,
                    "Out@GRAD": [grad_name(n) for n in sub.outputs],
                    scopes_slot: ctx.output(scopes_slot)})
        outs = {grad_name(x_slot): ctx.grad_names(sub.inputs)}
        kept = {a: ctx.attrs[a] for a in attrs}
        return [GradOp(grad_def.type, ins, outs, dict(kept, sub_block=sub.block))]

    return maker
