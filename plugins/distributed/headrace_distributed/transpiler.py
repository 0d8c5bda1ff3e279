"""The data-parallel rewrite of a training program (Paddle's GradAllReduce transpiler).

Startup: every parameter is broadcast from rank 0 after its initializer, so all ranks start
from rank 0's values whatever their seeds. Main: right after the backward pass (before
clipping, regularization and the update ops, which then see the mean gradient) the gradients
are summed over the ranks with ``c_allreduce_sum``, after the loss gradient was scaled by
1/nranks (Paddle's ``_insert_scale_loss_grad_ops``: one tiny op rather than a pass over every
gradient; gradients of targets without a loss seed are scaled after the reduction). With buckets
(``bucket_size_mb`` > 0) the gradients of a bucket are packed into one buffer by
``coalesce_tensor`` and reduced with one call; ``split`` + ``reshape2`` unpack it (Paddle's
Output variables alias the buffer; headrace variables never alias, hence the unpacking).
"""
from headrace.dtypes import to_proto
from headrace.errors import LayerError
from headrace.framework.program import (OP_ROLE_BACKWARD, OP_ROLE_FORWARD, OP_ROLE_LOSS,
                                        OP_ROLE_OPTIMIZE)
from headrace.ops.grad import grad_name

__all__ = ["transpile", "use_sync_batch_norm", "gradient_buckets", "DEFAULT_BUCKET_MB"]

DEFAULT_BUCKET_MB = 25.0     # PyTorch DDP's default bucket: a few collective calls per step
FUSED_PREFIX = "@FUSED_GRAD@"
_ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2}


def _role(op):
    return op.attr("op_role") if op.has_attr("op_role") else OP_ROLE_FORWARD


def _backward_end(block):
    """Index after the last backward op (clipping and updates come after it)."""
    last = -1
    for i, op in enumerate(block.ops):
        role = _role(op)
        if role & OP_ROLE_BACKWARD and not role & OP_ROLE_OPTIMIZE:
            last = i
    if last < 0:
        raise LayerError("transpile: the main program has no backward pass (call minimize or "
                         "append_backward before transpiling)")
    return last + 1


def _params_and_grads(block):
    pairs = []
    for p in block.all_parameters():
        g = grad_name(p.name)
        if p.trainable and block.has_var(g):
            pairs.append((p, block.var(g)))
    if not pairs:
        raise LayerError("transpile: no trainable parameter of the main program has a gradient")
    return pairs


def gradient_buckets(pairs, bucket_size_mb):
    """Consecutive (param, grad) pairs grouped per dtype into buckets of at most
    ``bucket_size_mb`` MB (a larger gradient gets a bucket of its own)."""
    limit = bucket_size_mb * 1024 * 1024
    buckets, open_ = [], {}
    for p, g in pairs:
        size = _ITEMSIZE.get(g.dtype, 8) * max(1, _numel(g.shape))
        bucket = open_.get(g.dtype)
        if bucket is None or bucket[1] + size > limit:
            bucket = open_[g.dtype] = [[], 0]
            buckets.append(bucket)
        bucket[0].append((p, g))
        bucket[1] += size
    return [b[0] for b in buckets]


def _numel(shape):
    n = 1
    for d in shape:
        if d < 0:
            raise LayerError(f"transpile: a gradient of unknown shape {list(shape)} cannot be "
                             f"bucketed (pass bucket_size_mb=0)")
        n *= d
    return n


def _scale_loss_grad(block, nranks):
    """Insert ``scale(1/nranks)`` after the loss gradient's seed (the backward pass's
    ``fill_constant`` with op_role Backward|Loss); False when there is none."""
    for i, op in enumerate(block.ops):
        if op.type == "fill_constant" and _role(op) == OP_ROLE_BACKWARD | OP_ROLE_LOSS:
            name = op.output("Out")[0]
            block.insert_op(i + 1, "scale", {"X": [name]}, {"Out": [name]},
                            {"scale": 1.0 / nranks, "op_role": OP_ROLE_BACKWARD})
            return True
    return False


def _insert_unfused(block, at, grads, nranks, ring_id):
    for g in grads:
        block.insert_op(at, "c_allreduce_sum", {"X": [g.name]}, {"Out": [g.name]},
                        {"ring_id": ring_id})
        at += 1
        if nranks:
            block.insert_op(at, "scale", {"X": [g.name]}, {"Out": [g.name]},
                            {"scale": 1.0 / nranks})
            at += 1
    return at


def _insert_bucket(block, at, index, grads, nranks, ring_id):
    """nranks: scale by 1/nranks after the reduction (0: the loss gradient was scaled)."""
    dtype = grads[0].dtype
    fused = block.create_var(name=f"{FUSED_PREFIX}{index}", dtype=dtype)
    names = [g.name for g in grads]
    ops = [("coalesce_tensor", {"Input": names}, {"Output": names, "FusedOutput": [fused.name]},
            {"copy_data": True, "use_align": False, "dtype": to_proto(dtype)}),
           ("c_allreduce_sum", {"X": [fused.name]}, {"Out": [fused.name]}, {"ring_id": ring_id})]
    if nranks:
        ops.append(("scale", {"X": [fused.name]}, {"Out": [fused.name]}, {"scale": 1.0 / nranks}))
    pieces = [f"{fused.name}.part{i}" for i in range(len(grads))]
    for piece, g in zip(pieces, grads):
        block.create_var(name=piece, dtype=dtype, shape=[_numel(g.shape)])
    ops.append(("split", {"X": [fused.name]}, {"Out": pieces},
                {"axis": 0, "sections": [_numel(g.shape) for g in grads]}))
    ops += [("reshape2", {"X": [piece]}, {"Out": [g.name]}, {"shape": list(g.shape)})
            for piece, g in zip(pieces, grads)]
    for op_type, ins, outs, attrs in ops:
        block.insert_op(at, op_type, ins, outs, attrs)
        at += 1
    return at


def use_sync_batch_norm(program):
    """Turn every batch_norm (and batch_norm_grad) of ``program`` into its synchronized
    twin, in place; returns how many ops changed. Same slots and attributes: only the type."""
    changed = 0
    for block in (program.block(i) for i in range(program.num_blocks)):
        for i, op in enumerate(list(block.ops)):
            if op.type not in ("batch_norm", "batch_norm_grad"):
                continue
            ins, outs, attrs = op.inputs, op.outputs, dict(op.attrs)
            block.remove_op(i)
            block.insert_op(i, "sync_" + op.type, ins, outs, attrs)
            changed += 1
    return changed


def transpile(main, startup, nranks=None, bucket_size_mb=DEFAULT_BUCKET_MB, ring_id=0,
              sync_batch_norm=False, check=True):
    """Rewrite ``main`` and ``startup`` for data-parallel training over ``nranks`` ranks
    (default: the MPI world's size). ``bucket_size_mb=0`` reduces each gradient on its own.
    ``check``: compare the programs' fingerprints across the ranks (a collective: every rank
    transpiles) and raise a ProgramMismatchError naming the ranks and the first differing op.
    Returns ``main``."""
    from .failure import check_programs
    from .runtime import world_size
    nranks = world_size() if nranks is None else int(nranks)
    if nranks < 1:
        raise LayerError(f"transpile: nranks must be >= 1, got {nranks}")
    if bucket_size_mb is None or bucket_size_mb < 0:
        raise LayerError(f"transpile: bucket_size_mb must be >= 0, got {bucket_size_mb}")
    block = main.global_block()
    if sync_batch_norm:
        use_sync_batch_norm(main)
    pairs = _params_and_grads(block)
    with main.op_role_guard(OP_ROLE_BACKWARD):
        # 0: the reduced gradients need no scaling (the loss gradient carries 1/nranks).
        after = 0 if _scale_loss_grad(block, nranks) else nranks
        at = _backward_end(block)
        if bucket_size_mb == 0:
            _insert_unfused(block, at, [g for _, g in pairs], after, ring_id)
        else:
            for i, bucket in enumerate(gradient_buckets(pairs, bucket_size_mb)):
                at = _insert_bucket(block, at, i, [g for _, g in bucket], after, ring_id)
    sblock = startup.global_block()
    for p, _ in pairs:
        if sblock.has_var(p.name):
            sblock.append_op("c_broadcast", {"X": [p.name]}, {"Out": [p.name]},
                             {"ring_id": ring_id, "root": 0})
    if check and nranks > 1:
        check_programs(main, startup)
    return main
