"""while: run the body's plan while Condition holds, keeping one step scope per step."""
from ._frame import scalar, snapshot, writes


class While:
    frame_kernel = True

    def __init__(self, attrs, info):
        body = attrs["sub_block"]
        cond_name = info.op.input("Condition")[0]
        if not writes(body, cond_name):
            # Refuse what would be an endless loop rather than hang.
            raise ValueError(f"the body (block {body.idx}) never writes Condition "
                             f"'{cond_name}', so the loop could never end")
        self.plan = info.subplan(body)
        self.cond = info.in_slots["Condition"][0]
        self.steps_slot = info.out_slots["StepScopes"][0]
        self.keep = not attrs["is_test"]
        self.device = info.device

    def __call__(self, values, lods):
        steps = []
        while scalar(self.device, values[self.cond], "while: Condition"):
            self.plan.run(values, lods)
            if self.keep:
                steps.append(snapshot(values, lods, self.plan.local_ids))
        values[self.steps_slot] = steps


KERNELS = [("while", While, None)]
