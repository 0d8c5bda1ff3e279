"""while: run a sub-block as long as a condition holds .

The module is named while_op because ``while`` is a Python keyword.
"""
from headrace.ops import Attr, In, OpDef, Out

from ._common import (expect_kind, expect_one_element, skip_vars_attr, sub_block_attr,
                      sub_block_grad_def, sub_block_grad_maker)


def _infer_while(ctx):
    cond = ctx.input("Condition")
    expect_kind(ctx, cond, "lod_tensor", "Condition")
    expect_one_element(ctx, cond, "Condition")
    ctx.set_output("StepScopes", (), None, kind="step_scopes")


while_ = OpDef(
    "while",
    inputs=[
        In("X", "variables of enclosing blocks the body reads", duplicable=True, optional=True),
        In("Condition", "one bool element; the body must update it", dtypes=("bool",)),
    ],
    outputs=[
        Out("Out", "variables of enclosing blocks the body writes", duplicable=True,
            optional=True),
        Out("StepScopes", "one child scope per step (kind step_scopes), kept for the backward "
            "pass"),
    ],
    attrs=[
        sub_block_attr("the loop body"),
        Attr("is_test", "bool", False, "inference: step scopes are dropped after each step"),
        skip_vars_attr(),
    ],
    infer=_infer_while,
    doc="while Condition: run sub_block in a fresh child scope. The body must write "
        "Condition, or the loop never ends.",
)

while_grad = sub_block_grad_def("while", "X", "StepScopes")
while_.grad = sub_block_grad_maker(while_grad, "X", "StepScopes")

OPS = [while_, while_grad]
