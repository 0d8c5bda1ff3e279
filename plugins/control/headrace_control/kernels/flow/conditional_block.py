"""conditional_block: run the sub-block's plan once when the condition holds."""
from ._frame import scalar, snapshot


class ConditionalBlock:
    frame_kernel = True

    def __init__(self, attrs, info):
        self.plan = info.subplan(attrs["sub_block"])
        self.conds = info.in_slots["Cond"]
        self.scalar = attrs["is_scalar_condition"]
        self.scope_slot = info.out_slots["Scope"][0]
        self.device = info.device

    def __call__(self, values, lods):
        if self.scalar:
            run = bool(scalar(self.device, values[self.conds[0]], "conditional_block: Cond"))
        else:
            # Fluid's rule without a scalar condition: run when every Cond tensor is non-empty.
            run = all(values[i] is not None and values[i].size > 0 for i in self.conds)
        if run:
            self.plan.run(values, lods)
            values[self.scope_slot] = [snapshot(values, lods, self.plan.local_ids)]
        else:
            values[self.scope_slot] = []


KERNELS = [("conditional_block", ConditionalBlock, None)]
