"""while: run the body's plan while Condition holds, keeping one step scope per step."""
from headrace_control.limits import (STEPS, WHILE_MEMORY, WhileMemoryLimitError,
                                     WhileStepLimitError, max_while_memory, max_while_steps)

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
        budget, kept = max_while_memory(), 0
        while scalar(self.device, frame.input("Condition"), "while: Condition"):
            if n == limit:
                raise WhileStepLimitError(
                    f"the loop ran {limit} steps and Condition still holds: stopped as an "
                    f"endless loop ({STEPS.hint()})")
            n += 1
            if self.keep:
                before = frame.capture(self.plan.outer_write_ids)
                frame.run(self.plan)
                after = frame.capture(self.kept)
                steps.append(StepScope(before, after))
                # What the steps keep for the gradient grows with every step: bounded, so a
                # loop that never ends stops with an error before it exhausts memory.
                kept += _nbytes(before) + _nbytes(after)
                if kept > budget:
                    raise WhileMemoryLimitError(
                        f"after {n} steps the loop keeps {kept} bytes for its gradient, over "
                        f"the limit of {budget} ({WHILE_MEMORY.hint()}; or build the "
                        f"program for inference, is_test, which keeps nothing)")
            else:
                frame.run(self.plan)
        frame.set_output("StepScopes", steps)


def _nbytes(values):
    """Bytes of the arrays a captured step holds (shared arrays are counted each time: an
    upper bound, cheap to take)."""
    total = 0
    for v in values.values():
        v = v[0] if type(v) is tuple else v
        data = getattr(v, "data", v)
        total += getattr(data, "nbytes", 0)
    return total


class WhileGrad(SubBlockGrad):
    x_slot, scopes_slot = "X", "StepScopes"


KERNELS = [("while", While, None, "frame"), ("while_grad", WhileGrad, None, "frame")]
