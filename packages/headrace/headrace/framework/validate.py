"""Structural checks of a parsed ProgramDesc.

Protobuf only checks the wire format; a ProgramDesc can still be nonsense (a block whose parent
does not exist, a variable without a type, a BLOCK attribute pointing nowhere). Every such case
is a ProgramParseError naming the block, op or variable, so nothing downstream meets it.
Attributes and ops that headrace does not know are *not* errors: programs written by newer
Paddle versions carry them.
"""
from ..errors import ProgramParseError
from ..proto import framework_pb2 as pb

__all__ = ["validate_program_desc"]

_TENSOR_FIELDS = {pb.VarType.LOD_TENSOR: "lod_tensor", pb.VarType.LOD_TENSOR_ARRAY: "tensor_array"}


def _fail(msg):
    raise ProgramParseError(msg)


def _text(where, what, value):
    # proto2 does not check UTF-8, and protobuf hands back invalid strings as bytes; names
    # must be text (they are dict keys and are printed).
    if not isinstance(value, str):
        _fail(f"{where}: {what} {value!r} is not valid UTF-8")


def _check_tensor(where, tensor):
    if not tensor.HasField("data_type"):
        _fail(f"{where}: tensor description has no data_type")
    for d in tensor.dims:
        if d < -1:
            _fail(f"{where}: dims {list(tensor.dims)} has {d}; dims are >= 0 or -1 (unknown)")


def _check_var(where, v):
    if not v.name:
        _fail(f"{where}: variable without a name")
    _text(where, "variable name", v.name)
    where = f"{where}, variable '{v.name}'"
    if not v.HasField("type") or not v.type.HasField("type"):
        _fail(f"{where}: no type")
    field = _TENSOR_FIELDS.get(v.type.type)
    if field is not None and v.type.HasField(field):
        sub = getattr(v.type, field)
        if not sub.HasField("tensor"):
            _fail(f"{where}: {field} without a tensor description")
        _check_tensor(where, sub.tensor)
        if sub.lod_level < 0:
            _fail(f"{where}: negative lod_level {sub.lod_level}")
    if v.type.HasField("selected_rows"):
        _check_tensor(where, v.type.selected_rows)
    for a in v.attrs:
        if not a.HasField("name") or not a.HasField("type"):
            _fail(f"{where}: an attribute without name or type")


def _check_op(where, op, num_blocks):
    if not op.type:
        _fail(f"{where}: operator without a type")
    _text(where, "op type", op.type)
    where = f"{where} ('{op.type}')"
    for kind, slots in (("input", op.inputs), ("output", op.outputs)):
        for s in slots:
            if not s.HasField("parameter"):
                _fail(f"{where}: an {kind} slot without a name")
            _text(where, f"{kind} slot name", s.parameter)
            for a in s.arguments:
                _text(where, f"{kind} slot '{s.parameter}' argument", a)
            if any(not a for a in s.arguments):
                _fail(f"{where}: {kind} slot '{s.parameter}' binds an empty variable name")
    for a in op.attrs:
        if not a.HasField("name") or not a.HasField("type"):
            _fail(f"{where}: an attribute without name or type")
        _text(where, "attribute name", a.name)
        if a.type == pb.BLOCK:
            if not 0 <= a.block_idx < num_blocks:
                _fail(f"{where}: attribute '{a.name}' points at block {a.block_idx}, "
                      f"but the program has {num_blocks} blocks")
        elif a.type == pb.BLOCKS:
            for i in a.blocks_idx:
                if not 0 <= i < num_blocks:
                    _fail(f"{where}: attribute '{a.name}' points at block {i}, "
                          f"but the program has {num_blocks} blocks")


def _owned_blocks(desc, b):
    for op in desc.blocks[b].ops:
        for a in op.attrs:
            if a.type == pb.BLOCK:
                yield a.block_idx
            elif a.type == pb.BLOCKS:
                yield from a.blocks_idx


def _check_ownership_acyclic(desc):
    """No block may own itself through its ops' BLOCK attributes, directly or through other
    blocks: running, pruning or saving such a program would recurse without end. Iterative
    (a program may nest thousands of blocks)."""
    n, state = len(desc.blocks), [0] * len(desc.blocks)   # 0 new, 1 on the path, 2 done
    for root in range(n):
        if state[root]:
            continue
        stack = [(root, iter(list(_owned_blocks(desc, root))))]
        state[root] = 1
        while stack:
            b, it = stack[-1]
            k = next(it, None)
            if k is None:
                state[b] = 2
                stack.pop()
            elif state[k] == 1:
                path = [s for s, _ in stack]
                cycle = path[path.index(k):] + [k]
                _fail(f"block {b}: an op owns block {k} (a BLOCK attribute), which contains "
                      f"that op: the blocks own each other in a cycle "
                      f"({' -> '.join(map(str, cycle))}), so running the program would "
                      f"recurse without end")
            elif state[k] == 0:
                state[k] = 1
                stack.append((k, iter(list(_owned_blocks(desc, k)))))


def validate_program_desc(desc):
    """Raise ProgramParseError unless ``desc`` is a well-formed program."""
    if not len(desc.blocks):
        _fail("the program has no blocks (a program needs at least its global block)")
    n = len(desc.blocks)
    for i, b in enumerate(desc.blocks):
        where = f"block {i}"
        if b.idx != i:
            _fail(f"{where}: its idx field says {b.idx}; blocks are stored in index order")
        if not b.HasField("parent_idx"):
            _fail(f"{where}: no parent_idx")
        if i == 0 and b.parent_idx != -1:
            _fail(f"{where}: the global block must have parent_idx -1, found {b.parent_idx}")
        if i > 0 and not 0 <= b.parent_idx < i:
            _fail(f"{where}: parent_idx {b.parent_idx} must name an earlier block (0..{i - 1})")
        if b.forward_block_idx != -1 and not 0 <= b.forward_block_idx < n:
            _fail(f"{where}: forward_block_idx {b.forward_block_idx} out of range")
        seen = set()
        for v in b.vars:
            _check_var(where, v)
            if v.name in seen:
                _fail(f"{where}: variable '{v.name}' is declared twice")
            seen.add(v.name)
        for j, op in enumerate(b.ops):
            _check_op(f"{where}, op #{j}", op, n)
    _check_ownership_acyclic(desc)
