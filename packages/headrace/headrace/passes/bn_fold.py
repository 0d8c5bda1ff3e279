"""conv_bn_fuse and mul_bn_fuse: a ``batch_norm`` in test mode after ``conv2d`` or ``mul``
is folded into the weights (Paddle Inference's conv_bn_fuse_pass; its fc form).

With s = Scale / sqrt(Variance + epsilon) per channel m and shift = Bias - Mean * s,
batch_norm(conv(x, W) + b) = conv(x, W * s[m]) + (b * s + shift): the filter's output
channel m (conv2d) or the weight's column m (mul on [N, M]) is scaled, and the bias (conv2d's
Bias input; for mul, the elementwise_add after it, added when there is none) becomes the new
one. New values go into new persistable variables in the scope (the originals stay as they
are: another program may share them); the batch_norm op is removed and its Y is written by
the conv's or the add's op.

Conditions: is_test or use_global_stats; NCHW (channel dim 1); the product's output and the
add's are read only by the next op of the chain and not fetched; batch_norm's other outputs
are unread; every parameter has a value in the scope.
"""
import numpy as np

from . import _graph
from .conv_bias_fuse import channel_bias

NAME = "conv_bn_fuse"
MUL_NAME = "mul_bn_fuse"


def _bn_factors(bn, scope):
    """(s, shift) in float64, or None when a statistic has no value."""
    vals = [_graph.value(scope, bn.input(k)[0]) for k in ("Scale", "Bias", "Mean", "Variance")]
    if any(v is None for v in vals):
        return None
    scale, bias, mean, var = (np.asarray(v, dtype=np.float64).reshape(-1) for v in vals)
    s = scale / np.sqrt(var + float(np.float32(bn.attrs.get("epsilon", 1e-5))))
    return s, bias - mean * s


def _foldable(block, bn):
    if not _graph.well_formed(bn, ("X", "Scale", "Bias", "Mean", "Variance"), ("Y",)):
        return False
    a = bn.attrs
    if not (a.get("is_test") or a.get("use_global_stats")) or a.get("trainable_statistics"):
        return False
    if a.get("data_layout", "NCHW") not in ("NCHW", "AnyLayout"):
        return False
    others = [n for slot, names in bn.outputs.items() if slot != "Y" for n in names]
    # MeanOut/VarianceOut usually are Mean/Variance themselves (persistable, unchanged in
    # test mode): only their readers other than batch_norm matter.
    return _graph.unread(block, [n for n in others if n not in bn.input_arg_names], but=bn)


def _chain(block, bn, product_types):
    """(product op, add op or None) feeding ``bn``'s X through temporaries, else None."""
    x = bn.input("X")[0]
    if not _graph.sole_reader(block, x, bn):
        return None
    op = _graph.producer(block, x, bn)
    if op is None:
        return None
    slots = {"conv2d": (("Input", "Filter"), ("Output",)), "mul": (("X", "Y"), ("Out",)),
             "elementwise_add": (("X", "Y"), ("Out",))}
    if op.type in slots and not _graph.well_formed(op, *slots[op.type]):
        return None
    if op.type in product_types:
        return op, None
    if op.type != "elementwise_add":
        return None
    inner = op.input("X")[0]
    prod = _graph.producer(block, inner, op)
    if prod is None or prod.type not in product_types or \
            not _graph.well_formed(prod, *slots[prod.type]) or \
            not _graph.sole_reader(block, inner, op):
        return None
    return prod, op


def _fold(block, scope, bn, prod, add):
    factors = _bn_factors(bn, scope)
    wname = prod.input("Filter" if prod.type == "conv2d" else "Y")[0]
    w = _graph.value(scope, wname)
    if factors is None or w is None:
        return False
    s, shift = factors
    channels = w.shape[0] if prod.type == "conv2d" else w.shape[-1]
    if s.size != channels or (prod.type == "mul" and (
            w.ndim != 2 or prod.attrs.get("y_num_col_dims", 1) != 1 or
            len(block.var_recursive(prod.output("Out")[0]).shape) != 2)):
        return False
    old_bias = np.zeros(channels)
    if add is not None:
        bname = channel_bias(block, add, add.input("X")[0], channels)
        bval = None if bname is None else _graph.value(scope, bname)
        if bval is None:
            return False
        old_bias = bval.astype(np.float64).reshape(-1)
    if prod.type == "conv2d" and prod.input("Bias"):
        cb = _graph.value(scope, prod.input("Bias")[0])
        if cb is None or prod.input("ResidualData") or not _graph.well_formed(prod, ("Bias",)):
            return False
        old_bias = old_bias + cb.astype(np.float64).reshape(-1)
    shape = (-1, 1, 1, 1) if prod.type == "conv2d" else (1, -1)
    new_w = _graph.new_param(block, scope, wname,
                             (w.astype(np.float64) * s.reshape(shape)).astype(w.dtype))
    new_b = _graph.new_param(block, scope, bn.input("Bias")[0],
                             (old_bias * s + shift).astype(w.dtype))
    y = bn.output("Y")
    if prod.type == "conv2d":
        inputs = dict(prod.inputs, Filter=[new_w], Bias=[new_b])
        _graph.replace(block, [op for op in (prod, add, bn) if op is not None], "conv2d",
                       inputs, {"Output": y}, attrs_of=prod,
                       attrs={"use_mkldnn": True})   # Paddle's kernel that reads Bias
        return True
    mul_out = prod.output("Out")
    _graph.replace(block, [prod], "mul", dict(prod.inputs, Y=[new_w]), {"Out": mul_out},
                   attrs_of=prod)
    old = [op for op in (add, bn) if op is not None]
    _graph.replace(block, old, "elementwise_add", {"X": mul_out, "Y": [new_b]}, {"Out": y},
                   attrs_of=add, attrs={"axis": 1})
    return True


def _run(program, scope, product_types):
    block = program.global_block()
    changed = 0
    for bn in [op for op in block.ops if op.type == "batch_norm"]:
        if not _foldable(block, bn):
            continue
        found = _chain(block, bn, product_types)
        if found is not None and _fold(block, scope, bn, *found):
            changed += 1
    return changed


def run(program, scope, place):
    """conv2d (+ elementwise_add bias) + batch_norm -> conv2d with Bias."""
    return _run(program, scope, ("conv2d",))


def run_mul(program, scope, place):
    """mul (+ elementwise_add bias) + batch_norm -> mul + elementwise_add."""
    return _run(program, scope, ("mul",))
