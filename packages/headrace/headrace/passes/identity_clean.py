"""identity_op_clean: ops that compute nothing at inference time are removed and their
readers read the op's input instead (Paddle Inference's identity_op_clean_pass and
delete_dropout_op_pass).

Removed: ``dropout`` in test mode with ``upscale_in_train`` (Out = X), ``scale`` by 1 with
bias 0, and ``assign`` of a tensor. ``dropout`` in test mode with ``downgrade_in_infer``
(Out = X * (1 - p)) becomes a ``scale`` op. When the removed op's output is a fetch target
the fetch op reads the input instead (``load_inference_model`` returns the new targets).

An op is only removed when nothing can tell: its output is written once, not fed nor
persistable nor read in a sub-block; its input is not written again later; a dropout's Mask
is unread. Otherwise it stays.
"""
from ..framework.analysis import reads
from . import _graph

NAME = "identity_op_clean"


def _identity(op):
    """'remove', ('scale', factor), or None."""
    t, a = op.type, op.attrs
    if t == "dropout" and (a.get("is_test") or False):
        if a.get("dropout_implementation", "downgrade_in_infer") == "upscale_in_train":
            return "remove"
        return ("scale", 1.0 - float(a.get("dropout_prob", 0.5)))
    if t == "scale" and float(a.get("scale", 1.0)) == 1.0 and float(a.get("bias", 0.0)) == 0.0:
        return "remove"
    if t == "assign" and len(op.input("X")) == 1:
        var = op.block._find_var_recursive(op.input("X")[0])
        return "remove" if var is not None and var.kind == "lod_tensor" else None
    return None


def _removable(block, op, x, out):
    if len(_graph.writers(block, out)) != 1 or out in _graph.fed(block) \
            or _graph.is_persistable(block, out):
        return False
    later = block.ops[block.ops.index(op) + 1:]
    if any(x in o.output_arg_names for o in later):
        return False   # X changes after the op: Out's readers would see the new value
    # Readers inside a sub-block keep the name (their block would need renaming too).
    if any(o.sub_blocks() and out in reads(o) for o in later):
        return False
    extra = [n for slot, names in op.outputs.items() if slot != "Out" for n in names]
    return _graph.unread(block, extra)


def run(program, scope, place):
    """Apply the pass to ``program``'s global block; returns the number of ops changed."""
    block = program.global_block()
    changed = 0
    for op in list(block.ops):
        what = _identity(op)
        if what is None or len(op.input("X")) != 1 or len(op.output("Out")) != 1:
            continue
        x, out = op.input("X")[0], op.output("Out")[0]
        if not _removable(block, op, x, out):
            continue
        if what == "remove":
            block.remove_op(block.ops.index(op))
            _graph.rename_reads(block, out, x)
        else:
            _graph.replace(block, [op], "scale", {"X": [x]}, {"Out": [out]}, attrs_of=None,
                           attrs={"scale": what[1], "bias": 0.0, "bias_after_scale": True,
                                  "op_role": op.attrs.get("op_role", 0)})
        changed += 1
    return changed
