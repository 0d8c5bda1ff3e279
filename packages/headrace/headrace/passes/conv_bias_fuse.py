"""conv_elementwise_add_fuse: ``conv2d`` followed by ``elementwise_add`` of a per-channel
parameter (the bias Paddle's conv2d layer appends, axis=1) becomes ``conv2d`` with its
``Bias`` input bound, as Paddle's conv_bias_mkldnn_fuse_pass writes it (conv2d's dispensable
Bias), so one kernel adds the bias while the output is in cache.

Conditions: the conv's output has no other reader and is not fetched; the added operand is a
persistable [M] variable (M output channels) with a value in the scope; the conv has no Bias
yet (else the two are summed into a new parameter); NCHW layout. Paddle's plain conv2d
kernels ignore Bias (its oneDNN kernel adds it), so the fused op is marked use_mkldnn, as
Paddle's own pass leaves it.
"""
from . import _graph

NAME = "conv_elementwise_add_fuse"


def channel_bias(block, add, x_name, channels):
    """The name of ``add``'s per-channel parameter operand when ``add`` adds one to ``x_name``
    along dim 1 (axis=1, or axis -1 on a [N, M] value), else None."""
    if add.type != "elementwise_add" or add.input("X") != [x_name] or \
            not _graph.well_formed(add, ("Y",), ("Out",)):
        return None
    (y,) = add.input("Y") or [None]
    var = block._find_var_recursive(y) if y else None
    if var is None or not var.persistable or [d for d in var.shape if d != 1] != [channels]:
        return None
    rank = len(block._find_var_recursive(x_name).shape)
    axis = add.attrs.get("axis", -1)
    return y if axis == 1 or (rank == 2 and axis == -1 and len(var.shape) == 1) else None


def run(program, scope, place):
    block = program.global_block()
    changed = 0
    for conv in [op for op in block.ops if op.type == "conv2d"]:
        if conv.attrs.get("data_format", "NCHW") not in ("NCHW", "AnyLayout") or \
                conv.input("ResidualData") or len(conv.input("Bias")) > 1 or \
                not _graph.well_formed(conv, ("Input", "Filter"), ("Output",)):
            continue
        out = conv.output("Output")[0]
        rd = _graph.readers(block, out)
        if len(rd) != 1 or not _graph.sole_reader(block, out, rd[0]):
            continue
        add = rd[0]
        filt = _graph.value(scope, conv.input("Filter")[0])
        bias = channel_bias(block, add, out, None if filt is None else filt.shape[0])
        if bias is None or _graph.value(scope, bias) is None:
            continue
        if conv.input("Bias"):
            old = _graph.value(scope, conv.input("Bias")[0])
            if old is None:
                continue
            bias = _graph.new_param(block, scope, bias,
                                    old.reshape(-1) + _graph.value(scope, bias).reshape(-1))
        elif list(block.var(bias).shape) != [filt.shape[0]]:   # [1, M] / [M, 1, 1]: as [M]
            bias = _graph.new_param(block, scope, bias, _graph.value(scope, bias).reshape(-1))
        inputs = dict(conv.inputs, Bias=[bias])
        _graph.replace(block, [conv, add], "conv2d", inputs, {"Output": add.output("Out")},
                       attrs_of=conv, attrs={"use_mkldnn": True})
        changed += 1
    return changed
