"""Refusing ops whose attribute is overridden by a tensor input given at run time."""

__all__ = ["refuse_tensor_inputs"]


def refuse_tensor_inputs(ctx, op, slots):
    """Fail naming the first of ``slots`` bound on ``op`` (the exporter reads the attribute)."""
    for slot in slots:
        if op.input(slot):
            ctx.fail(f"input '{slot}' (a value known only at run time) overrides the "
                     f"attribute the exporter reads", expected=f"'{slot}' unbound",
                     found=f"{slot}={op.input(slot)}")
