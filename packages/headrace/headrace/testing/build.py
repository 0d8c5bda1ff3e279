"""Build a one-op program from shapes: the quickest way to test a shape rule."""
from ..framework import Program

__all__ = ["build_op", "infer_shapes"]


def _declare(block, slot, spec, i):
    """spec: (shape, dtype) or (shape, dtype, lod_level) or a dict of create_var kwargs."""
    if isinstance(spec, dict):
        kw = dict(spec)
    else:
        kw = dict(zip(("shape", "dtype", "lod_level"), spec))
    kw.setdefault("name", f"{slot.lower()}_{i}")
    return block.create_var(**kw)


def build_op(op_type, inputs=None, outputs=None, attrs=None, registry=None):
    """A program holding one ``op_type`` op.

    inputs: ``{slot: spec}`` or ``{slot: [spec, ...]}`` for duplicable slots, where a spec is
    ``(shape, dtype[, lod_level])`` or a dict of ``Block.create_var`` arguments.
    outputs: ``{slot: count}`` (default: one variable for every non-intermediate output slot of
    the definition, named ``<slot>_<i>``).
    Returns ``(program, op)``; shape inference has run, so ``program.global_block().var(name)``
    holds the inferred shapes. Build errors propagate (ShapeError, OpValidationError...).
    """
    prog = Program(registry=registry)
    block = prog.global_block()
    ins = {}
    for slot, spec in (inputs or {}).items():
        specs = spec if isinstance(spec, list) else [spec]
        ins[slot] = [_declare(block, slot, s, i) for i, s in enumerate(specs)]
    if outputs is None:
        opdef = prog.registry.get(op_type)
        outputs = {s.name: 1 for s in opdef.outputs if not s.intermediate}
    outs = {slot: [f"{slot.lower()}_out_{i}" for i in range(n)] for slot, n in outputs.items()}
    op = block.append_op(op_type, ins, outs, attrs or {})
    return prog, op


def infer_shapes(op_type, inputs=None, outputs=None, attrs=None, registry=None):
    """``{output slot: [(shape, dtype), ...]}`` after inference of a one-op program."""
    prog, op = build_op(op_type, inputs, outputs, attrs, registry)
    block = prog.global_block()
    return {slot: [(tuple(block.var(n).shape), block.var(n).dtype) for n in names]
            for slot, names in op.outputs.items()}
