"""conditional_block: run the sub-block's plan once when the condition holds."""
from ._frame import StepScope, kept_ids, scalar
from ._steps import SubBlockGrad


class ConditionalBlock:

    def __init__(self, attrs, info):
        self.plan = info.subplan("sub_block")
        self.kept = kept_ids(self.plan, attrs)
        self.scalar = attrs["is_scalar_condition"]
        self.device = info.device

    def __call__(self, frame):
        conds = frame.inputs("Cond")
        if self.scalar:
            run = bool(scalar(self.device, conds[0], "conditional_block: Cond"))
        else:
            # Fluid's rule without a scalar condition: run when every Cond tensor is non-empty.
            run = all(c is not None and c.size > 0 for c in conds)
        if run:
            before = frame.capture(self.plan.outer_write_ids)
            frame.run(self.plan)
            frame.set_output("Scope", [StepScope(before, frame.capture(self.kept))])
        else:
            frame.set_output("Scope", [])


class ConditionalBlockGrad(SubBlockGrad):
    x_slot, scopes_slot = "Input", "Scope"


KERNELS = [("conditional_block", ConditionalBlock, None, "frame"),
           ("conditional_block_grad", ConditionalBlockGrad, None, "frame")]
