"""What the inference passes share: who reads a variable, which names must keep their
identity (fed, fetched, persistable, read inside a sub-block), the parameters' values in the
scope, and replacing one op by another of the same or a fused type.

Passes work on the global block only: a value a sub-block reads keeps its name and producer,
so ops of a control-flow program outside its loops and branches are still optimized.
"""
import numpy as np

from ..framework.analysis import reads, writes
from ..ops.definition import COMMON_ATTRS
from ..runtime.host_memory import empty_aligned
from ..runtime.tensor import Tensor

HOLDERS = ("feed", "fetch")
# The names apply() keeps, set on the program while its passes run (see fetched()).
KEEP_ATTR = "_passes_keep"


def well_formed(op, ins=(), outs=()):
    """Whether ``op`` binds exactly one variable to each of the slots ``ins`` and ``outs``:
    a pass reads those by index, and a program from a file may bind none or several."""
    return all(len(op.input(s)) == 1 for s in ins) and \
        all(len(op.output(s)) == 1 for s in outs)


def readers(block, name):
    """The ops of ``block`` reading ``name`` (an op owning a sub-block counts when its block's
    ops read it)."""
    return [op for op in block.ops if name in reads(op)]


def writers(block, name):
    return [op for op in block.ops if name in writes(op)]


def fetched(block):
    """Names that must keep their values and names: what fetch ops read (the model's
    targets), plus the names ``apply`` was asked to keep (``keep``)."""
    keep = getattr(block.program, KEEP_ATTR, ())
    return {n for op in block.ops if op.type == "fetch" for n in op.input("X")} | set(keep)


def terminal_values(block):
    """Names some op of ``block`` writes and no op reads: what a program without fetch ops
    is run for."""
    read = {n for op in block.ops for n in reads(op)}
    return {n for op in block.ops for n in writes(op) if n not in read}


def fed(block):
    return {n for op in block.ops if op.type == "feed" for n in op.output("Out")}


def is_persistable(block, name):
    var = block._find_var_recursive(name)
    return var is not None and var.persistable


def sole_reader(block, name, op):
    """Whether ``op`` is the only reader of ``name`` and ``name`` is an ordinary temporary
    (not fetched, fed, persistable, nor read inside a sub-block): a pass may then rename or
    drop it without anyone noticing."""
    if name in fetched(block) or name in fed(block) or is_persistable(block, name):
        return False
    found = readers(block, name)
    return len(found) == 1 and found[0] is op and name in op.input_arg_names


def unread(block, names, but=None):
    """Whether no op other than ``but`` reads any of ``names`` and none is fetched."""
    targets = fetched(block)
    for n in names:
        if n in targets or any(op is not but for op in readers(block, n)):
            return False
    return True


def producer(block, name, before):
    """The op writing ``name`` right before op ``before`` when it is the only writer of
    ``name`` in the block, else None (a value written twice is not rewritten)."""
    found = writers(block, name)
    if len(found) != 1:
        return None
    op = found[0]
    return op if block.ops.index(op) < block.ops.index(before) else None


def value(scope, name):
    """The NumPy value of persistable ``name`` in ``scope`` (None when absent)."""
    v = scope.find(name)
    if v is None:
        return None
    data = v.data if isinstance(v, Tensor) else v
    if not isinstance(data, np.ndarray):   # a device array (CUDA): a host copy
        data = data.copy_to_host() if hasattr(data, "copy_to_host") else np.asarray(data)
    return data


def new_param(block, scope, base, array):
    """A new persistable variable named after ``base`` holding ``array`` in ``scope``: passes
    never overwrite a parameter in place (another program may share the scope)."""
    k = 0
    while True:
        name = f"{base}@fold_{k}"
        if block._find_var_recursive(name) is None and scope.find(name) is None:
            break
        k += 1
    block.create_var(name=name, shape=list(array.shape), dtype=array.dtype.name,
                     persistable=True)
    value = empty_aligned(np.shape(array), array.dtype)   # (as loaded parameters are)
    value[...] = array
    scope.set(name, Tensor(value))
    return name


def replace(block, old_ops, op_type, inputs, outputs, attrs_of=None, attrs=None):
    """Insert one op of ``op_type`` where the first of ``old_ops`` was and remove ``old_ops``.
    Attributes: ``attrs_of``'s that the new type defines (Paddle's bookkeeping ones too), then
    ``attrs``; an attribute the definition does not know (a Paddle backend's extra) is left
    out, so the op validates and Paddle fills in its default."""
    opdef = block.program.registry.get(op_type)
    merged = {}
    if attrs_of is not None:   # read before the removal detaches the op's desc
        merged = {k: v for k, v in attrs_of.attrs.items()
                  if opdef.attr(k) is not None or k in COMMON_ATTRS}
    merged.update(attrs or {})
    index = min(block.ops.index(op) for op in old_ops)
    for op in sorted(old_ops, key=block.ops.index, reverse=True):
        block.remove_op(block.ops.index(op))
    return block.insert_op(index, op_type, inputs, outputs, merged)


def rename_reads(block, old, new):
    """Point every reader of ``old`` in ``block`` at ``new``."""
    for op in block.ops:
        if old in op.input_arg_names:
            op.rename_input(old, new)


def drop_unused_vars(program):
    """Remove global-block variables no op references any more (the folded parameters'
    originals, fused temporaries), so a saved model's parameter file holds only what runs."""
    block = program.global_block()
    used = set(HOLDERS)
    for b in program.blocks:
        for op in b.ops:
            used.update(op.input_arg_names)
            used.update(op.output_arg_names)
    for name in [n for n in block.vars if n not in used]:
        block.remove_var(name)
