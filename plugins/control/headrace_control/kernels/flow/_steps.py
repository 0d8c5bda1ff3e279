"""The gradient of an op that owns a block (``while_grad``, ``conditional_block_grad``).

The forward kernel kept one :class:`StepScope` per step: the outer values the step overwrote,
as they were before it, and the block's own values after it. Going through the steps last
first, this kernel restores both, so the gradient block's ops read the forward values of that
step by name, and hands the block the gradients that flow back into the step:

- a variable the block writes (``Out``) starts each step with its gradient after the step
  (for the last step, ``Out@GRAD`` from after the op). What the gradient block leaves in that
  gradient is the gradient before the step, which the step before receives; a variable the
  step only overwrites, without reading it, gets zero there;
- a variable the block only reads (a weight, a static input) gets one contribution per step,
  summed over the steps;
- an array's gradient is shared by every step (its grad ops update it position by position),
  so it needs no carrying.

At the end the outer values are put back as the forward pass left them, so later ops (and
fetches) see the loop's results.
"""
from headrace.ops.grad import grad_name


class SubBlockGrad:
    """One kernel for both grad ops; ``x_slot``/``scopes_slot`` name their slots."""

    x_slot = scopes_slot = None

    def __init__(self, attrs, info):
        self.plan = info.subplan("sub_block")
        self.device = info.device
        written = self.plan.written_names
        xs = [v.name for v in info.inputs.get(self.x_slot, ())]
        outs = [v.name for v in info.inputs.get("Out", ())]

        def local(name):  # a per-step gradient slot of the gradient block, None for arrays
            return self.plan.slot_named(grad_name(name), local=True)

        # (index in Out, local gradient slot, does the block write the gradient before it?)
        self.carries = [(k, local(n), grad_name(n) in written) for k, n in enumerate(outs)
                        if local(n) is not None]
        carried = {outs[k]: j for j, (k, _, _) in enumerate(self.carries)}
        # Per X: ("carry", j) - the gradient carried to before the first step; ("sum", slot)
        # - summed over steps; None - an array's shared gradient, already in place.
        self.results = []
        for n in xs:
            if n in carried:
                self.results.append(("carry", carried[n]))
            elif local(n) is not None:
                self.results.append(("sum", local(n)))
            else:
                self.results.append(None)
        self.wanted = info.wanted(grad_name(self.x_slot))

    def __call__(self, frame):
        device, plan = self.device, self.plan
        steps = frame.input(self.scopes_slot) or []
        carry = self._out_grads(frame)  # None: no gradient reached (zero)
        sums = [None] * len(self.results)
        owned = [False] * len(self.results)  # a sum this kernel made, updated in place
        final = None
        for step in reversed(steps):
            if final is None:
                final = frame.capture(step.before)  # the values the forward pass left
            outs = frame.inputs("Out")  # the values after this step, before restoring
            for j, (k, _, _) in enumerate(self.carries):
                if carry[j] is None:
                    carry[j] = _or_zeros(device, None, outs[k])
            frame.restore(step.before)
            frame.restore(step.after)
            for (_, slot, _), g in zip(self.carries, carry):
                frame.store(slot, g, None)
            for res in self.results:
                if res is not None and res[0] == "sum":
                    frame.store(res[1], None, None)  # no stale contribution of a later step
            frame.run(plan)
            for j, (_, slot, writes) in enumerate(self.carries):
                # Not written: the step overwrote the variable without reading it.
                carry[j] = frame.load(slot) if writes else _or_zeros(device, None, carry[j])
            for r, res in enumerate(self.results):
                if res is not None and res[0] == "sum":
                    g = frame.load(res[1])
                    if g is None:
                        continue
                    if sums[r] is None:
                        sums[r] = g  # not ours: the first sum is a new array
                    elif owned[r]:
                        device.add_to(sums[r], g)
                    else:
                        sums[r], owned[r] = device.add(sums[r], g), True
        if final is not None:
            frame.restore(final)
        xs = frame.inputs(self.x_slot)
        values = []
        for r, res in enumerate(self.results):
            if res is None or not self.wanted[r]:
                values.append(None)
            elif res[0] == "carry":
                values.append(_or_zeros(device, carry[res[1]], xs[r]))
            else:
                values.append(_or_zeros(device, sums[r], xs[r]))
        ids = frame.output_ids(grad_name(self.x_slot))
        x_lods = [t.lod for t in frame.tensors(self.x_slot)]
        for r, (i, v) in enumerate(zip(ids, values)):
            if v is not None:
                # A read-only input's gradient keeps its LoD (the loop left the input as it
                # was): a LoD static input's gradient is cut by sequences downstream.
                summed = self.results[r] is not None and self.results[r][0] == "sum"
                frame.store(i, v, x_lods[r] if summed else None)

    def _out_grads(self, frame):
        grads = frame.inputs("Out@GRAD")
        return [grads[k] if k < len(grads) else None for k, _, _ in self.carries]


def _or_zeros(device, value, like):
    """``value``, or zeros shaped like ``like`` where no gradient reached (None); None when
    ``like`` has no value either (a branch output its block never wrote)."""
    if value is not None or like is None:
        return value
    return device.zeros_like(like)
