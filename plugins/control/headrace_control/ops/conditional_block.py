"""conditional_block: run a sub-block when a condition holds ."""
from headrace.ops import Attr, In, OpDef, Out

from ._common import (expect_one_element, skip_vars_attr, sub_block_attr, sub_block_grad_def,
                      sub_block_grad_maker)


def _infer_conditional_block(ctx):
    if ctx.attr("is_scalar_condition"):
        conds = ctx.inputs("Cond")
        if len(conds) != 1:
            ctx.fail("with is_scalar_condition, input 'Cond' holds one variable",
                     expected="1 variable", found=f"{len(conds)}: {[c.name for c in conds]}")
        expect_one_element(ctx, conds[0], "Cond")
        if conds[0].dtype != "bool":
            ctx.fail(f"with is_scalar_condition, input 'Cond' ({conds[0].name}) must be bool",
                     expected="bool", found=conds[0].dtype)
    # The sub-block's ops set Out's shapes; the op itself only owns the scope it runs in.
    ctx.set_output("Scope", (), None, kind="step_scopes")


conditional_block = OpDef(
    "conditional_block",
    inputs=[
        In("Cond", "the condition: one bool scalar (is_scalar_condition), else tensors of "
           "any dtype that must all be non-empty (IfElse: the rows a branch receives)",
           duplicable=True),
        In("Input", "variables of enclosing blocks the sub-block reads", duplicable=True,
           optional=True),
    ],
    outputs=[
        Out("Out", "variables of enclosing blocks the sub-block writes", duplicable=True,
            optional=True),
        Out("Scope", "the child scope the sub-block ran in (kind step_scopes), kept for the "
            "backward pass"),
    ],
    attrs=[
        sub_block_attr("the block to run"),
        Attr("is_scalar_condition", "bool", False,
             "Cond is one bool element (true: run); otherwise run when every Cond is non-empty"),
        skip_vars_attr(),
    ],
    infer=_infer_conditional_block,
    doc="Runs sub_block in a new child scope when the condition holds; the scope is kept in "
        "Scope for the gradient block.",
)

_COND = In("Cond", "the forward op's condition", duplicable=True)
_SCALAR = Attr("is_scalar_condition", "bool", False, "as the forward op's")
conditional_block_grad = sub_block_grad_def("conditional_block", "Input", "Scope",
                                            extra_inputs=[_COND], attrs=[_SCALAR])
conditional_block.grad = sub_block_grad_maker(conditional_block_grad, "Input", "Scope",
                                              extra_inputs=["Cond"],
                                              attrs=["is_scalar_condition"])

OPS = [conditional_block, conditional_block_grad]
