"""while: run the body's plan while Condition holds, keeping one step scope per step."""
from headrace_control.limits import WhileStepLimitError, max_while_steps

from ._frame import StepScope, kept_ids, scalar
from ._steps import SubBlockGrad


class While:
    """Run the body while Condition holds, at most ``max_while_steps()`` steps a run."""

    def __init__(self, attrs, info):
        if not info.sub_block_writes("sub_block", "Condition"):
            # Refuse what would be an endless loop rather than hang.
            cond = ", ".join(f"'{v.name}'" for v in info.inputs["Condition"])
            raise ValueError(f"the body (sub_block) never writes Condition {cond}, so the "
                             f"loop could never end")
        self.plan = info.subplan("sub_block")
        self.keep = not attrs["is_test"]
        self.kept = kept_ids(self.plan, attrs)
        self.device = info.device

    def __call__(self, frame):
        steps = []
        limit, n = max_while_steps(), 0
        while scalar(self.device, frame.input("Condition"), "while: Condition"):
            if n == limit:
                raise WhileStepLimitError(
                    f"the loop ran {limit} steps and Condition still holds: stopped as an "
                    f"endless loop (raise the limit with headrace_control."
                    f"set_max_while_steps(n) or the environment variable "
                    f"HEADRACE_MAX_WHILE_STEPS if more steps are meant)")
            n += 1
            if self.keep:
                before = frame.capture(self.plan.outer_write_ids)
                frame.run(self.plan)
                steps.append(StepScope(before, frame.capture(self.kept)))
            else:
                frame.run(self.plan)
        frame.set_output("StepScopes", steps)


class WhileGrad(SubBlockGrad):
    x_slot, scopes_slot = "X", "StepScopes"


KERNELS = [("while", While, None, "frame"), ("while_grad", WhileGrad, None, "frame")]
